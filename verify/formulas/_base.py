"""Verified formulas: numpy-vectorized callables generated (``sympy.lambdify``) from the
SymPy expressions that the claims' derivations produce, each carrying its expression,
LaTeX and claim id, plus a high-precision mpmath variant."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import mpmath
import numpy as np
import sympy as sp

__all__ = ["DerivedFunction", "VerifiedFormula"]


class _Derived:
    """What every verified formula carries: ``name``, ``claim``, a docstring, and the derived
    SymPy expression(s) ``.expr`` (computed lazily, once) with their ``.latex``."""

    def __init__(self, name: str, claim: str, doc: str, expr_fn: Callable[[], Any]):
        self.__name__ = self.name = name
        self.claim = claim
        self.__doc__ = doc
        self._expr_fn = expr_fn

    @functools.cached_property
    def expr(self) -> Any:
        """The derived SymPy expression (or a tuple of them)."""
        return self._expr_fn()

    @property
    def latex(self) -> str:
        e = self.expr
        return ", ".join(sp.latex(v) for v in e) if isinstance(e, tuple) else sp.latex(e)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} (claim {self.claim})>"


class DerivedFunction(_Derived):
    """A verified formula whose evaluation is hand-vectorized numpy code ``impl`` (it
    validates its own input) rather than one lambdified expression; it still carries the
    derived expression(s) it is checked against, and optionally an ``mpmath`` variant."""

    def __init__(self, name: str, claim: str, doc: str, expr_fn: Callable[[], Any],
                 impl: Callable[..., Any], mpmath: Callable[..., Any] | None = None):
        super().__init__(name, claim, doc, expr_fn)
        self._impl = impl
        if mpmath is not None:
            self.mpmath = mpmath

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._impl(*args, **kwargs)


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
        Optional validation for ``.mpmath`` (defaults to ``validate``).
    """

    def __init__(self, name: str, claim: str, doc: str, symbols: Sequence[sp.Symbol],
                 expr_fn: Callable[[], sp.Expr], validate: Callable[..., tuple],
                 numpy_impl: Callable[[sp.Expr], Callable] | None = None,
                 mpmath_validate: Callable[..., tuple] | None = None):
        super().__init__(name, claim, doc, expr_fn)
        self.symbols = tuple(symbols)
        self._validate = validate
        self._numpy_impl = numpy_impl
        self._mpmath_validate = mpmath_validate or validate

    @functools.cached_property
    def _numpy(self) -> Callable:
        if self._numpy_impl is not None:
            return self._numpy_impl(self.expr)
        return sp.lambdify(self.symbols, self.expr, modules=["scipy", "numpy"])

    @functools.cached_property
    def _mp(self) -> Callable:
        return sp.lambdify(self.symbols, self.expr, modules="mpmath")

    def __call__(self, *args: Any, **kwargs: Any) -> np.ndarray | float:
        vals = self._validate(*args, **kwargs)
        out = np.asarray(self._numpy(*vals), dtype=np.float64)
        out = np.broadcast_to(out, np.broadcast_shapes(*(np.shape(v) for v in vals))).copy()
        return out[()] if out.ndim == 0 else out

    def mpmath(self, *args: Any, dps: int = 30) -> Any:
        """High-precision value(s) at ``dps`` decimal digits (scalars give an ``mpf``,
        arrays an object array of ``mpf``); the arguments are taken exactly as given."""
        vals = self._mpmath_validate(*args)
        with mpmath.workdps(dps):
            if all(np.ndim(v) == 0 for v in vals):
                return +self._mp(*[_mp_arg(v) for v in vals])
            b = np.broadcast_arrays(*[np.asarray(v) for v in vals])
            out = np.empty(b[0].shape, dtype=object)
            for idx in np.ndindex(out.shape):
                out[idx] = +self._mp(*[_mp_arg(v[idx]) for v in b])
            return out


def _mp_arg(v: Any) -> Any:
    v = v.item() if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0) else v
    if isinstance(v, (int, np.integer)):
        return mpmath.mpf(int(v))
    return mpmath.mpf(v)
