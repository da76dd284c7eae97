"""H1e's certified sub-checks (Hajjar & Chizat 2023, Thm 4.3): Arb balls of the
derived closed forms of phi~ and of its inner expectation against Arb balls of their
DEFINITIONS (``numerics.arb_quadrature``: phi~ as the expectation over the two sphere
marginals cut exactly at the ReLU kink; the inner expectation from R's polar-angle law),
and the float64 formulas within their stated ulp bounds of the definition's ball.  Overlap
at a tiny radius proves an instance, disjoint balls disprove it."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy as sp

from derivations.hajjar import BALANCE
from derivations.hajjar_reduced import FIELD_SYMBOLS, INNER, K_H, K_PERP, phi, theta
from derivations.sphere import k as K
from numerics import arb_quadrature as aq
from verify import certify
from verify.kit import CertifiedInstance, RunContext, SubCheck, certified_compare

__all__ = ["h1e_certified", "h1d_certified", "h1a_certified", "limit_mass_certified",
           "reduced_field_certified", "alpha_two_step_ratio", "alpha_recursion_balls"]


@certify.ball_cache(maxsize=1024)
def _phi_ball(th: float, ph: float, d: int, dH: int, derivative: bool = False):
    """The definition's ball (independent of the derivation: cached across mutants)."""
    return aq.phi_tilde_ball(th, ph, d, dH, derivative=derivative, prec=128)


@certify.ball_cache(maxsize=256)
def _inner_ball(k: int, c: float, y: float):
    return aq.inner_expectation_ball(k, c, y)


@certify.ball_cache(maxsize=256)
def _mean_ball(k: int):
    return aq.positive_part_mean_ball(k)

_EPS = float(np.finfo(float).eps)
_WHY = ("Arb balls: phi~ = E[(cos th cos ph R + sin th sin ph S)_+] with R, S the first "
        "coordinates of Unif(S^(d_H - 1)), Unif(S^(d - d_H - 1)) (the R-expectation exact at "
        "its kink, the S-integral by acb.integral cut where the kink leaves [-1, 1]; "
        "numerics.arb_quadrature.phi_tilde_ball); the closed form by the Arb translation of "
        "the derived SymPy expression (verify.certify.arb_function); 128 bits")


def _instances(ctx: RunContext, n: int) -> list[tuple[int, int, float, float]]:
    """(d, d_H, theta, phi): the pinned small dimensions of the exact forms, then n drawn
    with d <= 40 and the angles' ends (0, pi/2) among them."""
    rng = ctx.rng("certified H1e")
    out = [(3, 1, 0.3, 0.7), (4, 3, 0.4, 0.65), (2, 1, 0.5, 0.6), (3, 2, 0.6, 0.55),
           (4, 1, 0.7, 0.5), (4, 2, 0.0, 0.9), (30, 5, np.pi / 2, 0.3)]
    for _ in range(n):
        d = int(rng.integers(2, 41))
        th, ph = rng.uniform(0.0, np.pi / 2, 2)
        out.append((d, int(rng.integers(1, d)), float(th), float(ph)))
    return out


def _closed_forms(res: dict, pts: list) -> list[SubCheck]:
    """at_zero, at_half_pi and the exact small-d forms against phi_tilde_ball."""
    with certify.working_precision(128):
        f0 = certify.arb_function(res["at_zero"], (K_H, phi))
        f1 = certify.arb_function(res["at_half_pi"], (K_PERP, phi))
        exact = {key: certify.arb_function(e, (theta, phi)) for key, e in res["exact"].items()}
        ends, small = [], []
        for d, dH, th, ph in pts:
            lab = f"(d, d_H, theta, phi) = ({d}, {dH}, {th:.4g}, {ph:.4g})"
            ends.append(CertifiedInstance(f"theta = 0, {lab}", f0(dH, ph),
                                          _phi_ball(0.0, ph, d, dH)))
            # theta = pi/2 exactly (no float is): phi~(pi/2; pi/2 - ph; d, d_H) = E[(cos(ph) S)_+]
            # is the definition at theta = 0 with the marginals' roles exchanged
            ends.append(CertifiedInstance(f"theta = pi/2, phi = pi/2 - {ph:.4g}, {lab}",
                                          f1(d - dH, certify.ball(sp.pi) / 2 - ph),
                                          _phi_ball(0.0, ph, d, d - dH)))
            if (d, dH) in exact:
                small.append(CertifiedInstance(lab, exact[(d, dH)](th, ph),
                                               _phi_ball(th, ph, d, dH)))
    return [certified_compare(f"certified: derived phi~(0; phi) and phi~(pi/2; phi) vs the "
                              f"definition, {len(pts)} (d, d_H, phi)", ends, reason=_WHY),
            certified_compare(f"certified: derived exact phi~ for d <= 4 vs the definition, "
                              f"{len(small)} points", small, reason=_WHY)]


