"""Hajjar & Chizat (2023), Prop. 2.1 for any activation (claim H1k).

For f(x) = int a sigma(b.x) dmu(a, b), an orthogonal T with T#rho = rho and f* o T = f*:
if mu_t is invariant under (a, b) -> (a, T b) then f(mu_t; T x) = f(mu_t; x), the residual
r = f - f* is T-invariant, and the particle velocity v = (v_a, v_b),
v_a(a, b) = -E[r(x) sigma(b.x)], v_b(a, b) = -a E[r(x) sigma'(b.x) x], is equivariant:
v(a, T b) = (v_a(a, b), T v_b(a, b)); so the flow keeps mu_t invariant (the change of
variables x = T x' in the expectation).  Derived here for a generic sigma (an undefined
SymPy function, its derivative another) on an orbit sample {x, T x, ..., T^{q-1} x} with
one residual, for a rotation by 2 pi/3 and a reflection in the plane."""
from __future__ import annotations

from typing import Callable

import sympy as sp

from derivations.base import Derivation, Step

__all__ = ["DERIVATIONS", "derive_h1k", "TRANSFORMS"]

#: the plane transformations of the derivation: a rotation by 2 pi/3 and a reflection
TRANSFORMS = {"rotation 2pi/3": sp.Matrix([[sp.Rational(-1, 2), -sp.sqrt(3) / 2],
                                           [sp.sqrt(3) / 2, sp.Rational(-1, 2)]]),
              "reflection x1 -> -x1": sp.Matrix([[-1, 0], [0, 1]])}


def _order(T: sp.Matrix) -> int:
    P, q = T, 1
    while sp.simplify(P - sp.eye(2)) != sp.zeros(2, 2):
        P, q = sp.simplify(P * T), q + 1
    return q


def _residuals(T: sp.Matrix) -> tuple[sp.Expr, sp.Matrix, sp.Expr]:
    """(pre-activation change, velocity equivariance residual (v_a, v_b), asymmetry of f)."""
    sigma, dsigma = sp.Function("sigma"), sp.Function("sigma_prime")
    a, r = sp.symbols("a r", real=True)
    b = sp.Matrix(sp.symbols("b1 b2", real=True))
    x = sp.Matrix(sp.symbols("x1 x2", real=True))
    orbit = [T ** k * x for k in range(_order(T))]

    def dot(u, v):
        return sp.expand((u.T * v)[0, 0])

    def velocity(bb):
        va = -sum(r * sigma(dot(bb, xk)) for xk in orbit)
        vb = -sum((a * r * dsigma(dot(bb, xk)) * xk for xk in orbit), sp.zeros(2, 1))
        return va, vb
    va, vb = velocity(b)
    va_T, vb_T = velocity(T * b)
    res = sp.Matrix([va_T - va, *(vb_T - T * vb)]).applyfunc(lambda e: sp.simplify(
        sp.expand(e, deep=True)))
    pre = sp.simplify(dot(T * b, T * x) - dot(b, x))
    # f at T x from the particle set {(a, T^k b)}: the same terms as f at x, reordered
    cl = [T ** k * b for k in range(len(orbit))]
    asym = sp.simplify(sp.expand(sum(a * sigma(dot(bk, T * x)) for bk in cl)
                                 - sum(a * sigma(dot(bk, x)) for bk in cl), deep=True))
    return pre, res, asym


def derive_h1k() -> Derivation:
    steps, pre_all, vel_all, asym_all = [], [], [], []
    for name, T in TRANSFORMS.items():
        pre, res, asym = _residuals(T)
        steps.append(Step(f"{name}: $(Tb)\\cdot(Tx) - b\\cdot x$, $v(a, Tb) - (v_a, T v_b)(a, b)$ "
                          "on the orbit sample (generic $\\sigma$), and $f(Tx) - f(x)$ for the "
                          "closed particle set:", sp.Tuple(pre, *res, asym)))
        pre_all.append(pre)
        vel_all += list(res)
        asym_all.append(asym)
    if any(e != 0 for e in pre_all + vel_all + asym_all):
        raise ArithmeticError("H1k: an equivariance residual is not zero")
    return Derivation(steps=steps + [Step(
        "All residuals vanish for every sigma: the flow keeps an invariant measure invariant "
        "and f(mu_t) stays T-invariant.")],
        results={"preactivation": tuple(pre_all), "velocity_equivariance": tuple(vel_all),
                 "asymmetry": asym_all[0]})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"H1k": derive_h1k}
