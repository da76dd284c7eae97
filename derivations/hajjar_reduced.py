"""Symbolic derivations for the 1-D reduction of Hajjar & Chizat (2023), Thm 4.3, for
the target f* = |x_H|: claims H1e, H1g, H1h (``DERIVATIONS`` maps each claim id to the
builder of its report steps and results).  SymPy only.

- :func:`phi_tilde_closed_forms` (H1e): phi~(0; phi), phi~(pi/2; phi) for symbolic
  dimensions and the complete closed forms for (d, d_H) = (2, 1), (3, 1), (3, 2), (4, 1), (4, 3).
- :func:`reduced_velocity_field`, :func:`limit_mass` (H1g, H1h): the (c, theta) field of the
  1-D reduction from the particle flow, and the mass alpha(d_H) of the conjectured limit.
- :func:`flow_time_per_step` (H1i): the mean-field time that one gradient step of
  learning rate eta on the width-m parameters covers.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import mpmath

import sympy as sp
from sympy.codegen.cfunctions import log1p

from derivations.base import Derivation, Step
from derivations.hajjar import phi, theta


__all__ = ["DERIVATIONS", "reduced_velocity_field", "limit_mass", "phi_tilde_closed_forms",
           "PhiTildeForms", "theta", "phi", "inner_expectation", "InnerExpectation",
           "inner_float_forms", "INNER", "flow_time_per_step", "eta", "m_width", "FIELD_SYMBOLS",
           "K_H", "K_PERP", "D_H"]

#: the sphere dimensions of phi~(0; .) (k_H = d_H) and phi~(pi/2; .) (k_perp = d - d_H) (H1e)
K_H, K_PERP = sp.symbols("k_H k_perp", positive=True, integer=True)
#: the dimension d_H of H in the limit mass alpha(d_H) (H1g)
D_H = sp.Symbol("d_H", positive=True, integer=True)
#: learning rate of a gradient step on the parameters (a, B) of the width-m network (H1i)
eta = sp.Symbol("eta", positive=True)
#: width m of the network f = (1/m) sum_j a_j relu(b_j . x) (H1i)
m_width = sp.Symbol("m", positive=True, integer=True)
#: the arguments (eps, c, G(theta), G'(theta)) of the reduced field ``dc_dt``, ``dtheta_dt``
FIELD_SYMBOLS = (sp.Symbol("epsilon", real=True), sp.Symbol("c", positive=True),
                 sp.Symbol("G_theta", real=True), sp.Symbol("dG_theta", real=True))


# ---------------------------------------------------------------------------- H1e

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


@dataclass(frozen=True)
class InnerExpectation:
    """E_R[(c R + y)_+] for R the first coordinate of Unif(S^{k-1}) (the inner expectation
    of phi~ over R, given S), derived from the coordinate density; |y| < c, a = -y/c."""
    k: sp.Symbol
    a: sp.Symbol                # threshold in (0, 1) (the forms below extend by symmetry)
    c: sp.Symbol
    y: sp.Symbol
    tail_ratio: sp.Expr         # E[R; R > a] / E[R_+] = (1 - a^2)^{(k-1)/2}
    tail_ratio_stable: sp.Expr  # exp((k-1)/2 log1p(-a^2)), equal (symbolically)
    tail_prob: sp.Expr          # P(R > a), a >= 0: (1/2) I_{1-a^2}((k-1)/2, 1/2)
    tail_prob_small: sp.Expr    # the same for a^2 < 1/2: 1/2 - (1/2) I_{a^2}(1/2, (k-1)/2)
    inner: sp.Expr              # c E[R; R > a] + y P(R > a), in (k, c, y, mean = E[R_+])
    inner_dc: sp.Expr           # d inner / dc  (= E[R; R > a])
    inner_dy: sp.Expr           # d inner / dy  (= P(R > a))
    mean: sp.Symbol             # the symbol standing for E[R_+] = 1 / alpha(k) (H1f)
    checks: dict                # residuals of the verifications (all 0, or < 1e-30)


#: symbols of the inner expectation (k from derivations.sphere)
INNER = {"a": sp.Symbol("a", positive=True), "c": sp.Symbol("c", positive=True),
         "y": sp.Symbol("y", real=True), "mean": sp.Symbol("E_+", positive=True)}


def inner_expectation() -> InnerExpectation:
    """From the coordinate density p(t) = (1 - t^2)^{(k-3)/2} / Z (derivations.sphere):
    E[R; R > a] = int_a^1 t p = (1 - a^2)^{(k-1)/2} E[R_+] (integrated by SymPy; the ratio
    to a = 0 removes Z); P(R > a) = int_a^1 p, whose closed form (1/2) I_{1-a^2}((k-1)/2, 1/2)
    is verified by differentiation (d/da = -p(a)) and its value 0 at a = 1; the small-a form
    1/2 - (1/2) I_{a^2}(1/2, (k-1)/2) agrees with it at 40 digits on a grid; then
    E[(cR + y)_+] = int_{-y/c}^1 (c t + y) p(t) dt = c E[R; R > a] + y P(R > a), a = -y/c,
    and its partial derivatives are checked: d/dc = E[R; R > a], d/dy = P(R > a) (the
    boundary terms cancel because the integrand vanishes at t = a)."""
    from derivations.sphere import derive_alpha, k, t
    al = derive_alpha()
    dens, Z, E = al.density, al.normalizer, al.mean
    a, c, y, mean = INNER["a"], INNER["c"], INNER["y"], INNER["mean"]
    n = sp.Symbol("n", positive=True)                       # n = k - 1 > 0
    num = sp.integrate(t * dens.subs(k, n + 1), (t, a, 1))  # int_a^1 t (1-t^2)^{(n-2)/2}
    num0 = sp.integrate(t * dens.subs(k, n + 1), (t, 0, 1))
    ratio = sp.powsimp(sp.factor(sp.simplify(num / num0)), force=True).subs(n, k - 1)
    ratio_stable = sp.exp((k - 1) / 2 * log1p(-a ** 2))
    as_log = ratio_stable.replace(log1p, lambda x: sp.log(1 + x))
    prob = sp.betainc_regularized((k - 1) / 2, sp.S.Half, 0, 1 - a ** 2) / 2
    chk_dprob = sp.simplify(sp.diff(prob, a) + dens.subs(t, a) / Z)
    chk_prob1 = sp.simplify(prob.subs(a, 1).rewrite(sp.Integral).doit())
    prob_small = sp.S.Half - sp.betainc_regularized(sp.S.Half, (k - 1) / 2, 0, a ** 2) / 2
    # the inner expectation with a = -y/c (>= 0 when y <= 0; y > 0 by 1 - P(R > -a) below)
    aa_ = -y / c
    inner = c * ratio.subs(a, aa_) * mean + y * prob.subs(a, aa_)
    d_c = sp.diff(inner, c)
    d_y = sp.diff(inner, y)
    want_dc, want_dy = ratio.subs(a, aa_) * mean, prob.subs(a, aa_)
    worst = {"small_form": 0, "d_inner_dc": 0, "d_inner_dy": 0, "tail_ratio_stable": 0}
    with mpmath.workdps(40):
        for kk in (2, 3, 5, 8, 31):
            for aa in ("0.05", "0.3", "0.6", "0.7", "0.95"):
                sub = {k: kk, a: sp.Rational(aa)}
                worst["small_form"] = max(worst["small_form"], abs(
                    sp.N(prob.subs(sub), 40) - sp.N(prob_small.subs(sub), 40)))
                worst["tail_ratio_stable"] = max(worst["tail_ratio_stable"], abs(
                    sp.N((as_log - ratio).subs(sub), 40)))
                sub = {k: kk, c: sp.Rational(7, 5), y: -sp.Rational(aa) * sp.Rational(7, 5),
                       mean: E.subs(k, kk)}
                for key, got, want in (("d_inner_dc", d_c, want_dc), ("d_inner_dy", d_y, want_dy)):
                    worst[key] = max(worst[key], abs(sp.N((got - want).subs(sub), 40)))
    checks = {"d_tail_prob": chk_dprob,
              "tail_prob_at_1": chk_prob1, **worst}
    bad = {key: v for key, v in checks.items()
           if (key in worst and v > 1e-30) or (key not in worst and v != 0)}
    if bad:
        raise ArithmeticError(f"inner expectation of phi~: failed verifications {bad}")
    return InnerExpectation(k, a, c, y, ratio, ratio_stable, prob, prob_small, inner,
                            want_dc, want_dy, mean, checks)


def inner_float_forms(ie: InnerExpectation) -> dict:
    """The float64 forms of the inner expectation and its partial derivatives, in
    (k, c, y, E_+): for -c < y <= 0 (a = -y/c in [0, 1)) the verified stable tail ratio
    exp((k-1)/2 log1p(-a^2)) (no overflow for any k) and, for P(R > a), the incomplete Beta
    whose argument is small: ``large`` for a^2 >= 1/2 (argument 1 - a^2), ``small`` for
    a^2 < 1/2 (argument a^2); each is a substitution of verified-equal pieces into the
    derived inner expectation.  For 0 < y < c (``large_pos``, ``small_pos``): relu(z) =
    z + relu(-z) and R ~ -R (E[R] = 0) give E[(cR + y)_+] = y + E[(cR - y)_+], the y <= 0 form
    at -y; its partial derivatives follow by the chain rule (SymPy), and the reflected form
    is verified against quadrature of the definition at 40 digits (:func:`_check_reflection`)."""
    a, c, y, mean = ie.a, ie.c, ie.y, ie.mean
    aa_ = -y / c
    M = ie.tail_ratio_stable.subs(a, aa_) * mean
    out = {}
    # F(c, w) the y <= 0 form, at w = -y; Fv, Fc, Fw its value and partials there
    Fv, Fc, Fw = sp.symbols("F_v F_c F_w", real=True)
    w = -y
    refl = y + Fv
    parts = {"inner": refl,
             "inner_dc": sp.diff(refl, c) + Fc * sp.diff(c, c) + Fw * sp.diff(w, c),
             "inner_dy": sp.diff(refl, y) + Fc * sp.diff(c, y) + Fw * sp.diff(w, y)}
    for name, P in (("large", ie.tail_prob), ("small", ie.tail_prob_small)):
        Py = P.subs(a, aa_)
        neg = {"inner": c * M + y * Py, "inner_dc": M, "inner_dy": Py}
        out[name] = neg
        at_w = {Fv: neg["inner"].subs(y, w), Fc: neg["inner_dc"].subs(y, w),
                Fw: neg["inner_dy"].subs(y, w)}
        out[name + "_pos"] = {key: e.subs(at_w) for key, e in parts.items()}
    _check_reflection(out, ie)
    return out


#: mpmath evaluation of SymPy's regularized incomplete Beta (lambdify has no mpmath name)
_MP_MODULES = [{"betainc_regularized": lambda p, q, x1, x2: mpmath.betainc(
    p, q, x1, x2, regularized=True)}, "mpmath"]


def _check_reflection(out: dict, ie: InnerExpectation) -> None:
    """The y > 0 forms against mpmath quadrature of the definition E[(cR + y)_+] (density
    of R from derivations.sphere) and its finite differences, at 40 digits."""
    from derivations.sphere import derive_alpha, k, t
    al = derive_alpha()
    c, y, mean = ie.c, ie.y, ie.mean
    worst = 0.0
    with mpmath.workdps(40):
        for kk in (2, 3, 5, 8):
            dens = sp.lambdify(t, (al.density / al.normalizer).subs(k, kk), "mpmath")
            E = sp.N(al.mean.subs(k, kk), 40)

            def definition(cc, yy):
                lo = -yy / cc
                return mpmath.quad(lambda s: (cc * s + yy) * dens(s), [lo, 1])
            for name in ("large_pos", "small_pos"):
                fs = {key: sp.lambdify((c, y), e.subs({k: kk, mean: E}), _MP_MODULES)
                      for key, e in out[name].items()}
                for r in ("0.1", "0.4", "0.8", "0.95"):
                    cc = mpmath.mpf(7) / 5
                    yy = mpmath.mpf(r) * cc
                    h = mpmath.mpf(10) ** -12
                    ref = definition(cc, yy)
                    ref_dc = (definition(cc + h, yy) - definition(cc - h, yy)) / (2 * h)
                    ref_dy = (definition(cc, yy + h) - definition(cc, yy - h)) / (2 * h)
                    worst = max(worst, abs(fs["inner"](cc, yy) - ref),
                                abs(fs["inner_dc"](cc, yy) - ref_dc),
                                abs(fs["inner_dy"](cc, yy) - ref_dy))
    # mpmath's tanh-sinh on the endpoint-singular density (k = 2) gives ~1e-18; a wrong
    # form is off by O(1e-2) or more
    if worst > 1e-15:
        raise ArithmeticError(f"reflection of the inner expectation fails: {worst}")


def phi_tilde_closed_forms(positive_part_mean: sp.Expr, k: sp.Symbol) -> PhiTildeForms:
    """phi~ at theta = 0 and pi/2 for symbolic dimensions, from E[(u.e)_+] for
    u ~ Unif(S^{k-1}) (``positive_part_mean`` in the symbol ``k``: the H1f derivation,
    :func:`derivations.sphere.derive_alpha`), and complete closed forms in the small cases
    SymPy integrates; (d, d - d_H) follows from (d, d_H) by the exchange
    theta -> pi/2 - theta, phi -> pi/2 - phi (which swaps R and S)."""
    kH, kP = K_H, K_PERP
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


# ---------------------------------------------------------------------------- H1g/H1h
def reduced_velocity_field() -> dict:
    """The (c, theta) field of the 1-D reduction from the particle flow (docs/conventions.md, section 2).

    A neuron b = rho (cos theta e_H + sin theta e_perp) in the plane spanned by its H and
    H^perp parts.  For the O(H) x O(H^perp)-invariant measure of H1e the potential
    Ghat(b) = E[r relu(b.x)] is 1-homogeneous in b and depends on b through (rho, theta)
    only: Ghat = rho G(theta).  The flow da/dt = Ghat(b), db/dt = a grad_b Ghat(b) in polar
    coordinates gives d rho/dt = a G, d theta/dt = (a / rho) G'(theta); on the balanced
    set a = eps rho (H1a), c = |a||b| = rho^2 obeys dc/dt = 2 eps c G and
    d theta/dt = eps G'(theta), and d(|a| - |b|)/dt = 0 (consistency with H1a)."""
    rho = sp.Symbol("rho", positive=True)
    th = sp.Symbol("theta", real=True)
    eps = sp.Symbol("epsilon", real=True)
    c = sp.Symbol("c", positive=True)
    G = sp.Function("G")
    bH, bP = sp.symbols("b_H b_perp", real=True)
    r_of = sp.sqrt(bH ** 2 + bP ** 2)
    th_of = sp.atan2(bP, bH)
    Ghat = r_of * G(th_of)
    a = eps * rho
    polar = {bH: rho * sp.cos(th), bP: rho * sp.sin(th)}
    # atan2(rho sin th, rho cos th) = th for rho > 0, th in (-pi, pi] (our th in [0, pi/2])
    polar_angle = lambda e: e.replace(lambda q: isinstance(q, sp.atan2), lambda q: th)  # noqa: E731
    grad = [sp.simplify(polar_angle(sp.diff(Ghat, v).subs(polar).doit())) for v in (bH, bP)]
    db = [a * g_ for g_ in grad]
    u = [sp.cos(th), sp.sin(th)]
    uperp = [-sp.sin(th), sp.cos(th)]
    drho = sp.simplify(sum(ui * di for ui, di in zip(u, db)))
    dth = sp.simplify(sum(ui * di for ui, di in zip(uperp, db)) / rho)
    da = sp.simplify(polar_angle(Ghat.subs(polar)))
    dc = sp.simplify((2 * rho * drho).subs(eps ** 2, 1))      # c = rho^2 on the balanced set
    balance = sp.simplify((eps * da - drho).subs(eps ** 2, 1))  # d|a|/dt - d|b|/dt, |a| = eps a
    Gs, dGs = sp.symbols("G_theta dG_theta", real=True)
    to_syms = lambda e: e.replace(sp.Derivative, lambda *args: dGs).subs(G(th), Gs)  # noqa: E731
    dc_s = sp.simplify(to_syms(dc.subs(rho, sp.sqrt(c))))
    dth_s = sp.simplify(to_syms(dth.subs(rho, sp.sqrt(c))))
    return {"dc_dt": dc_s, "dtheta_dt": dth_s, "balance": balance, "symbols": (eps, c, Gs, dGs),
            "polar": (drho, dth)}


