"""Certified enclosures (Arb ball arithmetic, python-flint): proofs at an instance, not samples.

mpmath's quadrature error estimates are heuristics; an Arb ball is guaranteed to contain
the true value.  This module gives:

- :func:`arb_function` / :func:`enclose`: a translation of a derived SymPy expression (the
  SAME object ``lambdify`` reads in :mod:`verify.formulas` and the claims) into Arb balls:
  rationals, floats (exactly), pi, E, sqrt, powers, exp/log/log1p, sin/cos/tan,
  atan/asin/acos, atan2, gamma/loggamma, the regularized incomplete Beta
  (``betainc_regularized``, Arb's rigorous ``beta_lower``), Abs, sign, Min/Max, Piecewise with ball-decided conditions (a
  condition a ball cannot decide raises :class:`UndecidableCondition`); any other node
  raises ``TypeError`` naming it;
- certified integrals of the definitions: :mod:`numerics.arb_quadrature` (re-exported:
  :func:`certified_integral` and the kernels / sphere balls);
- :func:`certified_compare`: a :class:`~verify.kit.SubCheck` that passes iff at every
  instance the closed form's ball and the definition's ball are consistent (overlap, or
  within a stated bound) with relative radius <= ``max_rel_radius``: a proof at that
  instance.  Disjoint balls are a DISPROOF (``counterexample["disproved"] = True``);
- :func:`certified_details`: the ``details["certified"]`` summary of a claim's certified
  sub-checks (``{"instances", "worst_radius", "disproved"}``) for the report.

>>> import sympy as sp
>>> k = sp.Symbol("k", positive=True)
>>> b = enclose(2 * sp.sqrt(sp.pi) * sp.gamma((k + 1) / 2) / sp.gamma(k / 2), {k: 2})
>>> b.contains(enclose(sp.pi, {}))
True
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import sympy as sp
from sympy.codegen.cfunctions import log1p as _log1p

from numerics.arb_quadrature import (UncertifiedError, UndecidableCondition, active_probability_ball,
                                     ball_cache, certified_integral, clear_ball_caches, exact_ball,
                                     flint_module, ntk_kernel_ball, positive_part_mean_ball,
                                     rf_kernel_ball, rkhs_weight_ball, second_moment_ball,
                                     working_precision)
from numerics.validation import as_float_scalar
from verify._subchecks import SubCheck

__all__ = ["UndecidableCondition", "UncertifiedError", "arb_function", "enclose", "enclose_to",
           "ball", "relative_radius", "working_precision", "ball_cache", "clear_ball_caches",
           "certified_integral", "certified_compare", "certified_details", "CertifiedInstance",
           "rf_kernel_ball", "active_probability_ball", "ntk_kernel_ball", "rkhs_weight_ball",
           "second_moment_ball", "positive_part_mean_ball", "MAX_REL_RADIUS", "exact_fraction"]

#: the relative radius below which an overlap is called a proof at an instance
MAX_REL_RADIUS = 1e-30


def ball(v: Any) -> Any:
    """An ``arb`` of a Python/NumPy number (floats exactly), a Fraction, a SymPy number,
    an mpmath ``mpf`` (exactly) or an ``arb`` (unchanged)."""
    flint = flint_module()
    if isinstance(v, (flint.arb, flint.acb)):
        return v
    if isinstance(v, sp.Basic):
        if v.free_symbols:
            raise ValueError(f"ball: {v} is not a number (free symbols {v.free_symbols})")
        return arb_function(v, ())()
    mpf_ = getattr(v, "_mpf_", None)
    if mpf_ is not None:
        return _from_mpf(mpf_)
    return exact_ball(v)


def _from_mpf(m: tuple) -> Any:
    """The exact arb of an mpmath/SymPy binary float (sign, mantissa, exponent, bits)."""
    flint = flint_module()
    sign, man, exp, _ = m
    if man == 0 and exp != 0:
        raise ValueError("ball: infinite or NaN mpf")
    v = flint.arb(int(man)) * flint.arb(2) ** int(exp) if exp >= 0 else \
        flint.arb(int(man)) / flint.arb(2) ** int(-exp)
    return -v if sign else v


def relative_radius(b: Any) -> float:
    """rad / |mid| of a ball (inf for a ball around 0 that is not exactly 0); ``b`` is a
    ``flint.arb`` or ``flint.acb`` (anything else is a TypeError: make a ball with
    :func:`ball` first)."""
    flint = flint_module()
    if not isinstance(b, (flint.arb, flint.acb)):
        raise TypeError(f"relative_radius: b must be an Arb ball (flint.arb or flint.acb; "
                        f"make one with verify.certify.ball); got {type(b).__name__} {b!r:.40}")
    rad = float(b.rad())
    mid = abs(float(b.mid()))
    if rad == 0:
        return 0.0
    return rad / mid if mid > 0 else math.inf


# ----------------------------------------------------------------- the translator
def _decide(cond: Any, what: sp.Basic) -> bool:
    """A ball comparison's verdict: True/False when certain, else UndecidableCondition."""
    if cond is True or cond is False:
        return cond
    raise UndecidableCondition(f"the condition {what} cannot be decided by the balls")


