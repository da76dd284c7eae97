"""Finite group actions, Haar averages, fixed spaces, symmetrized / projected measures and
exact W_2 / RMD (numerics.groups, numerics.transport; claims M1a-M1e)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from numerics.groups import (GroupAction, c2_swap, c2_swap_uv, cyclic_network_action,
                             cyclic_shift_matrices, cyclic_shifts, dihedral_matrices,
                             generated_permutation_matrices, matrix_action, permutation_action,
                             sign_flips, symmetric_group_matrices, validate_measure)
from numerics.transport import (optimal_matching, second_moment, _squared_distances,
                                w2_squared_uniform, w2_uniform)
from verify.formulas import rmd as _rmd


def rmd(a, b) -> float:
    """The RMD convention (claim M1c's derived definition on transport's exact parts)."""
    return float(_rmd(a, b))

GROUPS = {
    "c2": c2_swap,
    "c3": lambda: cyclic_shifts(3),
    "c5": lambda: cyclic_shifts(5),
    "flips2": lambda: sign_flips(2),
    "flips3_pm": lambda: sign_flips(3, all_coordinates=False),
    "net2": lambda: cyclic_network_action(2),
    "net3": lambda: cyclic_network_action(3),
    "d3": lambda: permutation_action("dihedral", 3),
    "d4": lambda: permutation_action("dihedral", 4),
    "s3": lambda: permutation_action("symmetric", 3),
    "c2uv": c2_swap_uv,
}
_CACHE: dict[str, GroupAction] = {}


def group(name: str) -> GroupAction:
    if name not in _CACHE:
        _CACHE[name] = GROUPS[name]()
    return _CACHE[name]


group_names = st.sampled_from(sorted(GROUPS))
seeds = st.integers(0, 2**32 - 1)


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_projector_is_orthogonal_projection_onto_fixed_space(name):
    G = group(name)
    P = G.projector()
    np.testing.assert_allclose(P @ P, P, atol=1e-14)
    np.testing.assert_allclose(P, P.T, atol=1e-14)
    for g in range(G.order):
        np.testing.assert_allclose(G.M[g] @ P, P, atol=1e-14)   # range(P) is fixed
    B = G.fixed_space_basis()
    np.testing.assert_allclose(B.T @ B, np.eye(B.shape[1]), atol=1e-13)
    np.testing.assert_allclose(B @ B.T, P, atol=1e-13)
    assert B.shape[1] == round(np.trace(P))


def test_known_fixed_space_dimensions():
    assert c2_swap().fixed_space_basis().shape[1] == 2            # [[p, q], [q, p]]
    assert cyclic_shifts(4).fixed_space_basis().shape[1] == 4     # circulants
    assert sign_flips(3).fixed_space_basis().shape[1] == 3        # diagonal matrices
    assert cyclic_network_action(3).fixed_space_basis().shape[1] == 7   # 3 + 3 + 1
    z = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(c2_swap().project(z), [2.5, 2.5, 2.5, 2.5])


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_group_table_and_inverse(name):
    G = group(name)
    for g in range(G.order):
        np.testing.assert_allclose(G.M[g] @ G.M[G.inverse[g]], np.eye(G.dim_z), atol=1e-14)
        for h in range(G.order):
            np.testing.assert_allclose(G.M[g] @ G.M[h], G.M[G.table[g, h]], atol=1e-14)
            np.testing.assert_allclose(G.rho[g] @ G.rho[h], G.rho[G.table[g, h]], atol=1e-14)


@given(group_names, seeds)
def test_haar_average_is_translation_invariant(name, seed):
    G = group(name)
    vals = np.random.default_rng(seed).standard_normal((G.order, 3))
    for h in range(G.order):
        np.testing.assert_allclose(G.haar_average(vals[G.table[:, h]]), G.haar_average(vals),
                                   atol=1e-14)


@given(group_names, seeds, st.integers(1, 12))
def test_symmetrized_measure_is_weakly_invariant(name, seed, N):
    G = group(name)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N, G.dim_z))
    w = rng.dirichlet(np.ones(N))
    zs, ws = G.symmetrize_measure(z, w / w.sum())
    assert zs.shape == (G.order * N, G.dim_z)
    assert abs(ws.sum() - 1) < 1e-12
    assert G.is_weakly_invariant(zs, ws, tol=1e-10)
    # first moment of mu^G is P (first moment of mu)
    np.testing.assert_allclose(ws @ zs, G.project((w / w.sum()) @ z), atol=1e-12)
    # the projected measure lives in E^G
    zp, wp = G.project_measure(z)
    assert np.all(G.distance_to_fixed_space(zp) < 1e-12)


@given(group_names, seeds)
def test_feature_average_is_idempotent_and_equivariant(name, seed):
    G = group(name)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((G.dim_y, G.dim_x))

    def f(x):                                   # an arbitrary non-equivariant map
        return np.sin(x @ A.T) + (x @ A.T) ** 2

    Qf = G.symmetrize_function(f)
    QQf = G.symmetrize_function(Qf)
    x = rng.standard_normal((5, G.dim_x))
    np.testing.assert_allclose(QQf(x), Qf(x), atol=1e-12)
    for g in range(G.order):
        np.testing.assert_allclose(Qf(x @ G.rho[g].T), Qf(x) @ G.rho_hat[g].T, atol=1e-12)


def test_validation_errors():
    S = cyclic_shift_matrices(2)
    with pytest.raises(ValueError, match="not an orthogonal representation"):
        matrix_action(S * 1.1, S)
    with pytest.raises(ValueError, match="same group elements"):
        GroupAction(S, S, cyclic_shift_matrices(3))
    with pytest.raises(ValueError, match="not closed under products"):
        S3 = cyclic_shift_matrices(3)
        matrix_action(S3[:2], S3[:2])          # identity and one generator only
    G = c2_swap()
    with pytest.raises(ValueError, match="empty"):
        G.symmetrize_measure(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="mismatched dimensions"):
        G.project_measure(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="sum to 1"):
        validate_measure(np.zeros((2, 4)), [0.5, 0.6])
    with pytest.raises(ValueError, match="finite"):
        G.symmetrize_measure(np.full((2, 4), np.nan))
    with pytest.raises(ValueError, match="too large"):
        sign_flips(7)


# ---------------------------------------------------------------------------- transport
def _w2_brute(a: np.ndarray, b: np.ndarray) -> float:
    n = len(a)
    return min(np.mean(np.sum((a - b[list(p)]) ** 2, axis=1))
               for p in itertools.permutations(range(n)))


@given(st.integers(1, 6), st.integers(1, 4), seeds)
@example(1, 1, 0)
def test_w2_matches_brute_force_over_permutations(n, d, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, d)), 2 * rng.standard_normal((n, d)) + 1
    assert abs(w2_squared_uniform(a, b) - _w2_brute(a, b)) <= 1e-12 * max(1.0, _w2_brute(a, b))


@given(st.integers(1, 4), st.integers(1, 4), seeds)
def test_w2_unequal_sizes_via_repetition(n, m, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, 2)), rng.standard_normal((m, 2))
    # brute force on the lcm-replicated measures, small enough for permutations when lcm <= 6
    from math import lcm
    L = lcm(n, m)
    if L <= 6:
        ref = _w2_brute(np.repeat(a, L // n, 0), np.repeat(b, L // m, 0))
        assert abs(w2_squared_uniform(a, b) - ref) <= 1e-12 * max(1.0, ref)
    # W_2 between a point mass and any measure: mean squared distance
    c = rng.standard_normal((1, 2))
    np.testing.assert_allclose(w2_squared_uniform(c, b), np.mean(np.sum((b - c) ** 2, 1)),
                               rtol=1e-12)


@given(st.integers(1, 30), st.integers(1, 5), seeds, st.floats(-3, 3))
@example(3, 2, 0, -1.0)        # nu = -mu: the extreme case, RMD = 1 for centered-free atoms
def test_rmd_in_unit_interval_and_symmetric(n, d, seed, shift):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, d))
    b = shift * a + rng.standard_normal((n, d)) * (shift == 0)
    r = rmd(a, b)
    assert 0.0 <= r <= 1.0 + 4e-16      # the definition's bound, up to rounding
    assert abs(r - rmd(b, a)) <= 1e-12
    assert rmd(a, a[rng.permutation(n)]) <= 1e-7


def test_rmd_known_values():
    a = np.array([[1.0, 0.0]])
    assert rmd(a, -a) == pytest.approx(1.0)
    assert rmd(a, a) == 0.0
    assert rmd(np.zeros((3, 2)), np.zeros((3, 2))) == 0.0
    assert second_moment(np.array([[3.0, 4.0]])) == 25.0
    with pytest.raises(ValueError, match="empty"):
        rmd(np.zeros((0, 2)), a)
    with pytest.raises(ValueError, match="different dimensions"):
        rmd(np.zeros((1, 3)), a)


def test_permutation_group_orders_and_fixed_spaces():
    assert len(dihedral_matrices(4)) == 8 and len(symmetric_group_matrices(4)) == 24
    # E^G of z -> g z g^T: dimension = number of orbits of G on index pairs (i, j)
    for kind, n, dim in (("cyclic", 4, 4), ("dihedral", 4, 3), ("symmetric", 3, 2),
                         ("dihedral", 3, 2)):
        assert permutation_action(kind, n).fixed_space_basis().shape[1] == dim
    assert c2_swap_uv().fixed_space_basis().shape[1] == 2
    with pytest.raises(ValueError, match="permutation"):
        generated_permutation_matrices([[0, 0, 1]], 3)
    with pytest.raises(ValueError, match="kind"):
        permutation_action("alternating", 3)
    with pytest.raises(ValueError, match="too large"):
        symmetric_group_matrices(7)


@given(st.integers(1, 40), st.integers(1, 5), seeds, st.sampled_from([0.01, 1.0, 5.0]))
def test_w2_solvers_agree(n, d, seed, spread):
    """scipy's assignment solver and POT's network simplex give the same exact W_2 on
    particle clouds like those of the checks (close, and independent)."""
    pytest.importorskip("ot")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, d))
    b = a + spread * rng.standard_normal((n, d))
    w_lsa = w2_squared_uniform(a, b, method="lsa")
    w_emd = w2_squared_uniform(a, b, method="emd")
    assert abs(w_lsa - w_emd) <= 1e-12 * max(1.0, w_lsa)
    A, B, perm = optimal_matching(a, b)
    assert sorted(perm.tolist()) == list(range(n))
    assert abs(np.mean(np.sum((A - B[perm]) ** 2, 1)) - w_lsa) <= 1e-14 * max(1.0, w_lsa)
    assert _squared_distances(a, b).min() >= 0.0
    with pytest.raises(ValueError, match="method"):
        w2_squared_uniform(a, b, method="sinkhorn")


@pytest.mark.parametrize("n", [13, 10 ** 6, 2 ** 70])
def test_cyclic_shifts_size_guard(n):
    with pytest.raises(ValueError, match=r"n \(size of the cyclic group\) must be an integer in \[1, 12\]"):
        cyclic_shifts(n)
    with pytest.raises(ValueError, match="n"):
        cyclic_shift_matrices(max(n, 129))


@pytest.mark.parametrize("scale", [1e300, 1e-300, 2.0 ** 600, 2.0 ** -700])
def test_transport_is_scale_equivariant_at_extreme_sizes(scale):
    """W_2 and RMD of huge or tiny clouds: the clouds are scaled by a power of two before
    squaring, so W_2(k a, k b) = k W_2(a, b) and RMD is scale-invariant (to rounding)."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 2)), rng.standard_normal((2, 2))
    assert w2_uniform(scale * a, scale * b) == pytest.approx(scale * w2_uniform(a, b), rel=1e-13)
    assert rmd(scale * a, scale * b) == pytest.approx(rmd(a, b), rel=1e-13)
    assert np.array_equal(optimal_matching(scale * a, scale * b)[2], optimal_matching(a, b)[2])


