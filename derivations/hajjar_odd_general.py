"""Hajjar & Chizat (2023), Thm 3.2 in general form (claim H1j): odd target, a data law
symmetric under x -> -x with any second moment Sigma = E[x x^T], and an initialization
invariant under (a, b) -> (-a, -b) with |a| = |b| (the product law a = +-1,
b ~ Unif(S^{d-1}) of docs/conventions.md section 2).

The moment ODE of a pair-closed measure is derived component by component from the particle
velocities (``derivations.hajjar.odd_target_dynamics``, no isotropy assumed: it is written
in g = E[f* x] - Sigma w).  Here it is matched, in dimensions 2, 3 and 4, with the
dimension-free vector form

    dw/dt = (k_wA A I + k_wM M) g,   dM/dt = k_M (g w^T + w g^T),   dA/dt = k_A w.g,

w = 1/2 int a b dmu, M = int b b^T dmu, A = int a^2 dmu.  The coefficients are solved for
(one solution in every dimension, zero residual), and g = 0 <=> w = Sigma^-1 E[f* x] = w*
(the best linear approximator) is the only rest point when k_wA A I + k_wM M is positive
definite.  Near w* the error e = w - w* obeys e' = -J e, J = (k_wA A I + k_wM M) Sigma:
the asymptotic rate is the smallest eigenvalue of J (real and positive: J is similar to a
symmetric positive definite matrix)."""
from __future__ import annotations

from typing import Callable

import sympy as sp

from derivations import hajjar as dh
from derivations.base import Derivation, Step

__all__ = ["DERIVATIONS", "derive_h1j", "COEFFICIENTS", "DIMENSIONS"]

#: the coefficients of the vector form, in the order of the results
COEFFICIENTS = ("k_wA", "k_wM", "k_M", "k_A")
#: the dimensions in which the component ODE is matched with the vector form
DIMENSIONS = (2, 3, 4)


def _vector_form(n: int, k: dict[str, sp.Symbol]) -> tuple[sp.Matrix, sp.Matrix, sp.Expr]:
    w, M, A, g = dh.moment_symbols(n)
    w, g = sp.Matrix(w), sp.Matrix(g)
    return ((k["k_wA"] * A * sp.eye(n) + k["k_wM"] * M) * g,
            k["k_M"] * (g * w.T + w * g.T), k["k_A"] * (w.T * g)[0, 0])


def _match(n: int, k: dict[str, sp.Symbol]) -> dict[sp.Symbol, sp.Expr]:
    """The coefficients for which the vector form equals the component ODE in dimension n."""
    der = dh.odd_target_dynamics(n)
    fw, fM, fA = _vector_form(n, k)
    w, M, A, g = dh.moment_symbols(n)
    gens = list(w) + list(M.free_symbols) + [A] + list(g)
    eqs = []
    for lhs, rhs in zip(list(der.ode_w) + list(der.ode_M) + [der.ode_A],
                        list(fw) + list(fM) + [fA]):
        eqs += sp.Poly(sp.expand(lhs - rhs), *gens).coeffs()
    sol = sp.solve(eqs, list(k.values()), dict=True)
    if len(sol) != 1 or set(sol[0]) != set(k.values()):
        raise ArithmeticError(f"H1j: the vector form does not fit the moment ODE in dimension {n}")
    return sol[0]


def derive_h1j() -> Derivation:
    k = {name: sp.Symbol(name) for name in COEFFICIENTS}
    sols = [_match(n, k) for n in DIMENSIONS]
    if any(s != sols[0] for s in sols):
        raise ArithmeticError(f"H1j: the coefficients depend on the dimension: {sols}")
    coef = {name: sols[0][k[name]] for name in COEFFICIENTS}
    n = 2
    w, M, A, g = dh.moment_symbols(n)
    fw, fM, fA = _vector_form(n, {name: coef[name] for name in COEFFICIENTS})
    Sig = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"Sigma_{min(i, j) + 1}{max(i, j) + 1}"))
    c = sp.Matrix(sp.symbols(f"c1:{n + 1}", real=True))
    gw = c - Sig * sp.Matrix(w)
    jac = -fw.subs(dict(zip(g, gw))).jacobian(list(w))
    J = (coef["k_wA"] * A * sp.eye(n) + coef["k_wM"] * M) * Sig
    if sp.simplify(jac - J) != sp.zeros(n, n):
        raise ArithmeticError("H1j: the linearization is not (k_wA A I + k_wM M) Sigma")
    return Derivation(steps=[
        Step("The moment ODE of a pair-closed measure, derived from the particle velocities "
             "in components with $g = E[f^* x] - \\Sigma w$ (no isotropy), matched in "
             f"dimensions {', '.join(map(str, DIMENSIONS))} with "
             "$\\dot w = (k_{wA} A I + k_{wM} M) g$, $\\dot M = k_M (g w^T + w g^T)$, "
             "$\\dot A = k_A\\, w\\cdot g$ (zero residual, one solution):",
             sp.Tuple(*[sp.Eq(k[name], coef[name]) for name in COEFFICIENTS])),
        Step("In dimension 2:", fw, lhs="\\dot w"),
        Step("$g = 0$ iff $w = \\Sigma^{-1}E[f^* x] = w^*$, the best linear approximator, "
             "when $k_{wA} A I + k_{wM} M \\succ 0$; near $w^*$, $\\dot e = -J e$ with",
             J, lhs="J"),
    ], results={name: coef[name] for name in COEFFICIENTS})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"H1j": derive_h1j}
