"""Verified formulas users import: ``from verify import formulas``.

Each public name is generated from a derived SymPy expression and carries ``.expr``,
``.latex`` and ``.claim`` (and ``.mpmath`` for high precision where meaningful).  The
names are collected from the ``__all__`` of every non-underscore module of this package;
``dir(formulas)`` lists exactly them.

>>> from verify import formulas
>>> float(formulas.alpha_constant(2))  # doctest: +ELLIPSIS
3.14159265358979...
"""
import importlib as _importlib
import pkgutil as _pkgutil

from verify.formulas._base import VerifiedFormula

__all__: list[str] = ["VerifiedFormula"]


def _collect() -> None:
    for info in _pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = _importlib.import_module(f"{__name__}.{info.name}")
        for name in getattr(mod, "__all__", []):
            if name in globals() and globals()[name] is not getattr(mod, name):
                raise RuntimeError(f"formula name {name!r} defined twice (module {info.name})")
            globals()[name] = getattr(mod, name)
            __all__.append(name)


_collect()


def __dir__() -> list[str]:
    """Only the formulas (and ``VerifiedFormula``): ``dir(formulas)`` is the public list,
    not the submodules and helpers this package is built from."""
    return sorted(__all__)
