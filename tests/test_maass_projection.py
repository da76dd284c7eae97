"""SO(2) and the L2 geometry of symmetrization (claims M1a's SO(2) part and M1g):
derivations, the rotation rule, the norm-gated units, the Arb Haar integrals, the claim."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from derivations import maass_projection as mp
from numerics import arb_units as AU
from numerics.equivariant import NormGatedUnit, model_output, symmetrized_output
from numerics.groups import MAX_ROTATION_RULE_N, rotation_rule
from verify import claims, certify


def _rotation(t: float) -> np.ndarray:
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


# --------------------------------------------------------------------------- derivations
def test_so2_projector_is_the_rotation_scaling_part():
    d = mp.derive_m1g().results
    z11, z12, z21, z22 = mp.cross_term_symbols()[0]
    half = sp.Rational(1, 2)
    expected = sp.Matrix([[half * (z11 + z22), half * (z12 - z21)],
                          [half * (z21 - z12), half * (z11 + z22)]])
    assert sp.expand(d["so2_projector"] - expected) == sp.zeros(2, 2)
    assert d["fixed_space_residual"] == sp.zeros(2, 2)


def test_cross_term_vanishes_exactly_for_isotropic_gaussians_only():
    zs, _, p, q, s1, s2 = mp.cross_term_symbols()
    C = mp.derive_m1g().results["cross_term"]
    assert sp.expand(C.subs(s2, s1)) == 0
    point = {**dict(zip(zs, [1, 2, -1, 3])), p: 1, q: -2, s1: 1, s2: 2}
    assert C.subs(point) != 0


def test_so2_feature_averaging_residuals_are_zero():
    d = mp.derive_so2_feature_averaging()
    assert d.residual == sp.zeros(2, 1)
    assert d.equivariance_residual == sp.zeros(2, 1)


def test_haar_integral_and_trig_reduction():
    c, s = sp.cos(mp.phi), sp.sin(mp.phi)
    assert mp.so2_haar(c**2) == sp.Rational(1, 2)
    assert mp.so2_haar(c**4 * s**2) == sp.Rational(1, 16)
    assert mp.so2_haar(c * s**3) == 0
    assert mp.trig_reduce(c**2 + s**2 - 1) == 0
    assert mp.trig_reduce(c**3) != 0


# --------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("n", [5, 8, 13])
def test_rotation_rule_is_exact_below_its_degree(n):
    G = rotation_rule(n)
    angles = np.arctan2(G.rho[:, 1, 0], G.rho[:, 0, 0])
    for k in range(1, n):
        assert abs(np.cos(k * angles).mean()) < 1e-14 and abs(np.sin(k * angles).mean()) < 1e-14
    assert abs(np.cos(n * angles).mean() - 1) < 1e-14


@pytest.mark.parametrize("n", [0, -1, MAX_ROTATION_RULE_N + 1, 2.5])
def test_rotation_rule_refuses_bad_sizes(n):
    with pytest.raises((ValueError, TypeError), match="n"):
        rotation_rule(n)


@pytest.mark.parametrize("gate", ["cubic", "tanh"])
def test_norm_gated_unit_is_rotation_equivariant_and_its_vjp_is_the_gradient(gate):
    rng = np.random.default_rng(3)
    u = NormGatedUnit(2, 2, gate=gate)
    z, x = rng.standard_normal((3, 4)), rng.standard_normal((5, 2))
    R = _rotation(0.7)
    zr = np.array([(R @ v.reshape(2, 2) @ R.T).ravel() for v in z])
    v = u.value(x, z)
    assert np.abs(u.value(x @ R.T, zr) - np.einsum("ij,bnj->bni", R, v)).max() < 1e-14 * np.abs(v).max()
    c = rng.standard_normal((5, 2))
    g = u.vjp(x, z, c)
    h, fd = 1e-6, np.zeros_like(z)
    for i in range(3):
        for k in range(4):
            zp, zm = z.copy(), z.copy()
            zp[i, k] += h
            zm[i, k] -= h
            fd[i, k] = np.sum(c * (u.value(x, zp)[:, i] - u.value(x, zm)[:, i])) / (2 * h) / 5
    assert np.abs(g - fd).max() < 1e-7


def test_norm_gated_unit_refuses_an_unknown_gate():
    with pytest.raises(ValueError, match="gate"):
        NormGatedUnit(2, 2, gate="relu")


def test_rotation_rule_haar_average_matches_the_derived_single_atom():
    """The cubic unit's integrand has degree 4 in phi: any rule with > 4 points is exact."""
    d = mp.derive_so2_feature_averaging()
    single = sp.lambdify([list(d.x), list(d.a)], d.single_particle)
    rng = np.random.default_rng(0)
    u = NormGatedUnit(2, 2, "cubic")
    for n in (5, 8):
        G = rotation_rule(n)
        xx, z = rng.standard_normal(2), rng.standard_normal(4)
        got = symmetrized_output(u, G, xx[None], z[None])[0]
        assert np.allclose(got, np.ravel(single(xx, z)).astype(float), rtol=1e-13, atol=1e-13)
    # 4 points are not enough: the degree-4 terms alias
    got = symmetrized_output(u, rotation_rule(4), xx[None], z[None])[0]
    assert not np.allclose(got, np.ravel(single(xx, z)).astype(float), rtol=1e-6)


