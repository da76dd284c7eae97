"""numerics.equivariant: the SGD step's logistic (NumPy's vectorized exp) against 40-digit
mpmath, the fast (dY, B, N) gradient against the plain per-unit vjp, and the public
surface's validation."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from numerics import equivariant as eq
from numerics import equivariant_sgd as sgd
from numerics import equivariant_units as units
from numerics.groups import c2_swap, cyclic_shifts


def test_logistic_within_a_few_ulp_of_mpmath():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(-40, 40, 3000), rng.uniform(-708, 708, 1000),
                        [0.0, -0.0, 1e-300, -1e-300, 36.7, -36.7, 708.0, -708.0]])
    got = units._logistic(a.copy())
    with mpmath.workdps(40):
        ref = np.array([float(1 / (1 + mpmath.exp(-mpmath.mpf(float(v))))) for v in a])
    ulps = np.abs(got - ref) / np.spacing(ref)
    assert ulps.max() <= 4, ulps.max()
    # far left tail: 0 (or a subnormal), within 1.6e-308 of the true value
    tail = units._logistic(np.array([-709.0, -745.0, -1e300]))
    assert np.all(tail >= 0) and np.all(tail < 1.6e-308)
    assert units._logistic(np.array([1e300]))[0] == 1.0


@pytest.mark.parametrize("unit", [eq.LogisticUnit(2, 2), eq.TanhUnit(3, 3)])
@pytest.mark.parametrize("scheme", ["vanilla", "da_orbit", "fa"])
def test_fast_gradient_equals_plain_vjp(unit, scheme):
    """The (dY, B, N) gradient of the SGD loop equals the unit's (B, N, dY) value/vjp sums
    to rounding."""
    G = c2_swap() if unit.dim_x == 2 else cyclic_shifts(3)
    rng = np.random.default_rng(1)
    th = 0.25 * rng.standard_normal((37, unit.dim_z))
    x, y = 4.0 * rng.standard_normal((6, unit.dim_x)), rng.standard_normal((6, unit.dim_y))
    fast = eq.scheme_gradient(scheme, unit, G, th, x, y)
    if scheme == "vanilla":
        xs, ys = x, y
    else:
        xs, ys = sgd._stack_orbit(G, x, y)
    v = unit.value(xs, th)
    model = v.mean(axis=1)
    cot = sgd._fa_cotangent(G, model, y) if scheme == "fa" else model - ys
    plain = unit.vjp(xs, th, cot)
    np.testing.assert_allclose(fast, plain, rtol=1e-13, atol=1e-15 * np.abs(plain).max())


def test_public_surface_validates():
    u, G = eq.LogisticUnit(2, 2), c2_swap()
    th = np.zeros((3, 4))
    with pytest.raises(TypeError, match="unit"):
        eq.model_output(1e-300, np.ones((2, 2)), th)
    with pytest.raises(ValueError, match="x"):
        eq.model_output(u, 1.0, th)
    with pytest.raises(ValueError, match="not representable"):
        eq.LinearUnit(2, 2).value(np.full((1, 2), 1e300), np.full((1, 4), 1e300))
    with pytest.raises(TypeError, match="rng"):
        eq.make_teacher("arbitrary", u, G, 0.5)
    with pytest.raises(ValueError, match="tau"):
        eq.SGDConfig(tau=np.ones(7))
    with pytest.raises(ValueError, match="work"):
        eq.train(u, G, th, th, "vanilla", eq.SGDConfig(steps=2 ** 40), np.random.default_rng(0),
                 np.random.default_rng(1))
    with pytest.raises(ValueError, match="gidx"):
        eq.scheme_gradient("da_random", u, G, th, np.ones((2, 2)), np.ones((2, 2)), [0, 5])
    with pytest.raises(ValueError, match="dim_x"):
        eq.LogisticUnit(0, 2)
    assert not hasattr(u, "value_t") and not hasattr(u, "activation")


@pytest.mark.parametrize("n", [float("nan"), float("inf"), 0, -1])
def test_init_particles_names_n(n):
    u, G = eq.LogisticUnit(2, 2), c2_swap()
    with pytest.raises((ValueError, TypeError), match=r"\bn \(number of particles\)"):
        eq.init_particles("iid", n, u, G, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\bn divisible"):
        eq.init_particles("orbit", 3, u, G, np.random.default_rng(0))


@pytest.mark.parametrize("kind", ["arbitrary", "WI", "SI"])
def test_teacher_and_students_refuse_an_overflowing_scale(kind):
    u, G = eq.LogisticUnit(2, 2), c2_swap()
    with pytest.raises(ValueError, match="scale"):
        eq.make_teacher(kind, u, G, np.random.default_rng(0), scale=np.finfo(float).max)
    init = {"arbitrary": "iid", "WI": "orbit", "SI": "SI"}[kind]
    with pytest.raises(ValueError, match="std"):
        eq.init_particles(init, 4, u, G, np.random.default_rng(0), std=np.finfo(float).max)
    # a valid scale: the same draws as scale x N(0, 1) (the check adds no randomness)
    t = eq.make_teacher(kind, u, G, np.random.default_rng(0), scale=3.0)
    t1 = eq.make_teacher(kind, u, G, np.random.default_rng(0), scale=1.0)
    assert np.allclose(t, 3.0 * t1, rtol=1e-15, atol=0)


def test_discover_fixed_space_refuses_a_huge_n_particles_at_once():
    import time
    u, G = eq.LogisticUnit(2, 2), c2_swap()
    teacher = eq.make_teacher("WI", u, G, np.random.default_rng(0))
    t0 = time.process_time()
    with pytest.raises(ValueError, match="n_particles"):
        eq.discover_fixed_space(u, G, teacher, eq.SGDConfig(steps=1, batch=1), 2 ** 31,
                                np.random.default_rng(0), max_iter=1,
                                distance=lambda a, b: 0.0)
    assert time.process_time() - t0 < 1.0


@pytest.mark.parametrize("unit", [eq.LogisticUnit(2, 2), eq.TanhUnit(3, 3)])
@pytest.mark.parametrize("scheme", ["vanilla", "da_orbit", "fa"])
def test_float32_gradient_within_its_rounding_bound(unit, scheme):
    """SGDConfig(precision='float32'): the data term of the step against the float64 one,
    within the stated bound, a few 1e-5 of sum_kb |W_kb| (the size of the data term),
    at the reference sizes (N = 2000, B = 20, |a| up to ~30)."""
    G = c2_swap() if unit.dim_x == 2 else cyclic_shifts(3)
    rng = np.random.default_rng(2)
    th = 0.25 * rng.standard_normal((2000, unit.dim_z))
    th[:10] *= 8.0                                        # a few saturated units
    x, y = 4.0 * rng.standard_normal((20, unit.dim_x)), rng.standard_normal((20, unit.dim_y))
    g64 = sgd._gradient(scheme, unit, G, th, x, y, None)
    g32 = sgd._gradient(scheme, unit, G, th, x, y, None, "float32")
    assert g32.dtype == np.float64 and g32.shape == g64.shape
    xs, ys = (x, y) if scheme == "vanilla" else sgd._stack_orbit(G, x, y)
    model = eq.model_output(unit, xs, th)
    cot = sgd._fa_cotangent(G, model, y) if scheme == "fa" else model - ys
    size = np.abs(cot).sum(axis=0).max() * np.abs(xs).max() / xs.shape[0]   # >= sum |W| / dY
    err = np.abs(g32 - g64).max()
    assert err <= 1e-4 * size, (err, size)
    assert err > 0                                   # it is the float32 path


def test_float32_refused_where_not_implemented():
    u, G = eq.UVUnit(2, 2), eq_uv_group()
    th = np.zeros((4, 4))
    with pytest.raises(ValueError, match="precision"):
        eq.train(u, G, th, th, "vanilla", eq.SGDConfig(steps=1, precision="float32"),
                 np.random.default_rng(0), np.random.default_rng(1))
    with pytest.raises(ValueError, match="precision"):
        eq.SGDConfig(precision="float16")


def eq_uv_group():
    from numerics.groups import c2_swap_uv
    return c2_swap_uv()


@pytest.mark.parametrize("precision, beta", [("float64", 1e-6), ("float32", 1e-6),
                                             ("float32", 0.0)])
def test_train_schemes_equals_separate_runs_bit_for_bit(precision, beta):
    """Common random numbers: one draw per step shared by the schemes gives exactly the
    runs of train() with generators in the same state."""
    u, G = eq.LogisticUnit(2, 2), c2_swap()
    rng = lambda tag: np.random.default_rng([7, tag])  # noqa: E731
    teacher = eq.make_teacher("WI", u, G, rng(0))
    th0 = eq.init_particles("iid", 30, u, G, rng(1))
    cfg = eq.SGDConfig(steps=200, beta=beta, precision=precision)
    schemes = ("vanilla", "da_orbit", "fa", "da_random", "ea")
    together = eq.train_schemes(u, G, th0, teacher, schemes, cfg, rng(2), rng(3), rng(4))
    for sc in schemes:
        alone = eq.train(u, G, th0, teacher, sc, cfg, rng(2), rng(3), rng(4))[0]
        assert np.array_equal(together[sc], alone), sc
    with pytest.raises(ValueError, match="distinct"):
        eq.train_schemes(u, G, th0, teacher, ("fa", "fa"), cfg, rng(2), rng(3))
    with pytest.raises(TypeError, match="schemes"):
        eq.train_schemes(u, G, th0, teacher, "fa", cfg, rng(2), rng(3))
    with pytest.raises(ValueError, match="noise"):
        eq.train_schemes(u, G, th0, teacher, ("fa", "ea"), cfg, rng(2), rng(3), noise="orbit")


def test_public_face_reexports_the_topic_modules():
    """numerics.equivariant keeps its public names; they live in the two topic modules
    (units; SGD, teachers and the E^G heuristic), whose ``__all__`` split them between
    the two (the face is fuzzed, the topics through it)."""
    assert set(eq.__all__) == {
        "Unit", "LogisticUnit", "TanhUnit", "LinearUnit", "HiddenLayerUnit", "UVUnit",
        "NormGatedUnit", "UV_ACTIVATIONS", "NORM_GATES", "SGDConfig", "SCHEMES", "NOISE_MODES", "PRECISIONS", "TEACHERS",
        "model_output", "symmetrized_output", "make_teacher", "init_particles", "train",
        "train_schemes", "DivergenceError", "X_STD", "STUDENT_STD", "HeuristicIterate",
        "discover_fixed_space", "scheme_gradient"}
    for name in eq.__all__:
        obj = getattr(eq, name)
        home = units if hasattr(units, name) and getattr(units, name) is obj else sgd
        assert getattr(home, name) is obj or name == "DivergenceError", name
    assert set(units.__all__) | set(sgd.__all__) == set(eq.__all__) - {"DivergenceError"}
    assert not set(units.__all__) & set(sgd.__all__)
    for home in (units, sgd):
        assert all(getattr(home, n) is getattr(eq, n) for n in home.__all__)
