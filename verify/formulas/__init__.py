"""Verified formulas users import: ``from verify import formulas``.

Each public name is generated from a derived SymPy expression and carries ``.expr``,
``.latex`` and ``.claim`` (and ``.mpmath`` for high precision where meaningful).  The
names are collected from the ``__all__`` of every non-underscore module of this package;
``dir(formulas)`` lists exactly them.  Every entry has ``.ulp_bound`` (its stated float64
error bound).  Closed-form entries, and ``phi_tilde`` / ``phi_tilde_dtheta`` (whose
balls integrate the definition), also have ``.enclose(...)`` (certified Arb balls).  The
algorithms have none and raise ``NotEnclosable`` (a TypeError): ``best_linear_approximator``
(a least-squares solve), ``kernel_interpolant`` (a linear solve), ``symmetrize`` and
``project_to_fixed_space`` (group actions on particles), ``rmd`` (an assignment problem);
their float64 bounds are tested against exact or 30-digit references instead.

:func:`perturbed_output` (documented API, not a formula): within ``with
perturbed_output(name, factor):`` the formula ``name`` returns ``factor`` times its value
(the mutation harness's formula mutants).

>>> from verify import formulas
>>> float(formulas.alpha_constant(2))  # doctest: +ELLIPSIS
3.14159265358979...
"""
from verify._discovery import public_modules as _public_modules
from verify.formulas._base import VerifiedFormula, perturbed_output  # noqa: F401

__all__: list[str] = ["VerifiedFormula"]


def _collect() -> None:
    for module_name, mod in _public_modules(__name__, __path__):
        for name in getattr(mod, "__all__", []):
            if name in globals() and globals()[name] is not getattr(mod, name):
                raise RuntimeError(f"formula name {name!r} defined twice (module {module_name})")
            globals()[name] = getattr(mod, name)
            __all__.append(name)


_collect()


def __dir__() -> list[str]:
    """Only the formulas (and ``VerifiedFormula``): ``dir(formulas)`` is the public list,
    not the submodules and helpers this package is built from."""
    return sorted(__all__)
