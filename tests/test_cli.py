"""The command line: exit codes, messages, JSON output (on cheap fake claims)."""
from __future__ import annotations

import json
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