def limit_mass(positive_part_mean: sp.Expr, k: sp.Symbol) -> sp.Expr:
    """Mass of tau^+ = m delta_0, tau^- = 0 that represents f* = |x_H|: then
    f(x) = |x| m phi~(0; phi_x) = m |x| cos(phi_x) E[R_+] = m E[R_+] |x_H|, so
    m = 1 / E[R_+] = alpha(d_H) (H1f)."""
    m = sp.Symbol("m_+", positive=True)
    return sp.solve(sp.Eq(m * positive_part_mean.subs(k, D_H), 1), m)[0]


@functools.lru_cache(maxsize=1)
def _inner() -> InnerExpectation:
    return inner_expectation()


@functools.lru_cache(maxsize=1)
def _phi_forms() -> PhiTildeForms:
    from derivations.sphere import derive_alpha, k
    return phi_tilde_closed_forms(derive_alpha().mean, k)


def derive_h1e() -> Derivation:
    f = _phi_forms()
    steps = [
        Step(r"$f^*(x) = |x_H|$ is invariant under $O(H)\times O(H^\perp)$; averaging a neuron "
             r"$u = (\cos\theta\,U_H, \sin\theta\,U_\perp)$ against $x = |x|(\cos\varphi\,e_H, "
             r"\sin\varphi\,e_\perp)$ over the group (H1d) gives $\tilde\phi(\theta;\varphi) = "
             r"E[\mathrm{relu}(\cos\theta\cos\varphi\,R + \sin\theta\sin\varphi\,S)]$, $R$, $S$ "
             r"first coordinates of $\mathrm{Unif}(S^{d_H-1})$, $\mathrm{Unif}(S^{d-d_H-1})$."),
        Step(r"So $f(\mu;x) = |x|\int\tilde\phi(\theta;\varphi_x)\,d(\tau^+-\tau^-)$ with "
             r"$\int\psi\,d\nu^\pm = \int a_\pm|b|\psi(b/|b|)\,d\mu$ (1-homogeneity)."),
        Step(r"$\theta = 0$: $\mathrm{relu}(\cos\varphi\,R)$, with $E[R_+]$ from H1f:",
             f.at_zero, lhs=r"\tilde\phi(0;\varphi)"),
        Step(r"$\theta = \pi/2$:", f.at_half_pi, lhs=r"\tilde\phi(\pi/2;\varphi)"),
    ] + [Step(f"Closed form, $(d, d_H) = {key}$:", e, lhs=r"\tilde\phi(\theta;\varphi)")
         for key, e in f.exact.items()]
    ie = _inner()
    fl = inner_float_forms(ie)
    a, c, y = ie.a, ie.c, ie.y
    steps += [
        Step(r"Given $S$, the inner expectation over $R$ (density $(1-t^2)^{(k-3)/2}/Z$, "
             r"$k = d_H$): for $|y| < c$, with $a = -y/c$, $E[(cR + y)_+] = \int_a^1 (ct + y)"
             r"\,p(t)\,dt = c\,E[R; R > a] + y\,P(R > a)$, where the tail mean (integrated, "
             r"relative to $E[R_+] = 1/\alpha(k)$ of H1f) is", ie.tail_ratio,
             lhs=r"E[R; R > a]/E[R_+]"),
        Step(r"and the tail probability, verified by $\frac{d}{da} = -p(a)$ and its value 0 at "
             r"$a = 1$, is", ie.tail_prob, lhs=r"P(R > a)"),
        Step(r"hence ($E_+ = E[R_+]$)", ie.inner, lhs=r"E[(cR + y)_+]"),
        Step(r"with partial derivatives (verified at 40 digits) $\partial_c$ = tail mean, "
             r"$\partial_y$ = tail probability; $\partial_\theta\tilde\phi = E[\partial_c\,"
             r"c_\theta + \partial_y\,y_\theta]$ ($c = \cos\theta\cos\varphi$, "
             r"$y = \sin\theta\sin\varphi\,S$). For $y > 0$: $E[(cR + y)_+] = y + "
             r"E[(cR - y)_+]$ ($\mathrm{relu}(z) = z + \mathrm{relu}(-z)$, $E[R] = 0$)."),
        Step(r"Float64 forms (equal at 40 digits): the tail ratio", ie.tail_ratio_stable,
             lhs=r"E[R; R > a]/E[R_+]"),
        Step(r"and, for $a^2 < 1/2$, the tail probability", ie.tail_prob_small,
             lhs=r"P(R > a)"),
        Step(r"$\tilde\phi$ is the expectation over $S$ of $\mathrm{relu}(y)$ where "
             r"$|y| \ge c$ and of the inner expectation where $|y| < c$."),
    ]
    return Derivation(steps, {"at_zero": f.at_zero, "at_half_pi": f.at_half_pi,
                              "exact": f.exact, "inner": fl, "tail_ratio": ie.tail_ratio_stable})