def test_transport_unrepresentable_results_raise():
    a = np.full((1, 2), 1e300)
    assert w2_uniform(a, -a) == pytest.approx(2e300 * np.sqrt(2), rel=1e-15)
    with pytest.raises(ValueError, match="overflows"):
        w2_squared_uniform(a, -a)
    with pytest.raises(ValueError, match="overflows"):
        w2_uniform(np.full((1, 2), 1.7e308), np.full((1, 2), -1.7e308))


# --------------------------------------------------------------------------- public surface
def test_a_list_with_repeated_elements_is_a_group_image():
    """formulas.symmetrize(ones((1, 4)), sign_flips(2).M) raised IndexError: the four M_g
    of {+-1}^2 acting by z -> g z g^T are two matrices, each twice (a non-faithful action).
    Equal multiplicities are accepted (Haar averages unchanged); unequal ones refused."""
    from verify import formulas as F
    M = sign_flips(2).M
    z, w = F.symmetrize(np.ones((1, 4)), M)
    assert z.shape == (4, 4) and np.allclose(w, 0.25)
    one = np.ones((4, 1, 1))
    G = GroupAction(one, one, M)
    np.testing.assert_allclose(G.projector(), sign_flips(2).projector(), atol=1e-15)
    with pytest.raises(ValueError, match="repeats some elements more often"):
        GroupAction(np.ones((3, 1, 1)), np.ones((3, 1, 1)), np.stack([M[0], M[0], M[1]]))


