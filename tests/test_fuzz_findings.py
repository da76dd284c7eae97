"""Findings of the outside fuzz of every public name that are not sizes: each
is refused by name now (a ValueError/TypeError saying what to change), quickly."""
from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest

VIEW = np.broadcast_to(np.float64(0.5), (10 ** 8, 2))


@pytest.mark.parametrize("b", [np.ones(4), 1.0, None, VIEW], ids=["array", "float", "None", "view"])
def test_relative_radius_refuses_what_is_not_a_ball(b) -> None:
    """verify.certify.relative_radius raised AttributeError ('.rad') for any non-ball."""
    from verify import certify
    t0 = time.process_time()
    with pytest.raises(TypeError, match=r"^relative_radius: b must be an Arb ball"):
        certify.relative_radius(b)
    assert time.process_time() - t0 < 0.5
    assert certify.relative_radius(certify.ball(0.5)) == 0.0


@pytest.mark.parametrize("v", [float("inf"), float("nan"), "1.0", None])
def test_exact_fraction_refuses_non_finite_and_non_numbers(v) -> None:
    """verify.certify.exact_fraction(inf) raised OverflowError from fractions."""
    from verify import certify
    with pytest.raises((ValueError, TypeError), match=r"^exact_fraction: v must be"):
        certify.exact_fraction(v)
    assert certify.exact_fraction(0.1) == Fraction(0.1)


@pytest.mark.parametrize("prec", [float("inf"), 8, 10 ** 6, True, "96"])
def test_phi_tilde_ball_refuses_a_bad_precision(prec) -> None:
    """numerics.arb_quadrature.phi_tilde_ball(..., prec=inf) raised OverflowError."""
    from numerics import arb_quadrature as aq
    with pytest.raises(ValueError, match=r"^prec \(Arb working precision in bits\)"):
        aq.phi_tilde_ball(0.4, 0.3, 5, 2, prec=prec)


def test_certify_enclose_refuses_a_non_mapping_before_iterating_it() -> None:
    """verify.certify.enclose(array, 10^8 view) iterated the view as symbols (> 5 s)."""
    import sympy as sp

    from verify import certify
    t0 = time.process_time()
    with pytest.raises(TypeError, match="^enclose: expr must be a SymPy expression"):
        certify.enclose(np.ones((4, 3)), VIEW)
    with pytest.raises(TypeError, match="^enclose: values must be a mapping"):
        certify.enclose(sp.Symbol("x") + 1, VIEW)
    assert time.process_time() - t0 < 0.5
    x = sp.Symbol("x")
    assert certify.enclose(x / 3, {x: 1}).overlaps(certify.ball(1) / 3)