def _compare(op: type, lhs: Any, rhs: Any, node: sp.Basic) -> bool:
    flint = flint_module()
    lhs, rhs = flint.arb(lhs) if isinstance(lhs, int) else lhs, rhs
    if op is sp.StrictLessThan:
        yes, no = lhs < rhs, lhs >= rhs
    elif op is sp.LessThan:
        yes, no = lhs <= rhs, lhs > rhs
    elif op is sp.StrictGreaterThan:
        yes, no = lhs > rhs, lhs <= rhs
    elif op is sp.GreaterThan:
        yes, no = lhs >= rhs, lhs < rhs
    elif op is sp.Equality:
        yes, no = lhs == rhs, lhs != rhs
    else:  # sp.Unequality
        yes, no = lhs != rhs, lhs == rhs
    if yes:
        return True
    if no:
        return False
    raise UndecidableCondition(f"the condition {node} cannot be decided by the balls "
                               f"({lhs} vs {rhs}); raise prec or move off the boundary")


_UNARY = {sp.exp: "exp", sp.log: "log", sp.sin: "sin", sp.cos: "cos", sp.tan: "tan",
          sp.atan: "atan", sp.asin: "asin", sp.acos: "acos", sp.gamma: "gamma",
          sp.loggamma: "lgamma", sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh",
          sp.erf: "erf", sp.erfc: "erfc", _log1p: "log1p"}


def _compile_atom(e: sp.Basic, index: Mapping[sp.Symbol, int]) -> Callable[[Sequence[Any]], Any] | None:
    """Symbols, numbers and constants (None for anything else)."""
    flint = flint_module()
    if isinstance(e, sp.Symbol):
        if e not in index:
            raise ValueError(f"arb_function: free symbol {e} is not among the arguments "
                             f"{list(index)}")
        i = index[e]
        return lambda v: v[i]
    if e is sp.true or e is sp.false:
        c = bool(e)
        return lambda v: c
    if isinstance(e, sp.Integer):
        n = int(e)
        return lambda v: flint.arb(n)
    if isinstance(e, sp.Rational):
        p, q = int(e.p), int(e.q)
        return lambda v: flint.arb(p) / q
    if isinstance(e, sp.Float):
        m = e._mpf_
        return lambda v: _from_mpf(m)
    if e is sp.pi:
        return lambda v: flint.arb.pi()
    if e is sp.E:
        return lambda v: flint.arb(1).exp()
    if e is sp.EulerGamma:
        return lambda v: flint.arb.const_euler()
    return None


