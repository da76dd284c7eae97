"""The command line: exit codes, messages, JSON output (on cheap fake claims)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from verify.cli import main


def test_list(fake_registry, capsys) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "T0a" in out and "Fake claim" in out


def test_check_pass_and_json(fake_registry, tmp_path, capsys) -> None:
    out_file = tmp_path / "ev.json"
    assert main(["check", "T0a", "--json", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "1/1 claims verified" in out
    data = json.loads(out_file.read_text())
    assert data["evidence"][0]["claim_id"] == "T0a" and data["evidence"][0]["passed"]


def test_check_failure_exit_1(fake_registry, capsys) -> None:
    assert main(["check"]) == 1  # T0b raises
    assert "ERROR" in capsys.readouterr().out


def test_negative_controls(fake_registry, capsys) -> None:
    assert main(["check", "T0a", "--negative-controls"]) == 0
    assert "fails (as required)" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["check", "T0z"], "closest: T0"),
    (["check", "--seed", "-3"], "--seed"),
    (["check", "--seed", "abc"], "--seed"),
    (["check", "--profile", "slow"], "profile"),
    (["report", "--only", "nope"], "unknown claim id"),
    (["experiment"], "NAME or --list"),
    (["experiment", "no-such-experiment"], "unknown experiment"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors_exit_2_one_line(fake_registry, capsys, argv, needle) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_module_entry_point_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "verify", "list"], capture_output=True, text=True)
    assert proc.returncode == 0 and "H1f" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "verify", "check", "H9z"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown claim id" in proc.stderr and "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- seeds

def test_check_seeds_rows_and_summary(fake_registry, tmp_path, capsys) -> None:
    out_file = tmp_path / "ev.json"
    assert main(["check", "T0a", "--seeds", "0-2,7", "--json", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "T0a" in out and "4/4" in out and "1/1 claims verified at every seed (0-2,7)" in out
    data = json.loads(out_file.read_text())
    assert data["seeds"] == [0, 1, 2, 7]
    assert [(r["claim_id"], r["seed"], r["passed"]) for r in data["evidence"]] == \
        [("T0a", s, True) for s in (0, 1, 2, 7)]


def test_check_seeds_reports_each_bad_seed(fake_registry, tmp_path, capsys) -> None:
    out_file = tmp_path / "ev.json"
    assert main(["check", "--seeds", "3,4", "--json", str(out_file)]) == 1
    out = capsys.readouterr().out
    assert "seed 3: ERROR RuntimeError: boom" in out and "seed 4: ERROR" in out
    rows = json.loads(out_file.read_text())["evidence"]
    assert [(r["claim_id"], r["seed"], r["passed"]) for r in rows] == [
        ("T0a", 3, True), ("T0a", 4, True), ("T0b", 3, False), ("T0b", 4, False)]
    assert rows[2]["exception"] == "RuntimeError: boom"


def test_negative_controls_at_every_seed(fake_registry, capsys) -> None:
    assert main(["check", "T0a", "--negative-controls", "--seeds", "0-1"]) == 0
    out = capsys.readouterr().out
    assert "fails (as required)" in out and "2/2" in out


def test_examples_reach_the_claim(fake_registry, monkeypatch) -> None:
    seen = []
    real = fake_registry._REGISTRY["T0a"].run

    def spy(profile, seed, **kw):
        seen.append(kw.get("examples"))
        return real(profile, seed, **kw)
    monkeypatch.setattr(fake_registry._REGISTRY["T0a"], "run", spy)
    assert main(["check", "T0a", "--examples", "7"]) == 0
    assert main(["check", "T0a"]) == 0
    assert seen == [7, None]


def test_report_seeds_pass_rate(fake_registry, tmp_path, capsys) -> None:
    out = tmp_path / "r"
    assert main(["report", "--only", "T0a", "--seeds", "0-2", "--out", str(out)]) == 0
    assert "at every seed (0-2)" in capsys.readouterr().out
    ev = json.loads((out / "evidence.json").read_text())
    assert [r["seed"] for r in ev["claims"][0]["seeds"]] == [0, 1, 2]
    from verify.report import collect_sections
    from verify.claims import get
    (sec,) = collect_sections([get("T0a")], "quick", [0, 1])
    assert [e.seed for e in sec.seed_evidence] == [0, 1] and sec.passed_every_seed
    assert sec.negative_failed_every_seed


# ----------------------------------------------------------------------------- user errors

@pytest.mark.parametrize("argv,needle", [
    (["check", "--seeds", "5-1"], "--seeds"),
    (["check", "--seeds", "x"], "--seeds"),
    (["check", "--seed", "1", "--seeds", "2"], "not allowed with"),
    (["check", "--examples", "0"], "--examples"),
    (["check", "--timeout", "-1"], "--timeout"),
    (["check", "--timeout", "nan"], "--timeout"),
    (["check", "--workers", "0"], "--workers"),
    (["check", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "not allowed with"),
    (["check", "T0a", "--json", ""], "--json"),
    (["report", "--out", "/proc/x"], "--out"),
    (["report", "--out", "."], "--out"),
    (["experiment", "williams-fig1", "--set", "m"], "KEY=VALUE"),
])
def test_more_usage_errors_exit_2_one_line(fake_registry, capsys, argv, needle) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_output_paths_checked_before_any_work(fake_registry, tmp_path, monkeypatch, capsys) -> None:
    ran = []
    real = fake_registry._REGISTRY["T0a"].run
    monkeypatch.setattr(fake_registry._REGISTRY["T0a"], "run",
                        lambda *a, **k: ran.append(1) or real(*a, **k))
    (tmp_path / "adir").mkdir()
    ro = tmp_path / "ro"
    ro.mkdir()
    for bad in [str(tmp_path / "adir"), str(tmp_path / "adir") + "/", "/proc/x/ev.json"]:
        assert main(["check", "T0a", "--json", bad]) == 2
        err = capsys.readouterr().err
        assert "--json" in err and len(err.strip().splitlines()) == 1
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["report", "--only", "T0a", "--out", str(foreign)]) == 2
    assert (foreign / "notes.txt").read_text() == "mine"
    assert ran == []  # nothing ran


def test_interrupt_leaves_no_output(fake_registry, tmp_path, monkeypatch, capsys) -> None:
    from verify import runner

    def interrupted(self, tasks, on_result=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner.Executor, "run", interrupted)
    assert main(["check", "T0a", "--json", str(tmp_path / "ev.json")]) == 130
    assert main(["report", "--only", "T0a", "--out", str(tmp_path / "r")]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_bare_command_prints_help_exit_0(capsys) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "check" in out and "report" in out and "experiment" in out


def test_experiment_list_shows_settings(capsys) -> None:
    assert main(["experiment", "--list"]) == 0
    out = capsys.readouterr().out
    assert "williams-fig1" in out and "m=40" in out


def test_log_file_gets_lines_not_carriage_returns(fake_registry, tmp_path) -> None:
    """Not on a terminal: plain lines, no \\r progress and no colour codes."""
    import os
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.run([sys.executable, "-m", "verify", "report", "--only", "W2e", "--out",
                           str(tmp_path / "r")], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr + proc.stdout and "\x1b[" not in proc.stderr + proc.stdout
    assert "[1/1] W2e done" in proc.stderr


@pytest.mark.parametrize("argv,option", [
    (["check", "--seeds", "5-2"], "--seeds"),
    (["check", "--seeds", ""], "--seeds"),
    (["check", "--seed", "-1"], "--seed"),
    (["check", "--workers", "0"], "--workers"),
    (["check", "--timeout", "0"], "--timeout"),
])
def test_option_named_once(fake_registry, capsys, argv, option) -> None:
    """argparse's "argument --seeds:" prefix is not followed by our own "--seeds:"."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.count(option + ":") == 1 and f"{option}: {option}" not in err, err