def test_absurd_group_sizes_are_refused_fast():
    import time
    from numerics import groups as G
    t0 = time.process_time()
    for call in (lambda: G.cyclic_network_action(60), lambda: G.cyclic_shifts(10 ** 6),
                 lambda: G.permutation_action("symmetric", 7),
                 lambda: G.sign_flip_matrices(10 ** 9, all_coordinates=False),
                 lambda: G.generated_permutation_matrices([list(range(10 ** 6))], 10 ** 6)):
        with pytest.raises(ValueError, match="^n |too large"):
            call()
    assert time.process_time() - t0 < 1.0


def test_transport_names_its_arguments():
    """squared_distances(None, None) leaked an AttributeError; the public functions name
    the argument instead, and the second moment of large clouds is scaled, not inf."""
    with pytest.raises(TypeError, match="^a \\(first particle measure\\)"):
        w2_uniform(None, None)
    with pytest.raises(ValueError, match="^method"):
        w2_uniform(np.zeros((1, 2)), np.zeros((1, 2)), method=["lsa"])
    assert second_moment(np.full((1, 2), 1e150)) == pytest.approx(2e300, rel=1e-15)
    with pytest.raises(ValueError, match="m_2 = E \\|z\\|\\^2 is not representable"):
        second_moment(np.full((1, 2), 1e200))


