"""Agreement assertions for a user's own test suite.

``assert_agrees(actual, formula, *args, rtol=1e-10, **kwargs)`` evaluates the verified
formula's high-precision path (``formula.mpmath``) on exactly the same arguments and
raises ``AssertionError`` when ``actual`` differs by more than ``rtol`` relative, or by
more than an absolute floor set by the formula's conditioning at those arguments (the
error any correct float64 evaluation may make): ``floor = 8 u (|f| + sum_i |x_i df/dx_i|)``,
``u = 2^-53``, with the partial derivatives taken at high precision by central
differences.  The message lists the worst points.

>>> import numpy as np
>>> from verify import formulas
>>> from verify.testing import assert_agrees
>>> assert_agrees(np.pi, formulas.alpha_constant, 2)
>>> try:
...     assert_agrees(3.14, formulas.alpha_constant, 2)
... except AssertionError as e:
...     print(str(e).splitlines()[0])
alpha_constant disagrees at 1 of 1 points (rtol 1e-10)
"""
from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

__all__ = ["assert_agrees"]

_U = 2.0 ** -53
_DPS = 40


def _to_mp_array(v: Any) -> np.ndarray:
    a = np.asarray(v, dtype=object)
    return np.vectorize(lambda t: mpmath.mpf(t) if not isinstance(t, mpmath.mpf) else t,
                        otypes=[object])(a) if a.size else a


def _scalar_args(args: tuple) -> list[int]:
    """Indices of the float-valued arguments whose conditioning enters the floor."""
    out = []
    for i, a in enumerate(args):
        arr = np.asarray(a)
        if arr.dtype.kind == "f" and arr.size <= 4096:
            out.append(i)
    return out


def _reference(formula: Any, args: tuple, kwargs: dict) -> Any:
    if not hasattr(formula, "mpmath"):
        raise TypeError(f"{getattr(formula, 'name', formula)!r} has no high-precision "
                        "path (.mpmath); assert_agrees needs a verified formula")
    return formula.mpmath(*args, dps=_DPS, **kwargs)


def _condition_floor(formula: Any, args: tuple, kwargs: dict, ref: np.ndarray) -> np.ndarray:
    """8 u (|f| + sum_i |x_i df/dx_i|), elementwise over the broadcast output."""
    floor = np.abs(np.asarray(ref, dtype=object).astype(float))
    for i in _scalar_args(args):
        x = np.asarray(args[i], dtype=np.float64)
        h = mpmath.mpf(10) ** -12
        with mpmath.workdps(_DPS):
            up = list(args)
            dn = list(args)
            xs = _to_mp_array(x)
            up[i] = xs * (1 + h) if x.ndim else xs.item() * (1 + h)
            dn[i] = xs * (1 - h) if x.ndim else xs.item() * (1 - h)
            try:
                fu = np.asarray(formula.mpmath(*up, dps=_DPS, **kwargs), dtype=object)
                fd = np.asarray(formula.mpmath(*dn, dps=_DPS, **kwargs), dtype=object)
            except (ValueError, TypeError):
                continue  # a perturbed argument left the domain: no contribution
            # x df/dx = (f(x(1+h)) - f(x(1-h))) / (2h)
            sens = np.abs(np.asarray((fu - fd) / (2 * h), dtype=object).astype(float))
        floor = floor + np.broadcast_to(sens, floor.shape)
    return 8 * _U * floor


def assert_agrees(actual: Any, formula: Any, *args: Any, rtol: float = 1e-10,
                  at: Any = None, **kwargs: Any) -> None:
    """Assert that ``actual`` equals ``formula(*args, **kwargs)`` to ``rtol`` relative (or
    the conditioning floor), using the formula's high-precision path as the reference.

    For a formula that returns a function (``kernel_interpolant``), pass the evaluation
    points ``at=``; ``actual`` is then either the values there or a callable."""
    __tracebackhide__ = True  # pytest shows the caller's line and this message, not our code
    if not (isinstance(rtol, (int, float)) and np.isfinite(rtol) and 0 <= rtol < 1):
        raise ValueError(f"rtol must be a finite float in [0, 1); got {rtol!r}")
    name = getattr(formula, "name", getattr(formula, "__name__", repr(formula)))
    ref = _reference(formula, args, kwargs)
    if callable(ref) and not isinstance(ref, (np.ndarray, mpmath.mpf)):
        if at is None:
            raise ValueError(f"{name} returns a function: pass the evaluation points at=...")
        pts = np.asarray(at, dtype=np.float64)
        act = np.asarray(actual(pts) if callable(actual) else actual, dtype=np.float64)
        refv = np.asarray(ref(pts), dtype=object)
        refv = refv.astype(float) if refv.dtype == object else refv.astype(float)
        floor = 64 * _U * np.max(np.abs(refv)) * np.ones_like(refv)
        points = pts
    else:
        if at is not None:
            raise ValueError(f"{name} returns values, not a function: drop at=")
        refo = np.asarray(ref, dtype=object)
        refv = refo.astype(float)
        act = np.asarray(actual, dtype=np.float64)
        floor = _condition_floor(formula, args, kwargs, refo)
        points = np.broadcast_arrays(*[np.asarray(a) for a in args
                                       if np.asarray(a).dtype.kind in "fiu"]) if args else []
    try:
        act, refv, floor = np.broadcast_arrays(act, refv, floor)
    except ValueError:
        raise AssertionError(f"{name}: actual has shape {np.shape(actual)}, the formula "
                             f"gives {np.shape(refv)}") from None
    if not np.all(np.isfinite(act)):
        bad = int(np.sum(~np.isfinite(act)))
        raise AssertionError(f"{name}: actual has {bad} non-finite value(s)")
    err = np.abs(act - refv)
    tol = np.maximum(rtol * np.abs(refv), floor)
    fail = err > tol
    if fail.any():
        ratio = np.where(fail, err / np.where(tol > 0, tol, np.finfo(float).tiny), 0.0)
        worst = np.argsort(ratio, axis=None)[::-1][:5]
        lines = [f"{name} disagrees at {int(fail.sum())} of {fail.size} points (rtol {rtol:g})"]
        for flat in worst:
            if not fail.flat[flat]:
                break
            idx = np.unravel_index(flat, fail.shape)
            where = ""
            if isinstance(points, np.ndarray) and points.size:
                where = f"x={float(points.reshape(-1)[flat % points.size])!r} "
            elif points:
                where = "args=(" + ", ".join(f"{np.asarray(p)[idx].item()!r}" for p in points) + ") "
            lines.append(f"  {where}actual={float(act[idx])!r} expected={float(refv[idx])!r} "
                         f"|diff|={err[idx]:.3g} > tol={tol[idx]:.3g}")
        raise AssertionError("\n".join(lines))