def _reduced_steps(field: dict) -> list[Step]:
    drho, dth = field["polar"]
    return [
        Step(r"A neuron $b = \rho(\cos\theta\,e_H + \sin\theta\,e_\perp)$; for the "
             r"$O(H)\times O(H^\perp)$-invariant measure of H1e the potential "
             r"$\hat G(b) = E[(f^* - f)\,\mathrm{relu}(b^\top x)]$ is 1-homogeneous and depends "
             r"on $(\rho, \theta)$ only: $\hat G = \rho\,G(\theta)$, "
             r"$G(\theta) = E_x[(f^*(x) - f(x))\,|x|\,\tilde\phi(\theta;\varphi_x)]$."),
        Step(r"The full flow $\dot a = \hat G(b)$, $\dot b = a\nabla_b\hat G(b)$ with "
             r"$a = \varepsilon\rho$ (balanced, H1a), in polar coordinates "
             r"($\dot\rho = u^\top\dot b$, $\dot\theta = u_\perp^\top\dot b/\rho$):",
             sp.Tuple(drho, dth), lhs=r"(\dot\rho, \dot\theta)"),
        Step(r"$\frac{d}{dt}(|a| - |b|)$ =", field["balance"]),
        Step(r"so $c = |a||b| = \rho^2$ and $\theta$ move by", sp.Tuple(field["dc_dt"], field["dtheta_dt"]),
             lhs=r"(\dot c, \dot\theta)"),
        Step(r"$\tilde\phi$ is even about $\theta = 0$ and $\theta = \pi/2$ ($R$, $S$ "
             r"symmetric), so $G'$ vanishes at both ends and a step leaving $[0,\pi/2]$ is "
             r"reflected back."),
    ]