# --------------------------------------------------------------------------- zero-copy huge views
def test_huge_broadcast_views_are_refused_fast_without_copying():
    """A 10^8-row np.broadcast_to view (a few bytes of memory) raised MemoryError under a
    4 GiB cap, or was refused only after a copy of seconds: the shared validators refuse it
    from its shape."""
    import time

    from numerics.groups import GroupAction, matrix_action, uv_action
    big = np.broadcast_to(np.eye(2), (10 ** 8, 2, 2))
    small = np.eye(2)[None]
    t0 = time.process_time()
    for call in (lambda: matrix_action(big, small), lambda: matrix_action(small, big),
                 lambda: uv_action(big, big), lambda: GroupAction(big, big, np.eye(4)),
                 lambda: c2_swap().project(np.broadcast_to(np.ones(4), (10 ** 8, 4)))):
        with pytest.raises(ValueError, match="too large"):
            call()
    assert time.process_time() - t0 < 1.0


# --------------------------------------------------------------------------- plane rotations
@given(st.floats(-20, 20), st.integers(2, 6))
def test_plane_rotation_is_orthogonal_and_rotates_the_first_plane(angle, d):
    """R^T R = I, det R = 1, R e_1 = (cos, sin, 0...), the other coordinates fixed, and
    R(a) R(b) = R(a + b) to rounding."""
    from numerics.groups import plane_rotation
    R = plane_rotation(angle, d)
    assert R.shape == (d, d)
    assert np.allclose(R.T @ R, np.eye(d), atol=4e-16)
    assert np.isclose(np.linalg.det(R), 1.0)
    assert np.allclose(R[:, 0], [np.cos(angle), np.sin(angle)] + [0.0] * (d - 2), atol=1e-16)
    assert np.array_equal(R[2:, 2:], np.eye(d - 2))
    assert np.allclose(R @ plane_rotation(0.7, d), plane_rotation(angle + 0.7, d), atol=2e-15)


def test_plane_rotation_rejects_bad_input():
    from numerics.groups import plane_rotation
    for args, match in (((np.nan,), "finite"), ((0.1, 1), r"\[2, 4096\]"),
                        (([0.1, 0.2],), "scalar"), (("x",), "real number")):
        with pytest.raises((ValueError, TypeError), match=match):
            plane_rotation(*args)
