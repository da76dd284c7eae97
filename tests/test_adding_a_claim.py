"""docs/adding-a-claim.md is a tutorial that runs: follow it verbatim in an empty directory.

Its ``<!-- file: PATH -->`` blocks are written as they stand, then its ``<!-- run -->``
block runs line by line in a virtual environment that sees exactly the environment running
the tests (its site directories added by a ``.pth`` file), so the outside package is
installed there and never into the environment running the tests.  The base interpreter's
own site-packages stay invisible: ``--system-site-packages`` would expose those instead of
the environment the project is installed in.
"""
from __future__ import annotations

import os
import re
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding-a-claim.md"
FILE_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", re.S)
RUN_BLOCK = re.compile(r"<!-- run -->\n```bash\n(.*?)```", re.S)


def _tutorial() -> tuple[list[tuple[str, str]], list[str]]:
    text = DOC.read_text()
    files = FILE_BLOCK.findall(text)
    runs = RUN_BLOCK.findall(text)
    assert files and len(runs) == 1, "the tutorial lost its file or run blocks"
    commands = [line for line in runs[0].splitlines() if line.strip()]
    return files, commands


def test_tutorial_blocks_are_well_formed() -> None:
    files, commands = _tutorial()
    assert {p for p, _ in files} >= {"demo-claims/pyproject.toml",
                                     "demo-claims/demo_claims/__init__.py"}
    for path, _ in files:
        assert not Path(path).is_absolute() and ".." not in Path(path).parts
    verbs = " ".join(commands)
    for verb in ("pip install", "verify list", "verify check", "--negative-controls",
                 "verify mutate", "verify report", "pytest"):
        assert verb in verbs, f"the tutorial no longer runs {verb!r}"


def _see_this_environment(env_dir: Path) -> None:
    """Make the fresh venv at ``env_dir`` see the site directories of the interpreter
    running the tests (``site.addsitedir`` also runs their ``.pth`` files, so an editable
    install of the project is found), after its own site-packages."""
    here = [p for p in site.getsitepackages() if Path(p).is_dir()]
    assert here, "the environment running the tests has no site-packages directory"
    out = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                          "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in here)
    (Path(out) / "_meanfield_verify_parent.pth").write_text(lines)


@pytest.mark.skipif(sys.platform == "win32", reason="the run block is bash")
def test_tutorial_runs_verbatim(tmp_path: Path) -> None:
    files, commands = _tutorial()
    for rel, body in files:
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    env_dir = tmp_path / ".venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=True).create(env_dir)
    _see_this_environment(env_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.pop("PYTHONPATH", None)
    env.update(VIRTUAL_ENV=str(env_dir), PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    outputs = {}
    for command in commands:
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=600)
        assert proc.returncode == 0, (f"tutorial step failed: {command}\n"
                                      f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        outputs[command] = proc.stdout
    joined = "\n".join(outputs.values())
    assert "demo.G1a" in joined
    assert "1/1 negative controls failed as required" in joined
    assert re.search(r"1/1 mutants caught", joined), joined[-2000:]
    report = (tmp_path / "demo-report" / "report.md").read_text()
    assert "demo.G1a" in report and "Mean of the ReLU" in report
    assert re.search(r"\b2 passed\b", joined)
    # Nothing leaked into the environment running the tests.
    from importlib.metadata import entry_points
    assert not [ep for ep in entry_points(group="meanfield_verify.claims") if ep.name == "demo"]
