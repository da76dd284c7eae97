"""Mean-field dynamics of shallow univariate ReLU networks (Williams et al. 2019,
claims W2a..W2i; conventions docs/conventions.md, section 1): canonical map and its fibres, the
invariant delta, the metric relating the full and the reduced flow, the potential and its
radial/angular components, the jump at a region boundary, the tangent kernel of the
residual ODE and the attractor/repulsor condition.

Everything is derived with SymPy from the definitions; functions return SymPy objects
(dicts of named results) and never use numpy.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import sympy as sp

from derivations.base import Derivation, Step

__all__ = ["a", "b", "c", "x", "xk", "r", "theta", "delta", "rho", "nu", "alpha", "eta",
           "g_a", "g_b", "g_c", "s_j", "s_k", "x_slide", "W2H_SYMBOLS",
           "relu", "canonical_map", "derive_W2a", "derive_W2b", "derive_W2c",
           "derive_W2d", "derive_W2e", "derive_W2f", "derive_W2g", "derive_W2g_canonical",
           "derive_W2h", "derive_W2i",
           "m_width", "DERIVATIONS"]

a, b, c = sp.symbols("a b c", real=True)
x, xk = sp.symbols("x x_k", real=True)
r = sp.Symbol("r", real=True)
theta = sp.Symbol("theta", real=True)
delta = sp.Symbol("delta", real=True)
rho = sp.Symbol("rho", real=True)
nu = sp.Symbol("nu", positive=True)      # |(a, b)|
k = sp.Symbol("k", positive=True)        # rescaling factor
alpha = sp.Symbol("alpha", positive=True)
u = sp.Symbol("u", real=True)
_p = sp.Symbol("p", positive=True)
eta = sp.Symbol("eta", positive=True)
g_a, g_b, g_c = sp.symbols("g_a g_b g_c", real=True)
s_j, s_k = sp.symbols("s_j s_k", nonnegative=True)   # activation indicators in {0, 1}
x_slide = sp.Symbol("x_s", real=True)                 # sample whose line a neuron slides on


def relu(z: sp.Expr) -> sp.Expr:
    return sp.Max(z, 0)


def lifted(xx: sp.Expr) -> sp.Matrix:
    """x~ = (x, -1) (docs/conventions.md, section 1)."""
    return sp.Matrix([xx, -1])


def d(th: sp.Expr) -> sp.Matrix:
    return sp.Matrix([sp.cos(th), sp.sin(th)])


def t_vec(th: sp.Expr) -> sp.Matrix:
    """Unit tangent t(theta) = d(theta)^perp = d'(theta)."""
    return sp.diff(d(th), th)


def canonical_map(aa=a, bb=b, cc=c) -> tuple[sp.Expr, sp.Expr]:
    """pi(a, b, c) = (c |(a, b)|, atan2(b, a)) (alpha = m)."""
    return cc * sp.sqrt(aa**2 + bb**2), sp.atan2(bb, aa)


def _zero_on_both_signs(expr: sp.Expr, var: sp.Symbol) -> bool:
    """expr(var) == 0 for var > 0, var < 0 and var = 0 (case split of Max/Heaviside)."""
    return all(sp.simplify(expr.subs(var, v)) == 0 for v in (_p, -_p, 0))


# ------------------------------------------------------------------ W2a
@lru_cache(maxsize=None)
def derive_W2a() -> dict:
    r_expr, th_expr = canonical_map()
    # pi(z) reproduces f_z: write (a, b) = nu d(theta), nu > 0
    th = sp.Symbol("theta", real=True)
    neuron_full = c * relu(nu * sp.cos(th) * x - nu * sp.sin(th))
    neuron_canon = (c * nu) * relu((lifted(x).T * d(th))[0])
    diff_f = sp.simplify(sp.Max(nu * u, 0) - nu * sp.Max(u, 0))  # positive homogeneity
    homog_ok = _zero_on_both_signs(sp.Max(nu * u, 0) - nu * sp.Max(u, 0), u)
    # express both in u = <x~, d(theta)> (sin(theta) = x cos(theta) - u) and split on sign(u)
    reproduce = (neuron_full - neuron_canon).subs(sp.sin(th), x * sp.cos(th) - u)
    reproduce = reproduce.replace(lambda e: isinstance(e, sp.Max), lambda e: sp.Max(*[sp.expand(q) for q in e.args]))
    reproduce_ok = _zero_on_both_signs(reproduce, u)
    # (a, b) is recovered from (|(a,b)|, theta): |(a,b)| d(atan2(b, a)) = (a, b)
    recover = sp.simplify(sp.sqrt(a**2 + b**2) * d(th_expr) - sp.Matrix([a, b]))
    # fibres: pi(k a, k b, c / k) = pi(a, b, c) for k > 0 ...
    r_k, th_k = canonical_map(k * a, k * b, c / k)
    inv_r = sp.simplify(r_k - r_expr)
    inv_th = sp.simplify(d(th_k) - d(th_expr))
    # ... and conversely: pi(a', b', c') = (r, theta) forces (a', b') = nu' d(theta),
    # c' = r / nu', i.e. (a', b', c') = (k a, k b, c / k) with k = nu' / |(a, b)|
    nu1 = sp.Symbol("nu'", positive=True)
    c1 = sp.Symbol("c'", real=True)
    c1_sol = sp.solve(sp.Eq(c1 * nu1, c * nu), c1)[0]
    k_sol = nu1 / nu
    fibre = sp.simplify(sp.Matrix([nu1 * sp.cos(th), nu1 * sp.sin(th), c1_sol])
                        - sp.Matrix([k_sol * nu * sp.cos(th), k_sol * nu * sp.sin(th), c / k_sol]))
    # the invariant selects one point of the fibre: c^2 - nu^2 = delta, c nu = r
    nu2 = sp.Symbol("nu2", positive=True)
    sols = sp.solve(sp.Eq(r**2 / nu2 - nu2, delta), nu2)
    D = sp.sqrt(delta**2 + 4 * r**2)
    nu2_plus = (D - delta) / 2
    # the positive root among SymPy's two: check which solution equals (D - delta)/2
    chosen = [s for s in sols if sp.simplify(s - nu2_plus) == 0]
    if not chosen:
        raise ArithmeticError(f"unexpected roots for |(a,b)|^2: {sols}")
    c2_plus = sp.simplify(r**2 / nu2_plus)
    c2_plus = sp.radsimp(c2_plus)
    c2_alt = (D + delta) / 2
    if sp.simplify(c2_plus - c2_alt) != 0:
        raise ArithmeticError("c^2 root mismatch")
    ok = (homog_ok and reproduce_ok and recover == sp.zeros(2, 1) and inv_r == 0
          and inv_th == sp.zeros(2, 1) and fibre == sp.zeros(3, 1))
    if not ok:
        raise ArithmeticError("W2a derivation failed")
    return {"r": r_expr, "theta": th_expr, "neuron_full": neuron_full,
            "neuron_canonical": neuron_canon, "homogeneity": diff_f,
            "recover": recover, "rescaled_r": r_k, "rescaled_theta": th_k,
            "c_on_fibre": c1_sol, "nu2": nu2_plus, "nu2_rationalized": 2 * r**2 / (D + delta),
            "c2": c2_alt, "c2_rationalized": 2 * r**2 / (D - delta),
            "nu2_roots": sols, "delta_def": c**2 - a**2 - b**2}


