"""Certified definitions of the units (``numerics.arb_units``) and the scale form of the
certified comparator: the references of the certified sub-checks of W2a, W2e, W2f, M1a
and M1b (issue "Proofs, not samples")."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

flint = pytest.importorskip("flint")

from numerics import arb_units as AU  # noqa: E402
from numerics.arb_quadrature import UndecidableCondition, working_precision  # noqa: E402
from numerics.groups import c2_swap, cyclic_shifts, permutation_action  # noqa: E402
from verify.certify import CertifiedInstance, arb_function, certified_compare  # noqa: E402

arb = flint.arb


def test_relu_of_balls_and_series() -> None:
    assert AU.relu(arb(2)) == arb(2) and AU.relu(-3.0).is_zero() and AU.relu(0.0).is_zero()
    straddle = AU.relu(arb(0, 1e-10))
    assert straddle.contains(0) and straddle.contains(arb(1e-10)) and not straddle.contains(arb(-1e-9))
    s = AU.relu(flint.arb_series([arb(1), 2], prec=3))
    assert s.coeffs()[1] == arb(2)
    assert all(c.is_zero() for c in AU.relu(flint.arb_series([arb(-1), 2], prec=3)).coeffs())
    with pytest.raises(UndecidableCondition, match="kink"):
        AU.relu(flint.arb_series([arb(0), 1], prec=2))


def test_full_and_canonical_neurons_agree_at_pi_z() -> None:
    """c (a x - b)_+ = r <x~, d(theta)>_+ at r = c |(a, b)|, theta = atan2(b, a) (exact inputs)."""
    with working_precision(128):
        for a, b, c, x in [(3.0, 4.0, 2.0, 2.0), (-1.5, 0.25, -0.7, -3.0), (0.0, -2.0, 1.0, 0.5)]:
            r = arb(c) * (arb(a) ** 2 + arb(b) ** 2).sqrt()
            th = arb.atan2(arb(b), arb(a))
            assert AU.canonical_neuron(r, th, x).overlaps(AU.full_neuron(a, b, c, x))
        # on the kink the full neuron is exactly 0 and the canonical one a tiny ball at 0
        on = AU.canonical_neuron(arb(5), arb.atan2(arb(4), arb(3)), 4 / 3)
        assert on.contains(0) and float(on.rad()) < 1e-30


@pytest.mark.parametrize("a, b, c", [(3.0, 4.0, 2.0), (-1.5, 0.25, -0.7), (1e-150, -1e140, 3e-2),
                                     (7e2, -1e-3, -1e100), (0.0, -2.0, 1e-8)])
def test_fibre_point_inverts_the_canonical_map(a, b, c) -> None:
    """fibre_point(pi(z), delta(z)) contains z (the root of the defining quadratic is
    enclosed by a decided sign change; the map's balls carry the rounding of pi(z))."""
    with working_precision(160):
        r, th, dl = AU.canonical_map(a, b, c)
        za, zb, zc = AU.fibre_point(r, th, dl)
        nu = math.hypot(a, b)   # a, b are nu cos(theta), nu sin(theta): radii relative to nu
        for got, want, scale in ((za, a, nu), (zb, b, nu), (zc, c, abs(c))):
            assert got.contains(arb(want)) and float(got.rad()) <= 1e-30 * scale
        ra, rb, rc = AU.fibre_point(0.0, 0.5, -4.0)       # r = 0: c = 0, |(a, b)| = 2
        assert rc.is_zero() and (ra * ra + rb * rb).overlaps(arb(4))
    with pytest.raises(ValueError, match="delta < 0"):
        AU.fibre_point(0.0, 0.5, 1.0)
    with pytest.raises(ValueError, match="no angle"):
        AU.canonical_map(0.0, 0.0, 1.0)


def test_taylor_coefficients_are_rigorous_derivatives() -> None:
    with working_precision(128):
        c = AU.taylor_coefficients(lambda t: t.exp(), 0, 5)
        for k, ck in enumerate(c):
            assert ck.overlaps(arb(1) / math.factorial(k))
        # d/dtheta of r (x cos - sin) at theta0 vs the derivative written out
        th0, x, r = 0.3, 1.7, -2.0
        d1 = AU.taylor_coefficients(lambda t: AU.canonical_neuron(arb(r) + 0 * t, t, x), th0, 1)[1]
        assert d1.overlaps(arb(r) * (-arb(x) * arb(th0).sin() - arb(th0).cos()))
    with pytest.raises(ValueError, match="order"):
        AU.taylor_coefficients(lambda t: t, 0, -1)
    with pytest.raises(TypeError, match="arb_series"):
        AU.taylor_coefficients(lambda t: 1, 0, 1)


def test_group_averages_linear_and_logistic() -> None:
    with working_precision(128):
        assert AU.logistic(0.0) == arb(1) / 2
        for G in (c2_swap(), cyclic_shifts(3), permutation_action("dihedral", 4)):
            dx = G.dim_x
            rng = np.random.default_rng(dx)
            z, x = rng.standard_normal(G.dim_z).tolist(), rng.standard_normal(dx).tolist()
            # M1a: feature average = model of the symmetrized measure (both units)
            for unit in AU.UNITS:
                fa = AU.feature_average(G.rho, G.rho_hat, unit, [z], None, x)
                sym = AU.symmetrized_model(G.M, unit, [z], None, x, G.dim_y)
                assert all(p.overlaps(q) for p, q in zip(fa, sym))
            # M1b: linear units do not tell mu^G from mu^{E^G}; the logistic unit does
            lin = [AU.symmetrized_model(G.M, "linear", [z], None, x, G.dim_y),
                   AU.projected_model(G.M, "linear", [z], None, x, G.dim_y)]
            assert all(p.overlaps(q) for p, q in zip(*lin))
        G = c2_swap()
        gap = [AU.symmetrized_model(G.M, "logistic", [[0, 0, 0, 1]], None, [0, 2], 2)[k]
               - AU.projected_model(G.M, "logistic", [[0, 0, 0, 1]], None, [0, 2], 2)[k] for k in range(2)]
        assert max(float(abs(g).lower()) for g in gap) > 1e-3


def test_group_average_validation() -> None:
    G = c2_swap()
    with pytest.raises(ValueError, match="integer entries"):
        AU.fixed_space_projection(G.M * 0.5, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="4 entries"):
        AU.fixed_space_projection(G.M, [1, 2, 3])
    with pytest.raises(ValueError, match="unit must be one of"):
        AU.unit_output("tanh", [1, 2], [1, 2, 3, 4], 2)
    with pytest.raises(ValueError, match="one entry per particle"):
        AU.symmetrized_model(G.M, "linear", [[1, 2, 3, 4]], [0.5, 0.5], [1, 2], 2)
    with pytest.raises(ValueError, match="square matrices"):
        AU.fixed_space_projection(np.eye(4), [1, 2, 3, 4])


def test_scale_form_of_the_comparator() -> None:
    """A closed form that is 0 is proven at the scale of its terms, and a 1e-12 change of it
    is a disproof; a scale must be > 0."""
    with working_precision(128):
        tiny = arb(0, 1e-38)
        proof = certified_compare("zero", [CertifiedInstance("p", 0, tiny, scale=2.0)], reason="test")
        assert proof.passed and proof.error < 1e-37
        off = certified_compare("off", [CertifiedInstance("p", 1e-12, tiny, scale=2.0)], reason="test")
        assert not off.passed and off.counterexample["disproved"]
        assert abs(off.error - 5e-13) < 1e-20
        # without a scale, a reference ball around 0 is unproven, not a proof
        unproven = certified_compare("zero", [CertifiedInstance("p", 0, tiny)], reason="test")
        assert not unproven.passed and not unproven.counterexample["disproved"]
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="scale"):
            CertifiedInstance("p", 0, 0, scale=bad)


