"""The execution layer (verify.runner) and its Dask back end: seeds, time budgets, a
LocalCluster giving the serial run's results, worker death, unreachable schedulers,
Ctrl-C, sweeps.  The cluster tests start one LocalCluster of 2 processes for the module."""
from __future__ import annotations

import json
import os
import time

import pytest

from verify import runner
from verify.runner import ExecutionError, Executor, Task, parse_seeds, format_seeds

distributed = pytest.importorskip("distributed")

CHEAP = "W2e"  # a closed-form claim that runs in about a second


# ----------------------------------------------------------------------------- pure parts

@pytest.mark.parametrize("spec,seeds", [("0-3", [0, 1, 2, 3]), ("1,5,9", [1, 5, 9]),
                                        ("0-2,7, 5", [0, 1, 2, 5, 7]), ("4", [4]),
                                        ("3,3,1-3", [1, 2, 3])])
def test_parse_seeds(spec, seeds) -> None:
    assert parse_seeds(spec) == seeds
    assert parse_seeds(format_seeds(seeds)) == seeds


@pytest.mark.parametrize("spec,needle", [("", "empty"), ("a", "not a seed"), ("3-1", "empty"),
                                         ("-1", "not a seed"), ("0-100000", "more than"),
                                         ("1,,2", "not a seed"), ("1.5", "not a seed")])
