"""Symbolic derivations for Hajjar & Chizat (2023), claims H1a, H1c, H1d, H1e
(MATH.md section H).  SymPy only.

- :func:`balance_law` (H1a): for sigma = relu^k (k-homogeneous) the per-sample integrand of
  d/dt (k a^2 - |b|^2) along the particle flow is 0; for ReLU (k = 1) this is
  d/dt (a^2 - |b|^2) = 0.
- :func:`odd_target_dynamics` (H1c): the pair identities, linearity of the predictor for
  a measure invariant under (a, b) -> (-a, -b), the closed ODE for (w, M, A), its
  reduction along w* for isotropic data, the conserved quantity, the exact time-to-reach
  t(s) and the asymptotic rate v sqrt(V^2 + 16 |w*|^2) / 4 >= V v / 4.
- :func:`phi_tilde_closed_forms` (H1d/H1e): phi~(0; phi), phi~(pi/2; phi) for symbolic
  dimensions and the complete closed forms for (d, d_H) = (2, 1), (3, 1), (3, 2), (4, 1), (4, 3).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


__all__ = ["balance_law", "BalanceLaw", "sign_cases", "odd_target_dynamics", "OddTargetDerivation",
           "phi_tilde_closed_forms", "PhiTildeForms", "theta", "phi", "reduction_identity"]

theta = sp.Symbol("theta", nonnegative=True)
phi = sp.Symbol("phi", nonnegative=True)


# ---------------------------------------------------------------------------- H1a
_P = sp.Symbol("p", positive=True)


def sign_cases(e: sp.Expr, z: sp.Symbol) -> sp.Tuple:
    """(e on z > 0, e on z < 0): the expression with z = p and z = -p (p > 0), simplified.
    {z = 0} is a null set for the data measure, so this case analysis is exhaustive."""
    return sp.Tuple(*[sp.simplify(e.subs(z, val)) for val in (_P, -_P)])


@dataclass(frozen=True)
class BalanceLaw:
    k: int
    integrand: sp.Expr          # per-sample integrand of d/dt (k a^2 - |b|^2)
    wrong_integrand: sp.Expr    # per-sample integrand of d/dt (a^2 - |b|^2) for relu^k
    euler_identity: sp.Expr     # z sigma'(z) - k sigma(z), simplified


def balance_law(k: int = 1, d: int = 3) -> BalanceLaw:
    """Particle flow da/dt = E[r sigma(b.x)], db/dt = a E[r sigma'(b.x) x] (MATH.md H.1).
    Pointwise in (x, r), with a generic sigma: d/dt a^2 = 2 a r sigma(z) and
    d/dt |b|^2 = 2 sum_i b_i a r d sigma(b.x)/d b_i = 2 a r z sigma'(z), z = b.x; then
    sigma = max(z, 0)^k (Euler: z sigma' = k sigma for z != 0) makes
    d/dt (k a^2 - |b|^2) vanish."""
    a, r = sp.symbols("a r", real=True)
    b = sp.symbols(f"b1:{d + 1}", real=True)
    x = sp.symbols(f"x1:{d + 1}", real=True)
    zs = sp.Symbol("z", real=True, nonzero=True)   # b.x = 0 is a null set for rho
    sig = sp.Function("sigma")
    dot = sum(bi * xi for bi, xi in zip(b, x))
    da = r * sig(dot)
    db = [a * r * sp.diff(sig(dot), bi) for bi in b]
    d_a2 = 2 * a * da
    d_b2 = sp.factor(2 * sum(bi * dbi for bi, dbi in zip(b, db)))
    relu_k = sp.Max(zs, 0) ** k

    def specialize(e):
        e = e.subs(dot, zs).doit()
        e = e.subs(sp.Derivative(sig(zs), zs), sp.diff(relu_k, zs)).subs(sig(zs), relu_k)
        return sign_cases(e, zs)

    d_b2 = d_b2.replace(lambda e: isinstance(e, sp.Subs), lambda e: e.doit())
    integrand = specialize(k * d_a2 - d_b2)
    wrong = specialize(d_a2 - d_b2)
    euler = sign_cases(zs * sp.diff(relu_k, zs) - k * relu_k, zs)
    return BalanceLaw(k, integrand, wrong, euler)


# ---------------------------------------------------------------------------- H1c
@dataclass(frozen=True)
class OddTargetDerivation:
    relu_difference: sp.Expr          # relu(z) - relu(-z) - z  (= 0)
    step_sum: sp.Expr                 # H(z) + H(-z) - 1 for z != 0 (= 0)
    pair_predictor: sp.Expr           # (a relu(b.x) + (-a) relu(-b.x)) / 2 - a (b.x) / 2 (= 0)
    pair_velocity: sp.Expr            # pair sum of d(a b)/dt minus r (b (b.x) + a^2 x)  (= 0)
    ode_w: sp.Expr                    # dw/dt in terms of M, A, g (matrix form, d = 2)
    ode_M: sp.Expr
    ode_A: sp.Expr
    invariant: sp.Expr                # alpha(s) solving the along-w* reduction
    speed: sp.Expr                    # ds/dt as a function of s
    rate_inf: sp.Expr                 # asymptotic exponential rate
    rate_bound: sp.Expr               # the reconstructed rate V v / 4
    antiderivative: sp.Expr           # F(u), dF/du = 1/(u sqrt(V^2 + 16 q (1-u)^2))
    antiderivative_check: sp.Expr     # dF/du - integrand (= 0)
    time_to_reach: sp.Expr            # t(s), s = fraction of w* reached, w(0) = 0
    symbols: dict


def odd_target_dynamics() -> OddTargetDerivation:
    """H1c.  Notation: g = E[r x] = E[f* x] - E[x x^T] w (residual correlation), v = v_rho,
    q = |w*|^2, V = E a_0^2 + v_b, w(0) = 0, M_0 = v_b I, A_0 = E a_0^2."""
    z = sp.Symbol("z", real=True, nonzero=True)
    relu = lambda u: sp.Max(u, 0)  # noqa: E731
    rd = sign_cases(relu(z) - relu(-z) - z, z)
    hs = sign_cases(sp.Heaviside(z) + sp.Heaviside(-z) - 1, z)

    # pointwise velocities of the pair (a, b), (-a, -b) for one sample (x, r), z = b.x != 0;
    # bvec and xvec stand for the vectors b and x (the identity is linear in them)
    a, r = sp.symbols("a r", real=True)
    bvec, xvec = sp.symbols("bvec xvec")
    da1, db1 = r * relu(z), a * r * sp.Heaviside(z) * xvec
    da2, db2 = r * relu(-z), (-a) * r * sp.Heaviside(-z) * xvec
    pair = da1 * bvec + a * db1 + da2 * (-bvec) + (-a) * db2
    diff = sign_cases(pair - r * (bvec * z + a ** 2 * xvec), z)
    pair_pred = sign_cases((a * relu(z) + (-a) * relu(-z)) / 2 - a * z / 2, z)

    # closed ODE: w = 1/2 int a b, M = int b b^T, A = int a^2, pair averages
    g1, g2, w1, w2, A = sp.symbols("g1 g2 w1 w2 A", real=True)
    m11, m12, m22 = sp.symbols("M11 M12 M22", real=True)
    g = sp.Matrix([g1, g2])
    w = sp.Matrix([w1, w2])
    M = sp.Matrix([[m11, m12], [m12, m22]])
    ode_w = sp.Rational(1, 4) * (M + A * sp.eye(2)) * g
    ode_M = g * w.T + w * g.T
    ode_A = 2 * (w.T * g)[0]

    # reduction along w*: w = s w*, g = v (1 - s) w*, M = v_b I + mu e e^T, A = A0 + al
    s, v, q, V, u = sp.symbols("s v q V u", positive=True)
    al = sp.Function("alpha")
    # d(mu)/dt = d(al)/dt = 2 v q s (1 - s);  ds/dt = (v/4)(V + 2 al)(1 - s)
    # => d al / ds = 8 q s / (V + 2 al): separable
    alv = sp.Symbol("alpha_v", nonnegative=True)
    lhs = sp.integrate(V + 2 * alv, (alv, 0, alv))
    rhs = sp.integrate(8 * q * s, s)
    sols = sp.solve(sp.Eq(lhs, rhs), alv)
    inv = [e for e in sols if sp.simplify(e.subs({s: 1, q: 1, V: 1})) .is_nonnegative][0]
    speed = sp.simplify(v / 4 * (V + 2 * inv) * (1 - s))
    rate_inf = sp.simplify(sp.limit(speed / (1 - s), s, 1))
    rate_bound = V * v / 4
    c = V ** 2 + 16 * q
    bq = -32 * q
    aq = 16 * q
    Rq = sp.sqrt(aq * u ** 2 + bq * u + c)
    F = -sp.log((2 * c + bq * u + 2 * sp.sqrt(c) * Rq) / u) / sp.sqrt(c)
    integrand_u = 1 / (u * sp.sqrt(V ** 2 + 16 * q * (1 - u) ** 2))
    check = sp.simplify(sp.diff(F, u) - integrand_u)
    # ds/dt = (v/4) sqrt(V^2 + 16 q s^2)(1 - s) => t(s) = (4/v) int_{1-s}^{1} du / (u R(1-u))
    t_s = sp.simplify(4 / v * (F.subs(u, 1) - F.subs(u, 1 - s)))
    return OddTargetDerivation(rd, hs, pair_pred, diff, ode_w, ode_M, ode_A, inv, speed,
                               rate_inf, rate_bound, F, check, t_s,
                               {"s": s, "v": v, "q": q, "V": V, "u": u})


# ---------------------------------------------------------------------------- H1d/H1e
def reduction_identity() -> sp.Expr:
    """u . g x for u = (cos th U_H, sin th U_perp), x = |x| (cos ph e_H, sin ph e_perp),
    averaged over g in O(H) x O(H^perp): only R = U_H . g e_H and S = U_perp . g e_perp
    enter, so E_g relu(u . g x) = |x| E relu(cos th cos ph R + sin th sin ph S)."""
    R, S, nx = sp.symbols("R S |x|", real=True)
    u = sp.Matrix([sp.cos(theta) * R, sp.sin(theta) * S])
    xx = nx * sp.Matrix([sp.cos(phi), sp.sin(phi)])
    return sp.expand((u.T * xx)[0])


@dataclass(frozen=True)
class PhiTildeForms:
    at_zero: sp.Expr            # phi~(0; phi) for symbolic d_H  (= cos phi / alpha(d_H))
    at_half_pi: sp.Expr         # phi~(pi/2; phi) for symbolic d - d_H (= sin phi / alpha(d - d_H))
    kperp: sp.Symbol
    kH: sp.Symbol
    exact: dict                 # (d, d_H) -> Piecewise in (theta, phi)


def _coord_density(k: int, t: sp.Symbol) -> sp.Expr:
    dens = (1 - t ** 2) ** sp.Rational(k - 3, 2)
    return dens / sp.integrate(dens, (t, -1, 1))


def _expect_relu_linear(cc: sp.Expr, ss: sp.Expr, kH: int, kP: int) -> sp.Expr:
    """E[relu(cc R + ss S)] for c, s > 0 in closed form when one of the marginals is the
    two-point law (k = 1) and the other has k in {1, 2, 3}."""
    t = sp.Symbol("t", real=True)
    cs, ss_ = sp.symbols("c s", positive=True)
    if kH == 1 and kP == 1:
        val = (sp.Max(cs + ss_, 0) + sp.Max(cs - ss_, 0) + sp.Max(-cs + ss_, 0)
               + sp.Max(-cs - ss_, 0)) / 4
        val = sp.simplify(val.rewrite(sp.Piecewise))
        return val.subs({cs: cc, ss_: ss})
    # one two-point coordinate: E relu(cR + sS) = (1/2) E |p + q T| with T the other one
    if kH == 1:
        p, qq, k = cs, ss_, kP
    else:
        p, qq, k = ss_, cs, kH
    dens = _coord_density(k, t)
    if k == 2:  # T = cos(psi), psi uniform on [0, pi]
        psi = sp.Symbol("psi", real=True)
        ps = sp.acos(-p / qq)
        big = (sp.integrate(-(p + qq * sp.cos(psi)), (psi, ps, sp.pi))
               + sp.integrate(p + qq * sp.cos(psi), (psi, 0, ps))) / sp.pi
        small = sp.integrate(p + qq * sp.cos(psi), (psi, 0, sp.pi)) / sp.pi
    else:
        t0 = -p / qq
        big = (sp.integrate(-(p + qq * t) * dens, (t, -1, t0))
               + sp.integrate((p + qq * t) * dens, (t, t0, 1)))
        small = sp.integrate((p + qq * t) * dens, (t, -1, 1))
    val = sp.Piecewise((sp.simplify(small) / 2, qq <= p), (sp.simplify(big) / 2, True))
    return val.subs({cs: cc, ss_: ss})


def phi_tilde_closed_forms(positive_part_mean: sp.Expr, k: sp.Symbol) -> PhiTildeForms:
    """phi~ at theta = 0 and pi/2 for symbolic dimensions, from E[(u.e)_+] for
    u ~ Unif(S^{k-1}) (``positive_part_mean`` in the symbol ``k``: the H1f derivation,
    :func:`derivations.sphere.derive_alpha`), and complete closed forms in the small cases
    SymPy integrates; (d, d - d_H) follows from (d, d_H) by the exchange
    theta -> pi/2 - theta, phi -> pi/2 - phi (which swaps R and S)."""
    kH, kP = sp.symbols("k_H k_perp", positive=True, integer=True)
    # theta = 0: relu(cos(phi) R); theta = pi/2: relu(sin(phi) S)  (cos, sin >= 0)
    at0 = sp.cos(phi) * positive_part_mean.subs(k, kH)
    athp = sp.sin(phi) * positive_part_mean.subs(k, kP)
    exact = {}
    cc = sp.cos(theta) * sp.cos(phi)
    ss = sp.sin(theta) * sp.sin(phi)
    for d in (2, 3, 4):
        exact[(d, 1)] = _expect_relu_linear(cc, ss, 1, d - 1)
        if d > 2:
            exact[(d, d - 1)] = exact[(d, 1)].subs({theta: sp.pi / 2 - theta, phi: sp.pi / 2 - phi},
                                                   simultaneous=True)
    return PhiTildeForms(sp.gammasimp(at0), sp.gammasimp(athp), kP, kH, exact)
