"""Verified formulas: numpy-vectorized callables generated (``sympy.lambdify``) from the
SymPy expressions that the claims' derivations produce, each carrying its expression,
LaTeX and claim id, plus a high-precision mpmath variant.

The expressions are read from :mod:`verify.derived` (never from the claims layer) and
re-read whenever :func:`verify.derived.generation` changes, so a perturbed derivation
reaches the formulas too.  :func:`perturbed_output` (public as
``verify.formulas.perturbed_output``) scales a formula's output (the mutation harness uses it
to show that the formula's claim notices).

Closed-form entries have ``.enclose(*args, prec=...)``: Arb balls guaranteed to contain the
exact value of the derived expression (``verify.certify``), and a stated float64 error
bound ``.ulp_bound`` (checked in tests/test_certify.py); entries that are algorithms or not
built from one SymPy expression raise :class:`NotEnclosable` from ``.enclose``."""
from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, Iterator, Sequence

import mpmath
import numpy as np
import sympy as sp

from verify import derived

__all__ = ["DerivedFunction", "VerifiedFormula", "perturbed_output", "MAX_DPS", "NotEnclosable",
           "MAX_FORMULA_ENTRIES", "HIGH_PRECISION_ENTRY_NS",
           "enclose_grid",
           "UlpBound"]

MAX_DPS = 2000  # mpmath precision cap: beyond it a single special-function call takes minutes
#: largest broadcast input of a float64 formula call (128 MiB per float64 temporary)
MAX_FORMULA_ENTRIES = 2 ** 24
#: priced cost (ns) of one entry of ``.mpmath`` / ``.enclose`` at the default precision
#: (measured 20-80 us for the Arb balls, up to 300 us for rf_kernel.mpmath on a loaded
#: core; tests/test_certify.py encloses 10^4 entries in one call): an array call above the
#: quick budget is refused from the shapes (``long_runs()`` allows it)
HIGH_PRECISION_ENTRY_NS = 200_000

_OUTPUT_FACTORS: dict[str, float] = {}


class NotEnclosable(TypeError):
    """``.enclose`` of a formula that is not a closed form (an algorithm, or an entry not
    built from one derived SymPy expression): there is no expression to enclose."""


class UlpBound:
    """A stated float64 error bound: ``|float64 - exact| <= (ulps + per_term * n) * 2^-52 *
    scale``, with ``unit`` saying what the scale is ("value": |exact|; else the scale of the
    terms, e.g. K_RF + sigma_c^2 |1 + x x'| P for the NTK, where cancellation makes that the
    honest unit, or a condition number times a scale for an algorithm), ``n`` the number of
    summed terms (``per_term`` 0 for a fixed-size formula) and ``why`` the a-priori argument;
    ``region``, when not empty, names the inputs where the bound does not hold."""

    def __init__(self, ulps: float, unit: str, why: str, per_term: float = 0.0,
                 region: str = ""):
        if not (isinstance(ulps, (int, float)) and 0 < ulps < 2 ** 52):
            raise ValueError(f"ulps must be a positive number; got {ulps!r}")
        if not (isinstance(per_term, (int, float)) and 0 <= per_term < 2 ** 52):
            raise ValueError(f"per_term must be a non-negative number; got {per_term!r}")
        self.ulps, self.unit, self.why = float(ulps), str(unit), str(why)
        self.per_term, self.region = float(per_term), str(region)

    def ulps_for(self, n_terms: int = 1) -> float:
        """The bound in ulps of the unit for ``n_terms`` summed terms (a count >= 0)."""
        if isinstance(n_terms, bool) or not isinstance(n_terms, (int, np.integer)) or n_terms < 0:
            raise ValueError(f"n_terms must be a count of summed terms (an integer >= 0); got "
                             f"{n_terms!r:.40}")
        return self.ulps + self.per_term * int(n_terms)

    def __repr__(self) -> str:
        n = f" + {self.per_term:g} per term" if self.per_term else ""
        return f"UlpBound({self.ulps:g}{n} ulps of {self.unit})"


@contextlib.contextmanager
def perturbed_output(name: str, factor: float) -> Iterator[None]:
    """Within the block the formula called ``name`` returns ``factor`` times its value
    (arrays and floats scaled, tuples/lists elementwise, returned objects through their
    ``_perturbed(factor)``)."""
    previous = _OUTPUT_FACTORS.get(name)
    _OUTPUT_FACTORS[name] = float(factor)
    try:
        yield
    finally:
        if previous is None:
            _OUTPUT_FACTORS.pop(name, None)
        else:
            _OUTPUT_FACTORS[name] = previous