def _inner_forms(res: dict) -> SubCheck:
    """The four float64-oriented forms of the inner expectation E_R[(cR + y)_+] and its
    partials, each on its region, against the definition's ball."""
    syms = (K, INNER["c"], INNER["y"], INNER["mean"])
    insts = []
    with certify.working_precision(128):
        fns = {(n, key): certify.arb_function(e, syms)
               for n, fs in res["inner"].items() for key, e in fs.items()}
        for kk in (1, 2, 3, 7, 40, 1000):
            mean = _mean_ball(kk)
            for a in (-0.9, -0.5, 0.0, 0.3, 0.6, 0.95):
                c, y = 1.3, -a * 1.3
                refs = _inner_ball(kk, c, y)
                for (n, key), f in fns.items():
                    if n.endswith("_pos") != (y > 0) or n.startswith("small") != (a * a < 0.5):
                        continue
                    insts.append(CertifiedInstance(
                        f"{n}.{key} at k = {kk}, a = {a:g}", f(kk, c, y, mean),
                        refs[("inner", "inner_dc", "inner_dy").index(key)], scale=c + abs(y)))
    return certified_compare(f"certified: derived inner expectation and partials (4 forms, "
                             f"each on its region) vs the definition, {len(insts)} points",
                             insts, reason="Arb balls: E_R[(cR + y)_+] and its partials from R's "
                             "polar-angle law cut at the kink "
                             "(numerics.arb_quadrature.inner_expectation_ball); the forms by the "
                             "Arb translation (incomplete Beta, log1p); at the scale c + |y| "
                             "of the terms; 128 bits")


def _formula_ulps(pts: list) -> list[SubCheck]:
    """formulas.phi_tilde (relative) and phi_tilde_dtheta (at the scale |c'| E|R| + |y'| E|S|
    of its terms) within their stated ulp bounds of the definition's ball."""
    from verify.formulas import phi_tilde, phi_tilde_dtheta
    out = []
    for f, derivative in ((phi_tilde, False), (phi_tilde_dtheta, True)):
        ub = f.ulp_bound.ulps * _EPS
        insts = []
        with certify.working_precision(128):
            for d, dH, th, ph in pts:
                ref = _phi_ball(th, ph, d, dH, derivative)
                v = float(np.asarray(f(th, ph, d, dH)))
                scale = None
                if derivative:
                    t, p = certify.ball(th), certify.ball(ph)
                    scale = (abs(t.sin() * p.cos()) * 2 * _mean_ball(dH)
                             + abs(t.cos() * p.sin()) * 2 * _mean_ball(d - dH))
                insts.append(CertifiedInstance(f"(d, d_H, theta, phi) = ({d}, {dH}, {th:.4g}, "
                                               f"{ph:.4g})", v, ref, scale=scale))
        out.append(certified_compare(
            f"certified: formulas.{f.name} (float64) within its stated {f.ulp_bound.ulps:g} "
            f"ulps of the definition", insts, bound=ub,
            reason=_WHY + "; the float64 value as an exact ball" + (
                ", at the scale |c'| E|R| + |y'| E|S| of the terms" if derivative else "")))
    return out