# ------------------------------------------------------------------ W2b
@lru_cache(maxsize=None)
def derive_W2b() -> dict:
    """The gradient-flow field of one neuron from L, and d(delta)/dt along it.

    L is a sum over samples, so one sample's term ell = (f(x) - y)^2 / 2 with
    f = (c (a x - b)_+ + R) / alpha (R: the other neurons) gives the per-sample field;
    the flow field of neuron i is the sum over the samples."""
    R, yv = sp.symbols("R y", real=True)
    f = (c * relu(a * x - b) + R) / alpha
    ell = (f - yv) ** 2 / 2
    raw = [-sp.diff(ell, v) for v in (a, b, c)]
    # residual rho = f - y, i.e. R = alpha (rho + y) - c (a x - b)_+
    on_rho = [sp.simplify(e.subs(R, alpha * (rho + yv) - c * relu(a * x - b))) for e in raw]
    # Euler identity of the positively homogeneous ReLU: u H(u) = max(u, 0)
    euler = u * sp.Heaviside(u) - sp.Max(u, 0)
    if not _zero_on_both_signs(euler, u):
        raise ArithmeticError("Euler identity of the ReLU")
    to_ind = lambda e: e.replace(lambda q: isinstance(q, sp.Max),  # noqa: E731
                                 lambda q: q.args[0] * sp.Heaviside(q.args[0]) if q.args[1] == 0
                                 else q.args[1] * sp.Heaviside(q.args[1]))
    field = [sp.expand(to_ind(e)).subs(sp.Heaviside(a * x - b), s_j) for e in on_rho]
    field = [sp.factor(e) for e in field]
    # d delta / dt = grad(delta) . z'  (the same per-sample term for every sample)
    ddelta = sp.expand(2 * c * field[2] - 2 * a * field[0] - 2 * b * field[1])
    ddelta = sp.simplify(ddelta)
    # one GD step z -> z - eta g changes delta by a polynomial in eta; its first-order
    # coefficient is -d(delta)/dt evaluated at z' = -g (the same contraction)
    gd_full = sp.expand((c - eta * g_c) ** 2 - (a - eta * g_a) ** 2 - (b - eta * g_b) ** 2
                        - (c**2 - a**2 - b**2))
    first = gd_full.coeff(eta, 1)
    first_on_field = sp.simplify(first.subs({g_a: -field[0], g_b: -field[1], g_c: -field[2]}))
    if first_on_field != 2 * ddelta and sp.simplify(first_on_field + 2 * ddelta) != 0:
        raise ArithmeticError("W2b: first-order GD coefficient")
    gd_change = sp.expand(gd_full.coeff(eta, 2) * eta**2) + eta * ddelta
    return {"field_a": field[0], "field_b": field[1], "field_c": field[2],
            "ddelta_dt": ddelta, "gd_change": gd_change, "raw_field": raw,
            "euler": euler, "gd_full": gd_full}


