"""Verified formulas of Hajjar & Chizat (2023), claims H1c and H1e:
``phi_tilde`` and ``phi_tilde_dtheta`` (the kernel of the 1-D reduction and its
theta-derivative; ``phi_kernel()`` hands the derived inner expectation to numerics.reduced),
``best_linear_approximator`` and
``odd_target_rate`` (odd targets)."""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from derivations.hajjar import ODD
from numerics import reduced
from numerics.validation import as_float_array
from verify import derived
from verify.formulas._base import DerivedFunction, UlpBound, VerifiedFormula, check_dps

__all__ = ["phi_tilde", "phi_tilde_dtheta", "best_linear_approximator", "odd_target_rate"]


class _IncompleteBeta(sp.Function):
    """I_x(p, q), the regularized incomplete Beta (scipy.special.betainc) for lambdify."""
    nargs = 3


def _lambdify_inner(expr: sp.Expr):
    """lambdify (k, c, y, E_+) -> expr with betainc_regularized(p, q, 0, x) as I_x(p, q)."""
    from scipy.special import betainc
    from derivations.hajjar_reduced import INNER
    from derivations.sphere import k
    e = expr.replace(lambda q: isinstance(q, sp.betainc_regularized) and q.args[2] == 0,
                     lambda q: _IncompleteBeta(q.args[0], q.args[1], q.args[3]))
    return sp.lambdify((k, INNER["c"], INNER["y"], INNER["mean"]), e,
                       modules=[{"_IncompleteBeta": betainc}, "scipy", "numpy"])


class _DerivedPhiKernel:
    """The inner expectation E_R[(cR + y)_+] of phi~ and its partial derivatives (for
    |y| < c), and the tail mean E[R; R > a], evaluated from the H1e derivation's float64
    forms; E[R_+] = 1 / alpha(k) from the H1f formula ``alpha_constant``."""

    def __init__(self) -> None:
        res = derived.results("H1e")
        self._f = {name: {key: _lambdify_inner(e) for key, e in forms.items()}
                   for name, forms in res["inner"].items()}
        from derivations.hajjar_reduced import INNER
        from derivations.sphere import k
        self._ratio = sp.lambdify((k, INNER["a"]), res["tail_ratio"], modules=["scipy", "numpy"])
        self._mean: dict[int, float] = {}

    def _m(self, k: int) -> float:
        if k not in self._mean:
            from verify.formulas.hajjar_alpha import alpha_constant
            top = 2 ** 53                  # the domain of alpha_constant
            if k <= top:
                self._mean[k] = float(1.0 / alpha_constant(k))
            else:  # alpha(k) / sqrt(2 pi k) = 1 + O(1/k) (H1f): below 1e-16 beyond 2^53
                self._mean[k] = float(1.0 / (alpha_constant(top) * np.sqrt(k / top)))
        return self._mean[k]

    def _eval(self, key: str, k: int, c, y):
        """key in {inner, inner_dc, inner_dy} for |y| < c: the derived forms for y <= 0
        (``small``/``large``) and for y > 0 (``small_pos``/``large_pos``, the derived
        reflection), split by a^2 = (y/c)^2 < 1/2."""
        c, y = np.broadcast_arrays(np.asarray(c, float), np.asarray(y, float))
        small = (y / c) ** 2 < 0.5
        pos = y > 0
        out = np.empty(c.shape)
        with np.errstate(all="ignore"):
            for name, sel in (("small", small & ~pos), ("large", ~small & ~pos),
                              ("small_pos", small & pos), ("large_pos", ~small & pos)):
                if np.any(sel):
                    out[sel] = self._f[name][key](k, c[sel], y[sel], self._m(k))
        return out

    def inner(self, k: int, c, y):
        return self._eval("inner", k, c, y)

    def inner_grad(self, k: int, c, y):
        return self._eval("inner_dc", k, c, y), self._eval("inner_dy", k, c, y)

    def tail_mean(self, k: int, a):
        a = np.asarray(a, float)
        with np.errstate(all="ignore"):
            return np.asarray(self._ratio(k, a), float) * self._m(k)