@lru_cache(maxsize=1)
def alpha_two_step_ratio() -> sp.Expr:
    """alpha(k + 2) / alpha(k) for alpha(k) = 1 / E_{u ~ Unif(S^{k-1})}[(u.e)_+], k >= 2,
    from the polar-angle law (H1f), independently of the Gamma-function derivation:
    E[(u.e)_+] = N_{k-2} / W_{k-2} with N_n = int_0^(pi/2) cos sin^n = int_0^1 u^n du
    (u = sin) and W_n = int_0^pi sin^n; integrating d/dtheta(cos sin^(n-1)) =
    (n-1) sin^(n-2) - n sin^n over [0, pi] (the boundary term vanishes for n >= 2) gives
    Wallis' W_n / W_{n-2} = (n-1)/n.  Raises ArithmeticError if an identity fails."""
    th, u = sp.Symbol("theta", real=True), sp.Symbol("u", positive=True)
    n = sp.Symbol("n", integer=True, positive=True)
    s, c = sp.sin(th), sp.cos(th)
    boundary = c * s ** (n - 1)
    rhs = (n - 1) * s ** (n - 2) - n * s ** n
    residual = sp.expand(sp.powsimp(sp.expand((sp.diff(boundary, th) - rhs).subs(c ** 2, 1 - s ** 2)),
                                    combine="exp"))
    if residual != 0 or any(boundary.subs({th: e, n: 2}) != 0 for e in (0, sp.pi)):
        raise ArithmeticError("H1f: the integration by parts behind Wallis' recursion failed")
    W, W2 = sp.symbols("W_n W_nm2", positive=True)
    wallis = sp.cancel(sp.solve_linear((n - 1) * W2 - n * W, symbols=[W])[1] / W2)  # W_n/W_{n-2}
    numerator = sp.integrate(u ** n, (u, 0, 1))                                      # N_n
    ratio = sp.cancel(numerator.subs(n, K - 2) / numerator.subs(n, K) * wallis.subs(n, K))
    if ratio.free_symbols != {K}:
        raise ArithmeticError(f"H1f: alpha's two-step ratio is not a function of k: {ratio}")
    return ratio


def alpha_recursion_balls(k_max: int, prec: int = 128) -> dict[int, object]:
    """Arb balls of the definition's alpha(k) = 1/E[(u.e)_+] for k = 2..``k_max``: the Arb
    quadratures of the polar-angle law at k = 2, 3 carried up by
    :func:`alpha_two_step_ratio` (each step exact rational arithmetic on the ball)."""
    if isinstance(k_max, bool) or not isinstance(k_max, int) or not 3 <= k_max <= 10 ** 6:
        raise ValueError(f"alpha_recursion_balls: k_max must be an integer in 3..10^6; got {k_max!r}")
    ratio = sp.lambdify(K, alpha_two_step_ratio(), modules=[])
    with certify.working_precision(prec):
        balls = {kk: 1 / aq.positive_part_mean_ball(kk, prec=prec) for kk in (2, 3)}
        for kk in range(2, k_max - 1):
            r = ratio(sp.Integer(kk))
            balls[kk + 2] = balls[kk] * int(r.p) / int(r.q)
    return balls


def h1e_certified(ctx: RunContext, res: dict, n: int) -> list[SubCheck]:
    """H1e's certified sub-checks at the pinned and ``n`` drawn instances."""
    pts = _instances(ctx, n)
    return [*_closed_forms(res, pts), _inner_forms(res), *_formula_ulps(pts)]


def _h1d_points(ctx: RunContext, n: int) -> list[tuple[float, float]]:
    """(y, z) with z > 0 and |y| < z (the kink of relu(y + z S) inside S's range): pinned
    ratios y/z near both ends and at small / large z, then ``n`` drawn."""
    rng = ctx.rng("certified H1d")
    pts = [(-0.9 * 0.05, 0.05), (0.95 * 2.7, 2.7), (-0.3, 1.0), (0.2, 0.3), (-0.999, 1.0)]
    for _ in range(n):
        z = float(rng.uniform(0.05, 3.0))
        pts.append((float(z * rng.uniform(-0.999, 0.999)), z))
    return pts


def h1d_certified(ctx: RunContext, results: dict, n: int) -> SubCheck:
    """H1d (Lemma 4.2): the derived Haar averages h_k(y, z) = E relu(y + z S) and their
    partials dh/dy, dh/dz, S the first coordinate of Unif(S^(k-1)), against the definition's
    balls (``numerics.arb_quadrature.inner_expectation_ball``: S's polar-angle law cut at
    the kink), at 5 pinned and ``n`` drawn (y, z) with |y| < z, for every derived k."""
    names = ("haar_average", "haar_average_dz", "haar_average_dy")   # the ball's order
    pts = _h1d_points(ctx, n)
    insts = []
    with certify.working_precision(128):
        for kk, expr in results["haar_average"].items():
            y, z = sorted(expr.free_symbols, key=lambda v: v.name)
            fns = [certify.arb_function(results[name][kk], (y, z)) for name in names]
            for yv, zv in pts:
                refs = aq.inner_expectation_ball(int(kk), zv, yv)
                for name, f, ref in zip(names, fns, refs):
                    insts.append(CertifiedInstance(
                        f"{name} at k = {kk}, (y, z) = ({yv:.6g}, {zv:.6g})", f(yv, zv), ref,
                        scale=zv + abs(yv) if name == "haar_average" else 1.0))
    return certified_compare(
        f"certified: derived Haar averages E relu(y + z S) and partials vs the definition, "
        f"k = {', '.join(map(str, results['haar_average']))}, {len(pts)} (y, z) with |y| < z",
        insts, reason="Arb balls: E relu(y + z S), E[S; y + z S > 0], P(y + z S > 0) from S's "
        "polar-angle law cut at the kink (numerics.arb_quadrature.inner_expectation_ball); the "
        "Piecewise forms by the Arb translation (branch decided by the balls of y, z); h at the "
        "scale z + |y|, the partials at the scale 1 (both bounded by it); 128 bits")