def test_parse_seeds_rejects(spec, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_seeds(spec)


def test_time_budget_interrupts_python_loop() -> None:
    t0 = time.perf_counter()
    with pytest.raises(runner.TimeBudgetExceeded):
        with runner.time_budget(0.3):
            while True:
                pass
    assert time.perf_counter() - t0 < 5
    with runner.time_budget(5):  # a block that ends in time is not disturbed later
        pass
    time.sleep(0.05)


def test_time_budget_in_run_task(monkeypatch) -> None:
    import verify.claims as reg
    from tests._fake_claim import FAKE
    import dataclasses

    def slow(ctx):
        while True:
            pass
    monkeypatch.setattr(reg, "_REGISTRY", {"T0s": dataclasses.replace(FAKE, id="T0s", check=slow)})
    r = runner.run_task(Task("claim", "T0s", timeout=0.3))
    assert r.evidence is None and "time budget of 0.3 s" in r.error


def test_serial_run_and_figures(fake_registry) -> None:
    with Executor() as ex:
        rs = ex.run([Task("claim", "T0a", seed=s, figures=True) for s in (0, 1)]
                    + [Task("claim", "T0b")])
    assert [r.task.seed for r in rs] == [0, 1, 0]
    assert rs[0].evidence.passed and rs[0].evidence.artifacts == {}
    assert rs[0].figures == [("T0a_line.png", "a line")]
    assert rs[0].files["T0a_line.png"].startswith(b"\x89PNG")
    assert rs[2].error == "RuntimeError: boom" and rs[2].evidence is None


def test_executor_argument_errors() -> None:
    with pytest.raises(ExecutionError, match="not both"):
        Executor(workers=2, scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(ExecutionError, match="1..256"):
        Executor(workers=0)
    with pytest.raises(ExecutionError, match="not a scheduler address"):
        with Executor(scheduler="nonsense:::"):
            pass


def test_unreachable_scheduler_is_one_line_exit_2(capsys) -> None:
    from verify.cli import main
    t0 = time.perf_counter()
    assert main(["check", CHEAP, "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot connect to the Dask scheduler" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert time.perf_counter() - t0 < 60


# ----------------------------------------------------------------------------- LocalCluster

@pytest.fixture(scope="module")
def cluster():
    with Executor(workers=2) as ex:
        yield ex


def _rows(results):
    return [(r.task.name, r.task.seed, r.task.negative_control, r.evidence.passed,
             r.evidence.error, json.dumps({k: v for k, v in r.evidence.to_json().items()
                                           if k != "seconds"}, sort_keys=True))
            for r in results]


def test_local_cluster_matches_serial(cluster) -> None:
    tasks = [Task("claim", CHEAP, seed=s, negative_control=neg) for s in (0, 1) for neg in (False, True)]
    with Executor() as serial:
        expected = serial.run(tasks)
    seen = []
    got = cluster.run(tasks, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(len(tasks)))
    assert all(r.error is None for r in got), [r.error for r in got]
    assert _rows(got) == _rows(expected)  # same numbers, in task order
    # the workers run single-threaded BLAS (environment set before they started)
    env = cluster.client.run(lambda: {k: os.environ.get(k) for k in runner.BLAS_ENV})
    assert all(e == runner.BLAS_ENV for e in env.values())


def test_mutate_on_two_workers_matches_serial() -> None:
    """``mutate --workers 2`` runs the mutants on a local Dask cluster and gives the serial
    outcomes, mutant by mutant and in the same order."""
    from verify.mutate import mutate

    def rows(results):
        return [(r.claim_id, r.kind, r.label, r.eps, r.status, r.how, r.algorithm)
                for r in results]

    serial = mutate([CHEAP], eps=1e-3)
    on_cluster = mutate([CHEAP], eps=1e-3, workers=2)
    assert len(serial) >= 3
    assert rows(on_cluster) == rows(serial)


def _die(x: int) -> int:
    if x == 1:
        os._exit(3)  # the worker process dies mid-task
    return 10 * x


def test_worker_death_is_retried_once_then_reported(cluster) -> None:
    out = cluster.map(_die, [0, 1, 2], keys=["verify-test"] * 3,
                      on_failure=lambda x, exc: f"failed: {type(exc).__name__}")
    assert out == [0, "failed: KilledWorker", 20]
    cluster.client.wait_for_workers(2, timeout=120)  # the nanny restarts dead workers
    r = runner._failure_result(Task("claim", CHEAP), distributed.KilledWorker("k", "w", 1))
    assert r.error.startswith("KilledWorker: the worker running W2e seed 0 died twice")


def _sleep(x: float) -> float:
    time.sleep(x)
    return x


def _stamped(x: float) -> tuple[float, float, int]:
    """(start, end, worker pid) of a sleep of x seconds."""
    t0 = time.time()
    time.sleep(x)
    return t0, time.time(), os.getpid()


def test_after_orders_dependent_items_on_the_same_worker(cluster) -> None:
    """``after[i] = j``: item i starts once item j has ended, on j's worker (data locality:
    this is how a negative control reuses the simulations its check cached)."""
    out = cluster.map(_stamped, [0.6, 0.0, 0.3, 0.0], keys=["verify-test"] * 4,
                      after=[None, 0, None, 2])
    for j, i in ((0, 1), (2, 3)):
        assert out[i][0] >= out[j][1] and out[i][2] == out[j][2]
    with pytest.raises(ValueError, match="earlier item"):
        cluster.map(_stamped, [0.0, 0.0], after=[1, None])


def test_run_schedules_each_control_after_its_check() -> None:
    tasks = [Task("claim", CHEAP, seed=s, negative_control=neg) for s in (0, 1) for neg in (False, True)]
    keys = [runner._pair_key(t) for t in tasks]
    assert keys[0] == keys[1] != keys[2] == keys[3]


def test_interrupt_cancels_tasks(cluster) -> None:
    """Uncancelled, the three 6 s sleeps would keep the two workers processing for 6-12 s;
    cancelled, the scheduler drops them at once (a running sleep still ends on its worker,
    so the sleeps are short enough not to hold up the tests that follow)."""
    def interrupt(i, r):
        raise KeyboardInterrupt
    start = time.time()
    with pytest.raises(KeyboardInterrupt):
        cluster.map(_sleep, [0.0, 6.0, 6.0, 6.0], keys=["verify-sleep"] * 4, on_result=interrupt)
    while time.time() < start + 3.0 and any(cluster.client.processing().values()):
        time.sleep(0.1)
    assert not any(cluster.client.processing().values())


def test_report_byte_identical_on_cluster(cluster, tmp_path) -> None:
    from verify.report import build_report
    s1 = build_report(tmp_path / "serial", only=[CHEAP], progress=None)
    s2 = build_report(tmp_path / "dask", only=[CHEAP], progress=None, executor=cluster)
    assert s1["verified"] == s2["verified"] == 1
    for name in ["report.md", "index.html"] + [f"figures/{f}" for f in s1["figures"]]:
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes(), name


# ----------------------------------------------------------------------------- sweeps

def _power_law(params, profile, seed):
    m = params["m"]
    return {"label": "x", "flag": True, "err": 3.0 * m ** -0.5 * (1 + 0.01 * seed), "m": m}, None


@pytest.fixture
def fake_experiment(monkeypatch):
    from verify import experiments
    exp = experiments.Experiment("power-law", "err = 3 m^-1/2", _power_law,
                                 defaults={"m": 10, "scale": 1.0})
    monkeypatch.setattr(experiments, "_REG", {"power-law": exp})
    return exp


def test_sweep_grid_json_and_rate(fake_experiment, tmp_path, capsys) -> None:
    from verify.cli import main
    rc = main(["experiment", "power-law", "--sweep", "m=10,100,1000", "--sweep", "scale=1,2",
               "--seeds", "0-2", "--out", str(tmp_path)])
    assert rc == 0
    doc = json.loads((tmp_path / "power-law-sweep.json").read_text())
    assert len(doc["points"]) == 3 * 2 * 3 and doc["metric"] == "err" and doc["x"] == "m"
    assert [(p["swept"]["m"], p["swept"]["scale"], p["seed"]) for p in doc["points"][:4]] == \
        [(10, 1.0, 0), (10, 1.0, 1), (10, 1.0, 2), (10, 2.0, 0)]
    assert len(doc["fits"]) == 2
    for fit in doc["fits"]:
        assert fit["rate_pooled"] == pytest.approx(-0.5, abs=1e-12)
        assert fit["rate_mean"] == pytest.approx(-0.5, abs=1e-12)
    assert (tmp_path / "power-law-sweep.png").read_bytes().startswith(b"\x89PNG")
    assert "rate -0.5" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["--sweep", "m"], "KEY=V1,V2"),
    (["--sweep", "nope=1,2"], "no setting nope"),
    (["--sweep", "m=1,2", "--sweep", "m=3"], "twice"),
    (["--sweep", "m=1,2", "--set", "m=3"], "both --set and --sweep"),
    (["--sweep", "m=1,1"], "repeated"),
    (["--metric", "err"], "--sweep runs only"),
    (["--seeds", "0-2"], "one seed"),
])
def test_sweep_usage_errors(fake_experiment, tmp_path, capsys, argv, needle) -> None:
    from verify.cli import main
    assert main(["experiment", "power-law", "--out", str(tmp_path)] + argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_sweep_on_cluster_matches_serial(cluster, tmp_path) -> None:
    from verify import sweep
    p = sweep.plan("williams-fig1", ["T=1", "s=3"], ["m=4,8"], tmp_path / "a", "quick", [0])
    with Executor() as serial:
        a = serial.run(p.tasks)
    b = cluster.run(p.tasks)
    assert [r.error for r in b] == [None] * 2, [r.error for r in b]
    assert [json.dumps(r.data, sort_keys=True) for r in a] == \
        [json.dumps(r.data, sort_keys=True) for r in b]
