"""H1j (Hajjar & Chizat 2023, Thm 3.2 in general form): the derived vector moment ODE holds
in a dimension it was not matched in, and the claim's system is what it says."""
from __future__ import annotations

import numpy as np
import sympy as sp

from derivations import hajjar as dh
from derivations.hajjar_odd_general import DIMENSIONS, _vector_form, derive_h1j
from numerics.rng import make_rng
from verify.claims.hajjar_odd_general import _system


def test_vector_form_holds_in_an_unmatched_dimension() -> None:
    coef = derive_h1j().results
    assert coef == {"k_wA": sp.Rational(1, 4), "k_wM": sp.Rational(1, 4), "k_M": 1, "k_A": 2}
    n = 5
    assert n not in DIMENSIONS
    der = dh.odd_target_dynamics(n)
    fw, fM, fA = _vector_form(n, coef)
    assert sp.expand(der.ode_w - fw) == sp.zeros(n, 1)
    assert sp.expand(der.ode_M - fM) == sp.zeros(n, n)
    assert sp.expand(der.ode_A - fA) == 0


def test_a_wrong_coefficient_does_not_fit() -> None:
    coef = dict(derive_h1j().results)
    coef["k_wM"] = sp.Rational(1, 3)
    der = dh.odd_target_dynamics(3)
    fw, _, _ = _vector_form(3, coef)
    assert sp.expand(der.ode_w - fw) != sp.zeros(3, 1)


def test_system_is_mirrored_product_law_on_anisotropic_symmetric_data() -> None:
    a, B, X, Y = _system(make_rng(0, "t"), 4, 50, 300, 10.0)
    assert a.shape == (100,) and B.shape == (100, 4) and X.shape == (600, 4)
    np.testing.assert_array_equal(a[50:], -a[:50])
    np.testing.assert_array_equal(B[50:], -B[:50])
    np.testing.assert_allclose(np.abs(a), np.linalg.norm(B, axis=1), rtol=1e-15)
    np.testing.assert_array_equal(X[300:], -X[:300])
    np.testing.assert_allclose(Y[300:], -Y[:300], rtol=1e-15, atol=0)   # odd target
    ev = np.linalg.eigvalsh(X.T @ X / 600)
    assert ev.max() / ev.min() > 2.0                                    # anisotropic