def _compile(e: sp.Basic, index: Mapping[sp.Symbol, int]) -> Callable[[Sequence[Any]], Any]:
    """A closure evaluating ``e`` on a tuple of balls (the values of ``index``'s symbols)."""
    flint = flint_module()
    atom = _compile_atom(e, index)
    if atom is not None:
        return atom
    if isinstance(e, (sp.Add, sp.Mul)):
        parts = [_compile(a, index) for a in e.args]
        if isinstance(e, sp.Add):
            def add(v: Sequence[Any]) -> Any:
                out = parts[0](v)
                for p in parts[1:]:
                    out = out + p(v)
                return out
            return add

        def mul(v: Sequence[Any]) -> Any:
            out = parts[0](v)
            for p in parts[1:]:
                out = out * p(v)
            return out
        return mul
    if isinstance(e, sp.Pow):
        return _compile_pow(e, index)
    for fn, method in _UNARY.items():
        if isinstance(e, fn):
            arg = _compile(e.args[0], index)
            return lambda v, m=method: getattr(arg(v), m)()
    if isinstance(e, sp.atan2):
        y, x = (_compile(a, index) for a in e.args)
        return lambda v: flint.arb.atan2(y(v), x(v))
    if isinstance(e, sp.betainc_regularized):
        return _compile_betainc(e, index)
    if isinstance(e, sp.Abs):
        arg = _compile(e.args[0], index)
        return lambda v: abs(_real(arg(v), e))
    if isinstance(e, sp.sign):
        arg = _compile(e.args[0], index)
        return lambda v: _sign(_real(arg(v), e), e)
    if isinstance(e, (sp.Min, sp.Max)):
        parts = [_compile(a, index) for a in e.args]
        method = "min" if isinstance(e, sp.Min) else "max"

        def minmax(v: Sequence[Any]) -> Any:
            out = _real(parts[0](v), e)
            for p in parts[1:]:
                out = getattr(out, method)(_real(p(v), e))
            return out
        return minmax
    return _compile_logic(e, index)


def _compile_logic(e: sp.Basic, index: Mapping[sp.Symbol, int]) -> Callable[[Sequence[Any]], Any]:
    """Piecewise (conditions decided by balls, in order), relations, And/Or/Not."""
    if isinstance(e, sp.Piecewise):
        branches = [(_compile(val, index), _compile(cond, index)) for val, cond in e.args]

        def piecewise(v: Sequence[Any]) -> Any:
            for val, cond in branches:
                if cond(v):
                    return val(v)
            raise UndecidableCondition(f"no branch of {e} holds (the Piecewise is undefined here)")
        return piecewise
    if isinstance(e, sp.core.relational.Relational):
        lhs, rhs = _compile(e.lhs, index), _compile(e.rhs, index)
        op = type(e)
        return lambda v: _compare(op, _real(lhs(v), e), _real(rhs(v), e), e)
    if isinstance(e, (sp.And, sp.Or)):
        conds = [_compile(a, index) for a in e.args]
        if isinstance(e, sp.And):
            return lambda v: all(c(v) for c in conds)
        return lambda v: any(c(v) for c in conds)
    if isinstance(e, sp.Not):
        c0 = _compile(e.args[0], index)
        return lambda v: not c0(v)
    raise TypeError(f"arb_function: unsupported SymPy node {type(e).__name__} ({e}); "
                    "add its Arb translation to verify.certify")


def _compile_pow(e: sp.Pow, index: Mapping[sp.Symbol, int]) -> Callable[[Sequence[Any]], Any]:
    flint = flint_module()
    base = _compile(e.base, index)
    ex = e.exp
    if isinstance(ex, sp.Integer):
        n = int(ex)
        return lambda v: _integer_power(base(v), n)
    if ex == sp.Rational(1, 2):
        return lambda v: base(v).sqrt()
    if ex == sp.Rational(-1, 2):
        return lambda v: base(v).rsqrt()
    if e.base is sp.E:
        arg = _compile(ex, index)
        return lambda v: arg(v).exp()
    if isinstance(ex, sp.Rational):
        p, q = int(ex.p), int(ex.q)
        return lambda v: base(v) ** (flint.arb(p) / q)
    expo = _compile(ex, index)
    return lambda v: base(v) ** expo(v)