# ------------------------------------------------------------------ W2c
@lru_cache(maxsize=None)
def derive_W2c() -> dict:
    """The full flow of z mapped by pi is dw/dt = -G^{-1} grad_w L~ with G^{-1} diagonal,
    a function of (r, delta) only."""
    kappa = sp.Symbol("kappa", positive=True)  # m / alpha(m): 1 for the canonical alpha = m
    r_expr = kappa * c * sp.sqrt(a**2 + b**2)
    th_expr = sp.atan2(b, a)
    J = sp.Matrix([[sp.diff(r_expr, v) for v in (a, b, c)],
                   [sp.diff(th_expr, v) for v in (a, b, c)]])
    JJt = sp.simplify(J * J.T)  # inverse metric in (r, theta)
    ab2 = sp.Symbol("s2", positive=True)  # a^2 + b^2
    JJt_s = JJt.subs(a**2 + b**2, ab2).applyfunc(sp.simplify)
    off_diag = JJt_s[0, 1]
    # canonical case kappa = 1: express in (r, delta) on the fibre selected by delta
    w2a = derive_W2a()
    nu2 = w2a["nu2"]
    c2 = w2a["c2"]
    g_rr = sp.simplify((JJt_s[0, 0].subs(kappa, 1)).subs({ab2: nu2, c**2: c2}))
    g_tt = sp.simplify(JJt_s[1, 1].subs(ab2, nu2))
    g_rr = sp.sqrt(sp.factor(sp.expand(g_rr**2))) if g_rr.has(sp.sqrt) else g_rr
    D = sp.sqrt(delta**2 + 4 * r**2)
    if sp.simplify(g_rr - D) != 0:
        raise ArithmeticError(f"W2c: unexpected g_rr {g_rr}")
    g_tt_rat = sp.radsimp(g_tt)  # (D + delta) / (2 r^2): no cancellation for delta > 0
    # the same in the local Cartesian frame d tau = r d theta: tau' = -r^2 g_tt dL~/dtau
    g_tautau = sp.simplify(sp.radsimp(r**2 * g_tt))
    lim_kernel = sp.limit(g_tt * delta**2 / g_rr, delta, -sp.oo)
    lim_adapt_r = sp.limit(g_rr / delta, delta, sp.oo)
    lim_adapt_t = sp.limit(g_tt_rat * r**2 / delta, delta, sp.oo)
    metric = sp.diag(1 / g_rr, 1 / g_tt)
    corr = sp.Matrix([sp.limit(delta * (g_rr - delta), delta, sp.oo),
                      sp.limit(delta * (g_tt_rat - delta / r**2), delta, sp.oo)])
    return {"J": J, "JJt": JJt_s, "off_diagonal": off_diag, "g_rr": g_rr, "g_thth": g_tt,
            "g_thth_rationalized": g_tt_rat, "g_tautau": g_tautau, "metric": metric,
            "kernel_limit": lim_kernel, "adaptive_limit_r": lim_adapt_r,
            "adaptive_limit_theta": lim_adapt_t, "adaptive_correction": corr, "kappa": kappa}


# ------------------------------------------------------------------ W2d
@lru_cache(maxsize=None)
def derive_W2d(m: int = 3, s: int = 3) -> dict:
    """Mean-field form of L~ and grad_{w_i} L~ = (1/m) grad V(w_i; mu) for m particles
    and s samples written out (phi_ij = phi(w_i; x_j) as symbols)."""
    Phi = sp.Matrix(m, s, lambda i, j: sp.Symbol(f"phi_{i + 1}{j + 1}", real=True))
    ys = sp.Matrix(1, s, lambda _, j: sp.Symbol(f"y_{j + 1}", real=True))
    f = [sum(Phi[i, j] for i in range(m)) / m for j in range(s)]
    Lt = sum((f[j] - ys[j]) ** 2 for j in range(s)) / 2
    F = [sum(ys[j] * Phi[i, j] for j in range(s)) for i in range(m)]
    K = lambda i, l: sum(Phi[i, j] * Phi[l, j] for j in range(s))  # noqa: E731
    mf = (sum(ys[j] ** 2 for j in range(s)) / 2 - sum(F) / m
          + sum(K(i, l) for i in range(m) for l in range(m)) / (2 * m**2))
    identity = sp.expand(Lt - mf)
    rhos = [f[j] - ys[j] for j in range(s)]
    # potential V(w; mu) = -F(w) + int K(w, .) dmu at a test particle phi_j = psi_j
    psi = [sp.Symbol(f"psi_{j + 1}", real=True) for j in range(s)]
    V = -sum(ys[j] * psi[j] for j in range(s)) + sum(
        sum(psi[j] * Phi[l, j] for j in range(s)) for l in range(m)) / m
    V_rho = sp.expand(V - sum(rhos[j] * psi[j] for j in range(s)))
    # gradient: dL~/dphi_ij = rho_j / m = (1/m) dV/dpsi_j at psi = phi_i. (mu frozen)
    grad_gap = [sp.expand(sp.diff(Lt, Phi[i, j]) - sp.diff(V, psi[j]).subs(
        {psi[q]: Phi[i, q] for q in range(s)}) / m) for i in range(m) for j in range(s)]
    if identity != 0 or V_rho != 0 or any(g != 0 for g in grad_gap):
        raise ArithmeticError("W2d identity failed")
    rr, th = r, theta
    phi_expr = rr * relu((lifted(x).T * d(th))[0])
    return {"L_tilde": Lt, "mean_field": mf, "identity": identity, "V": V,
            "V_minus_rho_phi": V_rho, "phi": phi_expr, "m": m, "s": s}


# ------------------------------------------------------------------ W2e
@lru_cache(maxsize=None)
def derive_W2e() -> dict:
    """Radial and angular components of grad V in a region: per active sample j the
    contribution rho_j * (dphi/dr, dphi/dtheta) of phi = r <x~_j, d(theta)>."""
    inner = (lifted(x).T * d(theta))[0]          # <x~, d(theta)> (> 0 on active samples)
    phi_active = r * inner
    dphi_dr = sp.diff(phi_active, r)
    dphi_dth = sp.diff(phi_active, theta)
    tangent = (lifted(x).T * t_vec(theta))[0]    # <x~, t(theta)>
    if sp.simplify(dphi_dr - inner) != 0 or sp.simplify(dphi_dth - r * tangent) != 0:
        raise ArithmeticError("W2e components")
    V_r = rho * dphi_dr
    V_th = rho * dphi_dth
    hess = [sp.diff(e, rho, 2) for e in (V_r, V_th)]  # linear in the residuals
    return {"inner": inner, "tangent": tangent, "dV_dr_term": V_r, "dV_dtheta_term": V_th,
            "dphi_dr": dphi_dr, "dphi_dtheta": dphi_dth, "second_derivative_in_rho": hess}