def h1a_certified(ctx: RunContext, results: dict, k: int, n: int) -> SubCheck:
    """H1a: at ``n`` drawn (a, r, b, x), b, x in R^d (d = 2..8), the derived per-sample
    rates d/dt a^2, d/dt |b|^2 and the derived integrand of d/dt (k a^2 - |b|^2) (k = 1 the
    claim, ``k`` the variant's invariant) against the definitions 2 a a', 2 b.b', with
    a' = r relu(b.x), b' = a r 1{b.x > 0} x, in Arb (floats exact); the sign case of
    b.x is decided by its ball, at the scale 2 |a r| |b| |x|."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"h1a_certified: k (the invariant k a^2 - |b|^2) must be an integer >= 1; "
                         f"got {k!r}")
    rng = ctx.rng("certified H1a")
    syms = (BALANCE["a"], BALANCE["p"], BALANCE["r"])
    insts = []
    with certify.working_precision(128):
        fns = {name: [certify.arb_function(e, syms) for e in results[name]]
               for name in ("rate_a2", "rate_b2", "integrand")}
        for i in range(n):
            d = int(rng.integers(2, 9))
            a, r = (float(v) for v in rng.standard_normal(2))
            b, x = rng.standard_normal(d), rng.standard_normal(d) / np.sqrt(d)
            A, R = certify.ball(a), certify.ball(r)
            B, X = [certify.ball(float(v)) for v in b], [certify.ball(float(v)) for v in x]
            z = sum((bi * xi for bi, xi in zip(B, X)), certify.ball(0))
            if z.contains(0):
                continue                                  # the sign case is undecided: skip
            case, active = (0, 1) if z > 0 else (1, 0)
            da2 = 2 * A * (R * z * active)                # 2 a a', a' = r relu(b.x)
            db2 = 2 * sum((bi * A * R * active * xi for bi, xi in zip(B, X)), certify.ball(0))
            scale = 2 * abs(a * r) * float(np.linalg.norm(b) * np.linalg.norm(x)) + 1e-300
            lab = f"draw {i}: d = {d}, b.x {'>' if case == 0 else '<'} 0"
            for name, ref in (("rate_a2", da2), ("rate_b2", db2), ("integrand", k * da2 - db2)):
                insts.append(CertifiedInstance(f"{name}, {lab}", fns[name][case](a, abs(z), r),
                                               ref, scale=scale))
    return certified_compare(
        f"certified: derived per-sample d/dt a^2, d/dt |b|^2 and d/dt({'' if k == 1 else k}"
        f"{' ' if k > 1 else ''}a^2 - |b|^2) vs "
        f"2 a a', 2 b.b' of the flow's definition, {n} drawn (a, r, b, x)", insts,
        reason="Arb balls of the definitions a' = r relu(b.x), b' = a r 1{b.x > 0} x (floats "
        "exact, the sign case decided by the ball of b.x); the derived sign-case forms by the "
        "Arb translation; at the scale 2 |a r| |b| |x| of the terms; 128 bits")


def limit_mass_certified(mass: sp.Expr, d_H: sp.Symbol, dims: list[int], shift: int) -> SubCheck:
    """H1g: the derived limit mass read at d_H + ``shift`` (0: the claim; the variant's
    near miss 1) against 1/E[(u.e)_+] on Unif(S^(d_H - 1)) by Arb quadrature of the
    polar-angle law, at every d_H in ``dims``."""
    if not dims or not all(isinstance(k, int) and k >= 1 for k in dims):
        raise ValueError(f"limit_mass_certified: dims must be a non-empty list of integers >= 1; "
                         f"got {dims!r}")
    with certify.working_precision(128):
        f = certify.arb_function(mass.subs(d_H, d_H + shift), (d_H,))
        insts = [CertifiedInstance(f"d_H = {k}", f(k), 1 / _mean_ball(k)) for k in dims]
    return certified_compare(
        f"certified: derived limit mass m_+ vs 1/E[(u.e)_+] on Unif(S^(d_H - 1)), d_H = "
        f"{min(dims)}..{max(dims)}", insts,
        reason="Arb: E[(u.e)_+] from the polar-angle law cut at pi/2 by acb.integral "
        "(numerics.arb_quadrature.positive_part_mean_ball); the closed form by the Arb "
        "translation of the derived expression; 128 bits")


def _test_potential(p: list, q: list):
    """G(t) = sum_k p_k cos(k t) + q_k sin(k t): an analytic test profile (balls or series)."""
    def G(t):
        return sum(p[k] * (k * t).cos() + q[k] * (k * t).sin() for k in range(len(p)))
    return G


def _homogeneous_potential(G):
    """Ghat(b_H, b_perp) = |b| G(atan(b_perp / b_H)) (b_H > 0), on balls or series."""
    return lambda h, v: (h * h + v * v).sqrt() * G((v / h).atan())


def _germ(x, varies: bool):
    """x (+ t if ``varies``) as an Arb power series of length 2 in t."""
    return aq.flint_module().arb_series([x, 1] if varies else [x], prec=2)


def reduced_field_certified(ctx: RunContext, results: dict, n: int) -> SubCheck:
    """Certified: the derived reduced field (dc/dt, dtheta/dt) of H1g/H1h equals the polar
    projection of the particle flow da/dt = Ghat(b), db/dt = a grad_b Ghat(b) (docs/
    conventions.md, section 2) for a 1-homogeneous potential Ghat(b) = |b| G(theta(b)), at
    drawn balanced particles (a = eps |b|, eps = +-1, theta in (0, pi/2)) and drawn analytic
    profiles G (trigonometric, degree 2): grad_b Ghat by Arb power series of the definition
    (no chain rule written out), c = |a| |b|, theta = atan(b_perp / b_H), their time
    derivatives from (a', b'), against the derived expressions at (eps, c, G(theta), G'(theta)).
    That the potential of an O(H) x O(H^perp)-invariant measure has this form is H1e's
    (measured in H1g's field sub-check), not re-proven here."""
    flint = aq.flint_module()
    dc = certify.arb_function(results["dc_dt"], FIELD_SYMBOLS)
    dth = certify.arb_function(results["dtheta_dt"], FIELD_SYMBOLS)
    rng = ctx.rng("certified reduced field")
    inst = []
    with certify.working_precision(128):
        for i in range(n):
            rho, th = float(rng.uniform(0.2, 3.0)), float(rng.uniform(0.05, 1.5))
            eps = 1 if i % 2 == 0 else -1
            p, q = ([certify.ball(float(v)) for v in rng.uniform(-1, 1, 3)] for _ in range(2))
            G = _test_potential(p, q)
            ghat = _homogeneous_potential(G)
            bH, bP = certify.ball(rho) * certify.ball(th).cos(), certify.ball(rho) * certify.ball(th).sin()
            dH = ghat(_germ(bH, True), _germ(bP, False)).coeffs()[1]
            dP = ghat(_germ(bH, False), _germ(bP, True)).coeffs()[1]
            a = eps * certify.ball(rho)
            da, dbH, dbP = ghat(bH, bP), a * dH, a * dP
            nb = (bH * bH + bP * bP).sqrt()
            ref_c = eps * da * nb + abs(a) * (bH * dbH + bP * dbP) / nb
            ref_th = (bH * dbP - bP * dbH) / (nb * nb)
            T = certify.ball(th)
            g_th = G(T)
            dg_th = G(flint.arb_series([T, 1], prec=2)).coeffs()[1]
            args = (eps, certify.ball(rho) ** 2, g_th, dg_th)
            scale = (abs(da) + abs(dbH) + abs(dbP)) * (1 + certify.ball(rho))
            lab = f"(rho, theta, eps) = ({rho:.6g}, {th:.6g}, {eps})"
            inst += [CertifiedInstance(lab + ", dc/dt", dc(*args), ref_c, scale=scale),
                     CertifiedInstance(lab + ", dtheta/dt", dth(*args), ref_th, scale=scale)]
    return certified_compare(
        f"certified: derived reduced field (dc/dt, dtheta/dt) vs the polar projection of the "
        f"particle flow, {n} balanced particles and profiles G", inst,
        reason="Arb balls at 128 bits: grad_b Ghat of Ghat(b) = |b| G(atan(b_perp/b_H)) by "
               "power series of the definition, (c, theta)' from (a', b'); the closed form by "
               "the Arb translation of the derived SymPy expressions; compared at the scale "
               "of the velocity's terms")
