"""Sizes the public numerics accepted and then ran for many seconds (found by an outside
fuzz of the public surface, replayed with zero-copy views): each is now refused before
any work, naming the argument, within a fraction of a second of CPU; the largest accepted
size stays a quick call."""
from __future__ import annotations

import time

import numpy as np
import pytest

from numerics import fast1d, meanfield1d, relu1d
from numerics.validation import long_runs

VIEW = np.broadcast_to(np.float64(0.5), (10 ** 8,))
A, B, C = np.array([1.0, -0.5, 0.3, 2.0]), np.array([0.1, 0.2, -0.3, 0.4]), np.ones(4)


def _refused_fast(call, match: str) -> None:
    t0 = time.process_time()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.process_time() - t0 < 0.5


@pytest.mark.parametrize("call", [
    lambda: relu1d.forward(A, B, C, VIEW, 1.0),
    lambda: relu1d.loss_and_grad(A, B, C, VIEW, VIEW, 1.0),
    lambda: fast1d.forward_sorted(A, B, C, VIEW, 1.0),
    lambda: fast1d.loss_and_grad_sorted(A, B, C, VIEW, VIEW, 1.0),
    lambda: fast1d.forward_sorted(list(A), B, C, VIEW, 1.0),
], ids=["relu1d.forward", "relu1d.loss_and_grad", "forward_sorted", "loss_and_grad_sorted",
        "forward_sorted(list)"])
def test_sorted_engine_refuses_1e8_samples(call) -> None:
    """10^8 samples ran 18 s (relu1d.forward) or raised MemoryError (forward_sorted)."""
    _refused_fast(call, r"^m \+ s \(neurons plus samples\) is too large")


def test_sorted_engine_accepts_its_limit() -> None:
    x = np.linspace(-2, 2, fast1d.MAX_SORTED_ENTRIES - A.size)
    assert np.all(np.isfinite(relu1d.forward(A, B, C, x, 1.0)))