# ------------------------------------------------------------------ W2f
@lru_cache(maxsize=None)
def derive_W2f() -> dict:
    """Jump of grad V when theta crosses the boundary <x~_{j*}, d(theta)> = 0."""
    e = derive_W2e()
    bsols = sp.solve(sp.Eq(e["inner"], 0), theta)
    branches = {"atan(x)": sp.atan(x), "atan(x) - pi": sp.atan(x) - sp.pi}
    for th0 in branches.values():
        if sp.simplify(e["inner"].subs(theta, th0)) != 0:
            raise ArithmeticError("boundary angle")
    jumps = {}
    for name, th0 in branches.items():
        jr = sp.simplify(e["dV_dr_term"].subs(theta, th0))
        jt = sp.simplify(e["dV_dtheta_term"].subs(theta, th0))
        jumps[name] = (jr, jt)
    magnitude = sp.simplify(sp.Abs(jumps["atan(x)"][1]))
    mag2 = sp.simplify(sp.Abs(jumps["atan(x) - pi"][1]))
    target = sp.Abs(r * rho) * sp.sqrt(1 + x**2)
    if sp.simplify(magnitude - target) != 0 or sp.simplify(mag2 - target) != 0:
        raise ArithmeticError(f"W2f: jump magnitude {magnitude}")
    return {"boundary_solutions": bsols, "jumps": jumps, "magnitude": magnitude}


# ------------------------------------------------------------------ W2g
@lru_cache(maxsize=None)
def derive_W2g() -> dict:
    """Tangent kernel H of the full parametrization: rho' = -H rho with
    H_jk = sum_i grad_{z_i} f(x_j) . grad_{z_i} f(x_k); in a region one neuron contributes
    h(a, b, c; x_j, x_k) with activation indicators s_j, s_k in {0, 1}."""
    sj, sk = sp.symbols("s_j s_k", nonnegative=True)
    fj = c * sj * (a * x - b) / alpha
    fk = c * sk * (a * xk - b) / alpha
    gj = sp.Matrix([sp.diff(fj, v) for v in (a, b, c)])
    gk = sp.Matrix([sp.diff(fk, v) for v in (a, b, c)])
    h = sp.factor_terms(sp.expand((gj.T * gk)[0]))
    # residual ODE for one neuron and two samples: rho_j' = grad f_j . z', z' = -grad L
    rj, rk = sp.symbols("rho_j rho_k", real=True)
    zdot = -(gj * rj + gk * rk)  # -grad L restricted to this neuron (indicators idempotent)
    rdot = sp.Matrix([(gj.T * zdot)[0], (gk.T * zdot)[0]])
    Hm = sp.Matrix([[(gj.T * gj)[0], (gj.T * gk)[0]], [(gk.T * gj)[0], (gk.T * gk)[0]]])
    gap = sp.simplify(rdot + Hm * sp.Matrix([rj, rk]))
    if gap != sp.zeros(2, 1):
        raise ArithmeticError("W2g")
    h_rf = sp.expand(sj * sk * (a * x - b) * (a * xk - b) / alpha**2)
    h_tangent = sp.factor(sp.expand(h - h_rf))
    # Filippov sliding of the neuron on the line of sample x_* (a x_* - b = 0): its velocity
    # is z' = -Pi grad L with Pi the orthogonal projection of (a', b') on the line
    # direction (1, x_*) (c' unchanged), so rho' = -J Pi J^T rho: one neuron contributes
    # g_j^T Pi g_k
    v = sp.Matrix([1, x_slide])
    Pi = sp.diag(v * v.T / (v.T * v)[0], 1)
    rdot_s = sp.Matrix([(gj.T * Pi * zdot)[0], (gk.T * Pi * zdot)[0]])
    Hs = sp.Matrix([[(gj.T * Pi * gj)[0], (gj.T * Pi * gk)[0]], [(gk.T * Pi * gj)[0], (gk.T * Pi * gk)[0]]])
    if sp.simplify(rdot_s + Hs * sp.Matrix([rj, rk])) != sp.zeros(2, 1):
        raise ArithmeticError("W2g sliding kernel")
    h_slide = sp.factor(sp.expand((gj.T * Pi * gk)[0]))
    return {"h": h, "h_rf": h_rf, "h_first_layer": h_tangent, "sj": sj, "sk": sk,
            "xk": xk, "gap": gap, "H2": Hm, "h_sliding": h_slide}


@lru_cache(maxsize=None)
def derive_W2g_canonical() -> sp.Expr:
    """One neuron's contribution to H_jk in the canonical variables (r, theta, delta) at
    alpha = m: s_j s_k (G^-1_rr u_j u_k + G^-1_thth r^2 t_j t_k) / m^2 with the W2c inverse
    metric, u = <x~, d(theta)>, t = <x~, t(theta)>; checked equal to the full-parameter h
    on the fibre point (a, b, c) = (nu cos theta, nu sin theta, r / nu)."""
    w2c, w2a = derive_W2c(), derive_W2a()
    uj, uk = ((lifted(v).T * d(theta))[0] for v in (x, xk))
    tj, tk = ((lifted(v).T * t_vec(theta))[0] for v in (x, xk))
    h_can = s_j * s_k * (w2c["g_rr"] * uj * uk + w2c["g_thth_rationalized"] * r**2 * tj * tk) \
        / m_width**2
    nu_ = sp.sqrt(w2a["nu2"])
    fibre = {a: nu_ * sp.cos(theta), b: nu_ * sp.sin(theta), c: r / nu_, alpha: m_width}
    h_full = derive_W2g()["h"].subs(fibre, simultaneous=True)  # its s_j, s_k are these
    if sp.simplify(sp.expand_trig(h_can - h_full)) != 0:
        raise ArithmeticError("W2g: the canonical kernel differs from the full one")
    return h_can


