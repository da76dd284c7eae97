"""Symbolic derivations for Hajjar & Chizat (2023), Sec. 4, Figure 2 (claim H1l): the
predictor of the reduced flow does not learn the low-dimensional structure in finite time.
SymPy only.

- :func:`curvature_at_zero`: d^2 phi~/d theta^2 at theta = 0, from the derived inner
  expectation E_R[(cR + y)_+] of H1e (derivations.hajjar_reduced.inner_expectation) and the
  second moment of S (derivations.sphere), by the chain rule in theta.
- :func:`angle_lower_bound`: the Gronwall bound theta(t) >= theta(0) exp(-int_0^t L) for
  d theta/dt >= -L(t) theta, solved by SymPy.
"""
from __future__ import annotations

import functools

import sympy as sp

from derivations.base import Derivation, Step
from derivations.hajjar import phi, theta
from derivations.hajjar_reduced import K_H, K_PERP, inner_expectation, reduced_velocity_field

__all__ = ["DERIVATIONS", "curvature_at_zero", "angle_lower_bound", "derive_h1l", "phi",
           "K_H", "K_PERP"]


@functools.lru_cache(maxsize=1)
def curvature_at_zero() -> dict:
    """phi~''(0; phi) for d_H = k_H >= 2, d - d_H = k_perp >= 1, 0 <= phi < pi/2.

    phi~(theta; phi) = E_S[I(c, y)] with I(c, y) = E_R[(cR + y)_+], c = cos theta cos phi,
    y = sin theta sin phi S.  I is C^2 near y = 0 (the density of R is continuous at 0 for
    k_H >= 2), so d^2/d theta^2 passes under E_S; at theta = 0, c' = 0, y = 0, y'' = 0:
    phi~'' = E_S[I_yy y'^2] + I_c c''.  I_yy at y = 0 is the one-sided limit y -> 0- of the
    derived d I_y/dy (the y <= 0 form), I_c = E[R_+]."""
    ie = inner_expectation()
    from derivations.sphere import derive_alpha, k, t
    al = derive_alpha()
    c, y, mean = ie.c, ie.y, ie.mean
    w = sp.Symbol("w", positive=True)
    d_iyy = sp.simplify(sp.diff(ie.inner_dy, y).subs(y, -w))
    iyy0 = sp.simplify(sp.limit(d_iyy, w, 0, "+"))
    ic0 = sp.simplify(sp.limit(ie.inner_dc.subs(y, -w), w, 0, "+"))
    s2 = sp.simplify(sp.integrate(t ** 2 * al.density, (t, -1, 1)) / al.normalizer)
    S, th = sp.Symbol("S", real=True), sp.Symbol("vartheta", real=True)
    # I near (cos phi, 0) to second order: its second theta-derivative at theta = 0 is exact
    I0, Ic, Iy, Icc, Icy, Iyy = sp.symbols("I I_c I_y I_cc I_cy I_yy", real=True)
    dc, dy = sp.cos(th) * sp.cos(phi) - sp.cos(phi), sp.sin(th) * sp.sin(phi) * S
    taylor = I0 + Ic * dc + Iy * dy + Icc * dc ** 2 / 2 + Icy * dc * dy + Iyy * dy ** 2 / 2
    chain = sp.expand(sp.diff(taylor, th, 2).subs(th, 0))
    partials = {Ic: ic0.subs(c, sp.cos(phi)), Iyy: iyy0.subs(c, sp.cos(phi))}
    chain_sub = chain.subs(partials)
    # E_S over the polynomial in S: E[S] = 0, E[S^2] = s2 at k = k_perp
    poly = sp.Poly(sp.expand(chain_sub), S)
    moments = {0: 1, 1: 0, 2: s2.subs(k, K_PERP)}
    expect = sum(coef * moments[deg] for (deg,), coef in poly.terms())
    kappa = sp.simplify(expect.subs(k, K_H).subs(mean, al.mean.subs(k, K_H)))
    return {"kappa": kappa, "chain": chain, "I_yy": iyy0, "I_c": ic0, "second_moment": s2,
            "symbols": (c, y, mean, k)}


