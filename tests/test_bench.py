"""The benchmark code (verify.bench) runs on tiny sizes and produces a
well-formed results dict, CLI output, JSON file and Performance section.  No timing
assertions: timings are nondeterministic."""
from __future__ import annotations

import argparse
import itertools
import json
import time

import numpy as np
import pytest

from numerics import twolayer
from verify import _bench_floor as bench_floor, _bench_process as bench_process, bench


@pytest.fixture(scope="module")
def tiny_results():
    return bench.run_bench(bench.TINY_CASES, seed=3, log=lambda _s: None)



def _dot_shapes(fn) -> list[tuple[int, ...]]:
    """The shapes of the first operand of every np.dot that ``fn()`` calls."""
    calls, orig = [], np.dot
    try:
        np.dot = lambda *a, **k: calls.append(a[0].shape) or orig(*a, **k)
        fn()
    finally:
        np.dot = orig
    return calls

def test_results_structure(tiny_results):
    assert tiny_results["schema"] == bench.SCHEMA
    assert [c["problem"] for c in tiny_results["cases"]] == ["relu1d", "twolayer"]
    for case in tiny_results["cases"]:
        assert {"engine", "dense"} <= set(case["engines"])
        assert ("floor" in case["engines"]) == (case["problem"] == "twolayer")
        for name, rec in case["engines"].items():
            reps = case["repeats"] if name in ("engine", "floor") else case["slow_repeats"]
            assert len(rec["times"]) == len(rec["cpu_times"]) == reps
            assert rec["min"] <= rec["median"] and rec["cpu_min"] <= rec["cpu_median"]
            if name == "floor":
                assert rec["agreement"] is None          # the floor computes no step
            else:
                # every engine computes the same step (float64 rounding only)
                assert rec["agreement"] < 1e-10, (case["problem"], name, rec["agreement"])
        assert set(case["ratios"]) == set(case["engines"]) - {"engine"}
    assert tiny_results["machine"]["blas_threads"] in (1, None)
    targets = [t["target"] for t in tiny_results["targets"]]
    assert any("engine / floor" in t for t in targets)
    json.dumps(tiny_results)  # JSON-able


def test_torch_is_optional(monkeypatch):
    monkeypatch.setattr(bench, "_import_torch", lambda threads: None)
    data = bench.run_bench(bench.TINY_CASES[:1], log=lambda _s: None)
    assert "torch" not in data["cases"][0]["engines"]
    assert data["machine"]["torch"] is None


def test_cli_run_writes_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench, "QUICK_CASES", bench.TINY_CASES)
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    out = tmp_path / "res.json"
    args = parser.parse_args(["--quick", "--json", str(out), "--no-torch"])
    assert bench.run(args) == 0
    data = json.loads(out.read_text())
    assert data["profile"] == "quick"
    text = capsys.readouterr().out
    assert "x engine" in text and "targets" in text


def test_performance_section(tiny_results, tmp_path):
    data = dict(tiny_results, profile="quick")
    text, figs = bench.performance_section(data, tmp_path)
    assert text.startswith("## Performance")
    assert "| problem | scale |" in text
    assert figs and (tmp_path / figs[0][0]).is_file()
    # deterministic output for a given results dict (the report must be byte-identical)
    text2, figs2 = bench.performance_section(data, tmp_path / "again")
    assert text2 == text
    assert (tmp_path / figs[0][0]).read_bytes() == (tmp_path / "again" / figs2[0][0]).read_bytes()


def test_targets_judged_on_minima():
    case = {"problem": "relu1d", "scale": "large", "note": "",
            "engines": {"engine": {"min": 1.0}, "torch": {"min": 60.0}},
            "ratios": {"torch": {"min": 60.0, "median": 40.0}}}
    (t,) = bench._targets([case])
    assert t["met"] and t["measured"] == 60.0
    # CPU-time minima take precedence; the floor target is engine / floor <= 1.3
    case = {"problem": "twolayer", "scale": "paper", "note": "",
            "engines": {"engine": {"min": 1.0}},
            "ratios": {"floor": {"min": 0.9, "median": 0.9, "cpu_min": 0.7},
                       "dense": {"min": 2.0, "median": 2.0, "cpu_min": 0.95}}}
    floor, dense, torch = bench._targets([case])
    assert floor["measured"] == 1 / 0.7 and floor["met"] is False
    assert dense["measured"] == 0.95 and dense["met"] is False
    assert torch["measured"] is None and torch["met"] is None