# ------------------------------------------------------------------ W2h
@lru_cache(maxsize=None)
def derive_W2h() -> dict:
    """Attractor/repulsor at the sample line of x* (Lemma 2).

    At the boundary theta*, tan theta* = x*, the normal rate du*/dt of
    u* = <x~*, d(theta)> on the two sides (j* active / inactive) is computed from the
    angular components of W2e, with the neighbouring active samples j != j* entering
    through S = sum_j rho_j (1 + x_j x*).  theta' = -g dV/dtheta, g > 0."""
    e = derive_W2e()
    S, rs, xs, g, c0 = sp.symbols("S rho_* x_* g c_0", real=True)
    xj = sp.Symbol("x_j", real=True)
    # one neighbouring term, then sum: <x~_j, t(theta*)> = -cos(theta*)(1 + x_j tan theta*)
    tang = e["tangent"].subs(x, xj)
    tang_star = sp.simplify(tang.subs(sp.sin(theta), c0 * xs).subs(sp.cos(theta), c0))
    neigh_factor = sp.factor(tang_star)          # -c0 (1 + x_j x*)
    S_term = sp.simplify(neigh_factor / (-c0))   # 1 + x_j x*  -> defines S
    dV_inact = r * (-c0) * S
    dV_act = dV_inact + r * rs * sp.simplify(e["tangent"].subs(x, xs).subs(
        sp.sin(theta), c0 * xs).subs(sp.cos(theta), c0))
    du_dth = sp.simplify(e["tangent"].subs(x, xs).subs(sp.sin(theta), c0 * xs).subs(sp.cos(theta), c0))
    udot_act = sp.factor(du_dth * (-g * dV_act))
    udot_inact = sp.factor(du_dth * (-g * dV_inact))
    pos = g * c0**2 * (1 + xs**2)  # positive factor
    red_act = sp.simplify(udot_act / pos)
    red_inact = sp.simplify(udot_inact / pos)
    # attractor: u' < 0 on the active side (u > 0), u' > 0 on the inactive side
    attractor = sp.And(red_act < 0, red_inact > 0)
    repulsor = sp.And(red_act > 0, red_inact < 0)
    # solved for rho* when r > 0
    rp = sp.Symbol("r", positive=True)
    att_pos = sp.reduce_inequalities([red_act.subs(r, rp) < 0], [rs])
    return {"S_term": S_term, "neighbour_factor": neigh_factor, "du_dtheta": du_dth,
            "udot_active": udot_act, "udot_inactive": udot_inact,
            "reduced_active": red_act, "reduced_inactive": red_inact,
            "attractor": attractor, "repulsor": repulsor, "attractor_rpos": att_pos,
            "symbols": {"S": S, "rho_star": rs, "x_star": xs, "g": g, "c0": c0}}


# ====================================================================== claim derivations
def _eq(lhs: str, expr) -> Step:
    return Step("", expr, lhs=lhs)


def _homogeneous(expr: sp.Expr, variables: tuple) -> bool:
    """expr(k v) == k expr(v) for k > 0 (degree-1 positive homogeneity in ``variables``)."""
    return sp.simplify(expr.subs({v: k * v for v in variables}, simultaneous=True) - k * expr) == 0


def _build_W2a() -> Derivation:
    w = derive_W2a()
    if not (_homogeneous(w["nu2"], (r, delta)) and _homogeneous(w["nu2_rationalized"], (r, delta))):
        raise ArithmeticError("W2a: |(a,b)|^2 is not homogeneous of degree 1 in (r, delta)")
    return Derivation(steps=[
        Step("Canonical map ($\\alpha(m) = m$): $r = c|(a,b)|$, $\\theta = \\mathrm{atan2}(b,a)$:",
             sp.Tuple(w["r"], w["theta"])),
        Step("Write $(a,b) = \\nu\\,d(\\theta)$, $\\nu>0$: the neuron is",
             sp.Eq(w["neuron_full"], w["neuron_canonical"])),
        Step("which holds by positive homogeneity of the ReLU (zero for $u>0$, $u<0$, $u=0$):",
             sp.Eq(w["homogeneity"], 0)),
        Step("and $|(a,b)|\\,d(\\mathrm{atan2}(b,a)) - (a,b)$ simplifies to", w["recover"]),
        Step("Rescaling $(ka, kb, c/k)$, $k>0$, leaves $\\pi$ unchanged:",
             sp.simplify(w["rescaled_r"]), lhs="r(ka, kb, c/k)"),
        Step("Conversely $\\pi(a',b',c') = (r,\\theta)$ forces $(a',b') = \\nu' d(\\theta)$ and",
             w["c_on_fibre"], lhs="c'"),
        Step("i.e. $(a',b',c') = (ka, kb, c/k)$ with $k = \\nu'/\\nu$: the fibres are the rescaling "
             "orbits. On a fibre, $\\delta = c^2 - \\nu^2$ picks one point: $\\nu^4 + \\delta\\nu^2 - r^2 = 0$ "
             "has the roots", sp.Tuple(*w["nu2_roots"])),
        Step("of which the positive one is (and, rationalized, for $\\delta > 0$)",
             sp.Tuple(w["nu2"], w["nu2_rationalized"]), lhs="|(a,b)|^2"),
        Step("Both are positively homogeneous of degree 1 in $(r, \\delta)$ (checked by SymPy), "
             "which the float64 evaluator uses to scale large arguments.", ),
    ], results={"r": w["r"], "theta": w["theta"], "delta": w["delta_def"],
                "nu2": w["nu2"], "nu2_rationalized": w["nu2_rationalized"]})


