"""Verified formulas for Maass Martinez & Fontbona (2024) (claims M1a-M1c): the symmetrized
measure mu^G, the projected measure mu^{E^G} and the relative measure distance RMD.

Each formula carries the derived SymPy expression its claim checks it against
(``.expr``, read from :mod:`verify.derived`) and a high-precision variant
``.mpmath(..., dps=30)``.

Group objects: pass a :class:`numerics.groups.GroupAction` (built with
``numerics.groups.c2_swap()``, ``cyclic_shifts(n)``, ``sign_flips(n)``,
``permutation_action(kind, n)``, ``cyclic_network_action(n)``, ``c2_swap_uv()``,
``matrix_action(rho, rho_hat)`` or ``GroupAction(rho, rho_hat, M)``), or simply the stack
of parameter matrices ``M`` of shape (|G|, D, D) listing every group element
(orthogonality and closure are checked).

>>> import numpy as np
>>> from verify import formulas
>>> from numerics.groups import c2_swap
>>> z = np.array([[1.0, 2.0, 3.0, 4.0]])          # z = [[1, 2], [3, 4]], row-major
>>> formulas.project_to_fixed_space(z, c2_swap())[0]
array([[2.5, 2.5, 2.5, 2.5]])
>>> formulas.symmetrize(z, c2_swap())[0]           # z and P z P
array([[1., 2., 3., 4.],
       [4., 3., 2., 1.]])
>>> float(formulas.rmd(z, z))
0.0
"""
from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from numerics import transport
from numerics.groups import GroupAction, validate_measure
from numerics.validation import as_float_array
from verify import derived
from verify.formulas._base import DerivedFunction, UlpBound, check_dps

__all__ = ["symmetrize", "project_to_fixed_space", "rmd"]


def _as_group(group: Any) -> GroupAction:
    if isinstance(group, GroupAction):
        return group
    M = as_float_array(group, "group (a GroupAction or the matrices M_g, shape (|G|, D, D))")
    if M.ndim != 3:
        raise ValueError("group must be a numerics.groups.GroupAction or an array of the "
                         f"parameter matrices M_g with shape (|G|, D, D); got shape {M.shape}")
    one = np.ones((M.shape[0], 1, 1))
    return GroupAction(one, one, M, name="group (the matrices M_g)")


def _mp_matrix_apply(M: np.ndarray, z: np.ndarray) -> np.ndarray:
    """M z for every row of z in mpmath arithmetic (object array of mpf)."""
    Mm = mpmath.matrix(M.tolist())
    out = np.empty(z.shape, dtype=object)
    for i, row in enumerate(z):
        v = Mm * mpmath.matrix(row.tolist())
        out[i] = [v[k] for k in range(len(row))]
    return out