def _scaled(out: Any, factor: float) -> Any:
    if hasattr(out, "_perturbed"):
        return out._perturbed(factor)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return type(out)(*(_scaled(o, factor) for o in out))
    if isinstance(out, (tuple, list)):
        return type(out)(_scaled(o, factor) for o in out)
    if isinstance(out, dict):
        return {k: _scaled(v, factor) for k, v in out.items()}
    if isinstance(out, np.ndarray):
        return out * factor
    if isinstance(out, (float, int, np.number)) and not isinstance(out, (bool, np.bool_)):
        return type(out)(out * factor) if isinstance(out, np.number) else out * factor
    if isinstance(out, (mpmath.mpf, mpmath.mpc)):
        return out * factor
    if type(out).__name__ in ("arb", "acb") and type(out).__module__.startswith("flint"):
        return out * factor  # a ball times the float factor (exact)
    raise TypeError(f"cannot perturb a formula output of type {type(out).__name__}; "
                    "give it a _perturbed(factor) method")


def check_entries(name: str, impl: Callable[..., Any], args: tuple, kwargs: dict,
                  entry_ns: int) -> None:
    """Refuse, from the shapes of the array arguments alone (before any copy or pass over
    the data), a call broadcasting to more than :data:`MAX_FORMULA_ENTRIES` entries or
    costing more than a quick call at ``entry_ns`` ns per entry
    (``numerics.validation.require_work``); arguments that do not broadcast are left to the
    formula's own validation."""
    from numerics.validation import require_broadcast_work
    params = list(inspect.signature(impl).parameters)
    named = [(params[i] if i < len(params) else f"argument {i}", v) for i, v in enumerate(args)]
    named = [(k, v) for k, v in named + list(kwargs.items()) if isinstance(v, np.ndarray)]
    arrays = [v for _, v in named]
    size = max([int(np.prod(a.shape, dtype=object)) for a in arrays], default=0)
    if size > MAX_FORMULA_ENTRIES or (require_broadcast_work(
            entry_ns, f"{name}: the broadcast arguments "
            f"{', '.join(k for k, _ in named)}", f"entries x {entry_ns} ns", *arrays,
            hint="evaluate fewer points per call") > MAX_FORMULA_ENTRIES):
        raise ValueError(f"{name}: an argument or their broadcast has more than "
                         f"{MAX_FORMULA_ENTRIES} entries (shapes "
                         f"{', '.join(f'{k} {a.shape}' for k, a in named)}); evaluate fewer "
                         "points per call")


def check_dps(dps: Any) -> int:
    """Validate an mpmath precision (decimal digits)."""
    if isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or not 1 <= dps <= MAX_DPS:
        raise ValueError(f"dps (decimal digits for mpmath) must be an integer in 1..{MAX_DPS}; "
                         f"got {dps!r}")
    return int(dps)


class _Derived:
    """What every verified formula carries: ``name``, ``claim``, a docstring, the derived
    SymPy expression(s) ``.expr`` (read from :mod:`verify.derived`, re-read when a
    derivation is perturbed) with their ``.latex``, and a real call signature."""

    def __init__(self, name: str, claim: str, doc: str, expr_fn: Callable[[], Any],
                 signature_of: Callable[..., Any] | None = None):
        self.__name__ = self.__qualname__ = self.name = name
        self.claim = claim
        self.__doc__ = doc
        self._expr_fn = expr_fn
        self._memo: dict[str, Any] = {}
        self._memo_generation = -1
        if signature_of is not None:
            self.__signature__ = inspect.signature(signature_of)

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        """``build()`` memoized until the derived results change (mutation testing)."""
        g = derived.generation()
        if g != self._memo_generation:
            self._memo.clear()
            self._memo_generation = g
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    @property
    def expr(self) -> Any:
        """The derived SymPy expression (or a tuple of them)."""
        return self._cached("expr", self._expr_fn)

    def enclose(self, *args: Any, prec: int = 128, **kwargs: Any) -> Any:
        """Arb balls (``flint.arb``; an object array for array input) guaranteed to contain
        the exact value of the derived closed form at the given inputs (floats taken
        exactly), computed at ``prec`` bits or more: the working precision is raised until
        the relative radius is <= 2^(8 - prec) (cancellation costs bits), up to 16 prec."""
        raise NotEnclosable(f"{self.name} is not a closed form built from one derived SymPy "
                            "expression: it has no .enclose (use .mpmath or the claim's check)")

    def _finish(self, out: Any) -> Any:
        """Apply an active :func:`perturbed_output` (identity otherwise)."""
        factor = _OUTPUT_FACTORS.get(self.name)
        return out if factor is None else _scaled(out, factor)

    @property
    def latex(self) -> str:
        e = self.expr
        return ", ".join(sp.latex(v) for v in e) if isinstance(e, tuple) else sp.latex(e)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} (claim {self.claim})>"