def _compile_betainc(e: sp.Basic, index: Mapping[sp.Symbol, int]) -> Callable[[Sequence[Any]], Any]:
    """I_x2(a, b) - I_x1(a, b), the regularized incomplete Beta (SymPy's
    ``betainc_regularized(a, b, x1, x2)``), by Arb's rigorous ``beta_lower`` (real only)."""
    a, b, x1, x2 = (_compile(arg, index) for arg in e.args)
    zero_lo = e.args[2] == 0

    def lower(x: Any, v: Sequence[Any]) -> Any:
        return _real(x, e).beta_lower(_real(a(v), e), _real(b(v), e), regularized=True)

    def f(v: Sequence[Any]) -> Any:
        hi = lower(x2(v), v)
        return hi if zero_lo else hi - lower(x1(v), v)
    return f


def _integer_power(b: Any, n: int) -> Any:
    """``b ** n`` by repeated squaring: Arb's ``**`` is a real power, NaN for a ball that
    contains 0 (where ``b * b`` is a valid ball)."""
    if n < 0:
        return 1 / _integer_power(b, -n)
    flint = flint_module()
    out, sq = flint.acb(1) if isinstance(b, flint.acb) else flint.arb(1), b
    while n:
        if n & 1:
            out = out * sq
        n >>= 1
        if n:
            sq = sq * sq
    return out


def _real(b: Any, node: sp.Basic) -> Any:
    flint = flint_module()
    if isinstance(b, int):
        return flint.arb(b)
    if isinstance(b, flint.acb):
        raise TypeError(f"arb_function: {type(node).__name__} ({node}) is not analytic: it "
                        "has no complex-ball evaluation")
    return b


def _sign(b: Any, node: sp.Basic) -> Any:
    flint = flint_module()
    if b > 0:
        return flint.arb(1)
    if b < 0:
        return flint.arb(-1)
    if b.is_zero():
        return flint.arb(0)
    raise UndecidableCondition(f"the sign in {node} cannot be decided: the ball {b} contains 0")


def arb_function(expr: sp.Basic, symbols: Sequence[sp.Symbol]) -> Callable[..., Any]:
    """Compile the SymPy expression ``expr`` (a derived result) into a function of balls:
    ``f(*values)`` with one value per symbol of ``symbols`` (floats, ints, Fractions, SymPy
    numbers, mpf or arb; floats enter exactly) returns an ``arb`` ball containing the
    exact value at the working precision (see :func:`working_precision`)."""
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"arb_function: expr must be a SymPy expression; got {type(expr).__name__}")
    syms = tuple(symbols)
    for s_ in syms:
        if not isinstance(s_, sp.Symbol):
            raise TypeError(f"arb_function: symbols must be SymPy Symbols; got {s_!r}")
    missing = expr.free_symbols - set(syms)
    if missing:
        raise ValueError(f"arb_function: the expression has free symbols {sorted(map(str, missing))} "
                         f"not among the arguments {[str(s_) for s_ in syms]}")
    index = {s_: i for i, s_ in enumerate(syms)}
    body = _compile(expr, index)

    def f(*values: Any) -> Any:
        if len(values) != len(syms):
            raise TypeError(f"expected {len(syms)} values ({', '.join(map(str, syms))}); "
                            f"got {len(values)}")
        out = body(tuple(ball(v) for v in values))
        return flint_module().arb(out) if isinstance(out, int) else out
    return f


def enclose(expr: sp.Basic, values: Mapping[sp.Symbol, Any], prec: int = 128) -> Any:
    """The ball of ``expr`` at ``values`` (a mapping symbol -> number) at ``prec`` bits."""
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"enclose: expr must be a SymPy expression; got {type(expr).__name__}")
    if not isinstance(values, Mapping):
        raise TypeError(f"enclose: values must be a mapping symbol -> number (a dict); got "
                        f"{type(values).__name__}")
    syms = tuple(values)
    with working_precision(prec):
        return arb_function(expr, syms)(*(values[s_] for s_ in syms))