@functools.lru_cache(maxsize=1)
def angle_lower_bound() -> dict:
    """The comparison ODE of Gronwall's lemma d theta/dt = -L(t) theta: SymPy verifies that
    theta(t) = theta(0) exp(-int_0^t L) solves it with its initial value; the Euler scheme of step eta obeys
    theta_{n+1} >= theta_n (1 - eta L_n) (no continuous bound needed)."""
    t_, s_ = sp.symbols("t s", nonnegative=True)
    L = sp.Function("L")
    th0 = sp.Symbol("theta_0", positive=True)
    sol = th0 * sp.exp(-sp.Integral(L(s_), (s_, 0, t_)))
    residual = sp.simplify(sp.diff(sol, t_) + L(t_) * sol)
    initial = sp.simplify(sol.subs(t_, 0).doit() - th0)
    if residual != 0 or initial != 0:
        raise ArithmeticError(f"Gronwall comparison solution fails: {residual}, {initial}")
    return {"solution": sol, "residual": residual}


def _velocity_linearisation() -> tuple[sp.Expr, sp.Expr]:
    """d(d theta/dt)/d theta = eps G''(theta) from the H1g field (the field depends on theta
    through G'(theta) only), and its value at theta = 0 in terms of phi~''(0; .)."""
    field = reduced_velocity_field()
    eps, c, G, dG = field["symbols"]
    ddG = sp.Symbol("g", real=True)       # g = G''(theta), named in the step's text
    return sp.diff(field["dtheta_dt"], dG) * ddG, sp.diff(field["dtheta_dt"], G)


def derive_h1l() -> Derivation:
    cur = curvature_at_zero()
    gron = angle_lower_bound()
    lin, dG_free = _velocity_linearisation()
    steps = [
        Step(r"$\tilde\phi(\theta;\varphi) = E_S[I(\cos\theta\cos\varphi,\ \sin\theta\sin\varphi\,S)]$"
             r" with $I(c, y) = E_R[(cR + y)_+]$ (H1e). At $\theta = 0$: $c' = 0$, $y = 0$, "
             r"$y'' = 0$, so by the chain rule", cur["chain"], lhs=r"\partial_\theta^2 I"),
        Step(r"with $I_{yy}(c, 0^-)$ from the derived $\partial_y I = P(R > -y/c)$ "
             r"(the density of $R$ at 0 over $c$):", cur["I_yy"], lhs=r"I_{yy}(c, 0)"),
        Step(r"and $E[S^2]$ from the coordinate density:", cur["second_moment"],
             lhs=r"E[S^2]"),
        Step(r"Hence the linearisation of $\tilde\phi$ at $\theta = 0$ ($d_H = k_H \ge 2$, "
             r"$d - d_H = k_\perp$, $\varphi < \pi/2$):", cur["kappa"],
             lhs=r"\partial_\theta^2\tilde\phi(0;\varphi)"),
        Step(r"$\tilde\phi$ is even about $\theta = 0$, so $G'(0) = 0$; the H1g field depends on "
             r"$\theta$ through $G'(\theta)$ only ($\partial\dot\theta/\partial G = $ "
             + sp.latex(dG_free) + r"), and with $g = G''(\theta)$", lin,
             lhs=r"\partial_\theta\dot\theta"),
        Step(r"so $|\dot\theta| \le L(t)\,\theta$ with $L(t) = \sup_{[0,\pi/2]}|G''_t|$ and, by "
             r"Gronwall (the comparison ODE $\dot\theta = -L\theta$ solved):", gron["solution"],
             lhs=r"\theta_j(t) \ge"),
        Step(r"No particle with $\theta_j(0) > 0$ reaches $\theta = 0$ in finite time "
             r"(uniqueness of the Lipschitz ODE). Near $0$, $\theta_j(t) \approx \theta_j(0)"
             r"\exp(\varepsilon_j\int_0^t G''_s(0)\,ds)$, $G''_s(0) = E_\varphi[(f^* - \tilde f_s)"
             r"(\varphi)\,\partial_\theta^2\tilde\phi(0;\varphi)]$."),
        Step(r"Off $H$ ($\varphi = \pi/2$): $\tilde f_t(\pi/2) = E[S_+]\int\sin\theta\,"
             r"d(\tau_t^+ - \tau_t^-)$ (H1e) while $f^*(\pi/2) = 0$; its $\tau^+$ part is at "
             r"least $E[S_+]\,\tau_t^+([0,\pi/2])\,\sin(\min_j\theta_j(t)) > 0$ at every finite "
             r"$t$, so $f = f^*$ needs an exact cancellation by $\tau^-$."),
    ]
    return Derivation(steps, {"curvature_at_zero": cur["kappa"]})


DERIVATIONS = {"H1l": derive_h1l}