def derive_h1g() -> Derivation:
    from derivations.sphere import derive_alpha, k
    field = reduced_velocity_field()
    lim = limit_mass(derive_alpha().mean, k)
    steps = _reduced_steps(field) + [
        Step(r"Conjectured limit (not a theorem): $\tau^+ \to m_+\delta_0$, $\tau^- \to 0$. "
             r"Then $f(x) = m_+|x|\tilde\phi(0;\varphi_x) = m_+ E[R_+]|x_H|$, and $f = f^*$ forces",
             lim, lhs="m_+"),
        Step(r"i.e. $m_+ = \alpha(d_H)$ (H1f); $t^*$ = first time the $\tau^+$ mass exceeds it."),
    ]
    return Derivation(steps, {"dc_dt": field["dc_dt"], "dtheta_dt": field["dtheta_dt"],
                              "limit_mass": lim})


def derive_h1h() -> Derivation:
    field = reduced_velocity_field()
    steps = [Step(r"The full particle system in $\mathbb R^d$ maps to $(c_j, \theta_j, "
                  r"\varepsilon_j) = (|a_j||b_j|, \arccos(|b_{j,H}|/|b_j|), \mathrm{sign}\,a_j)$.")]
    steps += _reduced_steps(field)
    steps.append(Step(r"The reduced flow is exact for the symmetrized measure; an i.i.d. "
                      r"particle set is symmetric up to $O(m^{-1/2})$ fluctuations, so the two "
                      r"predictors differ by $O(m^{-1/2})$ on a fixed horizon."))
    return Derivation(steps, {"dc_dt": field["dc_dt"], "dtheta_dt": field["dtheta_dt"]})


