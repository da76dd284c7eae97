"""Population expectations of the bias-free two-layer ReLU network under Gaussian data
rho = N(0, s2 I_d) (Hajjar & Chizat 2023, docs/conventions.md, section 2; claims H1e, H1h):
the arc-cosine kernel of degree 1 (Cho & Saul 2009),

    K(u, v) = E[relu(u . x) relu(v . x)] = s2 |u| |v| (sin g + (pi - g) cos g) / (2 pi),

g the angle between u and v, its gradient in u, and the exact population loss of
f(x) = (1/m) sum_j a_j relu(b_j . x) against the target f*(x) = |x_H| (one 1-D quadrature
over the law of a coordinate of a uniform unit vector for the target term).

Norms are carried as (mantissa, power-of-two exponent) so that huge or tiny weights
neither overflow nor underflow before the final product.
"""
from __future__ import annotations

import numpy as np

from numerics.validation import (as_float_array, as_float_scalar, ldexp_clipped,
                                 require_finite_result, require_positive_int, require_size,
                                 row_pow2_scale, two_product)

__all__ = ["gaussian_relu_kernel", "gaussian_relu_kernel_grad",
           "population_loss_and_grad_norm_target"]


def _particles(a, B) -> tuple[np.ndarray, np.ndarray]:
    """``a`` (m,) and ``B`` (m, d) as finite float64 arrays with matching m."""
    a = as_float_array(a, "a (output weights)", ndim=1, allow_empty=False)
    B = as_float_array(B, "B (input weights, shape (m, d))", ndim=2, allow_empty=False)
    if B.shape[0] != a.shape[0]:
        raise ValueError(f"a has {a.shape[0]} entries but B has {B.shape[0]} rows; both must be m")
    return a, B


def _unit_rows(U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U_i / |U_i|, |U_i| as mantissa and power-of-two exponent), without overflow or
    underflow: rows are scaled exactly by powers of two first; zero rows give 0."""
    Uh, e = row_pow2_scale(U)
    n = np.linalg.norm(Uh, axis=1)
    unit = np.divide(Uh, n[:, None], out=np.zeros_like(Uh), where=n[:, None] > 0)
    return unit, n, e


def _angles(U: np.ndarray, V: np.ndarray):
    """cos, angle and sin between the rows of U and V (0, pi/2, 1 where a row is 0) and
    the norms |u_i| |v_j| as (mantissa, exponent)."""
    uu, nu, eu = _unit_rows(U)
    vv, nv, ev = _unit_rows(V)
    cos = np.clip(uu @ vv.T, -1.0, 1.0)
    gam = np.arccos(cos)
    sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
    return (np.outer(nu, nv), eu[:, None] + ev[None, :]), cos, gam, sin, uu


def _validate_pair(U, V, s2) -> tuple[np.ndarray, np.ndarray, float]:
    U = as_float_array(U, "U (shape (k, d))", ndim=2, allow_empty=False)
    V = as_float_array(V, "V (shape (l, d))", ndim=2, allow_empty=False)
    if U.shape[1] != V.shape[1]:
        raise ValueError(f"U has {U.shape[1]} columns but V has {V.shape[1]}; both must be d")
    s2 = as_float_scalar(s2, "s2 (data variance)", lo=0.0, lo_open=True)
    require_size(U.shape[0] * V.shape[0], "the kernel matrix (len(U) x len(V))")
    return U, V, s2


#: the stable form's switch and series (derived: derivations.williams_kernels.
#: derive_arccos_stable; tests/test_kernels.py proves these are its coefficients):
#: t - atan t = t^3 sum_k c_k t^(2k), c_k = p/q below, used for t = tan psi < T_SERIES
T_SERIES = 0.25
T_MINUS_ATAN_SERIES = tuple(((-1) ** k, 2 * k + 3) for k in range(14))
_T_COEF = np.array([p / q for p, q in T_MINUS_ATAN_SERIES])
#: pairs whose cosine is below this get the refined rejection (t < 1/4 means cos < -0.970)
_NEAR_OPPOSITE_COS = -0.96
_PAIR_CHUNK = 1 << 20
#: passes of :func:`_opposite_tangent` (each gains ~53 bits; float64 spans ~2100 bits)
_MAX_REORTHOGONALIZATIONS = 48


def _t_minus_atan(t: np.ndarray) -> np.ndarray:
    """t - atan t (t >= 0) to a few ulps relative: the derived series below T_SERIES."""
    out = t - np.arctan(t)
    small = t < T_SERIES
    if np.any(small):
        ts = t[small]
        t2 = ts * ts
        poly = np.zeros_like(ts)
        for c in _T_COEF[::-1]:
            poly = poly * t2 + c
        out[small] = ts * t2 * poly
    return out


def _opposite_tangent(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t, |u . v|) for row pairs (u_k, v_k) with u . v < 0: t = tan(pi - g) = |v_perp| |u| /
    |u . v| to a few ulps relative, v_perp the rejection of v from u computed without
    cancellation: v - alpha u with alpha u split exactly by TwoProduct, then
    re-orthogonalization passes r <- r - c u, c u split by TwoProduct too (so its rounding
    does not leak into v_perp), until the part removed along u is below 2^-60 |r|.  Each
    pass shrinks the part along u by ~2^-53, so t keeps its relative accuracy at any angle
    the float64 rows can hold (pi - g ~ 1e-300 when the rows mix magnitudes)."""
    uu = np.einsum("ij,ij->i", u, u)
    uv = np.einsum("ij,ij->i", u, v)
    p, e = two_product((uv / uu)[:, None], u)
    r = (v - p) - e
    norm_u = np.sqrt(uu)
    live = np.ones(u.shape[0], dtype=bool)
    for _ in range(_MAX_REORTHOGONALIZATIONS):
        c = np.einsum("ij,ij->i", u[live], r[live]) / uu[live]
        p, e = two_product(c[:, None], u[live])
        r[live] = (r[live] - p) - e
        converged = np.abs(c) * norm_u[live] <= 2.0 ** -60 * np.linalg.norm(r[live], axis=1)
        live[np.flatnonzero(live)[converged]] = False
        if not live.any():
            break
    t = np.linalg.norm(r, axis=1) * norm_u / np.abs(uv)
    return t, np.abs(uv)