@derived.per_generation
def phi_kernel() -> _DerivedPhiKernel:
    """The derived inner expectation of phi~ (claim H1e) as the ``kernel`` argument of
    numerics.reduced (phi_tilde, PhiTable, reduced_predictor); rebuilt when a derivation
    is overridden (mutation testing)."""
    return _DerivedPhiKernel()


def _phi_tilde(theta, phi, d, d_H):
    """phi~(theta; phi) for angles theta, phi in [0, pi/2] (broadcast) and integers
    1 <= d_H <= d - 1."""
    out = reduced.phi_tilde(theta, phi, d, d_H, phi_kernel())
    return out[()] if np.ndim(out) == 0 else out


def _phi_tilde_dtheta(theta, phi, d, d_H):
    """d phi~(theta; phi) / d theta for theta, phi in [0, pi/2], 1 <= d_H <= d - 1."""
    out = reduced.phi_tilde_dtheta(theta, phi, d, d_H, phi_kernel())
    return out[()] if np.ndim(out) == 0 else out


def _phi_tilde_mp(theta, phi, d, d_H, dps: int = 25) -> Any:
    dps = check_dps(dps)
    th = as_float_array(theta, "theta")
    ph = as_float_array(phi, "phi")
    reduced.validate_dims(d, d_H)
    if np.any((th < 0) | (th > np.pi / 2)) or np.any((ph < 0) | (ph > np.pi / 2)):
        raise ValueError("theta and phi must lie in [0, pi/2]")
    if th.ndim == 0 and ph.ndim == 0:
        return reduced.phi_tilde_mp(float(th), float(ph), d, d_H, dps=dps)
    b = np.broadcast_arrays(th, ph)
    out = np.empty(b[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = reduced.phi_tilde_mp(float(b[0][idx]), float(b[1][idx]), d, d_H, dps=dps)
    return out


def _phi_enclose(derivative: bool):
    def enclose(theta, phi, d, d_H, *, prec: int = 128) -> Any:
        """Certified Arb balls of phi~ (or its theta-derivative) from the definition
        (numerics.arb_quadrature.phi_tilde_ball), elementwise over broadcast angles."""
        from numerics import arb_quadrature as aq
        th = as_float_array(theta, "theta")
        ph = as_float_array(phi, "phi")
        reduced.validate_dims(d, d_H)
        b = np.broadcast_arrays(th, ph)
        out = np.empty(b[0].shape, dtype=object)
        for idx in np.ndindex(out.shape):
            out[idx] = aq.phi_tilde_ball(float(b[0][idx]), float(b[1][idx]), int(d), int(d_H),
                                         derivative=derivative, prec=prec)
        return out[()] if out.ndim == 0 else out
    return enclose


def _phi_expr() -> dict:
    r = derived.results("H1e")
    return {k_: r[k_] for k_ in ("at_zero", "at_half_pi", "exact", "inner", "tail_ratio")}


_PHI_WHY = ("float64 rounding: the derived inner expectation (incomplete Beta, exp/log1p: a "
            "few ulps of its value), the density cos^(k-2) as exp((k-2) log1p(.)) (the "
            "relative error of the exponent, <= 50 at the 10-standard-deviation cut, weighted "
            "by the density: a few ulps on average), <= 6 roundings per node and the sum over "
            "the nodes of a tanh-sinh rule (<= 422 nodes, positive weights); discretization: "
            "tanh-sinh with step 1/16 .. 1/64 chosen by max(d_H, d - d_H) (the density and the "
            "inner expectation vary on the scale 1/sqrt(k)), whose error decays like "
            "exp(-c/h) for integrands analytic in a strip: < 1e-17 of the scale for h <= 1/16; "
            "the kink of the ReLU is an endpoint of the rule (cut exactly).  Measured against "
            "the certified balls (tests/test_formula_ulps.py): worst ~4 ulps at 10^4 inputs "
            "with d <= 1000 (extreme angles included), ~2 ulps at 24 inputs per entry at "
            "d = 30000 (d_H = 2, 15000, 29998)")
#: phi~ is an expectation of a non-negative integrand: the value is its absolute integral
PHI_TILDE_ULPS = UlpBound(32, "value (|exact|; = the absolute integral, the integrand is >= 0)",
                          _PHI_WHY)
#: the theta-derivative changes sign (it is 0 at theta = 0): the unit bounds its absolute integral
PHI_TILDE_DTHETA_ULPS = UlpBound(
    32, "scale |sin th cos ph| E|R| + |cos th sin ph| E|S| (>= the absolute integral of "
    "E[(c' R + y' S) 1{c R + y S > 0}]; E|R| = 2 / alpha(d_H))", _PHI_WHY)

#: priced cost (ns) of one point of phi~'s high-precision paths (measured ~0.4 s for the
#: mpmath double quadrature and ~9 ms for the Arb integral at d = 5, one loaded core)
PHI_MPMATH_ENTRY_NS, PHI_ENCLOSE_ENTRY_NS = 1_000_000_000, 20_000_000

phi_tilde = DerivedFunction(
    name="phi_tilde", claim="H1e", impl=_phi_tilde, mpmath=_phi_tilde_mp, ulp_bound=PHI_TILDE_ULPS,
    enclose=_phi_enclose(False), mpmath_entry_ns=PHI_MPMATH_ENTRY_NS,
    enclose_entry_ns=PHI_ENCLOSE_ENTRY_NS,
    expr_fn=_phi_expr,
    doc="""phi~(theta; phi) = E[relu(cos th cos ph R + sin th sin ph S)] (Hajjar & Chizat 2023,
Thm 4.3 / App. E.2.3; claim H1e), R, S independent first coordinates of Unif(S^{d_H-1})
and Unif(S^{d-d_H-1}).

Parameters: theta, phi in [0, pi/2] (arrays broadcast), integers 1 <= d_H <= d - 1 (any
size: the coordinate density of S^{d-d_H-1} concentrates like N(0, 1/(d - d_H)) and the
quadrature follows it).  Returns float64 within 32 ulps of the value (``.ulp_bound``; tested
at 10^4 inputs, d <= 1000, and at d = 30000 against ``numerics.arb_quadrature.phi_tilde_ball``,
the certified Arb integral of the definition, also ``.enclose(theta, phi, d, d_H, prec=128)``,
d <= 10^5): the inner expectation over
R is the DERIVED closed form (``.expr["inner"]``: incomplete Beta and tail mean, in their
verified float64 forms; E[R_+] = 1/alpha_constant(d_H)), the outer expectation over S is
tanh-sinh quadrature (numerics.reduced).  ``phi_tilde.mpmath(theta, phi, d, d_H, dps=25)``
is an independent double quadrature of the definition.  ``.expr`` also holds
phi~(0; phi) = cos(phi) / alpha(d_H), phi~(pi/2; phi) = sin(phi) / alpha(d - d_H) and the
complete Piecewise forms for (d, d_H) in {(2,1), (3,1), (3,2), (4,1), (4,3)}.

>>> round(float(phi_tilde(0.0, 0.0, 30, 5)), 12)  # 1 / alpha(5) = 3/16
0.1875
""")

phi_tilde_dtheta = DerivedFunction(
    name="phi_tilde_dtheta", claim="H1e", impl=_phi_tilde_dtheta, expr_fn=_phi_expr,
    ulp_bound=PHI_TILDE_DTHETA_ULPS, enclose=_phi_enclose(True),
    enclose_entry_ns=PHI_ENCLOSE_ENTRY_NS,
    doc="""d phi~(theta; phi) / d theta (claim H1e): the expectation over S of the derived
partial derivatives of the inner expectation, d/dc c_theta + d/dy y_theta (c = cos th cos
ph, y = sin th sin ph S).  Same parameters as ``phi_tilde``; it is the G'(theta) kernel of
the reduced dynamics (claims H1g, H1h).  Float64 error (``.ulp_bound``): <= 32 ulps of the
scale |sin th cos ph| E|R| + |cos th sin ph| E|S| (the derivative changes sign and is 0 at
theta = 0, so the value is not the unit).

>>> abs(float(phi_tilde_dtheta(0.0, 0.7, 30, 5))) < 1e-12  # phi~ is even about theta = 0
True
""")


def _best_linear(X, Y, weights=None) -> np.ndarray:
    X = as_float_array(X, "X (inputs, shape (n, d))", ndim=2, allow_empty=False)
    Y = as_float_array(Y, "Y (target values, shape (n,))", ndim=1)
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y has {Y.shape[0]} entries but X has {X.shape[0]} rows")
    n = X.shape[0]
    w = np.ones(n) if weights is None else as_float_array(weights, "weights", ndim=1)
    if w.shape[0] != n or np.any(w < 0):
        raise ValueError("weights must be non-negative, one per row of X")
    # normalize safely: divide by the largest weight first (no underflow of subnormal
    # weights, no overflow of their sum), then by the sum (now in [1, n])
    w_max = float(np.max(w))
    if w_max == 0:
        raise ValueError("weights must not all be zero (pass positive weights)")
    w = w / w_max
    w = w / np.sum(w)
    # scale columns and targets before forming the moments (no overflow for |x| ~ 1e200)
    sx = np.max(np.abs(X), axis=0)
    sx[sx == 0] = 1.0
    sy = float(np.max(np.abs(Y))) or 1.0
    Xs = X / sx
    S = (Xs * w[:, None]).T @ Xs
    c = Xs.T @ (w * (Y / sy))
    rank = int(np.linalg.matrix_rank(S))
    if rank < X.shape[1]:
        raise ValueError(f"X has rank {rank} < d = {X.shape[1]} (with these weights), so "
                         "E[x x^T] is singular on this sample: pass X with at least d rows "
                         "in general position (linearly independent columns)")
    ws = np.linalg.solve(S, c)
    with np.errstate(over="ignore"):
        out = ws * sy / sx
    if not np.all(np.isfinite(out)):
        raise ValueError("the best linear approximator overflows float64 (|w*| > 1.8e308); "
                         "rescale X or Y")
    return out


#: normwise, to first order in u = 2^-53 (cond_2(S) u < 1/2): the normalized weights and the
#: scaled columns (relative (n + 3) u), the moments S, c as n-term sums (|dS| <= (n + 3) u
#: S_abs, |dc| <= (n + 4) u c_abs entrywise), the LU solve (backward error <= 3 d u |L||U|,
#: ~ d u ||S|| with partial pivoting on this small d), the unscaling (2 roundings):
#: ||dw_s|| <= ||S^-1|| (||dS|| ||w_s|| + ||dc||) + backward-error term
BEST_LINEAR_ULPS = UlpBound(
    8, "||S^-1||_2 (||S_abs||_2 |w*_s| + |c_abs|) on |w*_s error| (Euclidean), in the scaled "
    "coordinates w*_s,k = w*_k sx_k / sy (sx the columns' max |x|, sy = max |Y|); S, c the "
    "weighted moments of the scaled X, Y, S_abs, c_abs those of |X|, |Y|: a condition number "
    "times the scale of the terms; n = rows + d",
    "first-order perturbation of the normal equations S w = c: the weights' and columns' "
    "normalization and the n-term moment sums perturb S and c entrywise by <= (2 n + 8) u of "
    "S_abs, c_abs, the LU solve by <= 3 d u ||S||, the unscaling by 2 roundings: 2 ulps per "
    "row and per dimension plus 8", per_term=2,
    region="cond_2(S) >= 2^51 (first-order analysis void); a matrix numpy's rank test calls "
           "singular is refused with ValueError")


best_linear_approximator = DerivedFunction(
    name="best_linear_approximator", claim="H1c", impl=_best_linear, ulp_bound=BEST_LINEAR_ULPS,
    expr_fn=lambda: derived.results("H1c")["ode_w"],
    doc="""w* = E[x x^T]^{-1} E[f*(x) x]: the best linear approximator of f*, the limit of
the odd-target dynamics (Hajjar & Chizat 2023, Thm 3.2; claim H1c).

An ALGORITHM, not a closed form: a weighted least-squares solve on the sample (columns
and targets rescaled, weights normalized by their maximum, then their sum).  ``.expr``
holds the derived moment ODE dw/dt = (1/4)(M + A I) g, g = E[f* x] - E[x x^T] w, whose
zero it is.  Claim H1c verifies it through these properties: the particles' w(t) and the
derived ODE converge to it (their late-time rate and ray sub-checks use it), and for
E[x x^T] = v_rho I it is E[f* x] / v_rho; tests compare it with numpy's lstsq.  No
``.enclose`` (NotEnclosable): a least-squares solve, not one derived expression.

Parameters: X (n, d) inputs, Y (n,) target values, optional non-negative weights (n,),
not all zero (default: equal weights; any positive scale, they are normalized).
Returns w* of shape (d,), with a float64 error (``.ulp_bound``, an algorithm: relative to
its condition number) <= 8 + 2 (n + d) ulps of ||S^-1|| (||S_abs|| |w*_s| + |c_abs|) in the
scaled coordinates w*_k max|x_k| / max|Y|.

>>> import numpy as np
>>> best_linear_approximator(np.eye(2), np.array([3.0, -1.0]))
array([ 3., -1.])
""")
#: an algorithm: its mutants are listed under it by the mutation harness, not credited to H1c
best_linear_approximator.algorithm = True


def _rate_validate(V, v_rho, q):
    V = as_float_array(V, "V = E a_0^2 + v_b")
    v_rho = as_float_array(v_rho, "v_rho")
    q = as_float_array(q, "q = |w*|^2")
    for x, name in ((V, "V"), (v_rho, "v_rho")):
        if np.any(x <= 0):
            raise ValueError(f"{name} must be positive (a second moment); got {x}")
    if np.any(q < 0):
        raise ValueError(f"q = |w*|^2 must be non-negative; got {q}")
    return V, v_rho, q


def _rate_numpy(expr: sp.Expr):
    """The derived rate v sqrt(V^2 + 16 q) / 4 evaluated without overflow: the lambdified
    expression with V and sqrt(q) scaled by their maximum (the expression is
    1-homogeneous in (V, sqrt(q)) and linear in v, checked symbolically here)."""
    V, v, q = ODD["V"], ODD["v"], ODD["q"]
    lam = sp.Symbol("lambda_", positive=True)
    homog = sp.simplify(expr.subs({V: lam * V, q: lam ** 2 * q}) - lam * expr)
    f = sp.lambdify((V, v, q), expr, modules="numpy")
    if homog != 0:  # a perturbed derivation: no rescaling, evaluate as is
        return f

    def rate(Vv, vv, qq):
        Vv, vv, qq = np.broadcast_arrays(Vv, vv, qq)
        with np.errstate(over="ignore"):
            sc = np.maximum(Vv, np.sqrt(qq))
            out = f(Vv / sc, 1.0, qq / sc ** 2) * sc * vv
        if not np.all(np.isfinite(out)):
            raise ValueError("odd_target_rate overflows float64 (rate > 1.8e308); rescale "
                             "V, v_rho or q")
        return out
    return rate


#: float64 error of odd_target_rate: the scale max(V, sqrt q) and the scaled V^2 + 16 q
#: (sqrt, two divisions, two squares, one addition), its sqrt and three products: <= 8
#: roundings of the value (all terms are positive: no cancellation)
ODD_TARGET_RATE_ULPS = UlpBound(8, "value (|exact|)", "positive terms only (no cancellation): "
                                   "the scaling, V^2 + 16 q, a square root and three products")


odd_target_rate = VerifiedFormula(
    name="odd_target_rate", claim="H1c", symbols=(ODD["V"], ODD["v"], ODD["q"]),
    expr_fn=lambda: derived.results("H1c")["rate_inf"], validate=_rate_validate,
    numpy_impl=_rate_numpy, ulp_bound=ODD_TARGET_RATE_ULPS,
    doc="""Asymptotic exponential rate of |w(t) - w*| for an odd target in the infinite-width
limit (derived in claim H1c): v_rho sqrt(V^2 + 16 |w*|^2) / 4, with w(0) = 0, isotropic
data E[x x^T] = v_rho I and isotropic E[b_0 b_0^T] = v_b I, V = E a_0^2 + v_b.  It is at
least the reconstructed bound V v_rho / 4.

Parameters: V > 0, v_rho > 0, q = |w*|^2 >= 0 (arrays broadcast).  Returns float64;
raises ValueError if the rate is not representable.

>>> round(float(odd_target_rate(1.0, 1.0, 0.0)), 12)
0.25
""")