def symmetrize_impl(particles, group, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """mu^G = (1/|G|) sum_g M_g # mu: (|G| N particles M_g z_i, g-major; weights w_i/|G|)."""
    return _as_group(group).symmetrize_measure(particles, weights)


def symmetrize_mpmath(particles, group, weights=None, dps: int = 30
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`symmetrize` in mpmath arithmetic at ``dps`` digits (object arrays of mpf)."""
    dps = check_dps(dps)
    G = _as_group(group)
    z, w = validate_measure(particles, weights, G.dim_z)
    with mpmath.workdps(dps):
        imgs = np.concatenate([_mp_matrix_apply(G.M[g], z) for g in range(G.order)])
        ws = np.array([mpmath.mpf(float(v)) / G.order for v in np.tile(w, G.order)], dtype=object)
    return imgs, ws


def project_impl(particles, group, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """mu^{E^G} = P_{E^G} # mu: (particles P z_i, the same weights)."""
    return _as_group(group).project_measure(particles, weights)


def project_mpmath(particles, group, weights=None, dps: int = 30
                   ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`project_to_fixed_space` in mpmath arithmetic (P = (1/|G|) sum_g M_g in mpf)."""
    dps = check_dps(dps)
    G = _as_group(group)
    z, w = validate_measure(particles, weights, G.dim_z)
    with mpmath.workdps(dps):
        P = sum((mpmath.matrix(G.M[g].tolist()) for g in range(G.order)),
                mpmath.zeros(G.dim_z)) / G.order
        out = np.empty(z.shape, dtype=object)
        for i, row in enumerate(z):
            v = P * mpmath.matrix(row.tolist())
            out[i] = [v[k] for k in range(G.dim_z)]
        ws = np.array([mpmath.mpf(float(v)) for v in w], dtype=object)
    return out, ws


def _rmd_of_parts(w2sq, m2a, m2b, modules: str):
    """The derived RMD convention (claim M1c's ``rmd``) at (W_2^2, m_2(mu), m_2(nu));
    0 for two copies of delta_0."""
    if m2a + m2b == 0:
        return 0.0 if modules == "numpy" else mpmath.mpf(0)
    from derivations.maass import rmd_symbols
    return derived.lambdified("M1c", "rmd", list(rmd_symbols()), modules=modules)(w2sq, m2a, m2b)


def rmd_impl(a, b) -> np.float64:
    """RMD(mu, nu) between the uniform measures on the rows of a and b: the derived
    convention at the exact W_2^2 and second moments (numerics.transport.rmd_parts)."""
    return np.float64(_rmd_of_parts(*transport.rmd_parts(a, b), "numpy"))


def rmd_mpmath(a, b, dps: int = 30):
    """RMD in mpmath arithmetic: the optimal assignment of the float64 problem (exact unless
    two couplings tie to ~1e-16 relative, when their costs agree to that accuracy anyway),
    its cost and the second moments summed in mpf at ``dps`` digits, then the derived
    convention in mpmath."""
    dps = check_dps(dps)
    A, B, perm = transport.optimal_matching(a, b)
    with mpmath.workdps(dps):
        def sq(u):
            return mpmath.fsum(mpmath.mpf(float(t)) ** 2 for t in u)
        w2 = mpmath.fsum(mpmath.fsum((mpmath.mpf(float(s)) - mpmath.mpf(float(t))) ** 2
                                     for s, t in zip(A[i], B[j]))
                         for i, j in enumerate(perm)) / len(perm)
        m2a = mpmath.fsum(sq(r) for r in A) / len(A)
        m2b = mpmath.fsum(sq(r) for r in B) / len(B)
        return _rmd_of_parts(w2, m2a, m2b, "mpmath")


#: M_g z_i: D products and D - 1 additions per component (any summation order): <= D
#: roundings of (|M_g| |z_i|)_k, i.e. D/2 ulps; the weights w_i / |G|: one rounding
SYMMETRIZE_ULPS = UlpBound(
    1, "(|M_g| |z_i|)_k per particle component (|.| entrywise; for the weights: their value); "
    "n = D, the dimension", "a dot product of length D: <= D roundings of half an ulp of "
    "sum_j |M_g,kj z_ij| (exact for signed permutation matrices); a weight: one division",
    per_term=0.5)
#: P = mean_g M_g (pairwise sum: <= ceil(log2 |G|) + 1 roundings of mean_g |M_g|), then P z
#: (D roundings): in ulps of (mean_g |M_g| |z_i|)_k; the weights are returned unchanged
PROJECT_ULPS = UlpBound(
    1, "(mean_g |M_g| |z_i|)_k per particle component; n = D + ceil(log2 |G|)",
    "the group average of the matrices (pairwise summation and one division: <= "
    "ceil(log2 |G|) + 1 roundings of mean_g |M_g|) and a dot product of length D (<= D "
    "roundings of |P| |z_i| <= mean_g |M_g| |z_i|); half an ulp per rounding", per_term=0.5)
#: rmd^2 = W_2^2 / (2 (m_2(mu) + m_2(nu))) lies in [0, 1]: the assignment is chosen from the
#: expanded costs |a|^2 + |b|^2 - 2 a.b (rounded at the scale |a_i|^2 + |b_j|^2), so the
#: chosen coupling may cost up to 2 (D + 2) u (m_2(mu) + m_2(nu)) more than the optimum;
#: the sums (D terms per row, pairwise means over n rows) add (D + log2 n + 6) u of rmd^2
RMD_ULPS = UlpBound(
    16, "1 on the squared output: |rmd_float^2 - rmd^2| (rmd^2 in [0, 1]); n = D",
    "the coupling chosen from float64 costs with cancellation at the scale m_2(mu) + m_2(nu): "
    "<= (D + 2)/2 ulps of 1 on rmd^2; the recomputed matched costs, the second moments and "
    "their ratio: <= (D + log2 n + 6)/2 ulps of rmd^2 <= 1, with log2 n <= 20 (the "
    "assignment size cap); so |rmd^2 error| <= 16 + D ulps of 1, and rmd's own error is "
    "<= that / (2 rmd) (relative accuracy is not available for rmd << 1: W_2^2 is a small "
    "difference of the expanded costs)", per_term=1)


symmetrize = DerivedFunction(
    "symmetrize", "M1a", expr_fn=lambda: derived.results("M1a")["single_particle"],
    impl=symmetrize_impl, mpmath=symmetrize_mpmath, ulp_bound=SYMMETRIZE_ULPS,
    doc="""symmetrize(particles, group, weights=None) -> (particles_G, weights_G)

An algorithm, not a closed form: the push-forward of the particle measure by every group
element.  Verified against claim M1a's property Q_G Phi_mu = Phi_{mu^G} (the feature
average computed on the function side equals the model of this measure, to 1e-12, on
drawn groups, units and measures) and M1a's derived residuals.  No ``.enclose``
(NotEnclosable): an output of |G| N particles is a list of products, not one derived
expression; its float64 bound is tested against exact rational products.

The symmetrized measure mu^G = (1/|G|) sum_g M_g # mu of mu = sum_i w_i delta_{z_i}
(particles (N, D), weights (N,) summing to 1, default uniform): |G| N particles M_g z_i
(g-major) with weights w_i / |G|.  By claim M1a, Phi_{mu^G} = Q_G Phi_mu (the feature
average); ``.expr`` is the derived Phi_{phi_z}(x) of the reference unit.
Raises ValueError for non-orthogonal or non-closed group matrices, particles whose
dimension differs from the group's D, and empty measures.  Float64 error (``.ulp_bound``):
<= 1 + D/2 ulps of (|M_g| |z_i|)_k per component (exact for signed permutations).""")

project_to_fixed_space = DerivedFunction(
    "project_to_fixed_space", "M1b", expr_fn=lambda: derived.results("M1b")["projector"],
    impl=project_impl, mpmath=project_mpmath, ulp_bound=PROJECT_ULPS,
    doc="""project_to_fixed_space(particles, group, weights=None) -> (P z_i, w_i)

An algorithm, not a closed form: the group average of the parameter matrices applied to
each particle.  Verified against claim M1b's property Phi_{mu^{E^G}} = Phi_{mu^G} for
linear units (to 1e-12 on drawn groups and measures; it must differ for the logistic
unit) and M1b's derived projector.  No ``.enclose`` (NotEnclosable): a group average
applied to particles, not one derived expression; its float64 bound is tested against
exact rational arithmetic.

The projected measure mu^{E^G} = P_{E^G} # mu, with P_{E^G} = (1/|G|) sum_g M_g the
orthogonal projection onto the fixed space E^G.  Equal to ``symmetrize`` at the level of
models only for linear units (claim M1b); ``.expr`` is the derived P_{E^G} z of the
reference action.  Same validation as ``symmetrize``.  Float64 error (``.ulp_bound``):
<= 1 + (D + ceil(log2 |G|))/2 ulps of (mean_g |M_g| |z_i|)_k per component.""")

rmd = DerivedFunction(
    "rmd", "M1c", expr_fn=lambda: derived.results("M1c")["rmd"],
    impl=rmd_impl, mpmath=rmd_mpmath, ulp_bound=RMD_ULPS,
    doc="""rmd(a, b) -> float in [0, 1]

A convention with one definition (claim M1c's derived ``rmd``), evaluated at the exact
W_2^2 (an assignment problem) and second moments.  Checked against the convention's
properties in M1c: RMD(mu, mu + c) equals the derived RMD of a translate (W_2 = |c| by
Brenier), and the normalisation: RMD(delta_z, delta_-z) = 1 (the largest value,
|a - b|^2 <= 2|a|^2 + 2|b|^2 with equality), RMD(mu, mu) = 0, scale invariance.  No
``.enclose`` (NotEnclosable): W_2 is a minimum over couplings (an assignment problem),
an algorithm, not a closed form; its float64 bound is tested against the exact optimum by
enumeration in rational arithmetic.

RMD(mu, nu) = sqrt(W_2^2(mu, nu) / (2 (m_2(mu) + m_2(nu)))) between the uniform measures
on the rows of ``a`` (N, D) and ``b`` (M, D); W_2 is exact (assignment problem, sizes
equalized to lcm(N, M)).  0 for two copies of delta_0.  ValueError for empty measures or
different dimensions D.  ``.expr`` is the derived definition of claim M1c.  Float64 error
(``.ulp_bound``): |rmd^2 - exact^2| <= 16 + D ulps of 1 (the coupling is chosen from
expanded costs that cancel at the scale of the second moments), so rmd is accurate to
that / (2 rmd), not relatively, when rmd << 1.""")

#: algorithms: their mutants are listed under the algorithm by the mutation harness,
#: not credited to the claim whose properties they are verified against
for _algorithm in (symmetrize, project_to_fixed_space):
    _algorithm.algorithm = True
