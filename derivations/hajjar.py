"""Symbolic derivations for Hajjar & Chizat (2023), claims H1a-H1d (``DERIVATIONS`` maps
each claim id to the builder of its report steps and results; H1e, H1g, H1h (the 1-D
reduction) are in derivations/hajjar_reduced.py, H1f in derivations/sphere.py).  SymPy only.

- :func:`balance_law` (H1a): for sigma = relu^k (k-homogeneous) the per-sample integrand of
  d/dt (k a^2 - |b|^2) along the particle flow is 0; for ReLU (k = 1) this is
  d/dt (a^2 - |b|^2) = 0.
- :func:`invariance_identities` (H1b): Prop. 2.1 as a change of variables b' = T b.
- :func:`odd_target_dynamics` (H1c): the pair identities, linearity of the predictor for
  a measure invariant under (a, b) -> (-a, -b), the closed ODE for the moments (w, M, A)
  derived from the particle velocities, its reduction along w* for isotropic data, the
  conserved quantity, the exact time-to-reach t(s), its closed-form inverse, and the
  asymptotic rate v sqrt(V^2 + 16 |w*|^2) / 4 >= V v / 4; :func:`odd_target` and
  :func:`gaussian_mean` give the check's target and its population best linear
  approximator w* = E[f* x] / v (Fubini over the terms of the definition).
- :func:`haar_relu_average` (H1d): E_g relu(y + z S) over O(d - d_H) in closed form, and
  :func:`haar_average_partials`, its partial derivatives (the reduced velocity field).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derivations.base import Derivation, Step


__all__ = ["DERIVATIONS", "ODD", "BALANCE", "moment_symbols", "haar_relu_average",
           "haar_average_partials", "invariance_identities",
           "balance_law", "BalanceLaw", "sign_cases", "odd_target_dynamics", "OddTargetDerivation",
           "theta", "phi", "reduction_identity", "odd_target", "gaussian_mean", "H1C_DIM"]

theta = sp.Symbol("theta", nonnegative=True)
phi = sp.Symbol("phi", nonnegative=True)


# ---------------------------------------------------------------------------- H1a
_P = sp.Symbol("p", positive=True)
#: symbols of the H1a per-sample rates: output weight a, residual r = f*(x) - f(x), and
#: p = |b.x| > 0 (each rate is a pair (case b.x > 0, case b.x < 0))
BALANCE = {"a": sp.Symbol("a", real=True), "r": sp.Symbol("r", real=True), "p": _P}


def sign_cases(e: sp.Expr, z: sp.Symbol) -> sp.Tuple:
    """(e on z > 0, e on z < 0): the expression with z = p and z = -p (p > 0), simplified.
    {z = 0} is a null set for the data measure, so this case analysis is exhaustive."""
    return sp.Tuple(*[sp.simplify(e.subs(z, val)) for val in (_P, -_P)])


@dataclass(frozen=True)
class BalanceLaw:
    k: int
    rate_a2: sp.Expr            # per-sample d/dt a^2 (sign cases of b.x), sigma = relu^k
    rate_b2: sp.Expr            # per-sample d/dt |b|^2 (sign cases of b.x)
    integrand: sp.Expr          # per-sample integrand of d/dt (k a^2 - |b|^2)
    wrong_integrand: sp.Expr    # per-sample integrand of d/dt (a^2 - |b|^2) for relu^k
    euler_identity: sp.Expr     # z sigma'(z) - k sigma(z), simplified


def balance_law(k: int = 1, d: int = 3) -> BalanceLaw:
    """Particle flow da/dt = E[r sigma(b.x)], db/dt = a E[r sigma'(b.x) x] (docs/conventions.md, section 2).
    Pointwise in (x, r), with a generic sigma: d/dt a^2 = 2 a r sigma(z) and
    d/dt |b|^2 = 2 sum_i b_i a r d sigma(b.x)/d b_i = 2 a r z sigma'(z), z = b.x; then
    sigma = max(z, 0)^k (Euler: z sigma' = k sigma for z != 0) makes
    d/dt (k a^2 - |b|^2) vanish."""
    a, r = BALANCE["a"], BALANCE["r"]
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
    return BalanceLaw(k, specialize(d_a2), specialize(d_b2), integrand, wrong, euler)


# ---------------------------------------------------------------------------- H1c
@dataclass(frozen=True)
class OddTargetDerivation:
    relu_difference: sp.Expr          # relu(z) - relu(-z) - z  (= 0)
    step_sum: sp.Expr                 # H(z) + H(-z) - 1 for z != 0 (= 0)
    pair_predictor: sp.Expr           # (a relu(b.x) + (-a) relu(-b.x)) / 2 - a (b.x) / 2 (= 0)
    pair_velocity: sp.Expr            # pair average of d(a b)/dt, per sample (x, r)
    activation_free: sp.Expr          # pair averages with the activation pattern h = 0 minus h = 1 (= 0)
    ode_w: sp.Matrix                  # dw/dt in terms of (w, M, A, g), dimension n
    ode_M: sp.Matrix
    ode_A: sp.Expr
    ray: dict                         # the ODE along the ray w = s w*: ds/dt, d mu/dt, d alpha/dt, off-ray residual
    invariant: sp.Expr                # alpha(s) solving the along-w* reduction
    speed: sp.Expr                    # ds/dt as a function of s
    rate_inf: sp.Expr                 # asymptotic exponential rate
    rate_bound: sp.Expr               # the reconstructed rate V v / 4
    antiderivative: sp.Expr           # F(u), dF/du = 1/(u sqrt(V^2 + 16 q (1-u)^2))
    antiderivative_check: sp.Expr     # dF/du - integrand (= 0)
    time_to_reach: sp.Expr            # t(s), s = fraction of w* reached, w(0) = 0
    remaining: sp.Expr                # u(t) = 1 - s(t), the inverse of t(s) in closed form
    inverse_check: sp.Expr            # t(1 - u(t)) - t at a rational point (= 0)


#: symbols of the H1c derivation: s fraction of w* reached, v = v_rho, q = |w*|^2,
#: V = E a_0^2 + v_b, u = 1 - s, t time
ODD = dict(zip("svqVut", sp.symbols("s v q V u t", positive=True)))


def moment_symbols(n: int) -> tuple[sp.Matrix, sp.Matrix, sp.Symbol, sp.Matrix]:
    """(w, M, A, g) for dimension n: w = 1/2 int a b, M = int b b^T (symmetric),
    A = int a^2, g = E[(f* - f) x]."""
    w = sp.Matrix(sp.symbols(f"w1:{n + 1}", real=True))
    g = sp.Matrix(sp.symbols(f"g1:{n + 1}", real=True))
    M = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"M{min(i, j) + 1}{max(i, j) + 1}", real=True))
    return w, M, sp.Symbol("A", real=True), g


def _close_moments(e: sp.Expr, a, b, r, x, n: int) -> sp.Expr:
    """Average a per-particle, per-sample polynomial over particles and samples: every
    monomial must be r x_i (a sample term, -> g_i) times a quadratic particle moment
    (a^2 -> A, a b_i -> 2 w_i, b_i b_j -> M_ij).  Raises if the closure fails."""
    w, M, A, g = moment_symbols(n)
    gens = (a, *b, r, *x)
    out = sp.S.Zero
    for mono, coeff in sp.Poly(sp.expand(e), *gens).terms():
        ea, eb, er, ex = mono[0], mono[1:n + 1], mono[n + 1], mono[n + 2:]
        if er != 1 or sum(ex) != 1 or ea + sum(eb) != 2:
            raise ArithmeticError(f"not closed in the moments: monomial {mono}")
        gi = g[ex.index(1)]
        idx = [i for i, k in enumerate(eb) for _ in range(k)]
        mom = A if ea == 2 else (2 * w[idx[0]] if ea == 1 else M[idx[0], idx[1]])
        out += coeff * gi * mom
    return out


def _pair_moment_ode(n: int) -> tuple:
    """H1c, step 1: the pair-closed particles' per-sample velocities, their pair averages and
    the closed moment ODE (w, M, A) in dimension ``n``; with the identities it rests on."""
    z = sp.Symbol("z", real=True, nonzero=True)
    relu = lambda u: sp.Max(u, 0)  # noqa: E731
    rd = sign_cases(relu(z) - relu(-z) - z, z)
    hs = sign_cases(sp.Heaviside(z) + sp.Heaviside(-z) - 1, z)
    a, r = sp.symbols("a r", real=True)
    pair_pred = sign_cases((a * relu(z) + (-a) * relu(-z)) / 2 - a * z / 2, z)

    # per-sample velocities (x, r = f* - f) of the pair p = (a, b), -p = (-a, -b); h is the
    # activation 1{b.x > 0} of p, so -p has 1 - h (b.x = 0 is rho-null):
    # da/dt = r relu(b.x) = r h (b.x), db/dt = a r 1{b.x > 0} x
    b = sp.symbols(f"b1:{n + 1}", real=True)
    x = sp.symbols(f"x1:{n + 1}", real=True)
    h = sp.Symbol("h", real=True)

    def velocity(a_, b_, act):
        zz = sum(bi * xi for bi, xi in zip(b_, x))
        return r * act * zz, [a_ * r * act * xi for xi in x]

    va, vb = velocity(a, b, h)
    mb = [-bi for bi in b]
    va2, vb2 = velocity(-a, mb, 1 - h)

    def pair_average(Q):
        """(1/2) (dQ/dt(p) + dQ/dt(-p)) for a particle quantity given by its time derivative."""
        q1, q2 = Q(a, b, va, vb), Q(-a, mb, va2, vb2)
        return [sp.expand((u + v) / 2) for u, v in zip(q1, q2)]

    d_ab = pair_average(lambda a_, b_, va_, vb_: [va_ * bi + a_ * vbi for bi, vbi in zip(b_, vb_)])
    d_bb = pair_average(lambda a_, b_, va_, vb_: [vb_[i] * b_[j] + b_[i] * vb_[j]
                                                  for i in range(n) for j in range(n)])
    d_aa = pair_average(lambda a_, b_, va_, vb_: [2 * a_ * va_])
    # the pair averages do not depend on which member of the pair is active
    act_free = sp.Tuple(*[sp.expand(e.subs(h, 0) - e.subs(h, 1)) for e in d_ab + d_bb + d_aa])
    # a pair-closed measure: the particle average of dQ/dt equals that of the pair average;
    # w = 1/2 int a b, so dw/dt = 1/2 E_x int pair_average(d(ab)/dt)
    ode_w = sp.Matrix([sp.expand(_close_moments(e, a, b, r, x, n) / 2) for e in d_ab])
    ode_M = sp.Matrix(n, n, [sp.expand(_close_moments(e, a, b, r, x, n)) for e in d_bb])
    ode_A = sp.expand(_close_moments(d_aa[0], a, b, r, x, n))
    pair_vel = sp.Matrix(d_ab)

    return rd, hs, pair_pred, pair_vel, act_free, ode_w, ode_M, ode_A


def _ray_reduction(ode_w: sp.Matrix, ode_M: sp.Matrix, ode_A: sp.Expr, n: int) -> tuple:
    """H1c, step 2: the moment ODE on the ray w = s w* (isotropic data), its speed ds/dt
    and the asymptotic rate."""
    # reduction along w*: w = s w*, w* = sqrt(q) e_1, isotropic data g = v (w* - w),
    # M = v_b I + mu e_1 e_1^T, A = A0 + al, V = A0 + v_b
    s, v, q, V, u, t = (ODD[k] for k in "svqVut")
    mu, al, vb_, A0 = sp.symbols("mu alpha v_b A_0", nonnegative=True)
    wS, MS, AS, gS = moment_symbols(n)
    e1 = sp.Matrix([1] + [0] * (n - 1))
    sub = {**{wS[i]: s * sp.sqrt(q) * e1[i] for i in range(n)},
           **{gS[i]: v * (1 - s) * sp.sqrt(q) * e1[i] for i in range(n)},
           **{MS[i, j]: (vb_ if i == j else 0) + (mu if i == j == 0 else 0)
              for i in range(n) for j in range(i, n)}, AS: A0 + al}
    dw = ode_w.subs(sub)
    dM = ode_M.subs(sub)
    dA = sp.simplify(ode_A.subs(sub))
    ds_dt = sp.simplify((dw[0] / sp.sqrt(q)).subs(A0, V - vb_))
    dmu_dt = sp.simplify(dM[0, 0])
    off_ray = sp.simplify(sum(sp.Abs(e) for e in list(dw[1:]) + [e for i, e in enumerate(dM) if i]))
    # mu(0) = alpha(0) = 0 and d mu/dt = d alpha/dt: mu = alpha along the whole ray
    same_growth = sp.simplify(dmu_dt - dA)
    ds_dt = ds_dt.subs(mu, al)
    dal_ds = sp.simplify(dA / ds_dt)
    # separable: (V + 2 al) d al = 8 q s ds (dal_ds has this form; solved by integration)
    alv = sp.Symbol("alpha_v", nonnegative=True)
    num, den = sp.fraction(sp.factor(dal_ds.subs(al, alv)))
    lhs = sp.integrate(den, (alv, 0, alv))
    rhs = sp.integrate(num, (s, 0, s))
    sols = sp.solve(sp.Eq(lhs, rhs), alv)
    inv = [e for e in sols if sp.simplify(e.subs({s: 1, q: 1, V: 1})).is_nonnegative][0]
    speed = sp.simplify(ds_dt.subs(al, inv))
    rate_inf = sp.simplify(sp.limit(speed / (1 - s), s, 1))
    return ds_dt, dmu_dt, dA, dal_ds, off_ray, same_growth, inv, speed, rate_inf


def _ray_time(speed: sp.Expr, off_ray: sp.Expr, same_growth: sp.Expr) -> tuple:
    """H1c, step 3: the time t(s) along the ray in closed form and its inverse s(t)."""
    s, v, q, V, u, t = (ODD[k] for k in "svqVut")
    c = V ** 2 + 16 * q
    bq = -32 * q
    aq = 16 * q
    Rq = sp.sqrt(aq * u ** 2 + bq * u + c)
    F = -sp.log((2 * c + bq * u + 2 * sp.sqrt(c) * Rq) / u) / sp.sqrt(c)
    # t(s) = int_0^s ds' / speed(s') = int_{1-s}^1 du / speed(1 - u): F is an antiderivative
    # of (v/4) / speed(1 - u), verified by differentiation against the derived speed
    integrand_u = sp.simplify(v / 4 / speed.subs(s, 1 - u))
    check = sp.simplify(sp.diff(F, u) - integrand_u)
    if check != 0 or off_ray != 0 or same_growth != 0:
        raise ArithmeticError(f"H1c reduction failed: {check}, {off_ray}, {same_growth}")
    # t(s) = (4/v) (F(1) - F(1 - s))
    t_s = sp.simplify(4 / v * (F.subs(u, 1) - F.subs(u, 1 - s)))
    # inverse: F(u) = F(1) - v t / 4, i.e. Y(u) = Y(1) exp(sqrt(c) v t / 4) with
    # Y(u) = (2c + bq u + 2 sqrt(c) R(u)) / u; isolate the root, square, solve for u != 0
    Y, uu = sp.symbols("Y u_", positive=True)
    poly = sp.expand((Y * uu - 2 * c - bq * uu) ** 2 - 4 * c * (aq * uu ** 2 + bq * uu + c))
    roots = [e for e in sp.solve(poly, uu) if e != 0]
    root = sp.simplify(roots[0])
    numr, denr = sp.fraction(sp.together(root))
    # divide by Y so that Y -> oo (late times) gives u -> 0 instead of oo/oo
    root = (sp.expand(numr / Y)) / sp.expand(denr / Y)
    Y1 = sp.simplify(((2 * c + bq * u + 2 * sp.sqrt(c) * Rq) / u).subs(u, 1))
    remaining = root.subs(Y, Y1 * sp.exp(sp.sqrt(c) * v * t / 4))
    probe = {V: sp.Rational(6, 5), v: sp.Rational(1, 5), q: sp.Rational(3, 2), t: sp.Rational(7, 2)}
    inv_check = sp.N((t_s.subs(s, 1 - remaining) - t).subs(probe), 40)
    return F, check, t_s, remaining, inv_check


def odd_target_dynamics(n: int = 2) -> OddTargetDerivation:
    """H1c.  Notation: g = E[r x] = E[f* x] - E[x x^T] w (residual correlation), v = v_rho,
    q = |w*|^2, V = E a_0^2 + v_b, w(0) = 0, M_0 = v_b I, A_0 = E a_0^2.  The moment ODE
    is derived in dimension ``n`` from the particle velocities (docs/conventions.md, section 2)."""
    rd, hs, pair_pred, pair_vel, act_free, ode_w, ode_M, ode_A = _pair_moment_ode(n)
    ds_dt, dmu_dt, dA, dal_ds, off_ray, same_growth, inv, speed, rate_inf = \
        _ray_reduction(ode_w, ode_M, ode_A, n)
    F, check, t_s, remaining, inv_check = _ray_time(speed, off_ray, same_growth)
    V, v = ODD["V"], ODD["v"]
    rate_bound = V * v / 4
    return OddTargetDerivation(rd, hs, pair_pred, pair_vel, act_free, ode_w, ode_M, ode_A,
                               {"ds_dt": ds_dt, "dmu_dt": dmu_dt, "dalpha_dt": dA,
                                "dalpha_ds": dal_ds, "off_ray": off_ray},
                               inv, speed, rate_inf, rate_bound, F, check, t_s, remaining,
                               inv_check)


# ---------------------------------------------------------------------------- H1d
def reduction_identity() -> sp.Expr:
    """u . g x for u = (cos th U_H, sin th U_perp), x = |x| (cos ph e_H, sin ph e_perp),
    averaged over g in O(H) x O(H^perp): only R = U_H . g e_H and S = U_perp . g e_perp
    enter, so E_g relu(u . g x) = |x| E relu(cos th cos ph R + sin th sin ph S)."""
    R, S, nx = sp.symbols("R S n_x", real=True)  # n_x = |x|
    u = sp.Matrix([sp.cos(theta) * R, sp.sin(theta) * S])
    xx = nx * sp.Matrix([sp.cos(phi), sp.sin(phi)])
    return sp.expand((u.T * xx)[0])


# ---------------------------------------------------------------------------- H1b
def invariance_identities(n: int = 2) -> dict:
    """Prop. 2.1 as a change of variables, for a symbolic orthogonal T of R^n (a rotation by
    a symbolic angle composed with an optional reflection): with b' = T b, x' = T x,
    (i) T^T T - I = 0, (ii) (T b).(T x) - b.x = 0, so every neuron sees the same
    pre-activation, (iii) the per-sample velocity field is equivariant:
    v_a(a, T b; T x) - v_a(a, b; x) = 0 and v_b(a, T b; T x) - T v_b(a, b; x) = 0, and
    (iv) for a T-invariant measure (T_# mu = mu) the substitution b = T b' in
    f(mu; T x) = int a relu(b.T x) dmu gives f(mu; x): the asymmetry is 0."""
    ang = sp.Symbol("vartheta", real=True)
    a, r, act = sp.symbols("a r h", real=True)
    rot = sp.Matrix([[sp.cos(ang), -sp.sin(ang)], [sp.sin(ang), sp.cos(ang)]])
    refl = sp.diag(-1, 1)
    out = {}
    for name, T in (("rotation", rot), ("reflection", rot * refl)):
        b = sp.Matrix(sp.symbols(f"b1:{n + 1}", real=True))
        x = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
        orth = sp.simplify(T.T * T - sp.eye(n))
        pre = sp.simplify((T * b).dot(T * x) - b.dot(x))
        # velocities per sample: v_a = r relu(b.x) = r h (b.x), v_b = a r h x, with the
        # activation h a function of the (invariant) pre-activation only
        va = lambda bb, xx: r * act * bb.dot(xx)  # noqa: E731
        vb = lambda bb, xx: a * r * act * xx  # noqa: E731
        eq_a = sp.simplify(va(T * b, T * x) - va(b, x))
        eq_b = sp.simplify(vb(T * b, T * x) - T * vb(b, x))
        # f(mu; Tx) - f(mu; x) for mu = (1/2)(delta_(a,b) + delta_(a,T^{-1}... )): closed
        # under T for a reflection (T^2 = I): neurons b and T b
        relu = lambda u: sp.Max(u, 0)  # noqa: E731
        asym = None
        if name == "reflection":
            Tm = T.subs(ang, 0)
            f = lambda xx: (a * relu(b.dot(xx)) + a * relu((Tm * b).dot(xx))) / 2  # noqa: E731
            asym = sp.simplify(f(Tm * x) - f(x))
        out[name] = {"orthogonality": orth, "preactivation": pre, "velocity_a": eq_a,
                     "velocity_b": eq_b, "asymmetry": asym}
    return out


# ---------------------------------------------------------------------------- H1d
def haar_relu_average(k: int) -> tuple[sp.Expr, sp.Symbol, sp.Symbol]:
    """E_g relu(y + z S) over the Haar measure of O(k) acting on x_perp: g x_perp is uniform
    on the sphere of radius |x_perp|, so b_perp . g x_perp = |b_perp||x_perp| S with S the
    first coordinate of Unif(S^{k-1}), whose density (derivations.sphere, by slicing the
    sphere) is integrated against relu(y + z t) on the three regions y <= -z, y >= z and
    |y| < z (kink at t = -y/z).  Returns (expression, y, z), z = |b_perp||x_perp| > 0."""
    from derivations.sphere import coordinate_density, k as K, t as T
    dens = sp.simplify(coordinate_density()[2].subs(K, k))
    y = sp.Symbol("y", real=True)
    z = sp.Symbol("z", positive=True)
    t0 = sp.Symbol("t_0", real=True)
    Z = sp.integrate(dens, (T, -1, 1))
    mid = sp.simplify((sp.integrate((y + z * T) * dens, (T, t0, 1)) / Z).subs(t0, -y / z))
    full = sp.simplify(sp.integrate((y + z * T) * dens, (T, -1, 1)) / Z)
    return sp.Piecewise((0, y <= -z), (full, y >= z), (mid, True)), y, z


def odd_target(n: int) -> tuple[sp.Expr, tuple[sp.Symbol, ...]]:
    """The odd target of the H1c check on R^n (n >= 3), f*(x) = sqrt(n) x_1 |x_2| + x_3, and
    the coordinate symbols (x_1, ..., x_n): the one definition the simulations evaluate."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 3:
        raise ValueError(f"odd_target: n must be an integer >= 3 (the target uses x_1..x_3); got {n!r}")
    xs = sp.symbols(f"x1:{n + 1}", real=True)
    return sp.sqrt(n) * xs[0] * sp.Abs(xs[1]) + xs[2], xs


def gaussian_mean(e: sp.Expr, xs: tuple[sp.Symbol, ...], v: sp.Expr) -> sp.Expr:
    """E[e(x)] for x ~ N(0, v I) on the coordinates ``xs``, from the definition: every term
    of the expanded ``e`` must be a product of one-coordinate factors, whose expectation is
    the product of the 1-D Gaussian integrals (Fubini, independent coordinates); each
    integral is split at 0 (g(t) + g(-t) over t > 0), so |x_i| needs no special case."""
    t = sp.Symbol("t", positive=True)
    density = sp.exp(-t ** 2 / (2 * v)) / sp.sqrt(2 * sp.pi * v)
    total = sp.S.Zero
    for term in sp.Add.make_args(sp.expand(e)):
        coeff, factors = sp.S.One, {x: sp.S.One for x in xs}
        for fac in sp.Mul.make_args(term):
            free = fac.free_symbols & set(xs)
            if len(free) > 1:
                raise ValueError(f"gaussian_mean: the factor {fac} couples coordinates "
                                 f"{sorted(map(str, free))}; give a separable expression")
            if free:
                factors[free.pop()] *= fac
            else:
                coeff *= fac
        for x, g in factors.items():
            if g != 1:
                coeff *= sp.integrate((g.subs(x, t) + g.subs(x, -t)) * density, (t, 0, sp.oo))
        total += coeff
    return sp.simplify(total)


# ---------------------------------------------------------------------------- DERIVATIONS
#: dimension in which the H1c moment ODE is derived (the dimension of the H1c check)
H1C_DIM = 5
#: (d, d_H) of the H1d closed-set sub-check and of the report's step (k = d - d_H = 6)
H1D_DIMS = (8, 2)
#: dimensions k = d - d_H of H^perp for which the H1d Haar average is derived (the check
#: draws (d_H, k) among them)
H1D_KPERP = (2, 3, 4, 5, 6, 7)


def derive_h1a() -> Derivation:
    law1 = balance_law(1)
    law2 = balance_law(2)
    steps = [
        Step(r"Particle flow (Hajjar & Chizat, Sec. 2), pointwise in a sample $(x, r = f^* - f)$: "
             r"$\dot a = r\,\sigma(b^\top x)$, $\dot b = a\,r\,\sigma'(b^\top x)\,x$, so "
             r"$\frac{d}{dt}a^2 = 2ar\sigma(z)$ and $\frac{d}{dt}|b|^2 = 2ar\,z\sigma'(z)$, "
             r"$z = b^\top x$."),
        Step(r"For $\sigma = \mathrm{relu}$, on the cases $z = p > 0$ and $z = -p < 0$ "
             r"($z = 0$ is $\rho$-null):", law1.rate_a2, lhs=r"\frac{d}{dt}a^2"),
        Step("", law1.rate_b2, lhs=r"\frac{d}{dt}|b|^2"),
        Step(r"Euler's identity for $\sigma = \mathrm{relu}$: $z\sigma'(z) - \sigma(z)$ =",
             law1.euler_identity),
        Step(r"Hence the integrand of $\frac{d}{dt}(a^2 - |b|^2)$ on the two sign cases is",
             law1.integrand),
        Step(r"For a $k$-homogeneous $\sigma = \mathrm{relu}^k$ the conserved quantity is "
             r"$k a^2 - |b|^2$ ($k=2$ integrand):", law2.integrand),
        Step(r"and $a^2 - |b|^2$ is then NOT conserved ($k = 2$):", law2.wrong_integrand),
    ]
    return Derivation(steps, {"integrand": tuple(law1.integrand),
                              "rate_a2": tuple(law1.rate_a2), "rate_b2": tuple(law1.rate_b2)})


def derive_h1b() -> Derivation:
    ids = invariance_identities()
    rot, ref = ids["rotation"], ids["reflection"]
    steps = [
        Step(r"Let $T$ be orthogonal. Change of variables $b' = Tb$, $x' = Tx$: for a rotation "
             r"by $\vartheta$ and for a rotation composed with a reflection, $T^\top T - I$ =",
             sp.Tuple(rot["orthogonality"], ref["orthogonality"])),
        Step(r"so every neuron sees the same pre-activation, $(Tb)^\top(Tx) - b^\top x$ =",
             sp.Tuple(rot["preactivation"], ref["preactivation"])),
        Step(r"and the per-sample velocity field is equivariant: "
             r"$v_a(a, Tb; Tx) - v_a(a, b; x)$ and $v_b(a, Tb; Tx) - T\,v_b(a, b; x)$ are",
             sp.Tuple(rot["velocity_a"], rot["velocity_b"], ref["velocity_a"], ref["velocity_b"])),
        Step(r"With $f^*\circ T = f^*$ and $T_\#\rho = \rho$ the residual is $T$-invariant, so "
             r"$(a, Tb)_\#\mu_t$ solves the same gradient flow from the same $\mu_0$; by "
             r"uniqueness it is $\mu_t$. Then $f(\mu_t; Tx) = \int a\,\sigma(b^\top Tx)\,d\mu_t$ "
             r"$= \int a\,\sigma((T^\top b)^\top x)\,d\mu_t = f(\mu_t; x)$."),
        Step(r"At finite width, a particle set closed under $b \mapsto Tb$ (here the pair "
             r"$\{b, Tb\}$ for the reflection) has the predicted asymmetry "
             r"$f(Tx) - f(x)$ =", ref["asymmetry"]),
    ]
    return Derivation(steps, {"preactivation": (rot["preactivation"], ref["preactivation"]),
                              "velocity_equivariance": (rot["velocity_a"], *rot["velocity_b"],
                                                        ref["velocity_a"], *ref["velocity_b"]),
                              "asymmetry": ref["asymmetry"]})


def derive_h1c() -> Derivation:
    o = odd_target_dynamics(H1C_DIM)
    s, v, q, V = (ODD[k] for k in "svqV")
    f_star, xs = odd_target(H1C_DIM)
    v_rho = sp.Rational(1, H1C_DIM)
    w_pop = sp.Matrix([gaussian_mean(f_star * x, xs, v_rho) / v_rho for x in xs])
    steps = [
        Step(r"Pair identities (cases $z>0$, $z<0$): $\mathrm{relu}(z)-\mathrm{relu}(-z)-z$ and "
             r"$H(z)+H(-z)-1$ are", sp.Tuple(o.relu_difference, o.step_sum)),
        Step(r"$f^*$ odd and $\rho$ symmetric keep $\mu_t$ invariant under $(a,b)\mapsto(-a,-b)$ "
             r"(Prop. 2.1 with $T=-I$ acting jointly); then the pair average "
             r"$\frac12[a\,\mathrm{relu}(b^\top x) - a\,\mathrm{relu}(-b^\top x)] - \frac12 a b^\top x$ is",
             o.pair_predictor),
        Step(r"so $f(\mu_t;x) = w(t)^\top x$ with $w = \frac12\int a b\,d\mu_t$. Per sample "
             r"$(x, r)$, with $h = 1\{b^\top x > 0\}$ the activation of $(a, b)$ and $1 - h$ that "
             r"of $(-a, -b)$, the pair average of $\frac{d}{dt}(ab)$ is (first coordinate)",
             o.pair_velocity[0]),
        Step(r"It does not depend on $h$ (difference of the pair averages of $\frac{d}{dt}(ab)$, "
             r"$\frac{d}{dt}(bb^\top)$, $\frac{d}{dt}a^2$ between $h = 0$ and $h = 1$):",
             o.activation_free),
        Step(r"Every term is $r x_i$ times a quadratic particle moment; averaging over samples "
             r"($r x_i \to g_i$, $g = E[(f^*-f)x]$) and particles ($a^2 \to A$, "
             r"$a b_i \to 2 w_i$, $b_i b_j \to M_{ij}$) closes the system:",
             o.ode_w, lhs=r"\dot w"),
        Step("", o.ode_A, lhs=r"\dot A"),
        Step(r"$\dot M = g w^\top + w g^\top$ (derived entrywise; first row):", o.ode_M[0, :],
             lhs=r"\dot M_{1\cdot}"),
        Step(r"Isotropic data ($g = v(w^* - w)$), $w(0)=0$, $M_0 = v_b I$, $A_0 = E a_0^2$: on the "
             r"ray $w = s w^*$, $M = v_b I + \mu e e^\top$, $A = A_0 + \alpha$ the off-ray part of "
             r"the field vanishes (sum of absolute values: $" + sp.latex(o.ray["off_ray"]) + r"$), "
             r"$\dot\mu = \dot\alpha$ =", o.ray["dalpha_dt"]),
        Step(r"so $\mu = \alpha$, and $\dot s$ =", o.ray["ds_dt"]),
        Step(r"Separating $d\alpha/ds = " + sp.latex(o.ray["dalpha_ds"]) + "$ gives",
             o.invariant, lhs=r"\alpha(s)"),
        Step("hence", o.speed, lhs=r"\dot s"),
        Step(r"Asymptotic exponential rate of $|w - w^*| = |w^*|(1-s)$:", o.rate_inf,
             lhs=r"\lambda_\infty"),
        Step(r"Since $\sqrt{V^2+16qs^2}\ge V$, $1 - s(t) \le e^{-Vvt/4}$: the reconstructed "
             r"bound $|w-w^*|\le|w^*|e^{-Vv t/4}$ holds, but the true asymptotic rate is larger "
             r"(by the factor $\sqrt{1+16q/V^2}$).", o.rate_bound, lhs=r"\lambda_{\rm bound}"),
        Step(r"Exact time to reach the fraction $s$ (antiderivative checked by differentiation: "
             r"residual $= " + sp.latex(o.antiderivative_check) + "$):", o.time_to_reach,
             lhs="t(s)"),
        Step(r"Inverting ($F(u) = F(1) - vt/4$, isolate the square root, square, drop the root "
             r"$u = 0$) gives the remaining fraction $u = 1 - s$ in closed form (check "
             r"$t(1 - u(t)) - t$ at a rational point: $" + sp.latex(sp.Float(o.inverse_check, 3))
             + "$):", o.remaining, lhs="1 - s(t)"),
        Step(r"The check's odd target on $\mathbb R^{" + str(H1C_DIM) + r"}$ (odd: $f^*(x) + "
             r"f^*(-x) = " + sp.latex(sp.simplify(f_star + f_star.subs({x: -x for x in xs},
                                                                      simultaneous=True)))
             + r"$):", f_star, lhs="f^*(x)"),
        Step(r"Its population best linear approximator for $\rho = N(0, I/d)$, "
             r"$w^* = E[f^* x]/v_\rho$ (Gaussian integrals of the definition, coordinate by "
             r"coordinate):", w_pop.T, lhs=r"w^{*\top}"),
    ]
    return Derivation(steps, {"ode_w": o.ode_w, "ode_M": o.ode_M, "ode_A": o.ode_A,
                              "speed": o.speed, "rate_inf": o.rate_inf,
                              "rate_bound": o.rate_bound, "remaining": o.remaining,
                              "w_star_population": tuple(w_pop)})


def haar_average_partials(k: int) -> tuple[sp.Expr, sp.Expr]:
    """(d h_k/dy, d h_k/dz) of the Haar average h_k(y, z) = E_S relu(y + z S) of
    :func:`haar_relu_average` (z > 0), by differentiating the derived piecewise form branch
    by branch (h_k is C^1: the branches' derivatives agree on |y| = z).  They are
    E_S 1{y + zS > 0} and E_S S 1{y + zS > 0}, the activation and the radial factor of the
    reduced velocity (Lemma 4.2, H1d)."""
    h, y, z = haar_relu_average(k)
    dy = sp.Piecewise(*[(sp.simplify(sp.diff(e, y)), c) for e, c in h.args])
    dz = sp.Piecewise(*[(sp.simplify(sp.diff(e, z)), c) for e, c in h.args])
    return dy, dz


def derive_h1d() -> Derivation:
    d, d_H = H1D_DIMS
    avgs = {kp: haar_relu_average(kp)[0] for kp in H1D_KPERP}
    partials = {kp: haar_average_partials(kp) for kp in H1D_KPERP}
    avg = avgs[d - d_H]
    ident = reduction_identity()
    steps = [
        Step(r"$f^*$ depends on $x_H$ only, $\rho$ and $\mu_0$ are invariant under "
             r"$O(H^\perp)$ (acting on $b_\perp$, $x_\perp$): by Prop. 2.1 (H1b) for every such "
             r"$T$, $\mu_t$ stays $O(H^\perp)$-invariant, so $f(\mu_t; x) = "
             r"\int a\,E_g\,\sigma(b_H^\top x_H + b_\perp^\top g x_\perp)\,d\mu_t$, $g$ Haar on "
             r"$O(H^\perp)$."),
        Step(r"$g x_\perp$ is uniform on the sphere of radius $|x_\perp|$ in "
             r"$H^\perp \cong \mathbb R^{k}$, $k = d - d_H$, so $b_\perp^\top g x_\perp = "
             r"|b_\perp||x_\perp|\,S$, $S$ the first coordinate of $\mathrm{Unif}(S^{k-1})$ "
             r"(density by slicing, H1f). With $y = b_H^\top x_H$, $z = |b_\perp||x_\perp|$ and "
             f"$k = {d - d_H}$ the Haar average is (derived likewise for "
             f"$k = {', '.join(map(str, H1D_KPERP))}$)", avg, lhs=r"E_g\,\sigma(y + zS)"),
        Step(r"So a neuron enters only through $(a, b_H, |b_\perp|)$: $d_H$ dimensions plus "
             r"the angle $\theta = \arctan(|b_\perp|/|b_H|)$ (Lemma 4.2). Averaging also over "
             r"$O(H)$ gives the 1-D reduction of H1e, with $u^\top g x$ =", ident),
        Step(r"Reduced particles $(a_j, b_{H,j}, r_j = |b_{\perp,j}|)$ with masses $w_j$: "
             r"$f(x) = \sum_j w_j a_j h_k(b_{H,j}^\top x_H, r_j|x_\perp|)$. The velocity of the "
             r"full flow, $\dot a = E[(f^*-f)\sigma(b^\top x)]$, $\dot b = a\,E[(f^*-f)"
             r"\sigma'(b^\top x)x]$, averaged over the orbit of $b_\perp$ (the residual is "
             r"$O(H^\perp)$-invariant) and projected on $b_H$ and $b_\perp/|b_\perp|$, is minus "
             r"the gradient of $L = \frac12 E(f - f^*)^2$ in $(a_j, b_{H,j}, r_j)$ divided by "
             r"$w_j$: $\dot a_j = E[(f^*-f)\,h_k]$, $\dot b_{H,j} = a_j E[(f^*-f)\,"
             r"\partial_y h_k\,x_H]$, $\dot r_j = a_j E[(f^*-f)\,\partial_z h_k\,|x_\perp|]$, "
             r"with ($k = " + str(d - d_H) + r"$)", partials[d - d_H][0],
             lhs=r"\partial_y h_k = E_S 1\{y + zS > 0\}"),
        Step("", partials[d - d_H][1], lhs=r"\partial_z h_k = E_S\,S\,1\{y + zS > 0\}"),
    ]
    return Derivation(steps, {"haar_average": avgs,
                              "haar_average_dy": {kp: p[0] for kp, p in partials.items()},
                              "haar_average_dz": {kp: p[1] for kp, p in partials.items()}})


DERIVATIONS = {"H1a": derive_h1a, "H1b": derive_h1b, "H1c": derive_h1c, "H1d": derive_h1d}
