"""One-sided Taylor coefficients of a derived piecewise-analytic SymPy expression, proven
in Arb (python-flint): the kinks of W3d and the cubic sections of W3b (Williams et al.,
NeurIPS 2019, Sec. 4).

At a kink x0 of f(x) = expr(x, ...) the derivative from the right is the derivative of
the branch active on (x0, x0 + delta).  :func:`one_sided_taylor` evaluates ``expr`` on the
germ x = x0 + side t, t -> 0+, as an ``arb_series`` in t: every branch choice (Abs, Min,
Max, a Piecewise condition, the quadrant of atan2) is decided by the sign of the GERM of
its argument, the first coefficient whose ball excludes 0 (a coefficient that is an
exact zero is skipped; a coefficient whose ball contains 0 and is not exactly 0 raises
:class:`UndecidableCondition`).  A decided germ sign holds on a whole one-sided
neighbourhood, so the returned coefficients are those of the active analytic branch:
rigorous enclosures of f^(k)(x0 side) / k! times side^k.
"""
from __future__ import annotations

from typing import Any, Mapping

import sympy as sp

from numerics.arb_quadrature import UndecidableCondition, flint_module
from verify import certify

__all__ = ["one_sided_taylor", "one_sided_derivative_jump"]

#: extra series terms kept for the sign decisions beyond the requested order
_GUARD_TERMS = 3

_UNARY = {sp.exp: "exp", sp.log: "log", sp.sin: "sin", sp.cos: "cos", sp.atan: "atan"}


class _Germ:
    """A value on the one-sided neighbourhood: its series in t and whether it depends on t."""
    __slots__ = ("series", "varies")

    def __init__(self, series: Any, varies: bool):
        self.series, self.varies = series, varies


def _germ_sign(g: _Germ, node: sp.Basic) -> int:
    """The sign of the germ for t -> 0+: of its first coefficient whose ball excludes 0."""
    for c in g.series.coeffs():
        if c.is_zero():
            continue
        if c > 0:
            return 1
        if c < 0:
            return -1
        raise UndecidableCondition(f"the sign of {node} near the point cannot be decided: the "
                                   f"coefficient ball {c} contains 0")
    if not g.varies:
        return 0
    raise UndecidableCondition(f"the sign of {node} near the point cannot be decided: every "
                               "computed coefficient is 0 (raise the order)")


def _difference_sign(lhs: _Germ, rhs: _Germ, node: sp.Basic) -> int:
    return _germ_sign(_Germ(lhs.series - rhs.series, lhs.varies or rhs.varies), node)


_RELATIONS = {sp.StrictLessThan: lambda s: s < 0, sp.LessThan: lambda s: s <= 0,
              sp.StrictGreaterThan: lambda s: s > 0, sp.GreaterThan: lambda s: s >= 0,
              sp.Eq: lambda s: s == 0, sp.Ne: lambda s: s != 0}


def _atan2(y: _Germ, x: _Germ, node: sp.Basic) -> Any:
    """atan2 on the germ: atan(y/x) plus the quadrant's multiple of pi, or pi/2 sign(y) -
    atan(x/y) where x vanishes at the point."""
    flint = flint_module()
    sx = _germ_sign(x, node)
    if sx > 0:
        return (y.series / x.series).atan()
    sy = _germ_sign(y, node)
    if sx < 0 and sy != 0:
        return (y.series / x.series).atan() + sy * flint.arb.pi()
    if sy != 0:
        return sy * flint.arb.pi() / 2 - (x.series / y.series).atan()
    raise UndecidableCondition(f"{node}: atan2 of a germ with x <= 0 and y = 0")


def _condition(e: sp.Basic, env: Mapping[sp.Symbol, _Germ], length: int) -> bool:
    """A Piecewise condition on the germ (decided for every small t > 0)."""
    if e is sp.true or e is sp.false:
        return bool(e)
    if isinstance(e, sp.core.relational.Relational) and type(e) in _RELATIONS:
        return _RELATIONS[type(e)](_difference_sign(_evaluate(e.lhs, env, length),
                                                    _evaluate(e.rhs, env, length), e))
    if isinstance(e, (sp.And, sp.Or)):
        vals = (_condition(a, env, length) for a in e.args)
        return all(vals) if isinstance(e, sp.And) else any(vals)
    if isinstance(e, sp.Not):
        return not _condition(e.args[0], env, length)
    raise TypeError(f"one_sided_taylor: unsupported condition {type(e).__name__} ({e})")