def test_floor_is_the_two_gemms():
    """The floor runs exactly the two products of a step (no activation, no residual)."""
    rng = np.random.default_rng(2)
    B, X = rng.normal(size=(9, 3)), rng.normal(size=(50, 3))
    calls = _dot_shapes(bench_floor.floor_twolayer(B, X, rows=16))
    assert calls == [(16, 3), (9, 16)] * 3 + [(2, 3), (9, 2)]
    calls = _dot_shapes(bench_floor.floor_twolayer(B, X, rows=16, transposed=True))
    assert calls == [(16, 3), (3, 16)] * 3 + [(2, 3), (3, 2)]
    calls = _dot_shapes(bench_floor.floor_twolayer(B, X, rows=16, cols=4))
    assert calls == [s for k in (16, 16, 16, 2) for w in (4, 4, 1)
                     for s in [(k, 3), (w, k)]]


def test_committed_results_are_current():
    """benchmarks/results.json: the current schema, every d-dim case with its floor, one
    thread per engine, and no removed engine."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results.json"
    data = json.loads(path.read_text())
    assert data["schema"] == bench.SCHEMA
    assert data["machine"]["blas_threads"] == 1 and data["machine"]["date_utc"]
    for case in data["cases"]:
        assert set(case["engines"]) <= {"engine", "floor", "dense", "torch"}
        assert ("floor" in case["engines"]) == (case["problem"] == "twolayer")
        if case["problem"] == "twolayer":      # the 2-thread column of every d-dim case
            two = case["multi_thread"]["2"]
            assert two["blas_threads"] == 2 and {"engine", "floor"} <= set(two["engines"])
            assert two["same_bits_as_one_thread"] is True
            assert two["steady_seconds"] == (0.0 if case["warmup_timed"]
                                             else bench.MULTI_STEADY_SECONDS)
            assert "other_floor" in two["engines"]["floor"]     # both floors were timed


def test_dense_reference_matches_twolayer():
    """The benchmark's dense reference equals numerics.twolayer's step up to rounding, for
    any chunking."""
    rng = np.random.default_rng(5)
    m, n, d = 37, 211, 4
    a, B = rng.normal(size=m), rng.normal(size=(m, d))
    X, Y = rng.normal(size=(n, d)), rng.normal(size=n)
    ref = twolayer.loss_and_grad(a, B, X, Y)
    for chunk in (1, 100, 10 ** 6):
        dense = twolayer.loss_and_grad_dense_reference(a, B, X, Y, chunk_elements=chunk)
        assert bench._discrepancy(dense, ref) < 1e-13


def test_short_steps_are_timed_in_their_steady_state(monkeypatch):
    """Cases whose warm-up is not timed call every engine once untimed before each timed
    call (its own data in cache, not what the previous engine of the round-robin left);
    seconds-long cases (warm-up timed) do not."""
    calls = []

    def fake_engines(case, inp, torch):
        return {"engine": ("e", lambda: calls.append("engine") or (0.0, (np.ones(2),))),
                "dense": ("d", lambda: calls.append("dense") or (0.0, (np.ones(2),)))}
    monkeypatch.setattr(bench, "_engines", fake_engines)
    short = bench.Case("relu1d", "s", (("m", 4), ("s", 3)), 3, 2)
    rec = bench._bench_case(short, None, 0, lambda _s: None)
    assert rec["steady_state"] and len(rec["engines"]["engine"]["times"]) == 3
    assert calls.count("engine") == 1 + 2 * 3 and calls.count("dense") == 1 + 2 * 2
    calls.clear()
    long = bench.Case("relu1d", "l", (("m", 4), ("s", 3)), 3, 2, time_warmup=True)
    rec = bench._bench_case(long, None, 0, lambda _s: None)
    assert not rec["steady_state"] and len(rec["engines"]["engine"]["times"]) == 3
    assert calls.count("engine") == 3 and calls.count("dense") == 2


def test_multi_thread_columns_time_a_steady_state_of_many_calls():
    """At several threads a short step's timed call follows untimed calls of the same
    engine for at least steady_seconds (a training loop's steady state), each engine
    alike; a seconds-long step is not pre-called."""
    calls, stamps = [], []

    def engine(name):
        def fn():
            calls.append(name)
            stamps.append(time.perf_counter())
            return 0.0, (np.ones(2),)
        return fn
    engines = {"engine": ("e", engine("engine")), "floor": ("f", engine("floor"))}
    short = bench.Case("twolayer", "s", (("d", 2), ("m", 4), ("n", 3)), 3, 3)
    rec, _, _ = bench._time_engines(short, engines, steady_seconds=0.03)
    assert len(rec["engine"]["times"]) == len(rec["floor"]["times"]) == 3
    runs = [list(g) for _, g in itertools.groupby(zip(calls, stamps), key=lambda p: p[0])][2:]
    assert len(runs) == 6
    for run in runs:                         # untimed calls for >= 0.03 s, then the timed one
        assert len(run) >= 3 and run[-1][1] - run[0][1] >= 0.029
    calls.clear()
    long = bench.Case("twolayer", "l", (("d", 2), ("m", 4), ("n", 3)), 3, 3, time_warmup=True)
    bench._time_engines(long, engines, steady_seconds=10.0)
    assert calls.count("engine") == 3


def test_the_floor_is_chosen_in_the_same_steady_state(monkeypatch):
    """At several threads each floor candidate of a short step is timed after
    steady_seconds of its own calls (as the engines are); a long step's candidates run
    once and the FLOOR_LONG_FINALISTS fastest of each way of threading
    FLOOR_LONG_TRIALS_MULTI more times; the fastest candidate is returned."""
    calls: dict[str, list[float]] = {}
    speed = {}

    def fake(kind):
        def make(B, X, rows, *rest):
            key = f"{kind} {rows} {rest}"
            speed.setdefault(key, len(speed))

            def fn():
                calls.setdefault(key, []).append(time.perf_counter())
                time.sleep(5e-4 * (1 + speed[key]))
            return fn
        return make
    monkeypatch.setattr(bench_floor, "floor_twolayer", fake("blas"))
    monkeypatch.setattr(bench_floor, "split_floor", fake("split"))
    monkeypatch.setattr(bench_floor, "FLOOR_ROWS", (64, 128))
    short_B, short_X = np.ones((10, 2)), np.ones((300, 2))
    floors = bench_floor.fastest_floors(short_B, short_X, 2, 0.02)
    assert len(calls) == 8 and len(floors) == 2        # the fastest of each way of threading
    how = floors[0][0]
    assert "split" in floors[1][0] and "split" not in how
    for stamps in calls.values():
        assert len(stamps) >= 1 + bench_floor.FLOOR_TRIALS
        assert stamps[-bench_floor.FLOOR_TRIALS] - stamps[0] >= 0.019
    assert "64 samples" in how                     # the first candidate: the fastest
    calls.clear()
    long_B, long_X = np.ones((4100, 1)), np.ones((4100, 1))
    monkeypatch.setattr(bench_floor, "FLOOR_LONG_FINALISTS", 7)
    monkeypatch.setattr(bench_floor, "FLOOR_COLS", (2048, 4096))   # 2048 neurons: m >= 2 x 2048
    bench_floor.fastest_floors(long_B, long_X, 2, 0.02)
    assert len(calls) == 16 and all("4096" not in k for k in calls)
    slowest = [k for k in calls if " 128 (" in k and k.endswith("True, 2048)")]  # each way's last
    assert len(slowest) == 2
    assert all(len(v) == (2 if k in slowest else 2 + bench_floor.FLOOR_LONG_TRIALS_MULTI)
               for k, v in calls.items())
    calls.clear()
    assert len(bench_floor.fastest_floors(long_B, long_X, 1, 0.02)) == 1
    assert all(len(v) == 2 for v in calls.values())


def test_of_the_two_timed_floors_the_faster_is_kept():
    """At several threads the fastest floor of each way of threading is timed; the one
    with the smaller minimum is "floor" (its ratio to the engine), the other is kept as
    its "other_floor"."""
    rec = {"engine": {"min": 2.0}, "floor": {"description": "a", "min": 1.8, "median": 1.9},
           "floor_alt": {"description": "b", "min": 1.6, "median": 1.7}}
    ratios = {"floor": {"min": 0.9}, "floor_alt": {"min": 0.8}}
    bench_floor.keep_fastest_floor(rec, ratios)
    assert rec["floor"]["description"] == "b" and ratios == {"floor": {"min": 0.8}}
    assert rec["floor"]["other_floor"] == {"description": "a", "min": 1.8, "median": 1.9}
    assert set(rec) == {"engine", "floor"}
    rec = {"engine": {"min": 2.0}, "floor": {"description": "a", "min": 1.5, "median": 1.9},
           "floor_alt": {"description": "b", "min": 1.6, "median": 1.7}}
    ratios = {"floor": {"min": 0.75}, "floor_alt": {"min": 0.8}}
    bench_floor.keep_fastest_floor(rec, ratios)
    assert rec["floor"]["description"] == "a" and ratios == {"floor": {"min": 0.75}}
    assert rec["floor"]["other_floor"]["description"] == "b"


def test_multi_thread_column(tiny_results, tmp_path):
    """Every d-dim case is also timed at 2 threads (engine, floor, PyTorch; no dense),
    judged on wall time, and the report's table shows the column."""
    if 2 not in tiny_results["machine"]["multi_threads"]:
        pytest.skip("fewer than 2 CPUs: no 2-thread column")
    case = tiny_results["cases"][1]
    two = case["multi_thread"]["2"]
    assert "dense" not in two["engines"] and {"engine", "floor"} <= set(two["engines"])
    assert two["engines"]["engine"]["agreement"] == 0.0
    assert two["same_bits_as_one_thread"] is True          # the step's bits at any thread count
    assert two["ratios"]["floor"]["min"] == two["engines"]["floor"]["min"] / two["engines"]["engine"]["min"]
    assert "multi_thread" not in tiny_results["cases"][0]          # 1-D: one thread only
    targets = [t["target"] for t in tiny_results["targets"]]
    assert "d-dim tiny, 2 threads: engine / floor <= 1.3" in targets
    assert "d-dim tiny, 2 threads: torch / engine >= 1.5" in targets
    text, _ = bench.performance_section(dict(tiny_results, profile="quick"), tmp_path)
    assert "| 2 threads: wall min [ms] | x engine (2 threads) |" in text
    assert bench._format_case(case).count("  at 2 threads (BLAS limit 2") == 1
    # a short step is timed at least MULTI_MIN_REPEATS times at 2 threads
    assert two["repeats"] == max(case["repeats"], bench.MULTI_MIN_REPEATS)
    assert len(two["engines"]["engine"]["times"]) == two["repeats"]


class _ScriptedClock:
    """time for verify._bench_process.quiesce: each sleep advances the wall clock by its
    length and the process CPU clock by the next entry of ``cpu_per_sleep`` (then by
    nothing)."""

    def __init__(self, cpu_per_sleep):
        self.wall, self.cpu, self.steps, self.sleeps = 0.0, 0.0, list(cpu_per_sleep), 0

    def perf_counter(self):
        return self.wall

    def process_time(self):
        return self.cpu

    def sleep(self, s):
        self.sleeps += 1
        self.wall += s
        self.cpu += self.steps.pop(0) if self.steps else 0.0


@pytest.mark.parametrize("busy_probes", [0, 1, 5])
def test_quiesce_waits_until_no_thread_of_the_process_runs(monkeypatch, busy_probes):
    """The bench waits before each engine's calls until the process's CPU clock stops
    advancing over a probe (a spinning BLAS or OpenMP worker of the previous engine has
    gone to sleep): one probe more than the busy ones; a fifth of a probe of CPU time per
    probe still counts as busy, less as idle."""
    probe = bench_process.QUIET_PROBE
    clock = _ScriptedClock([probe] * (busy_probes - 1) + [0.2 * probe] * min(busy_probes, 1)
                           + [0.19 * probe])
    monkeypatch.setattr(bench_process, "time", clock)
    assert bench_process.quiesce() == pytest.approx((busy_probes + 1) * probe)
    assert clock.sleeps == busy_probes + 1


def test_quiesce_gives_up_after_its_longest_wait(monkeypatch):
    """A thread that never stops spinning costs at most QUIET_MAX_WAIT (plus one probe)."""
    clock = _ScriptedClock([bench_process.QUIET_PROBE] * 10 ** 4)
    monkeypatch.setattr(bench_process, "time", clock)
    waited = bench_process.quiesce()
    longest, probe = bench_process.QUIET_MAX_WAIT, bench_process.QUIET_PROBE
    assert longest < waited <= longest + 2 * probe


def test_split_floor_is_the_same_two_gemms():
    """The 2-thread floor that splits the samples runs the two products on every sample
    once, in two halves, with one BLAS thread."""
    rng = np.random.default_rng(4)
    B, X = rng.normal(size=(9, 3)), rng.normal(size=(50, 3))
    calls = _dot_shapes(bench_floor.split_floor(B, X, 16, 2))
    rows = sorted(shape[0] for shape in calls if shape[1] == 3)
    assert sum(rows) == 50 and len(calls) == 2 * len(rows)


def test_thread_profile_script_splits_the_step_into_its_phases():
    """benchmarks/profile_threads.py (the phases of the d-dim step at 1 and 2 threads)
    runs on the tiny case: the phases add up to the step, every block is counted."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "profile_threads.py"
    spec = importlib.util.spec_from_file_location("profile_threads", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    case = bench.TINY_CASES[1]
    res = mod.profile(case, 1, 2)
    r = res["engine"]
    assert abs(r["before"] + r["blocks"] + r["after"] - r["step"]) < 1e-9
    assert r["t0 blocks"] == 1 and res["floor"]["min"] > 0
    assert "step / floor" in mod._show("tiny", 1, res)
    assert mod.blocked.ordered_block_sum.__name__ == "ordered_block_sum"   # restored
