"""Output safety: ``report --out`` replaces only what the report wrote; a killed run is
repaired by the next one; modes follow the umask; output files are validated up front."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from verify import _atomic
from verify._atomic import MARKER, atomic_write_bytes, make_staging, read_marker, replace_dir
from verify._paths import (OutputPathError, validate_output_dir, validate_output_file,
                           validate_report_out)

ROOT = Path(__file__).resolve().parents[1]


def _build(target: Path, tag: str) -> Path:
    st = make_staging(target)
    (st / "report.md").write_text(tag)
    (st / "figures").mkdir()
    (st / "figures" / "a.png").write_bytes(b"png")
    replace_dir(st, target)
    return target


def _foreign(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "notes.txt").write_text("precious")
    (d / "sub").mkdir()
    (d / "sub" / "data.csv").write_text("1,2")
    return d


def _intact(d: Path) -> None:
    assert (d / "notes.txt").read_text() == "precious"
    assert (d / "sub" / "data.csv").read_text() == "1,2"


def _one_line(exc: BaseException) -> str:
    msg = str(exc)
    assert "\n" not in msg and msg
    return msg


# ---------------------------------------------------------------- refusals, up front

def test_nonempty_foreign_dir_refused(tmp_path):
    d = _foreign(tmp_path / "out")
    with pytest.raises(ValueError) as ei:
        validate_report_out(d)
    msg = _one_line(ei.value)
    assert "not written by" in msg and "choose" in msg
    _intact(d)
    # replace_dir refuses too (defence in depth) and leaves both directories alone
    st = make_staging(d)
    (st / "report.md").write_text("x")
    with pytest.raises(ValueError):
        replace_dir(st, d)
    _intact(d)
    assert (st / "report.md").exists()


def test_file_refused(tmp_path):
    f = tmp_path / "results.txt"
    f.write_text("mine")
    with pytest.raises(OutputPathError, match="is a file"):
        validate_report_out(f)
    assert f.read_text() == "mine" and not (tmp_path / ".results.txt.old").exists()


def test_dot_in_git_repo_refused(tmp_path, monkeypatch):
    repo = tmp_path / "clone"
    (repo / ".git").mkdir(parents=True)
    (repo / "README.md").write_text("x")
    monkeypatch.chdir(repo)
    with pytest.raises(OutputPathError, match="current directory"):
        validate_report_out(".")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputPathError, match="git repository"):
        validate_report_out("clone")
    # an ancestor of the working directory
    monkeypatch.chdir(repo)
    with pytest.raises(OutputPathError, match="ancestor"):
        validate_report_out("..")
    assert (repo / "README.md").exists() and (repo / ".git").is_dir()


@pytest.mark.parametrize("path", ["/", "", "/proc/x"])
def test_root_empty_and_unwritable_refused(path):
    with pytest.raises(OutputPathError) as ei:
        validate_report_out(path)
    _one_line(ei.value)


def test_home_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(OutputPathError, match="home directory"):
        validate_report_out(tmp_path)


@pytest.mark.parametrize("bad", [None, 3, True])
def test_non_path_types_refused(bad):
    with pytest.raises(OutputPathError):
        validate_report_out(bad)


def test_new_empty_and_own_dirs_accepted(tmp_path):
    assert validate_report_out(tmp_path / "a" / "b") == (tmp_path / "a" / "b").resolve()
    (tmp_path / "empty").mkdir()
    assert validate_report_out(tmp_path / "empty").is_dir()
    _build(tmp_path / "empty", "one")
    assert (tmp_path / "empty" / "report.md").read_text() == "one"


# ---------------------------------------------------------------- the marker

def test_marker_round_trip(tmp_path):
    t = _build(tmp_path / "rep", "first")
    m = read_marker(t)
    assert m["format"] == _atomic.MARKER_FORMAT and m["state"] == "complete"
    assert m["files"] == ["figures", "figures/a.png", "report.md"]
    validate_report_out(t)
    _build(t, "second")
    assert (t / "report.md").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
    # a file the user put into the report directory makes it foreign
    (t / "my-notes.txt").write_text("keep")
    with pytest.raises(OutputPathError, match="my-notes.txt"):
        validate_report_out(t)
    st = make_staging(t)
    with pytest.raises(ValueError):
        replace_dir(st, t)
    assert (t / "my-notes.txt").read_text() == "keep"


def test_corrupt_or_newer_marker_is_foreign(tmp_path):
    t = _build(tmp_path / "rep", "x")
    (t / MARKER).write_text("not json")
    with pytest.raises(OutputPathError):
        validate_report_out(t)
    m = {"tool": "meanfield-verify report", "format": 99, "state": "complete", "files": []}
    (t / MARKER).write_text(json.dumps(m))
    with pytest.raises(OutputPathError, match="format 99"):
        validate_report_out(t)


def test_report_of_earlier_version_is_adopted(tmp_path):
    t = tmp_path / "report"
    (t / "figures").mkdir(parents=True)
    (t / "report.md").write_text("old")
    (t / "index.html").write_text("<html/>")
    (t / "evidence.json").write_text(json.dumps({"claims": []}))
    (t / "figures" / "W2a.png").write_bytes(b"png")
    validate_report_out(t)
    _build(t, "new")
    assert (t / "report.md").read_text() == "new"
    assert not (t / "index.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_foreign_sibling_old_and_tmp_untouched(tmp_path):
    t = _build(tmp_path / "rep", "x")
    foreign_tmp = _foreign(tmp_path / ".rep.tmpmine")
    old = _foreign(tmp_path / ".rep.old")
    with pytest.raises(OutputPathError, match="not written by the report"):
        validate_report_out(t)
    _intact(foreign_tmp), _intact(old)


def test_staging_of_live_process_kept_dead_removed(tmp_path):
    t = tmp_path / "rep"
    live = make_staging(t)  # this process: alive
    dead = make_staging(t)
    m = json.loads((dead / MARKER).read_text())
    m["pid"] = _dead_pid()
    (dead / MARKER).write_text(json.dumps(m))
    validate_report_out(t)
    assert live.is_dir() and not dead.exists()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ---------------------------------------------------------------- modes

@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_modes_follow_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        t = _build(tmp_path / "rep", "x")
        f = tmp_path / "out.json"
        atomic_write_bytes(f, b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(t.stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((t / MARKER).stat().st_mode) == 0o666 & ~mask


def test_existing_file_keeps_mode(tmp_path):
    f = tmp_path / "out.json"
    f.write_text("{}")
    f.chmod(0o640)
    atomic_write_bytes(f, b"[]")
    assert stat.S_IMODE(f.stat().st_mode) == 0o640 and f.read_bytes() == b"[]"


# ---------------------------------------------------------------- output files

def test_validate_output_file(tmp_path):
    assert validate_output_file(tmp_path / "e.json") == tmp_path / "e.json"
    for bad, why in [("", "empty"), (tmp_path, "directory"), (f"{tmp_path}/x/", "directory"),
                     ("/proc/x/e.json", "/proc is a virtual file system"),
                     ("/proc/e.json", "/proc is a virtual file system"),
                     (tmp_path / "a" / "e.json", "does not exist; create it first"),
                     ("/nonexistent-mfv/dir/e.json", "does not exist"),
                     ("/dev/null", "not a regular file")]:
        with pytest.raises(OutputPathError, match=why) as ei:
            validate_output_file(bad)
        _one_line(ei.value)
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputPathError, match="not a directory"):
        validate_output_file(tmp_path / "f" / "e.json")


def test_validate_output_dir(tmp_path):
    assert validate_output_dir(tmp_path / "new", files=("a.json",)) == tmp_path / "new"
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputPathError, match="is a file"):
        validate_output_dir(tmp_path / "f")
    (tmp_path / "d" / "a.json").mkdir(parents=True)
    with pytest.raises(OutputPathError, match="is a directory"):
        validate_output_dir(tmp_path / "d", files=("a.json",))
    assert not (tmp_path / "a").exists()  # a refused missing parent is not created


def test_experiment_out_refuses_a_foreign_directory(tmp_path):
    """experiment --out into a non-empty directory of other files is refused (as report
    --out is); one holding only experiment outputs, or empty, is accepted."""
    from verify import experiments
    name = experiments.all_experiments()[0].name
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(OutputPathError, match="did not write .notes.txt"):
        experiments.prepare(name, [], tmp_path / "mine")
    (tmp_path / "outs").mkdir()
    (tmp_path / "outs" / f"{name}.json").write_text("{}")
    (tmp_path / "outs" / f"{name}-sweep.png").write_bytes(b"")
    assert experiments.prepare(name, [], tmp_path / "outs")[2] == tmp_path / "outs"
    assert experiments.prepare(name, [], tmp_path / "new")[2] == tmp_path / "new"


def test_atomic_write_refuses_directory(tmp_path):
    with pytest.raises(ValueError, match="directory"):
        atomic_write_bytes(tmp_path, b"x")


# ---------------------------------------------------------------- a kill at every stage

_SCRIPT = """
import sys, pathlib
from verify._atomic import make_staging, replace_dir
target, tag = pathlib.Path(sys.argv[1]), sys.argv[2]
st = make_staging(target)
(st / "report.md").write_text(tag)
(st / "figures").mkdir()
(st / "figures" / "a.png").write_bytes(b"png")
replace_dir(st, target)
"""

_DIR_STAGES = ("staging-created", "marked", "moved-aside", "swapped", "exchanged", "cleaned")


def _run(target: Path, tag: str, kill_at: str | None = None, exchange: bool = True) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("MEANFIELD_VERIFY_TEST_KILL_AT", None)
    env.pop("MEANFIELD_VERIFY_TEST_NO_EXCHANGE", None)
    if kill_at:
        env["MEANFIELD_VERIFY_TEST_KILL_AT"] = kill_at
    if not exchange:
        env["MEANFIELD_VERIFY_TEST_NO_EXCHANGE"] = "1"
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(target), tag], env=env,
                          cwd=ROOT, timeout=120).returncode


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
@pytest.mark.parametrize("previous", [True, False], ids=["replace", "new"])
@pytest.mark.parametrize("stage", _DIR_STAGES)
def test_kill_at_every_stage_is_recovered(tmp_path, stage, previous, exchange):
    parent = tmp_path / "p"
    parent.mkdir()
    (parent / "notes.txt").write_text("precious")
    foreign_tmp = _foreign(parent / ".rep.tmpforeign")  # matches the staging prefix, no marker
    t = parent / "rep"
    if previous:
        assert _run(t, "old") == 0
    rc = _run(t, "new", kill_at=stage, exchange=exchange)
    reached = {"staging-created", "marked", "cleaned"}
    if previous:
        reached |= {"exchanged"} if exchange else {"moved-aside", "swapped"}
    assert rc == (-signal.SIGKILL if stage in reached else 0)
    # the next run recovers before it starts
    validate_report_out(t)
    names = sorted(p.name for p in parent.iterdir())
    assert names == sorted(["notes.txt", ".rep.tmpforeign"] + (["rep"] if t.exists() else []))
    _intact(foreign_tmp)
    if t.exists():
        assert (t / "report.md").read_text() in ("old", "new")
        assert read_marker(t)["state"] == "complete"
    else:
        assert not previous  # a previous report is never lost
    if previous:
        assert t.is_dir()
    assert _run(t, "again", exchange=exchange) == 0
    assert (t / "report.md").read_text() == "again"
    assert sorted(p.name for p in parent.iterdir()) == sorted(["notes.txt", ".rep.tmpforeign",
                                                                "rep"])


def test_kill_during_file_write_keeps_old_and_cleans_partial(tmp_path):
    f = tmp_path / "e.json"
    f.write_text("old")
    code = f"from verify._atomic import atomic_write_bytes; atomic_write_bytes({str(f)!r}, b'new')"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MEANFIELD_VERIFY_TEST_KILL_AT="file-written")
    assert subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT).returncode == -9
    assert f.read_text() == "old"
    assert any(p.name.endswith(".partial") for p in tmp_path.iterdir())
    atomic_write_bytes(f, b"newer")
    assert f.read_text() == "newer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json"]


# ---------------------------------------------------------------- the command line

def _cli_wired() -> bool:
    import inspect

    import verify.cli
    import verify.report
    src = inspect.getsource(verify.cli) + inspect.getsource(verify.report)
    return "validate_report_out" in src and "validate_output_file" in src


needs_cli = pytest.mark.skipif(not _cli_wired(), reason="CLI does not call verify._paths yet")


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


@needs_cli
@pytest.mark.parametrize("case", ["foreign", "file", "dot-in-repo", "root", "proc"])
def test_cli_report_refuses_before_work(tmp_path, case):
    cwd = ROOT
    if case == "foreign":
        out = str(_foreign(tmp_path / "out"))
    elif case == "file":
        (tmp_path / "f").write_text("mine")
        out = str(tmp_path / "f")
    elif case == "dot-in-repo":
        (tmp_path / ".git").mkdir()
        (tmp_path / "x").write_text("x")
        cwd, out = tmp_path, "."
    else:
        out = "/" if case == "root" else "/proc/x"
    r = _cli("report", "--only", "W2a", "--out", out, cwd=cwd)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    if case == "foreign":
        _intact(tmp_path / "out")
    if case == "file":
        assert (tmp_path / "f").read_text() == "mine"
    if case == "dot-in-repo":
        assert (tmp_path / "x").exists() and (tmp_path / ".git").is_dir()


@needs_cli
@pytest.mark.parametrize("bad", ["", "DIR", "/proc/x/e.json"])
def test_cli_check_json_refused_before_work(tmp_path, bad):
    path = str(tmp_path) if bad == "DIR" else bad
    r = _cli("check", "W2a", "--json", path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "id " not in r.stdout  # no check ran


@needs_cli
def test_cli_report_marker_round_trip(fake_registry, tmp_path, monkeypatch, capsys):
    from verify.cli import main
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "rep"
    assert main(["report", "--only", "T0a", "--out", str(out)]) in (0, 1)
    assert read_marker(out)["state"] == "complete" and (out / "report.md").is_file()
    assert main(["report", "--only", "T0a", "--out", str(out)]) in (0, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
    (out / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["report", "--only", "T0a", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "notes.txt" in err
    assert (out / "notes.txt").read_text() == "mine"