def test_arb_haar_integrals_enclose_the_derived_projector_and_refuse_bad_gates():
    z = [0.3, -1.2, 0.7, 0.5]
    with certify.working_precision(128):
        P = AU.so2_fixed_space_projection(z)
        b = [certify.ball(v) for v in z]
        exact = [(b[0] + b[3]) / 2, (b[1] - b[2]) / 2, (b[2] - b[1]) / 2, (b[0] + b[3]) / 2]
        assert all((p - e).contains(0) and float(p.rad()) < 1e-30 for p, e in zip(P, exact))
        with pytest.raises(ValueError, match="gate"):
            AU.so2_symmetrized_model("relu", [z], None, [1.0, 2.0])
        fa = AU.so2_feature_average("tanh", [z], None, [1.0, 2.0])
        sym = AU.so2_symmetrized_model("tanh", [z], None, [1.0, 2.0])
        assert all((a - b).contains(0) and float(a.rad()) < 1e-30 for a, b in zip(fa, sym))


# --------------------------------------------------------------------------- the claims
@pytest.mark.slow   # tests/test_registry.py runs M1g and its control at seeds 0-2
def test_m1g_passes_and_its_near_miss_fails():
    assert claims.run("M1g", "quick", 0).passed
    ev = claims.run("M1g", "quick", 0, negative_control=True)
    assert not ev.passed
    failed = [s["name"] for s in ev.details["subchecks"] if not s["passed"]]
    assert any(n.startswith("Q_G self-adjoint") for n in failed)


def test_projected_model_is_farther_than_the_symmetrized_one_for_so2():
    """The paper's remark: Phi_{mu^{E^G}} is never closer than Phi_{mu^G}, and strictly
    farther for the (non-linear) cubic unit: the gap is ||Phi_mu^G - Phi_mu^E^G||^2 > 0."""
    from verify import formulas
    rng = np.random.default_rng(5)
    G, u = rotation_rule(8), NormGatedUnit(2, 2, "cubic")
    z, w = rng.standard_normal((4, 4)), np.full(4, 0.25)
    X = np.einsum("gij,bj->gbi", G.rho, rng.standard_normal((6, 2))).reshape(-1, 2)
    f = model_output(u, X, z, w)
    sym = model_output(u, X, *formulas.symmetrize(z, G, w))
    proj = model_output(u, X, *formulas.project_to_fixed_space(z, G, w))
    d_sym, d_proj = np.mean(np.sum((f - sym) ** 2, 1)), np.mean(np.sum((f - proj) ** 2, 1))
    gap = np.mean(np.sum((sym - proj) ** 2, 1))
    assert gap > 1e-3 * d_sym
    assert abs(d_proj - d_sym - gap) < 1e-12 * (d_proj + d_sym)