def enclose_grid(fn: Callable[..., Any], args: tuple, prec: int) -> Any:
    """Balls of ``fn`` on broadcast float arguments (taken exactly); the working precision
    is raised until the relative radius is <= 2^(8 - prec) (up to 16 prec bits)."""
    from verify import certify

    def one(*v: float) -> Any:
        return certify.enclose_to(lambda: fn(*v), 2.0 ** (8 - prec), prec=prec, max_prec=16 * prec)
    if all(np.ndim(v) == 0 for v in args):
        return one(*(float(v) for v in args))
    b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in args))
    out = np.empty(b[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = one(*(float(v[idx]) for v in b))
    return out


class DerivedFunction(_Derived):
    """A verified formula whose evaluation is hand-vectorized numpy code ``impl`` (it
    validates its own input) rather than one lambdified expression; it still carries the
    derived expression(s) it is checked against, and optionally an ``mpmath`` variant."""

    def __init__(self, name: str, claim: str, doc: str, expr_fn: Callable[[], Any],
                 impl: Callable[..., Any], mpmath: Callable[..., Any] | None = None,
                 enclose: Callable[..., Any] | None = None,
                 ulp_bound: dict[str, UlpBound] | UlpBound | None = None, entry_ns: int = 32,
                 mpmath_entry_ns: int = HIGH_PRECISION_ENTRY_NS,
                 enclose_entry_ns: int = HIGH_PRECISION_ENTRY_NS):
        super().__init__(name, claim, doc, expr_fn, signature_of=impl)
        self.entry_ns = entry_ns
        self.enclose_entry_ns = enclose_entry_ns
        self._impl = impl
        self._enclose = enclose
        self.ulp_bound = ulp_bound
        if mpmath is not None:
            self.mpmath = self._priced(mpmath, "mpmath", mpmath_entry_ns)

    def _priced(self, fn: Callable[..., Any], path: str, entry_ns: int) -> Callable[..., Any]:
        """``fn`` behind :func:`check_entries` at ``entry_ns`` per broadcast entry."""
        @functools.wraps(fn)
        def priced(*args: Any, **kwargs: Any) -> Any:
            check_entries(f"{self.name}.{path}", self._impl, args, kwargs, entry_ns)
            return fn(*args, **kwargs)
        return priced

    def enclose(self, *args: Any, prec: int = 128, **kwargs: Any) -> Any:
        if self._enclose is None:
            return super().enclose(*args, prec=prec, **kwargs)
        check_entries(f"{self.name}.enclose", self._impl, args, kwargs, self.enclose_entry_ns)
        return self._finish(self._enclose(*args, prec=check_prec(prec), **kwargs))

    enclose.__doc__ = _Derived.enclose.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        check_entries(self.name, self._impl, args, kwargs, self.entry_ns)
        return self._finish(self._impl(*args, **kwargs))


class VerifiedFormula(_Derived):
    """A formula derived by claim ``claim``.

    Parameters
    ----------
    name, claim, doc:
        Public name, claim id (e.g. ``"H1f"``), one-paragraph docstring.
    symbols:
        The SymPy symbols that are the formula's arguments, in call order.
    expr_fn:
        Returns the derived SymPy expression (called lazily, once).
    validate:
        ``validate(*args, **kwargs) -> tuple`` of validated numpy arrays (raise
        ``ValueError`` with an actionable message on bad input).
    numpy_impl:
        Optional ``numpy_impl(expr) -> callable`` building the float64 evaluator from the
        expression (default: ``lambdify(symbols, expr, ["scipy", "numpy"])``); use it to
        pick a numerically careful rewrite of the same expression.
    mpmath_validate:
        Optional validation for ``.mpmath`` and ``.enclose`` (defaults to ``validate``).
    ulp_bound:
        The stated float64 error bound (:class:`UlpBound`) of ``__call__``.
    entry_ns:
        Measured cost of one broadcast entry (ns, with a margin): a call costing more than
        a quick call is refused up front (:func:`check_entries`).
    """

    def __init__(self, name: str, claim: str, doc: str, symbols: Sequence[sp.Symbol],
                 expr_fn: Callable[[], sp.Expr], validate: Callable[..., tuple],
                 numpy_impl: Callable[[sp.Expr], Callable] | None = None,
                 mpmath_validate: Callable[..., tuple] | None = None,
                 ulp_bound: UlpBound | None = None, entry_ns: int = 32):
        super().__init__(name, claim, doc, expr_fn, signature_of=validate)
        self.entry_ns = entry_ns
        self.ulp_bound = ulp_bound
        self.symbols = tuple(symbols)
        self._validate = validate
        self._numpy_impl = numpy_impl
        self._mpmath_validate = mpmath_validate or validate

    @property
    def _numpy(self) -> Callable:
        def build() -> Callable:
            if self._numpy_impl is not None:
                return self._numpy_impl(self.expr)
            return sp.lambdify(self.symbols, self.expr, modules=["scipy", "numpy"])
        return self._cached("numpy", build)

    @property
    def _mp(self) -> Callable:
        return self._cached("mpmath", lambda: sp.lambdify(self.symbols, self.expr,
                                                          modules="mpmath"))

    def __call__(self, *args: Any, **kwargs: Any) -> np.ndarray | float:
        check_entries(self.name, self._validate, args, kwargs, self.entry_ns)
        vals = self._validate(*args, **kwargs)
        out = np.asarray(self._numpy(*vals), dtype=np.float64)
        out = np.broadcast_to(out, np.broadcast_shapes(*(np.shape(v) for v in vals))).copy()
        return self._finish(out[()] if out.ndim == 0 else out)

    def mpmath(self, *args: Any, dps: int = 30) -> Any:
        """High-precision value(s) at ``dps`` decimal digits (scalars give an ``mpf``,
        arrays an object array of ``mpf``); the arguments are taken exactly as given."""
        dps = check_dps(dps)
        check_entries(f"{self.name}.mpmath", self._validate, args, {}, HIGH_PRECISION_ENTRY_NS)
        vals = self._mpmath_validate(*args)
        with mpmath.workdps(dps):
            if all(np.ndim(v) == 0 for v in vals):
                return +self._mp(*[_mp_arg(v) for v in vals])
            b = np.broadcast_arrays(*[np.asarray(v) for v in vals])
            out = np.empty(b[0].shape, dtype=object)
            for idx in np.ndindex(out.shape):
                out[idx] = +self._mp(*[_mp_arg(v[idx]) for v in b])
            return out


    def enclose(self, *args: Any, prec: int = 128) -> Any:
        prec = check_prec(prec)
        check_entries(f"{self.name}.enclose", self._validate, args, {}, HIGH_PRECISION_ENTRY_NS)
        vals = self._mpmath_validate(*args)
        from verify import certify
        fn = self._cached("arb", lambda: certify.arb_function(self.expr, self.symbols))
        target = 2.0 ** (8 - prec)

        def one(*v: Any) -> Any:
            return certify.enclose_to(lambda: fn(*v), target, prec=prec, max_prec=16 * prec)
        if all(np.ndim(v) == 0 for v in vals):
            return self._finish(one(*[_item(v) for v in vals]))
        b = np.broadcast_arrays(*[np.asarray(v) for v in vals])
        out = np.empty(b[0].shape, dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = one(*[_item(v[idx]) for v in b])
        return self._finish(out)

    enclose.__doc__ = _Derived.enclose.__doc__


def check_prec(prec: Any) -> int:
    """Validate an Arb precision (bits)."""
    if isinstance(prec, bool) or not isinstance(prec, (int, np.integer)) or not 16 <= prec <= 8192:
        raise ValueError(f"prec (Arb working precision in bits) must be an integer in 16..8192; "
                         f"got {prec!r}")
    return int(prec)


def _item(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0) else v


def _mp_arg(v: Any) -> Any:
    v = v.item() if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0) else v
    if isinstance(v, (int, np.integer)):
        return mpmath.mpf(int(v))
    return mpmath.mpf(v)