def _arccos_angular(U: np.ndarray, V: np.ndarray):
    """(J_ij |u_i||v_j| as mantissa, its power-of-two exponent), J = sin g + (pi - g) cos g
    in the derived stable form (derivations.williams_kernels.derive_arccos_stable).  Away
    from g = pi the primary form loses at most a few bits (at cos g >= -0.96 its two terms
    cancel by at most a factor 49; near g = 0, sin g and g both come from the one rounded
    cos g, so J = pi cos g + (sin g - g cos g) is a smooth function of it); near g = pi,
    J = |cos g| (t - atan t) with t = tan(pi - g) from the refined rejection and the
    derived series of t - atan t for t < 1/4."""
    Uh, eu = row_pow2_scale(U)
    Vh, ev = row_pow2_scale(V)
    nu, nv = np.linalg.norm(Uh, axis=1), np.linalg.norm(Vh, axis=1)
    uu = np.divide(Uh, nu[:, None], out=np.zeros_like(Uh), where=nu[:, None] > 0)
    vv = np.divide(Vh, nv[:, None], out=np.zeros_like(Vh), where=nv[:, None] > 0)
    cos = np.clip(uu @ vv.T, -1.0, 1.0)
    J = np.sqrt(np.maximum(1.0 - cos * cos, 0.0)) + (np.pi - np.arccos(cos)) * cos
    ii, jj = np.nonzero(cos < _NEAR_OPPOSITE_COS)
    step = max(1, _PAIR_CHUNK // max(U.shape[1], 1))
    for k0 in range(0, ii.size, step):
        i, j = ii[k0:k0 + step], jj[k0:k0 + step]
        tk, dot = _opposite_tangent(Uh[i], Vh[j])
        J[i, j] = (dot / (nu[i] * nv[j])) * _t_minus_atan(tk)
    return np.outer(nu, nv) * J, eu[:, None] + ev[None, :]


def gaussian_relu_kernel(U, V, s2: float) -> np.ndarray:
    """K_ij = E[relu(u_i . x) relu(v_j . x)], x ~ N(0, s2 I) (Cho & Saul arc-cosine kernel):
    s2 |u||v| (sin g + (pi - g) cos g) / (2 pi), g the angle between u_i and v_j
    (claims H1e, H1h), in a form with a few ulps of relative error at every angle (near
    g = pi, where K ~ (pi - g)^3 / 3, too; derived in
    derivations.williams_kernels.derive_arccos_stable); K = 0 for a zero row; a
    ValueError if K exceeds float64."""
    U, V, s2 = _validate_pair(U, V, s2)
    nm, ne = _arccos_angular(U, V)
    ms, es = np.frexp(s2)
    mant = (ms / (2 * np.pi)) * nm
    return ldexp_clipped(mant, ne + int(es), "gaussian_relu_kernel: K",
                         "|u| |v| s2 beyond float64")


def gaussian_relu_kernel_grad(U, V, s2: float, coef) -> np.ndarray:
    """sum_j coef_ij E[1{u_i . x > 0} x relu(v_j . x)] for x ~ N(0, s2 I), i.e. the
    gradient in u_i of sum_j coef_ij K(u_i, v_j):  s2/(2 pi) [(pi - g) v_j + sin g |v_j| u_i/|u_i|]
    (0 for u_i = 0, where the indicator vanishes); a ValueError if it exceeds float64."""
    U, V, s2 = _validate_pair(U, V, s2)
    c = as_float_array(coef, "coef (shape (len(U), len(V)))", ndim=2)
    if c.shape != (U.shape[0], V.shape[0]):
        raise ValueError(f"coef must have shape {(U.shape[0], V.shape[0])}; got {c.shape}")
    _, cos, gam, sin, uu = _angles(U, V)
    zero_u = ~np.any(U != 0, axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (c * (np.pi - gam)) @ V
        out += ((c * sin) @ np.linalg.norm(V, axis=1))[:, None] * uu
        out *= s2 / (2 * np.pi)
    out[zero_u] = 0.0
    return require_finite_result(out, "gaussian_relu_kernel_grad", "coef, V or s2 too large")


def population_loss_and_grad_norm_target(a, B, d_H: int, s2: float, r_nodes, r_weights
                                         ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """Exact population loss 1/2 E[(f(x) - |x_H|)^2], x ~ N(0, s2 I_d), H = span(e_1..e_dH),
    and its gradient (claim H1e target; used by claim H1h).

    The target term uses |x_H| = alpha E_w relu(w . x_H), w ~ Unif(S^{d_H-1}): by rotation
    invariance E[|x_H| relu(b . x)] = alpha E_R k(R |b_H|, |b|) with R the first coordinate
    of w; ``(r_nodes, r_weights)`` is a quadrature rule for the law of R (nodes in [-1, 1],
    normalized, alpha included in the weights: sum(weights) = alpha)."""
    a, B = _particles(a, B)
    m, d = B.shape
    d_H = require_positive_int(d_H, "d_H (dimension of the subspace H)", maximum=d)
    s2 = as_float_scalar(s2, "s2 (data variance)", lo=0.0, lo_open=True)
    r_nodes = as_float_array(r_nodes, "r_nodes (quadrature nodes in [-1, 1])", ndim=1,
                             allow_empty=False)
    r_weights = as_float_array(r_weights, "r_weights (quadrature weights)", ndim=1)
    if r_weights.shape != r_nodes.shape:
        raise ValueError(f"r_weights must have one entry per node ({r_nodes.size}); got "
                         f"{r_weights.size}")
    if np.any(np.abs(r_nodes) > 1.0):
        raise ValueError("r_nodes must lie in [-1, 1] (a coordinate of a unit vector)")
    require_size(m * m, "the kernel matrix (m x m)")
    require_size(m * r_nodes.size, "the quadrature table (m x len(r_nodes))")
    with np.errstate(over="ignore", invalid="ignore"):
        K = gaussian_relu_kernel(B, B, s2)                      # (m, m)
        Ka = K @ a / m                                          # E[f relu(b_j x)]
        bH = B[:, :d_H]
        _, nbh, eb = _unit_rows(B)
        nb = np.ldexp(nbh, eb)
        nbH = np.linalg.norm(bH, axis=1)
        rho = np.divide(nbH, nb, out=np.zeros_like(nb), where=nb > 0)
        cos = np.clip(rho[:, None] * r_nodes[None, :], -1.0, 1.0)   # (m, q)
        gam = np.arccos(cos)
        sin = np.sqrt(np.maximum(1.0 - cos * cos, 0.0))
        pref = s2 / (2 * np.pi)
        T = pref * nb * ((sin + (np.pi - gam) * cos) @ r_weights)   # E[|x_H| relu(b_j x)]
        f_ff = float(a @ K @ a) / m ** 2
        f_fs = float(a @ T) / m
        loss = 0.5 * (f_ff - 2 * f_fs + s2 * d_H)
        ga = (Ka - T) / m
        # E[f 1{b_j x>0} x] and E[|x_H| 1{b_j x>0} x]
        gf = gaussian_relu_kernel_grad(B, B, s2, np.broadcast_to(a / m, (m, m)))
        e_bH = np.divide(bH, nbH[:, None], out=np.zeros_like(bH), where=nbH[:, None] > 0)
        gs = pref * (((np.pi - gam) * r_nodes[None, :]) @ r_weights)[:, None] * \
            np.pad(e_bH, ((0, 0), (0, d - d_H)))
        gs += pref * (sin @ r_weights)[:, None] * np.divide(
            B, nb[:, None], out=np.zeros_like(B), where=nb[:, None] > 0)
        gB = (a / m)[:, None] * (gf - gs)
    require_finite_result((loss, ga, gB), "population_loss_and_grad_norm_target",
                          "a, B or s2 too large")
    return loss, (ga, gB)
