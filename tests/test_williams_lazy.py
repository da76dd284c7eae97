"""W2j (Williams et al. 2019, Prop. 4 at alpha(m) = o(m)): the derived kernel time and the
tangent kernel the claim builds from the engine's Jacobian."""
from __future__ import annotations

import numpy as np
import sympy as sp

from derivations.williams_lazy import derive_w2j, m_width
from numerics.rng import make_rng
from verify.claims.williams_lazy import _sample, _tangent_kernel
from verify.formulas import ntk_kernel


def test_kernel_time_and_freeze_exponent() -> None:
    d = derive_w2j()
    g = sp.Symbol("gamma", positive=True)
    assert sp.simplify(d.results["kernel_time"](m_width, g) - m_width ** (2 * g - 1)) == 0
    exps = [s.expr for s in d.steps if s.lhs == "\\log_m \\Delta z"]
    assert exps and sp.simplify(exps[0] - (g - 1)) == 0


def test_tangent_kernel_is_the_ntk_average() -> None:
    """K_m from relu1d.network_jacobian -> K_NTK (W3d's derived closed form) at rate m^-1/2."""
    x, _ = _sample()
    K = np.array([[float(ntk_kernel(u, v, init="uniform", sigma_c=1.0)) for v in x] for u in x])
    rng = make_rng(0, "w2j-test")
    m = 400_000
    a, b = rng.uniform(-1, 1, (2, m))
    c = rng.standard_normal(m)
    Km = _tangent_kernel(a, b, c, x, np.sqrt(m))
    assert np.abs(Km - K).max() < 8 * 2.0 / np.sqrt(m)   # entries' SD below 2 / sqrt(m)
    assert np.allclose(Km, Km.T) and np.linalg.eigvalsh(Km).min() > 0