def _build_W2b() -> Derivation:
    w = derive_W2b()
    return Derivation(steps=[
        Step("One sample's term of $L$, $\\ell = \\frac12(f(x) - y)^2$ with "
             "$f = (c\\,(ax-b)_+ + R)/\\alpha$ ($R$: the other neurons); SymPy differentiates "
             "$\\max(u,0)$ to $H(u)$ and the Euler identity of the ReLU", sp.Eq(w["euler"], 0)),
        Step("(checked for $u>0$, $u<0$, $u=0$) turns $-\\nabla_{(a,b,c)}\\ell$, written with "
             "$\\rho = f(x) - y$ and $s = H(ax-b)$, into the flow field (summed over the samples):",
             sp.Tuple(w["field_a"], w["field_b"], w["field_c"]), lhs="(\\dot a, \\dot b, \\dot c)"),
        Step("Along it, $\\dot\\delta = 2c\\dot c - 2a\\dot a - 2b\\dot b$ is", w["ddelta_dt"],
             lhs="\\dot\\delta"),
        Step("One GD step $z \\to z - \\eta g$ changes $\\delta$ by", w["gd_full"], lhs="\\Delta\\delta"),
        Step("whose first-order coefficient is $-2(c g_c - a g_a - b g_b)$, i.e. $2\\dot\\delta$ at "
             "$\\dot z = -g$: it vanishes by the same identity, leaving", w["gd_change"],
             lhs="\\Delta\\delta_{GD}"),
    ], results={"field_a": w["field_a"], "field_b": w["field_b"], "field_c": w["field_c"],
                "ddelta_dt": w["ddelta_dt"], "gd_change": w["gd_change"]})


def _build_W2c() -> Derivation:
    w = derive_W2c()
    return Derivation(steps=[
        Step("Jacobian of $\\pi(a,b,c) = (\\kappa c\\sqrt{a^2+b^2}, \\mathrm{atan2}(b,a))$, "
             "$\\kappa = m/\\alpha(m)$:", w["J"]),
        Step("$\\dot w = J\\dot z = -JJ^T\\nabla_w\\tilde L$, with ($s_2 = a^2+b^2$)", w["JJt"]),
        Step("diagonal. For $\\kappa = 1$, on the fibre with invariant $\\delta$ "
             "(W2a: $s_2 = (\\sqrt{\\delta^2+4r^2}-\\delta)/2$):", w["g_rr"], lhs="G^{-1}_{rr}"),
        _eq("G^{-1}_{\\theta\\theta}", w["g_thth"]),
        Step("(rationalized for $\\delta > 0$):", w["g_thth_rationalized"], lhs="G^{-1}_{\\theta\\theta}"),
        Step("Kernel regime: $\\lim_{\\delta\\to-\\infty} \\delta^2 G^{-1}_{\\theta\\theta}/G^{-1}_{rr}$ =",
             w["kernel_limit"]),
        Step("(angles move $\\delta^2$ times slower than radii: knots frozen). Adaptive regime: "
             "$G^{-1}_{rr}/\\delta \\to$", w["adaptive_limit_r"]),
        Step("and $r^2 G^{-1}_{\\theta\\theta}/\\delta \\to$", w["adaptive_limit_theta"]),
        Step("i.e. $G^{-1} \\approx \\delta\\,\\mathrm{diag}(1, 1/r^2)$: the time-rescaled gradient flow "
             "in the particle-plane metric $dr^2 + r^2 d\\theta^2$ (the reduced flow). The next "
             "terms, $\\lim \\delta\\,(G^{-1} - \\delta\\,\\mathrm{diag}(1, 1/r^2))$:", w["adaptive_correction"]),
    ], results={"g_rr": w["g_rr"], "g_thth": w["g_thth"],
                "g_thth_rationalized": w["g_thth_rationalized"]})


def _build_W2d() -> Derivation:
    w = derive_W2d()
    return Derivation(steps=[
        Step("With $\\phi_{ij} = \\phi(w_i; x_j)$ (here $m = s = 3$ written out), "
             "$\\tilde L - [\\frac12\\sum y_j^2 - \\int F d\\mu + \\frac12\\iint K d\\mu d\\mu]$ expands to",
             w["identity"]),
        Step("$V(w;\\mu) = -F(w) + \\int K(w,\\cdot)d\\mu$ minus $\\sum_j\\rho_j\\phi(w;x_j)$ expands to",
             w["V_minus_rho_phi"]),
        Step("and $\\partial\\tilde L/\\partial\\phi_{ij} = \\rho_j/m = \\frac1m\\partial V/\\partial\\phi_j$, so "
             "$\\nabla_{w_i}\\tilde L = \\frac1m\\nabla V(w_i;\\mu)$ with", w["phi"], lhs="\\phi(w; x)"),
    ], results={"phi": w["phi"]})


def _build_W2e() -> Derivation:
    w = derive_W2e()
    return Derivation(steps=[
        Step("On a region $A_k$ (fixed active set $C_k$) $\\phi = r\\langle\\tilde x_j, d(\\theta)\\rangle$ for "
             "$j\\in C_k$, with", w["inner"], lhs="\\langle\\tilde x, d(\\theta)\\rangle"),
        Step("per active sample:", w["dV_dr_term"], lhs="\\partial_r V\\ \\text{term}"),
        _eq("\\partial_\\theta V\\ \\text{term}", w["dV_dtheta_term"]),
        Step("i.e. $\\partial_rV = \\sum_{C_k}\\rho_j\\langle\\tilde x_j,d(\\theta)\\rangle$, "
             "$\\partial_\\theta V = r\\sum_{C_k}\\rho_j\\langle\\tilde x_j,t(\\theta)\\rangle$ with",
             w["tangent"], lhs="\\langle\\tilde x, t(\\theta)\\rangle"),
        Step("second derivatives in $\\rho$ (linearity in the residual vector):",
             sp.Tuple(*w["second_derivative_in_rho"])),
    ], results={"inner": w["inner"], "dV_dr_term": w["dV_dr_term"],
                "dV_dtheta_term": w["dV_dtheta_term"]})


