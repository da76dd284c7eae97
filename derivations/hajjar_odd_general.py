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

from functools import lru_cache
from typing import Callable

import sympy as sp

from derivations import hajjar as dh
from derivations import sphere
from derivations.base import Derivation, Step
from derivations.hajjar_reduced import flow_time_per_step

__all__ = ["DERIVATIONS", "derive_h1j", "derive_h1m", "initial_moments", "COEFFICIENTS",
           "DIMENSIONS", "d_dim"]

#: the input dimension of H1m's initial law
d_dim = sp.Symbol("d", positive=True, integer=True)

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


@lru_cache(maxsize=1)
def _solved_coefficients() -> dict[str, sp.Expr]:
    k = {name: sp.Symbol(name) for name in COEFFICIENTS}
    sols = [_match(n, k) for n in DIMENSIONS]
    if any(s != sols[0] for s in sols):
        raise ArithmeticError(f"H1j: the coefficients depend on the dimension: {sols}")
    return {name: sols[0][k[name]] for name in COEFFICIENTS}


def derive_h1j() -> Derivation:
    k = {name: sp.Symbol(name) for name in COEFFICIENTS}
    coef = _solved_coefficients()
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


def initial_moments() -> dict[str, sp.Expr]:
    """(w_0, M_0, A_0) of the product law a = +-1 (probability 1/2 each) independent of
    b ~ Unif(S^{d-1}), from the law: w_0 = E[a] E[b_i] / 2 (every coordinate i),
    E[b_i^2] = int t^2 p(t) / int p(t) with p the coordinate density of the sphere
    (derivations.sphere), E[b_i b_j] = 0 for i != j (the law is invariant under b_i -> -b_i,
    which flips the sign of b_i b_j), A_0 = E[a^2]."""
    t, k = sphere.t, sphere.k
    dens = sphere.coordinate_density()[2]
    n = sp.Symbol("n", positive=True)  # n = k - 1 > 0 keeps the integrals unconditional
    dn = dens.subs(k, n + 1)
    second = sp.gammasimp(sp.hyperexpand(sp.integrate(t ** 2 * dn, (t, -1, 1)))
                          / sp.hyperexpand(sp.integrate(dn, (t, -1, 1))))
    second = sp.simplify(second.subs(n, d_dim - 1))
    if sp.simplify(d_dim * second - 1) != 0:
        raise ArithmeticError(f"H1m: trace E[b b^T] = d * {second} is not |b|^2 = 1")
    signs = {sp.Integer(1): sp.Rational(1, 2), sp.Integer(-1): sp.Rational(1, 2)}
    mean_a = sum(p * v for v, p in signs.items())
    mean_b = sp.integrate(t * dn, (t, -1, 1)) / sp.integrate(dn, (t, -1, 1))
    return {"w_0": sp.simplify(mean_a * mean_b / 2), "M_0_diagonal": second,
            "M_0_off_diagonal": sp.Integer(0), "A_0": sum(p * v ** 2 for v, p in signs.items())}


def derive_h1m() -> Derivation:
    coef = _solved_coefficients()
    ini = initial_moments()
    ts = flow_time_per_step()
    if ts["agree"] != 0:
        raise ArithmeticError("H1m: a gradient step moves a and b by different flow times")
    return Derivation(steps=[
        Step("Width $m$ on the sample: $L = \\frac12 E_n[(f - y)^2]$ is a mean of the pointwise "
             "loss, so a gradient step of learning rate $\\eta$ covers the mean-field flow "
             "time of the pointwise loss (the same for $a_j$ and $b_j$):", ts["per_step"],
             lhs="\\Delta t"),
        Step("The product law ($a = \\pm1$ with probability 1/2, independent of "
             "$b\\sim\\mathrm{Unif}(S^{d-1})$) is invariant under $(a, b)\\mapsto(-a, -b)$, so "
             "the mean-field flow from it stays invariant (Prop. 2.1), its predictor is "
             "$w_t\\cdot x$ and its moments follow the closed moment ODE of H1j:",
             sp.Tuple(*[sp.Eq(sp.Symbol(name), coef[name]) for name in COEFFICIENTS])),
        Step("Its initial moments, from the law ($E[b_i^2]$ by the coordinate density of the "
             "sphere, $E[b_i b_j] = 0$ by the reflection $b_i\\mapsto -b_i$, "
             "$w_0 = E[a]E[b]/2$):",
             sp.Tuple(sp.Eq(sp.Symbol("w_{0i}"), ini["w_0"]),
                      sp.Eq(sp.Symbol("M_{0ii}"), ini["M_0_diagonal"]),
                      sp.Eq(sp.Symbol("M_{0ij}"), ini["M_0_off_diagonal"]),
                      sp.Eq(sp.Symbol("A_0"), ini["A_0"]))),
        Step("The limit of the width-$m$ network from $m$ i.i.d. draws of the law is "
             "$f(\\mu_t; x) = w_t\\cdot x$, $(w_t, M_t, A_t)$ the solution of this ODE; the "
             "i.i.d. draws are invariant only in law, so $f_m - f(\\mu_t) = O(m^{-1/2})$ on a "
             "fixed horizon."),
    ], results={**{name: coef[name] for name in COEFFICIENTS},
                "flow_time_per_step": ts["per_step"], **ini})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"H1j": derive_h1j, "H1m": derive_h1m}