def _evaluate(e: sp.Basic, env: Mapping[sp.Symbol, _Germ], length: int) -> _Germ:
    """``e`` on the germ (its series in t, and whether the selected branch depends on t)."""
    flint = flint_module()
    if isinstance(e, sp.Symbol):
        if e not in env:
            raise ValueError(f"one_sided_taylor: the symbol {e} has no value")
        return env[e]
    if e.is_Number or e in (sp.pi, sp.E):
        return _Germ(flint.arb_series([certify.arb_function(e, ())()], prec=length), False)
    if isinstance(e, (sp.Add, sp.Mul)):
        parts = [_evaluate(a, env, length) for a in e.args]
        out = parts[0].series
        for g in parts[1:]:
            out = out + g.series if isinstance(e, sp.Add) else out * g.series
        return _Germ(out, any(g.varies for g in parts))
    if isinstance(e, sp.Pow):
        base, ex = _evaluate(e.base, env, length), _evaluate(e.exp, env, length)
        if e.exp.is_Integer:
            out = base.series ** int(e.exp)
        elif e.exp == sp.Rational(1, 2):
            out = base.series.sqrt()
        else:
            out = (ex.series * base.series.log()).exp()
        return _Germ(out, base.varies or ex.varies)
    for fn, method in _UNARY.items():
        if isinstance(e, fn):
            g = _evaluate(e.args[0], env, length)
            return _Germ(getattr(g.series, method)(), g.varies)
    if isinstance(e, sp.Abs):
        g = _evaluate(e.args[0], env, length)
        return _Germ(g.series * _germ_sign(g, e), g.varies)
    if isinstance(e, (sp.Min, sp.Max)):
        best = _evaluate(e.args[0], env, length)
        for a in e.args[1:]:
            g = _evaluate(a, env, length)
            s = _difference_sign(g, best, e)
            if (s < 0) if isinstance(e, sp.Min) else (s > 0):
                best = g
        return best
    if isinstance(e, sp.atan2):
        y, x = (_evaluate(a, env, length) for a in e.args)
        return _Germ(_atan2(y, x, e), y.varies or x.varies)
    if isinstance(e, sp.Piecewise):
        for val, cond in e.args:
            if _condition(cond, env, length):
                return _evaluate(val, env, length)
        raise UndecidableCondition(f"no branch of {e} holds near the point")
    raise TypeError(f"one_sided_taylor: unsupported SymPy node {type(e).__name__} ({e})")


def one_sided_taylor(expr: sp.Expr, values: Mapping[sp.Symbol, Any], variable: sp.Symbol,
                     side: int, order: int = 1, prec: int = 128) -> list[Any]:
    """Arb balls of f^(k)(x0 side) / k!, k = 0..order, for f(x) = ``expr`` with
    ``variable`` = x near x0 = ``values[variable]`` and the other symbols at ``values``
    (numbers: floats exactly), from the side ``side`` (+1: x > x0, -1: x < x0)."""
    if not isinstance(expr, sp.Basic):
        raise TypeError(f"one_sided_taylor: expr must be a SymPy expression; got {type(expr).__name__}")
    if side not in (1, -1) or isinstance(side, bool):
        raise ValueError(f"one_sided_taylor: side must be +1 (from the right) or -1 (from the left); got {side!r}")
    if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order <= 20:
        raise ValueError(f"one_sided_taylor: order must be an integer in 0..20; got {order!r}")
    if variable not in values:
        raise ValueError(f"one_sided_taylor: values must give the point x0 of {variable}")
    flint = flint_module()
    length = order + 1 + _GUARD_TERMS
    with certify.working_precision(prec):
        env = {s: _Germ(flint.arb_series([certify.ball(v)] + ([side] if s == variable else []), prec=length),
                        s == variable) for s, v in values.items()}
        out = _evaluate(expr, env, length).series
        coeffs = list(out.coeffs()) + [flint.arb(0)] * length
        return [coeffs[k] * side ** k for k in range(order + 1)]


def one_sided_derivative_jump(expr: sp.Expr, values: Mapping[sp.Symbol, Any], variable: sp.Symbol,
                              prec: int = 128) -> Any:
    """The Arb ball of f'(x0+) - f'(x0-) of f(x) = ``expr`` (see :func:`one_sided_taylor`)."""
    right = one_sided_taylor(expr, values, variable, 1, 1, prec)
    left = one_sided_taylor(expr, values, variable, -1, 1, prec)
    with certify.working_precision(prec):
        return right[1] - left[1]