def _build_W2f() -> Derivation:
    w = derive_W2f()
    if not (_homogeneous(w["magnitude"], (r,)) and _homogeneous(w["magnitude"], (rho,))):
        raise ArithmeticError("W2f: the jump is not homogeneous of degree 1 in r and in rho")
    jr, jt = w["jumps"]["atan(x)"]
    jr2, jt2 = w["jumps"]["atan(x) - pi"]
    return Derivation(steps=[
        Step("Boundary $\\langle\\tilde x_{j*}, d(\\theta)\\rangle = 0$: SymPy's solutions",
             sp.Tuple(*w["boundary_solutions"])),
        Step("i.e. $\\theta^* = \\arctan x_{j*}$ or $\\arctan x_{j*} - \\pi$. Crossing toggles "
             "$j^*$ in the active set; the jump of $(\\partial_rV, \\partial_\\theta V)$ "
             "(active minus inactive side) at $\\theta^* = \\arctan x$:", sp.Tuple(jr, jt)),
        Step("and at $\\theta^* = \\arctan x - \\pi$:", sp.Tuple(jr2, jt2)),
        Step("purely angular, of magnitude", w["magnitude"], lhs="|\\text{jump}|"),
        Step("(positively homogeneous of degree 1 in $r$ and in $\\rho_*$ separately, checked by "
             "SymPy; the float64 evaluator uses it to avoid overflow and underflow)."),
    ], results={"magnitude": w["magnitude"],
                "jump_upper": [jr, jt], "jump_lower": [jr2, jt2]})


def _build_W2g() -> Derivation:
    w = derive_W2g()
    return Derivation(steps=[
        Step("In a region, $f(x_j) = \\frac1\\alpha\\sum_i c_i s_{ij}(a_i x_j - b_i)$; one neuron "
             "contributes to $H_{jk} = \\nabla_z f(x_j)\\cdot\\nabla_z f(x_k)$", w["h"], lhs="h_{jk}"),
        Step("= random-feature part (from $c$)", w["h_rf"]),
        Step("+ first-layer part (from $a, b$)", w["h_first_layer"]),
        Step("and $\\dot\\rho + H\\rho$ for $\\dot z = -\\nabla L$ (one neuron, two samples) simplifies to",
             w["gap"]),
        Step("On a Filippov sliding segment the velocity of a neuron held on the line of sample "
             "$x_s$ is the gradient projected on the line direction $(1, x_s)$ ($c$ unchanged): "
             "$\\dot\\rho = -J\\Pi J^T\\rho$, and that neuron contributes", w["h_sliding"],
             lhs="h^{\\mathrm{slide}}_{jk}"),
        Step("so the residual ODE holds with $H = J J^T$ only off sliding segments; with the "
             "sliding neurons' contributions replaced by $h^{\\mathrm{slide}}$ it holds on the "
             "whole Filippov trajectory (checked along the integrated flow)."),
        Step("In the canonical variables, with the inverse metric $G^{-1}(r, \\delta)$ of W2c, "
             "$u = \\langle\\tilde x, d(\\theta)\\rangle$, $t = \\langle\\tilde x, t(\\theta)\\rangle$ "
             "(equal to $h$ on the fibre point, simplified to 0): "
             "$H_{jk} = \\int h^{\\mathrm{can}}_{jk}\\,d\\mu_t$ up to the factor $m$ of "
             "$\\mu_m = \\frac1m\\sum\\delta$, one neuron contributing", derive_W2g_canonical(),
             lhs="h^{\\mathrm{can}}_{jk}"),
    ], results={"h": w["h"], "h_sliding": w["h_sliding"], "h_canonical": derive_W2g_canonical()})


W2H_SYMBOLS = {k: sp.Symbol(n, real=True) for k, n in
               (("S", "S"), ("rho_star", "rho_*"), ("x_star", "x_*"), ("g", "g"), ("c0", "c_0"))}


def _build_W2h() -> Derivation:
    w = derive_W2h()
    return Derivation(steps=[
        Step("At the boundary $\\tan\\theta^* = x_*$ write $c_0 = \\cos\\theta^*$; a neighbouring active "
             "sample contributes $\\langle\\tilde x_j, t(\\theta^*)\\rangle$ =", w["neighbour_factor"]),
        Step("so the neighbours enter through $S = \\sum_{j\\in C\\setminus j^*}\\rho_j(1 + x_j x_*)$. "
             "The normal rate of $u_* = \\langle\\tilde x_*, d(\\theta)\\rangle$ under "
             "$\\dot\\theta = -g\\,\\partial_\\theta V$ ($g>0$ any diagonal metric) on the side where "
             "$j^*$ is active:", w["udot_active"], lhs="\\dot u_*^{\\mathrm{act}}"),
        Step("and where it is inactive:", w["udot_inactive"], lhs="\\dot u_*^{\\mathrm{inact}}"),
        Step("Dividing by $g c_0^2(1+x_*^2) > 0$: attractor ($\\dot u_* < 0$ on the active side, "
             "$> 0$ on the other) iff", w["attractor"]),
        Step("repulsor iff", w["repulsor"]),
        Step("For $r > 0$ the attractor condition on $\\rho_*$ (with $S<0$) reads", w["attractor_rpos"]),
        Step("i.e. the residual at $x_*$ is large, has the sign of $r$, and the weighted neighbouring "
             "residual sum $S$ has the opposite sign (Lemma 2). Prediction tested: a neuron reaching "
             "the line of $x_*$ slides on it (its knot stays at the sample) exactly when this "
             "condition holds, and crosses otherwise."),
    ], results={"udot_active": w["udot_active"], "udot_inactive": w["udot_inactive"]})




# ------------------------------------------------------------------ W2i
m_width = sp.Symbol("m", positive=True)       # the width
T_scale = sp.Symbol("T", positive=True)       # z-time per unit of flow time
lam = sp.Symbol("lambda", positive=True)      # a joint scaling of (a, b, c)