def test_closed_pipe_is_quiet() -> None:
    """``python -m verify list | head -1``: the reader goes away; no BrokenPipeError
    traceback (the pipe is closed before the command writes, so this is deterministic)."""
    proc = subprocess.Popen([sys.executable, "-m", "verify", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert err == "" and rc == 141


def test_closed_pipe_in_shell_head() -> None:
    proc = subprocess.run(f"{sys.executable} -m verify list | head -1", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1 and proc.stderr == ""


def _targeted_claim():
    """A claim whose negative control breaks its second sub-check (as W2b's does), and a
    signed "at most" bound (a fitted rate) that the check keeps."""
    from tests._fake_claim import _derive
    from verify.claims import Claim
    from verify.kit import SubCheck, combine

    def run(ctx, broken: bool):
        return combine("two sub-checks", [
            SubCheck("headline closed form", 8.53e-11, 1e-7, "quadrature"),
            SubCheck("delta drift", 7.98e-9 if broken else 1e-12, 1e-9, "ODE tolerance"),
            SubCheck("fitted rate", -0.5, -0.25, "must be <= -1/4")])
    return Claim(id="T0c", title="Targeted", source="tests", statement="$0$", derive=_derive,
                 check=lambda ctx: run(ctx, False), negative_control=lambda ctx: run(ctx, True),
                 negative_control_description="drift", negative_target="delta drift")


def test_negative_controls_show_the_targeted_subcheck(fake_registry, monkeypatch, capsys) -> None:
    monkeypatch.setitem(fake_registry._REGISTRY, "T0c", _targeted_claim())
    assert main(["check", "T0c", "--negative-controls"]) == 0
    out = capsys.readouterr().out
    header, row = out.splitlines()[:2]
    assert header.split()[1] == "failed" and "passed" not in header
    assert "7.98e-09" in row and "1.00e-09" in row and "x7.98" in row, row
    assert "8.53e-11" not in row and "1.00e-07" not in row
    assert "fails (as required)" in row


def test_report_negative_control_line_is_the_targeted_subcheck(fake_registry, monkeypatch,
                                                                tmp_path) -> None:
    monkeypatch.setitem(fake_registry._REGISTRY, "T0c", _targeted_claim())
    from verify.report import build_report
    build_report(tmp_path / "r", only=["T0c"], progress=None)
    md = (tmp_path / "r" / "report.md").read_text()
    assert ("drift: sub-check `delta drift`: measured error 7.98e-09 vs tolerance 1.00e-09: "
            "**fails (x7.98)**.") in md
    assert "| fails (x7.98) |" in md
    assert not re.search(r"fails \(x0\.", md)


def test_claim_id_case_is_accepted_and_said(fake_registry, capsys) -> None:
    """`check t0A` runs T0a and says its canonical id (not silently)."""
    assert main(["check", "t0A"]) == 0
    err = capsys.readouterr().err
    assert "case-insensitive" in err and "T0a" in err


def test_unknown_id_suggests_by_case_folded_match(capsys) -> None:
    """`check h1z` suggests H1 claims (the closest case-folded ids), not W claims."""
    assert main(["check", "h1z"]) == 2
    err = capsys.readouterr().err
    hint = err.split("closest:")[1].split("(")[0]
    assert hint.strip() and all(i.strip().startswith("H1") for i in hint.split(","))


def test_report_only_takes_a_comma_list_without_performance(fake_registry, tmp_path,
                                                           capsys) -> None:
    out = tmp_path / "r"
    assert main(["report", "--only", "T0a,t0a", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 verified, 0 observed (numerical evidence), 0 failed of 1 claims" in text
    md = (out / "report.md").read_text()
    assert "## Performance" not in md and "worst sub-check" in md
    assert main(["report", "--only", "T0a,,", "--out", str(out)]) == 2


def test_check_takes_ids_as_a_comma_list_too(fake_registry, capsys) -> None:
    """`check T0a,T0b` names the same claims as `check T0a T0b` (as --seeds and --only take
    comma lists); an empty item is one line and exit 2."""
    assert main(["check", "T0a,t0a"]) == 0
    assert main(["check", "T0a,,T0b"]) == 2
    err = capsys.readouterr().err
    assert "no empty item" in err and "Traceback" not in err


def test_check_shows_the_worst_subcheck(fake_registry, capsys) -> None:
    assert main(["check", "T0a"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "worst sub-check" in head and "unit, kind" in head


@pytest.mark.parametrize("argv,needle", [
    (["check", "T0a", "--json", "/nonexistent-mfv/dir/e.json"], "does not exist"),
    (["report", "--only", "T0a", "--out", "/proc/nope"], "/proc is a virtual file system"),
])
def test_output_paths_refused_plainly(fake_registry, capsys, argv, needle) -> None:
    import os
    assert main(argv) == 2
    assert needle in capsys.readouterr().err
    assert not os.path.exists("/nonexistent-mfv")