# ---------------------------------------------------------------------------- H1i
def flow_time_per_step() -> dict:
    """Mean-field time covered by one gradient step of learning rate eta on the parameters.

    Pointwise in x (the expectation is linear): f = (a_j relu(b_j . x) + rest) / m, loss
    1/2 (f - y)^2.  A step moves a_j by -eta dloss/da_j and b_j by -eta dloss/db_j; the
    particle velocity of the mean-field flow (docs/conventions.md section 2) is da_j/dt = (y - f) relu(b_j . x),
    db_j/dt = a_j (y - f) relu'(b_j . x) x.  The ratio (parameter move) / (velocity) is the
    flow time of one step; it must be the same for a_j and b_j (else no single time change)."""
    a_j, z, y, rest = sp.symbols("a_j z y R", real=True)      # z = b_j . x (1-D stand-in)
    s_act = sp.Function("sigma")
    f = (a_j * s_act(z) + rest) / m_width
    loss = (f - y) ** 2 / 2
    dt_a = sp.simplify(-eta * sp.diff(loss, a_j) / ((y - f) * s_act(z)))
    # b_j enters through z = b_j . x: d/db_j = x d/dz, and the velocity carries the same x
    dt_b = sp.simplify(-eta * sp.diff(loss, z) / (a_j * (y - f) * sp.diff(s_act(z), z)))
    return {"per_step": dt_a, "agree": sp.simplify(dt_a - dt_b), "by_b": dt_b}