@lru_cache(maxsize=None)
def derive_W2i() -> dict:
    """The mean-field limit at alpha(m) = m (claim W2i): the time change between the flow
    (or GD) in z and the mean-field flow of mu_m = (1/m) sum delta_{z_i}, and the
    homogeneity that reduces mu_0 to a weighted measure on the sphere of directions.

    One neuron and one sample on the active branch (the gradient is linear in the samples'
    residuals and 0 off the branch): the z-velocity -grad_{z_i} L is (1/alpha) times the
    mean-field velocity V(w) = -rho_j grad_w phi(w; x_j), phi = c (a x - b)_+, so the flow
    time is tau = t / T with T = alpha; the predictor f = (m/alpha) int c phi dmu_m has an
    m-independent limit iff alpha = m."""
    p = sp.Symbol("p", positive=True)           # the active pre-activation a x_j - b
    rest, yj = sp.symbols("R y_j", real=True)   # the other neurons' sum, the target
    f = (c * (a * x - b) + rest) / alpha
    loss = (f - yj) ** 2 / 2
    residual = f - yj
    zdot = [-sp.diff(loss, v) for v in (a, b, c)]
    V = [-residual * sp.diff(c * (a * x - b), v) for v in (a, b, c)]
    ratios = {sp.simplify(zd / vv) for zd, vv in zip(zdot, V)}
    if len(ratios) != 1:
        raise ArithmeticError("W2i: the z-velocity is not a multiple of the mean-field velocity")
    ratio = ratios.pop()
    T_alpha = sp.solve(sp.Eq(T_scale * ratio, 1), T_scale)[0]
    kappa = sp.simplify(m_width * (1 / alpha))   # f = kappa * int c phi dmu_m
    alpha_limit = sp.solve(sp.Eq(kappa, 1), alpha)[0]
    time_scale = sp.simplify(T_alpha.subs(alpha, alpha_limit))
    # homogeneity in w = (a, b, c) jointly (rho held fixed): phi on the active branch
    phi = c * p
    scaled = {a: lam * a, b: lam * b, c: lam * c, p: lam * p}
    q = sp.Symbol("q", real=True)
    phi_ratio = sp.simplify(phi.subs(scaled, simultaneous=True) / phi)
    phi_degree = sp.solve(sp.Eq(lam ** q, phi_ratio), q)[0]
    V_lin = [-rho * sp.diff(c * (a * x - b), v) for v in (a, b, c)]
    v_ratios = {sp.simplify(vv.subs(scaled, simultaneous=True) / vv) for vv in V_lin if vv != 0}
    if v_ratios != {lam}:
        raise ArithmeticError("W2i: the mean-field velocity is not 1-homogeneous")
    # spherical coordinates of (a, b, c): volume element r^jac dr dsigma
    rr, th, be = sp.symbols("r theta beta", positive=True)
    sph = sp.Matrix([rr * sp.cos(be) * sp.cos(th), rr * sp.cos(be) * sp.sin(th), rr * sp.sin(be)])
    jac = sp.simplify(sph.jacobian([rr, th, be]).det())
    jac_degree = sp.degree(sp.factor(jac), rr)
    return {"z_over_meanfield": ratio, "T_alpha": T_alpha, "kappa": kappa,
            "alpha_limit": alpha_limit, "time_scale": time_scale, "phi_degree": phi_degree,
            "jacobian": jac, "weight_exponent": sp.Integer(phi_degree + jac_degree)}


def _build_W2i() -> Derivation:
    w = derive_W2i()
    return Derivation(steps=[
        Step("One neuron, one sample on its active branch: the gradient-flow velocity "
             "$-\\nabla_{z_i} L$ divided by the mean-field velocity "
             "$V(w) = -\\rho_j\\nabla_w\\,c(ax_j-b)$ is", w["z_over_meanfield"]),
        Step("so with flow time $\\tau = t/T$, $dz_i/d\\tau = V(z_i)$ iff", w["T_alpha"], lhs="T"),
        Step("The predictor is $f = \\kappa\\int c\\,(ax-b)_+\\,d\\mu_m$ with "
             "$\\mu_m = \\frac1m\\sum_i\\delta_{z_i}$,", w["kappa"], lhs="\\kappa"),
        Step("which has an $m$-independent limit iff $\\kappa = 1$:", w["alpha_limit"],
             lhs="\\alpha(m)"),
        Step("Time scale at $\\alpha(m) = m$ (GD in $z$ at step $\\eta_z = T h$ is mean-field "
             "GD at flow step $h$):", w["time_scale"], lhs="T(m)"),
        Step("$\\phi(\\lambda w) = \\lambda^q\\phi(w)$ and $V(\\lambda w) = \\lambda V(w)$ "
             "for $\\lambda > 0$ (checked), so a particle $r\\,\\omega$ moves as "
             "$r$ times the particle $\\omega$ on the unit sphere:", w["phi_degree"],
             lhs="q"),
        Step("Volume element of $(a,b,c) = r(\\cos\\beta\\cos\\theta, "
             "\\cos\\beta\\sin\\theta, \\sin\\beta)$:", w["jacobian"]),
        Step("hence $f_\\tau(x) = \\int_{S^2}\\phi(\\Phi_\\tau(\\omega); x)\\,W(\\omega)\\,"
             "d\\sigma(\\omega)$ with $W(\\omega) = \\int_0^\\infty r^{k} p_0(r\\omega)"
             "\\,dr$, $p_0$ the density of $\\mu_0$:", w["weight_exponent"], lhs="k"),
    ], results={"time_scale": sp.Lambda(m_width, w["time_scale"]),
                "weight_exponent": w["weight_exponent"]})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {
    "W2a": _build_W2a, "W2b": _build_W2b, "W2c": _build_W2c, "W2d": _build_W2d,
    "W2e": _build_W2e, "W2f": _build_W2f, "W2g": _build_W2g, "W2h": _build_W2h,
    "W2i": _build_W2i,
}