def test_preactivation_matrix_is_capped() -> None:
    """2^26 entries took 4.7 s; the cap is 2^24."""
    m = 256
    x = np.linspace(-1, 1, fast1d.MAX_PREACTIVATION_ENTRIES // m + 1)
    _refused_fast(lambda: fast1d.preactivation(np.ones(m), np.zeros(m), x),
                  "pre-activation matrix")


def test_sphere_rule_refuses_huge_inputs_and_overflowing_weights() -> None:
    """A 10^8-sample view ran 8 s before the node count was checked; weight_exponent = 1e6
    returned inf weights; 20 samples at 160 panels ran 6 s unasked."""
    _refused_fast(lambda: meanfield1d.sphere_rule(VIEW, 4, 1.0), "^x .* is too large")
    _refused_fast(lambda: meanfield1d.sphere_rule(np.linspace(-.9, .9, 5), 4, 1e6),
                  "weight_exponent too large")
    _refused_fast(lambda: meanfield1d.sphere_rule(np.linspace(-.9, .9, 20), 160, 1.0),
                  "^panels .* too large for a quick call")


def test_sphere_rule_runs_long_when_asked(monkeypatch) -> None:
    """Above the quick bound the rule runs with long_run=True or inside long_runs (the node
    cost raised so that a small rule is 'long')."""
    monkeypatch.setattr(meanfield1d, "_NODE_COST", 10 ** 9)
    x = np.linspace(-.9, .9, 3)
    with pytest.raises(ValueError, match="too large for a quick call"):
        meanfield1d.sphere_rule(x, 2, 3.0)
    a, b, c, w = meanfield1d.sphere_rule(x, 2, 3.0, long_run=True)
    with long_runs():
        assert np.array_equal(meanfield1d.sphere_rule(x, 2, 3.0)[3], w)
    assert a.size == w.size and np.all(np.isfinite(w)) and np.all(w > 0)


def test_gd_result_refuses_a_huge_record_before_scanning_it() -> None:
    """A 10^8-entry view of step indices was scanned for 2.2-2.5 s before its refusal."""
    from numerics.dynamics import MAX_RECORDS, GDResult
    _refused_fast(lambda: GDResult(VIEW, np.zeros(5), np.zeros(5), {"a": np.zeros((5, 2))},
                                   {"a": np.zeros(2)}), "^steps .* is too large")
    ok = GDResult(np.arange(3), np.zeros(3), np.zeros(3), {"a": np.zeros((3, 2))},
                  {"a": np.zeros(2)})
    assert ok.steps.tolist() == [0, 1, 2] and MAX_RECORDS >= 2 ** 20


def test_flow_budget_counts_the_evaluation_overhead() -> None:
    """twolayer.gradient_flow with B x 1e12 (a stiff, never-ending flow) ran 4.85 s of CPU
    before its named IntegratorError: its budget priced an evaluation at the GD step's
    80 us, while one costs 111-198 us.  The budget is now QUICK_WORK / (n m (2 + d / 5)
    + 5 n m + 160000) evaluations (the pass, the kink guard and the overhead: a
    deterministic bound, ~2-3 s of one core)."""
    import re

    from numerics import twolayer
    from numerics.validation import QUICK_WORK, IntegratorError
    g = np.random.default_rng(0)
    a, B = np.ones(4), g.standard_normal((4, 3)) * 1e12
    X, Y = g.standard_normal((5, 3)), np.zeros(5)
    with pytest.raises(IntegratorError, match="max_evals") as info:
        twolayer.gradient_flow(a, B, X, Y, [0.0, 1.0])
    budget = int(re.search(r"budget of (\d+)", str(info.value)).group(1))
    assert budget == QUICK_WORK // (5 * 4 * (10 + 3) // 5 + 5 * 5 * 4 + 160_000)


def test_dense_reference_refuses_too_many_pairs() -> None:
    """relu1d.forward_dense with a 10^8-sample view ran > 5 s of CPU (surface fuzz); the
    dense sums cap m s at MAX_DENSE_PAIRS (loss_and_grad_dense: 2.7 s at 2^25 pairs)."""
    _refused_fast(lambda: relu1d.forward_dense(A, B, C, VIEW, "m"), "^the dense sum")
    _refused_fast(lambda: relu1d.loss_and_grad_dense(A, B, C, VIEW, VIEW, "m"),
                  "^the dense sum")
    assert relu1d.MAX_DENSE_PAIRS >= 2 ** 22


VIEW_SQUARE = np.broadcast_to(np.float64(0.5), (10 ** 4, 10 ** 4))


def _formula_calls():
    from verify import formulas as F
    return [
        ("formulas.phi_tilde", lambda: F.phi_tilde(VIEW, 0.3, 10, 3)),
        ("formulas.odd_target_rate", lambda: F.odd_target_rate(VIEW_SQUARE, 1.0, 3.0)),
        ("formulas.odd_target_rate 1e8", lambda: F.odd_target_rate(VIEW, 1.0, 3.0)),
        ("formulas.velocity_jump", lambda: F.velocity_jump(VIEW_SQUARE, 0.5, 0.5)),
        ("formulas.rf_kernel gaussian", lambda: F.rf_kernel(VIEW_SQUARE, 0.3, init="gaussian")),
    ]


@pytest.mark.parametrize("case", _formula_calls(), ids=lambda c: c[0])
def test_formulas_refuse_huge_views_from_their_shapes(case) -> None:
    """phi_tilde hung on a 10^8 view, odd_target_rate / velocity_jump ran 6-7 s
    on (10^4)^2 views, rf_kernel(init='gaussian') ran out of memory."""
    _refused_fast(case[1], "more than 16777216 entries")


def test_formula_work_bound_uses_the_measured_entry_cost() -> None:
    """rf_kernel costs ~0.5 us per entry: 2^22 entries (~2 s at that cost) are refused even
    though they are below the entry limit; the message names long_runs()."""
    from verify import formulas as F
    x = np.broadcast_to(np.float64(0.5), (2 ** 22,))
    _refused_fast(lambda: F.rf_kernel(x, 0.3, init="gaussian"),
                  r"rf_kernel: the broadcast arguments x is too large.*long_runs\(\)")


@pytest.mark.parametrize("fn", ["phi_tilde", "phi_tilde_dtheta"])
def test_reduced_phi_tilde_prices_points_times_nodes(fn) -> None:
    """numerics.reduced.phi_tilde(_dtheta) ran 5-7 s on a 10^8 view; the refusal comes from
    the shapes before any conversion, and a table-sized call stays quick."""
    from numerics import reduced
    f = getattr(reduced, fn)   # the size is checked before the kernel (none needed here)
    _refused_fast(lambda: f(VIEW, 0.3, 10, 3, None),
                  r"^theta, phi \(broadcast points\) is too large")
    _refused_fast(lambda: f(np.full(8000, 0.3), 0.2, 1000, 500, None), "too large")
    with pytest.raises(TypeError, match="kernel must provide"):  # 2000 points at d = 10: quick
        f(np.full(2000, 0.3), 0.2, 10, 3, None)


def test_validation_checks_refuse_or_finish_fast_on_huge_views() -> None:
    """require_distinct sorted a 10^8 view for 2-5 s before refusing; require_in_range
    copied the out-of-range entries of a (10^4)^2 view (2.3 s)."""
    from numerics.validation import require_distinct, require_in_range
    _refused_fast(lambda: require_distinct(VIEW, "x"), "^x is too large for a quick call")
    _refused_fast(lambda: require_distinct(VIEW_SQUARE, "x"), "^x is too large")
    _refused_fast(lambda: require_in_range(VIEW_SQUARE, "x", 0.0, 0.1),
                  r"^x must lie in \[0, 0.1\]; got \[0.5, 0.5, 0.5, 0.5, 0.5\]")
    _refused_fast(lambda: require_in_range(np.zeros(3), "x", VIEW_SQUARE, 1.0), "must broadcast")
    _refused_fast(lambda: require_in_range(np.broadcast_to(0.5, (2 ** 28,)), "x", 0, 1),
                  "^x is too large")
    with pytest.raises(ValueError, match=r"got \[nan, 3.0\]"):
        require_in_range(np.array([0.5, np.nan, 3.0]), "x", 0.0, 1.0)
    require_in_range(np.array([[0.1, 0.2]]), "x", [0.0, 0.0], 1.0)


def test_projected_model_counts_all_coordinates_before_converting() -> None:
    """arb_units.projected_model converted a (10^4)^2 view (or nested list) row by row: 5.3 s."""
    from numerics import arb_units
    M = [[[1, 0], [0, 1]]]
    _refused_fast(lambda: arb_units.projected_model(M, "relu", VIEW_SQUARE, None, [0.5, 0.5], 1),
                  r"^particles \(all coordinates\) is too large")
    nested = [[0.5] * 10 ** 4] * 10 ** 4
    _refused_fast(lambda: arb_units.projected_model(M, "relu", nested, None, [0.5, 0.5], 1),
                  r"^particles \(all coordinates\) is too large")


def test_time_grids_are_counted_before_they_are_scanned() -> None:
    """reduced.simulate_flow scanned a 10^8-time view for 2.3 s before refusing it as not
    increasing; require_time_grid now counts it from the shape."""
    from numerics.validation import MAX_TIME_POINTS, require_time_grid
    _refused_fast(lambda: require_time_grid(VIEW), "^t_eval is too large")
    assert require_time_grid(np.arange(3.0)).size == 3 and MAX_TIME_POINTS == 2 ** 24


def test_reduced_predictor_and_unit_output_refuse_huge_views_fast() -> None:
    """Outside fuzz on this branch: reduced_predictor scanned a (10^4)^2 X for 5.3 s;
    arb_units.unit_output compared a (10^8, 4) 'unit' with its names for 1.1 s."""
    from numerics import arb_units, reduced
    st = reduced.ReducedState(np.ones(6), np.full(6, 0.3), np.ones(6))
    _refused_fast(lambda: reduced.reduced_predictor(st, VIEW_SQUARE, 2, None),
                  r"^m \* n \(particles x inputs\) is too large")
    _refused_fast(lambda: arb_units.unit_output(np.broadcast_to(0.5, (10 ** 8, 4)), [0.3], [0.2], 1),
                  "^unit must be one of")


def test_sorted_size_check_refuses_arrays_before_adding_them() -> None:
    """fast1d.require_sorted_size(8, view) added the 2e8-entry view to 8 (1.2 s, a copy)
    before refusing it as 'not a count'; the counts are checked first, by name."""
    view2 = np.broadcast_to(np.float64(0.5), (10 ** 8, 2))
    t0 = time.process_time()
    with pytest.raises(TypeError, match=r"^s \(samples\) must be an integer"):
        fast1d.require_sorted_size(8, view2)
    with pytest.raises(ValueError, match=r"^m \(neurons\) must be an integer >= 0"):
        fast1d.require_sorted_size(-1, 3)
    _refused_fast(lambda: fast1d.require_sorted_size(10 ** 12, 10 ** 12),
                  r"^m \+ s \(neurons plus samples\) is too large")
    assert time.process_time() - t0 < 0.5
    fast1d.require_sorted_size(8, 1000)


def _high_precision_calls():
    from verify import formulas as F
    few = np.linspace(0.1, 1.2, 3)
    return [
        ("velocity_jump.mpmath", lambda: F.velocity_jump.mpmath(VIEW_SQUARE, 0.1, 0.5)),
        ("velocity_jump.enclose", lambda: F.velocity_jump.enclose(VIEW_SQUARE, 0.1, 0.5)),
        ("phi_tilde.enclose", lambda: F.phi_tilde.enclose(0.4, VIEW_SQUARE, 5, 2)),
        ("phi_tilde_dtheta.enclose", lambda: F.phi_tilde_dtheta.enclose(VIEW, 0.3, 5, 2)),
        ("alpha_constant.mpmath", lambda: F.alpha_constant.mpmath(VIEW_SQUARE)),
        ("alpha_constant.enclose", lambda: F.alpha_constant.enclose(VIEW)),
        ("rf_kernel.enclose 12000", lambda: F.rf_kernel.enclose(np.linspace(0, 1, 12000), 0.2)),
        ("phi_tilde.mpmath 3 points", lambda: F.phi_tilde.mpmath(few, 0.3, 5, 2)),
    ]


@pytest.mark.parametrize("case", _high_precision_calls(), ids=lambda c: c[0])
def test_high_precision_paths_are_priced_from_shapes(case) -> None:
    """The outside fuzz: velocity_jump.mpmath ran > 5 s on a (10^4)^2 view, phi_tilde.enclose
    raised SystemError out of acb.integral after seconds, alpha_constant.mpmath took 1.2 s
    to refuse a view it had copied.  .mpmath / .enclose are priced per entry from the shapes
    (HIGH_PRECISION_ENTRY_NS; phi~'s quadratures at their own measured cost) and refused
    before any work, naming long_runs() when the count is allowed but slow."""
    _refused_fast(case[1], r"(more than 16777216 entries|too large for a quick call.*long_runs)")


def test_high_precision_paths_stay_quick_at_small_sizes() -> None:
    from verify import formulas as F
    assert F.phi_tilde.enclose(np.array([0.2, 0.9]), 0.3, 5, 2).shape == (2,)
    assert len(F.rf_kernel.mpmath(np.linspace(0, 1, 20), 0.2, dps=20)) == 20
    with pytest.raises(ValueError, match="too large for a quick call"):
        F.rf_kernel.mpmath(np.linspace(0, 1, 12000), 0.2)