def test_integer_powers_of_a_ball_around_zero_are_finite() -> None:
    """Arb's ``**`` is a real power (NaN on a ball containing 0); the translator squares."""
    x = sp.Symbol("x", real=True)
    with working_precision(128):
        v = arb_function(x ** 2 + 1, (x,))(arb(0, 1e-30))
        assert v.is_finite() and v.contains(1)
        assert arb_function(x ** 3, (x,))(-2.0) == arb(-8)
        assert arb_function(x ** -2, (x,))(4.0) == arb(1) / 16


def test_integer_matvec_is_exact_and_validated() -> None:
    """numerics.arb_units.integer_matvec: an integer matrix times balls (floats entered
    exactly) encloses the exact product; shapes, non-integer entries and huge zero-copy
    views are refused by name before any ball is made."""
    import time
    from fractions import Fraction

    import numpy as np
    import pytest

    import flint

    from numerics.arb_quadrature import working_precision
    from numerics.arb_units import integer_matvec
    A = [[1, -1, 0], [0, 2, 3]]
    exact = [Fraction(0.1) - Fraction(1e-300), 2 * Fraction(1e-300) + 1]
    with working_precision(2048):  # 0.1 - 1e-300 needs ~1050 bits to be exact
        out = integer_matvec(A, [0.1, 1e-300, Fraction(1, 3)])
        for ball, ref in zip(out, exact):
            assert (ball - flint.arb(ref.numerator) / ref.denominator).contains(0)
            assert ball.rad() <= 2.0 ** -1000 * abs(float(ref))
    assert integer_matvec(np.array([[0.0, -1.0]]), [2, 5])[0] == -5
    with pytest.raises(ValueError, match="^A must be a matrix"):
        integer_matvec([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="^A must have integer entries"):
        integer_matvec([[0.5, 1]], [1.0, 2.0])
    with pytest.raises(ValueError, match="^v must have 2 entries; got 3"):
        integer_matvec([[1, 1]], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="^A must be an integer matrix"):
        integer_matvec("ab", [1.0])
    t0 = time.process_time()
    with pytest.raises(ValueError, match="^A .*too large"):
        integer_matvec(np.broadcast_to(np.int64(1), (10 ** 5, 10 ** 5)), [1.0])
    with pytest.raises(ValueError, match="^v .*too large"):
        integer_matvec([[1]], np.broadcast_to(np.float64(0.5), (10 ** 9,)))
    assert time.process_time() - t0 < 0.5
