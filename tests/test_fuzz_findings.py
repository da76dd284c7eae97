"""Findings of the outside fuzz of every public name (issue 34) that are not sizes: each
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