def enclose_to(fn: Callable[[], Any], max_rel_radius: float = MAX_REL_RADIUS,
               prec: int = 128, max_prec: int = 4096) -> Any:
    """``fn()`` evaluated at doubling working precision from ``prec`` bits until its
    relative radius is <= ``max_rel_radius`` (cancellation costs bits); raises
    :class:`UncertifiedError` beyond ``max_prec``.  An exact zero is returned as is."""
    p = int(prec)
    while True:
        with working_precision(p):
            b = fn()
        if b.is_finite() and (b.is_zero() or relative_radius(b) <= max_rel_radius):
            return b
        if p >= max_prec:
            raise UncertifiedError(f"no ball of relative radius <= {max_rel_radius:g} within "
                                   f"{max_prec} bits (last: {b})")
        p = min(2 * p, max_prec)


# ------------------------------------------------------------------ the comparator
class CertifiedInstance:
    """One certified comparison: the closed form's ball ``value``, the definition's ball
    ``reference``, a label (e.g. "(x, x') = (0.5, 0.333)") and optionally this instance's
    own ``bound`` (overriding the comparator's; e.g. a remainder term that depends on k).

    ``scale`` (a number or ball > 0) compares at the scale of the terms instead of the
    reference's own size, for closed forms that vanish or cancel (a residual that is 0, a
    jump component that is 0): the radii and ``|value - reference|`` are then read relative
    to ``scale`` (in a relative comparison)."""

    __slots__ = ("label", "value", "reference", "bound", "scale")

    def __init__(self, label: str, value: Any, reference: Any, bound: float | None = None,
                 scale: Any = None):
        self.label, self.value, self.reference = str(label), ball(value), ball(reference)
        self.scale = None
        if scale is not None:
            try:
                s_ = ball(scale)
            except (TypeError, ValueError):
                s_ = None
            if s_ is None or not (s_.is_finite() and s_ > 0):
                raise ValueError(f"CertifiedInstance: scale must be a finite number > 0; got {scale!r}")
            self.scale = s_
            self.label += f" (at the scale {float(s_.mid()):.3g})"
        if bound is not None and not (isinstance(bound, (int, float)) and math.isfinite(bound)
                                      and bound >= 0):
            raise ValueError(f"CertifiedInstance: bound must be a finite number >= 0; got {bound!r}")
        self.bound = None if bound is None else float(bound)