def derive_h1i() -> Derivation:
    ts = flow_time_per_step()
    field = reduced_velocity_field()
    steps = [
        Step(r"Width $m$: $f = \frac1m\sum_j a_j\sigma(b_j^\top x)$; a gradient step of "
             r"learning rate $\eta$ on $(a_j, b_j)$ against the mean-field velocity "
             r"$\dot a_j = E[(f^*-f)\sigma(b_j^\top x)]$, $\dot b_j = a_j E[(f^*-f)\sigma'"
             r"(b_j^\top x)x]$ (the same ratio for $a_j$ and for $b_j$, difference "
             + sp.latex(ts["agree"]) + r") covers the flow time", ts["per_step"],
             lhs=r"\Delta t"),
        Step(r"So the parameter gradient flow $d(a, B)/ds = -\nabla F$ at parameter time "
             r"$s$ is the particle flow at time $t = s/m$; the width-$m$ system is run for "
             r"$s = t\,\eta/\Delta t$."),
        Step(r"The limit: an initial law invariant under $O(d_H)\times O(d-d_H)$ stays "
             r"invariant (Prop. 2.1), so the mean-field flow is the reduced flow of Thm 4.3 "
             r"on $(c, \theta)$:"),
    ] + _reduced_steps(field)[1:]
    return Derivation(steps, {"flow_time_per_step": ts["per_step"], "dc_dt": field["dc_dt"],
                              "dtheta_dt": field["dtheta_dt"]})


DERIVATIONS = {"H1e": derive_h1e, "H1g": derive_h1g, "H1h": derive_h1h, "H1i": derive_h1i}
