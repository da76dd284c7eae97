"""Mean-field dynamics of shallow univariate ReLU networks (Williams et al. 2019,
claims W2a..W2h; conventions MATH.md W.1/W.2): canonical map and its fibres, the
invariant delta, the metric relating the full and the reduced flow, the potential and its
radial/angular components, the jump at a region boundary, the tangent kernel of the
residual ODE and the attractor/repulsor condition.

Everything is derived with SymPy from the definitions; functions return SymPy objects
(dicts of named results) and never use numpy.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

__all__ = ["a", "b", "c", "x", "r", "theta", "delta", "rho", "nu", "alpha",
           "relu", "canonical_map", "derive_W2a", "derive_W2b", "derive_W2c",
           "derive_W2d", "derive_W2e", "derive_W2f", "derive_W2g", "derive_W2h"]

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


def relu(z: sp.Expr) -> sp.Expr:
    return sp.Max(z, 0)


def lifted(xx: sp.Expr) -> sp.Matrix:
    """x~ = (x, -1) (MATH.md W.1)."""
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
    """d delta_i / dt = 0 along dz/dt = -grad L, with 2 neurons and 2 samples written out
    (the identity holds term by term in the sums)."""
    a1, b1, c1, a2, b2, c2 = sp.symbols("a_1 b_1 c_1 a_2 b_2 c_2", real=True)
    x1, x2, y1, y2 = sp.symbols("x_1 x_2 y_1 y_2", real=True)
    f = lambda xx: (c1 * relu(a1 * xx - b1) + c2 * relu(a2 * xx - b2)) / alpha  # noqa: E731
    L = ((f(x1) - y1) ** 2 + (f(x2) - y2) ** 2) / 2
    ddelta = (2 * c1 * (-sp.diff(L, c1)) - 2 * a1 * (-sp.diff(L, a1))
              - 2 * b1 * (-sp.diff(L, b1)))
    # Euler identity of the positively homogeneous ReLU: u H(u) = max(u, 0)
    euler = u * sp.Heaviside(u) - sp.Max(u, 0)
    euler_ok = _zero_on_both_signs(euler, u)
    # substitute the identity: Max(z, 0) -> z Heaviside(z) for every ReLU argument
    dd_sub = ddelta.replace(lambda e: isinstance(e, sp.Max), lambda e: e.args[0] * sp.Heaviside(e.args[0])
                            if e.args[1] == 0 else e.args[1] * sp.Heaviside(e.args[1]))
    dd_sub = sp.simplify(sp.expand(dd_sub))
    if not euler_ok or dd_sub != 0:
        raise ArithmeticError(f"W2b: d delta/dt does not vanish: {dd_sub}")
    # gradient-descent step: delta changes by eta^2 (g_c^2 - g_a^2 - g_b^2)
    eta, ga, gb, gc = sp.symbols("eta g_a g_b g_c", real=True)
    dgd = sp.expand((c - eta * gc) ** 2 - (a - eta * ga) ** 2 - (b - eta * gb) ** 2
                    - (c**2 - a**2 - b**2))
    dgd_first = sp.expand(dgd - eta**2 * (gc**2 - ga**2 - gb**2))
    return {"ddelta_raw": ddelta, "ddelta": dd_sub, "euler": euler, "gd_change": dgd,
            "gd_first_order": dgd_first, "gd_second_order": sp.factor(dgd - dgd_first)}


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
    return {"h": h, "h_rf": h_rf, "h_first_layer": h_tangent, "sj": sj, "sk": sk,
            "xk": xk, "gap": gap, "H2": Hm}


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
