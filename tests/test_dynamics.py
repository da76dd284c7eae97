"""The shared result types of gradient descent and gradient flows, and the chattering
guard (numerics.dynamics)."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from scipy.integrate import DOP853

from numerics import relu1d
from numerics.dynamics import (MAX_CROSSINGS, SAMPLED_SWITCHES_PER_CROSSING, ChatteringError,
                               ChatteringGuard, FlowResult, GDResult)
from numerics.validation import DivergenceError

#: kinks of the constructed flows: neuron i is active at sample j when z_i > X[j]
X = np.array([-5.0, 0.5, 3.0, 7.0])


def _sampled_flow(speed, z0, t_end, rtol, guard):
    """dz_i/dt = speed(i, active?) integrated by DOP853, the pattern P_ij = [z_i > X_j]
    compared between successive field evaluations (the bookkeeping of an engine that does
    not locate its events); every change goes to ``guard.switches``."""
    state = {"P": np.greater.outer(z0, X)}

    def rhs(t, z):
        P = np.greater.outer(z, X)
        guard.switches(P != state["P"], t)
        state["P"] = P
        return np.array([speed(i, P[i]) for i in range(z.size)])

    solver = DOP853(rhs, 0.0, np.asarray(z0, dtype=float), t_end, rtol=rtol, atol=rtol * 1e-2)
    while solver.status == "running":
        solver.step()
        solver.dense_output()
    return solver


def test_guard_stops_a_constructed_sliding_mode_naming_neuron_and_sample():
    """Neuron 2 is pushed towards sample 1's kink z_2 = 0.5 from both sides (dz/dt = -1
    above, +1 below: a Filippov sliding mode DOP853 cannot pass), while neurons 0 and 1
    cross kinks transversally: the guard names neuron 2 and sample 1."""
    guard = ChatteringGuard(3, X.size, switches_per_crossing=SAMPLED_SWITCHES_PER_CROSSING,
                            crossings=10, kink="z_i = x_j", hint="perturb the data")

    def speed(i, active):
        if i == 2:
            return -1.0 if active[1] else 1.0
        return 2.0 if i == 0 else -1.5

    with pytest.raises(ChatteringError, match=r"chattering: neuron 2 switched more than "
                       r"3000 times at sample 1 .*slides along its kink z_i = x_j.*Filippov "
                       r"sliding mode.*; perturb the data"):
        _sampled_flow(speed, np.array([-6.0, 8.0, 1.5]), 5.0, 1e-8, guard)
    assert guard.counts[2, 1] == guard.limit + 1
    assert guard.counts[[0, 1]].max() <= SAMPLED_SWITCHES_PER_CROSSING  # honest crossings


@pytest.mark.parametrize("rtol", [1e-3, 1e-8, 2.3e-14])
def test_one_crossing_of_a_jump_costs_at_most_the_stated_sampled_switches(rtol):
    """The speed jumps at every kink (by a factor 1/4 .. 4 across it), so DOP853 rejects
    steps near it: one crossing still costs at most SAMPLED_SWITCHES_PER_CROSSING
    switches, and the flow crossing the kinks at 7, 3 and 0.5 runs to its end."""
    guard = ChatteringGuard(1, X.size, switches_per_crossing=SAMPLED_SWITCHES_PER_CROSSING)
    for ratio in (0.25, 0.5, 2.0, 4.0):
        guard.counts[:] = 0
        sol = _sampled_flow(lambda i, act: -2.0 * ratio if act.sum() % 2 else -2.0,
                            np.array([7.9]), 30.0, rtol, guard)
        assert sol.status == "finished"
        crossed = guard.counts[0, 1:]
        assert np.all(crossed >= 1) and crossed.max() <= SAMPLED_SWITCHES_PER_CROSSING


def test_guard_event_mode_limit_and_error_types():
    guard = ChatteringGuard(2, 3, kink="a_i x_j = b_i")
    assert guard.limit == MAX_CROSSINGS
    for _ in range(MAX_CROSSINGS):
        guard.switch(1, 2, 0.25)
    with pytest.raises(ChatteringError) as info:
        guard.switch(1, 2, 0.5)
    err = info.value
    assert isinstance(err, DivergenceError) and isinstance(err, RuntimeError)
    assert isinstance(err, FloatingPointError)
    msg = str(err)
    assert "neuron 1" in msg and "sample 2" in msg and "t=0.5" in msg
    assert "sliding mode" in msg and "a_i x_j = b_i" in msg
    with pytest.raises(ValueError, match="j \\(sample index\\)"):
        guard.switch(0, 3, 0.0)
    with pytest.raises(ValueError, match="changed must have shape \\(2, 3\\)"):
        guard.switches(np.zeros((3, 2), dtype=bool), 0.0)
    with pytest.raises(TypeError, match="changed must be a boolean array"):
        guard.switches(np.zeros((2, 3)), 0.0)
    with pytest.raises(ValueError, match="n_neurons x n_samples"):
        ChatteringGuard(2 ** 40, 2 ** 40)


def test_guard_limit_is_crossings_times_switches_per_crossing():
    guard = ChatteringGuard(1, 1, crossings=4, switches_per_crossing=250)
    assert guard.limit == 1000
    changed = np.ones((1, 1), dtype=bool)
    for _ in range(1000):
        guard.switches(changed, 0.0)
    with pytest.raises(ChatteringError, match="more than 1000 times.*more than 4 crossings"):
        guard.switches(changed, 0.0)
    with pytest.raises(ValueError, match="crossings"):
        ChatteringGuard(1, 1, crossings=0)


def test_guard_switches_accept_a_transposed_view():
    """An engine holding its pattern as (sample, neuron) passes the transpose."""
    guard = ChatteringGuard(2, 3)
    changed = np.zeros((3, 2), dtype=bool)
    changed[2, 1] = True
    for _ in range(MAX_CROSSINGS):
        guard.switches(changed.T, 1.0)
    with pytest.raises(ChatteringError, match="neuron 1 .* sample 2"):
        guard.switches(changed.T, 2.0)


def test_relu1d_chattering_is_a_chattering_error():
    """The event-driven engine stops a chattering pair through the shared guard (the
    case of tests/test_relu1d.py: two samples 1e-45 apart)."""
    r = np.array([1.7708170900121476, 1.3208596800850356])
    theta = np.array([2.9938033664641190e-233, 1.6179250469355813])
    delta = np.array([-4.9406564584124654e-324, -1.4529223254620947])
    x = np.array([-1.4012984643248171e-045, 2.0120413768588234e-106])
    y = np.array([7.4331091190927753e-22, -1.1754943508222875e-38])
    with pytest.raises(ChatteringError, match=f"more than {MAX_CROSSINGS} times at sample 1"):
        relu1d.reduced_flow(r, theta, delta, x, y, [0.0, 0.15])


# --------------------------------------------------------------------------- result types
def _net(m=4, s=6, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(m), rng.standard_normal(m), rng.standard_normal(m),
            np.sort(rng.uniform(-1, 1, s)), rng.standard_normal(s))


def test_gd_result_of_the_1d_engine_carries_both_engines_fields():
    a, b, c, x, y = _net()
    g = relu1d.gradient_descent(a, b, c, x, y, "m", eta=0.05, steps=7, record_every=3)
    assert isinstance(g, GDResult) and g.names == ("a", "b", "c")
    assert g.steps.tolist() == [0, 3, 6, 7]
    assert np.array_equal(g.times, g.steps * 0.05)
    assert g.loss is g.losses and g.losses.shape == (4,)
    assert g.a.shape == (4, 4) and g.a is g.trajectory["a"]     # by name: the trajectory
    assert np.array_equal(g.final["c"], g.c[-1])
    assert len(g.snapshots) == 4 and np.array_equal(g.snapshots[1][1], g.b[1])
    assert dataclasses.replace(g, by_name="final").a is g.final["a"]
    assert np.array_equal(g.a[0], a)
    with pytest.raises(AttributeError, match="parameters are a, b, c"):
        g.B  # noqa: B018


def test_gd_result_by_final_reads_like_the_d_dimensional_engine():
    """A run that records nothing still has its final parameters by name."""
    A, B = np.ones(3), np.ones((3, 2))
    g = GDResult(np.array([], dtype=np.int64), [], [], {"a": np.empty((0, 3)), "B": np.empty((0, 3, 2))},
                 {"a": A, "B": B}, by_name="final")
    assert g.a is not None and np.array_equal(g.a, A) and g.B.shape == (3, 2)
    assert g.snapshots == [] and g.names == ("a", "B")
    back = pickle.loads(pickle.dumps(g))
    assert np.array_equal(back.B, B) and back.by_name == "final"


@pytest.mark.parametrize("kwargs, match", [
    (dict(steps=[0, 2], times=[0.0], losses=[1.0, 0.5]), "one entry per recorded step"),
    (dict(steps=[2, 1], times=[0.0, 1], losses=[1.0, 0.5]), "increasing"),
    (dict(steps=[0.5, 1.0], times=[0, 1], losses=[1.0, 0.5]), "steps .* whole number"),
])
def test_gd_result_validates(kwargs, match):
    tr = {"a": np.zeros((2, 3))}
    with pytest.raises(ValueError, match=match):
        GDResult(trajectory=tr, final={"a": np.zeros(3)}, **kwargs)
    with pytest.raises(ValueError, match="by_name"):
        GDResult([0, 1], [0, 1], [1, 0.5], tr, {"a": np.zeros(3)}, by_name="last")
    with pytest.raises(ValueError, match="same parameters"):
        GDResult([0, 1], [0, 1], [1, 0.5], tr, {"b": np.zeros(3)})


def test_flow_result_of_the_1d_engine_names_its_parameters():
    a, b, c, x, y = _net()
    fl = relu1d.gradient_flow(a, b, c, x, y, "m", [0.0, 0.5, 1.0])
    assert isinstance(fl, FlowResult) and fl.names == ("a", "b", "c")
    assert fl.times is fl.t and fl.state.shape == (3, 3, 4)
    assert np.shares_memory(fl.a, fl.state) and np.array_equal(fl.c, fl.state[:, 2])
    assert fl.nfev > fl.n_steps > 0 and fl.rtol == 1e-12 and fl.atol == 1e-14
    again = dataclasses.replace(fl, n_steps=1)
    assert again.n_steps == 1 and np.shares_memory(again.b, fl.state)
    back = pickle.loads(pickle.dumps(dataclasses.replace(fl, segments=[])))
    assert np.array_equal(back.c, fl.c) and back.names == fl.names
    red = relu1d.reduced_flow(np.abs(a) + 0.5, b, 1.0, x, y, [0.0, 0.2])
    assert red.names == ("r", "theta") and np.array_equal(red.theta[0], b)


def test_flow_result_by_trajectory_reads_like_the_d_dimensional_engine():
    t = np.array([0.0, 0.5])
    fl = FlowResult(t, trajectory={"a": np.ones((2, 3)), "B": np.ones((2, 3, 4))},
                    nfev=12, rtol=1e-10, atol=1e-12)
    assert fl.names == ("a", "B") and fl.state is None and fl.B.shape == (2, 3, 4)
    assert fl.times is fl.t and fl.events == [] and fl.n_slides == 0
    with pytest.raises(ValueError, match="one entry per record"):
        FlowResult(t, trajectory={"a": np.ones((3, 3))})
    with pytest.raises(ValueError, match="names must name the 3 rows"):
        FlowResult(t, state=np.zeros((2, 3, 1)), names=("a", "b"))
    with pytest.raises(ValueError, match=r"names \['t'\] are taken"):
        FlowResult(t, trajectory={"t": np.ones((2, 1))})
    with pytest.raises(ValueError, match="not both"):
        FlowResult(t, state=np.zeros((2, 1, 1)), names=("a",), trajectory={"a": np.ones((2, 1))})
    with pytest.raises(ValueError, match="t: no dense output"):
        fl.dense(0.1)