def certified_compare(name: str, instances: Sequence[CertifiedInstance], *,
                      max_rel_radius: float = MAX_REL_RADIUS, bound: float = 0.0,
                      relative: bool = True, reason: str) -> SubCheck:
    """A certified sub-check over ``instances`` (:class:`CertifiedInstance`).

    At each instance, with C the closed form's ball and R the reference's ball:

    - *proof*: C and R are consistent with the claim |C - R| <= bound (x |R| if
      ``relative``; ``bound = 0``: the balls overlap) and both relative radii are
      <= ``max_rel_radius``;
    - *disproof*: the lower bound of |C - R| exceeds bound (x the upper bound of |R|):
      the closed form is proven wrong there (``counterexample["disproved"] = True``).

    The sub-check passes iff every instance is a proof.  Its ``error`` is the worst
    proven upper bound of |C - R| (/ the lower bound of |R| if ``relative``; with
    per-instance bounds, rescaled to the comparator's allowance), its ``tolerance``
    ``bound`` plus 4 ``max_rel_radius`` (what the proof gives); ``reason``
    says where the balls come from.  The summary (instances, worst radius, disproved) is
    in the attribute ``certified`` (see :func:`certified_details`)."""
    if not isinstance(name, str) or not name:
        raise ValueError("certified_compare: name must be a non-empty string")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("certified_compare: reason must say where the balls come from")
    for label, v in (("max_rel_radius", max_rel_radius), ("bound", bound)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"certified_compare: {label} must be a finite number >= 0; got {v!r}")
    if not isinstance(relative, bool):
        raise TypeError(f"certified_compare: relative must be True or False; got {relative!r}")
    if not isinstance(instances, (list, tuple)):
        raise TypeError("certified_compare: instances must be a list of CertifiedInstance; "
                        f"got {type(instances).__name__}")
    insts = list(instances)
    if not insts:
        raise ValueError("certified_compare: no instances")
    for it in insts:
        if not isinstance(it, CertifiedInstance):
            raise TypeError("certified_compare: instances must be CertifiedInstance objects; "
                            f"got {type(it).__name__}")
    worst_err, worst_rad, disproof, unproven = 0.0, 0.0, None, None
    for it in insts:
        C, R = it.value, it.reference
        if it.scale is not None:
            rad = max(float(C.rad()), float(R.rad())) / float(it.scale.lower())
        else:
            rad = max(relative_radius(C), relative_radius(R)) if not (C.is_zero() and R.is_zero()) else 0.0
        diff = abs(C - R)
        size = abs(R) if it.scale is None else it.scale
        scale_lo = float(size.lower()) if relative else 1.0
        scale_hi = float(size.upper()) if relative else 1.0
        b_i = bound if it.bound is None else it.bound
        limit = b_i * scale_hi
        err = float(diff.upper()) / scale_lo if scale_lo > 0 else (0.0 if float(diff.upper()) == 0 else math.inf)
        # error shown relative to this instance's allowance (bound + 4 max_rel_radius)
        err = err / (b_i + 4 * max_rel_radius) * (bound + 4 * max_rel_radius)
        worst_err, worst_rad = max(worst_err, err), max(worst_rad, rad)
        finite = C.is_finite() and R.is_finite()
        if finite and float(diff.lower()) > limit and disproof is None:
            disproof = (it, float(diff.lower()) / (scale_hi if relative else 1.0))
        elif (not finite or rad > max_rel_radius) and unproven is None:
            unproven = (it, rad)
    counterexample = None
    if disproof is not None:
        it, gap = disproof
        counterexample = {"disproved": True, "instance": it.label,
                          "closed_form": it.value.str(20), "reference": it.reference.str(20),
                          "proven_gap": gap}
    elif unproven is not None:
        it, rad = unproven
        counterexample = {"disproved": False, "instance": it.label,
                          "relative_radius": rad, "closed_form": it.value.str(20),
                          "reference": it.reference.str(20)}
    sc = SubCheck(name, worst_err, bound + 4 * max_rel_radius, reason,
                  passed=disproof is None and unproven is None, instances=len(insts),
                  counterexample=counterexample, unit="relative" if relative else "absolute")
    sc.certified = {"instances": len(insts), "worst_radius": worst_rad,  # type: ignore[attr-defined]
                    "disproved": disproof is not None}
    return sc


def certified_details(subchecks: Sequence[SubCheck]) -> dict[str, Any]:
    """The claim-level summary of its certified sub-checks (those made by
    :func:`certified_compare`), for ``details["certified"]``: ``{"instances": total
    instances, "worst_radius": worst relative radius, "disproved": any disproof}``."""
    if not isinstance(subchecks, (list, tuple)):
        raise TypeError("certified_details: subchecks must be a list of SubCheck; got "
                        f"{type(subchecks).__name__}")
    cs = [s.certified for s in subchecks if isinstance(getattr(s, "certified", None), dict)]
    if not cs:
        raise ValueError("certified_details: subchecks holds no certified sub-check (made by "
                         "certified_compare)")
    return {"instances": int(sum(c["instances"] for c in cs)),
            "worst_radius": float(max(c["worst_radius"] for c in cs)),
            "disproved": bool(any(c["disproved"] for c in cs))}


def exact_fraction(v: Any) -> Fraction:
    """The exact rational value of a finite float or of a SymPy rational (convenience for
    exact pieces); a SymPy number that is not rational raises ValueError."""
    if isinstance(v, sp.Basic):
        if not v.is_Rational:
            raise ValueError(f"exact_fraction: {v!s:.60} is not a rational number")
        return Fraction(int(v.p), int(v.q))
    return Fraction(as_float_scalar(v, "exact_fraction: v"))
