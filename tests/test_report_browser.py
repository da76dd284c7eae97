"""The report in a real browser: Debian's ``chromium`` renders a small report headless.

Builds ``python -m verify report --only W2a H1f``, loads ``index.html`` in headless
Chromium (``--dump-dom``) with a probe script appended to a copy of the page, and asserts:
MathML present and no ``merror``; no raw LaTeX commands and no ``Piecewise``/``piecewise(``
text outside math; no control characters; every figure decodes; nothing wider than the
page.  A full-page screenshot is kept as an artifact in the pytest tmp dir (its path is
printed; ``pytest -s`` shows it).

Outside CI (``CI`` unset) the test skips with a reason when chromium is missing, so the
README's test command passes on a fresh machine.  Under CI (``CI`` set, as ``.ci/run``
does) it is required: ``.ci/run`` installs chromium with apt-get when it is missing, and
a missing chromium is a failure naming the command to run.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ["W2a", "H1f"]
PROBE = """
<script>
window.addEventListener('load', () => {
  const de = document.documentElement, body = document.body.getBoundingClientRect();
  const imgs = [...document.images];
  const wide = [];
  for (const m of document.querySelectorAll('math')) {
    if (m.closest('details') && !m.closest('details').open) continue;
    let right = m.getBoundingClientRect().right;
    for (const c of m.querySelectorAll('*')) right = Math.max(right, c.getBoundingClientRect().right);
    if (right > body.right + 1) {
      const sec = m.closest('section');
      wide.push((sec ? sec.id : '?') + ': ' + Math.round(right - body.right) + 'px');
    }
  }
  document.body.setAttribute('data-probe', JSON.stringify({
    images: imgs.length,
    broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt),
    scrollWidth: de.scrollWidth, clientWidth: de.clientWidth, height: de.scrollHeight,
    maths: document.querySelectorAll('math').length, wide: wide}));
});
</script>
"""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LATEX = re.compile(r"\\[A-Za-z]+")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if not _under_ci():
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); "
                    "required only under CI, where .ci/run installs it")
    pytest.fail("chromium is not installed and CI is set: run `apt-get update && apt-get "
                "install -y chromium` (.ci/run does this before the tests)")


def _under_ci() -> bool:
    """True when the ``CI`` environment variable is set to anything but empty/false/0."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _run_chromium(exe: str, profile: Path, *args: str) -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", "--no-first-run", f"--user-data-dir={profile}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise AssertionError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def _outside_math(dom: str) -> str:
    """The page's text outside ``<math>``, ``<code>``, ``<pre>``, ``<style>`` and ``<script>``."""
    s = re.sub(r"<(math|code|pre|style|script)\b.*?</\1>", " ", dom, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", s))


def _math_text(dom: str) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", m)
                                  for m in re.findall(r"<math\b.*?</math>", dom, flags=re.S)))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict:
    exe = _chromium()
    tmp = tmp_path_factory.mktemp("report_browser")
    out = tmp / "report"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "verify", "report", "--only", *CLAIMS,
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"report build failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    page = out / "index.html"
    probe = out / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
                     encoding="utf-8")
    dom = _run_chromium(exe, tmp / "profile", "--window-size=1200,900", "--dump-dom",
                        probe.as_uri())
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m, "the probe script did not run (no data-probe attribute in the dumped DOM)"
    info = json.loads(html.unescape(m.group(1)))
    shot = tmp / "index.png"
    height = min(max(int(info["height"]), 900), 16000)
    _run_chromium(exe, tmp / "profile", f"--window-size=1200,{height}",
                  f"--screenshot={shot}", page.as_uri())
    print(f"\nscreenshot of the report: {shot}")
    return {"dom": dom, "info": info, "screenshot": shot, "out": out}


def test_mathml_present_without_errors(rendered: dict) -> None:
    dom = rendered["dom"]
    assert rendered["info"]["maths"] > 10, "expected MathML in the rendered page"
    assert "<merror" not in dom


def test_no_raw_latex_or_piecewise_text_outside_math(rendered: dict) -> None:
    text = _outside_math(rendered["dom"])
    assert not _LATEX.findall(text), f"raw LaTeX outside math: {sorted(set(_LATEX.findall(text)))}"
    for bad in ("Piecewise", "piecewise("):
        assert bad not in text, f"{bad!r} as text outside math"
    leftover = _LATEX.findall(_math_text(rendered["dom"]))
    assert not leftover, f"LaTeX commands left as text inside math: {sorted(set(leftover))}"
    assert "piecewise" not in _math_text(rendered["dom"]).lower()


def test_cites_only_the_repository(rendered: dict) -> None:
    text = _outside_math(rendered["dom"])
    for bad in ("../shared", "MATH.md", "DESIGN.md"):
        assert bad not in text, f"the report cites {bad!r}, outside the repository"
    assert not re.search(r"\b[Ii]ssue #?\d", text), "the report cites an issue number"


def test_no_control_characters(rendered: dict) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in _CONTROL.findall(rendered["dom"])})
    assert not bad, f"control characters in the rendered DOM: {bad}"
    assert not [c for c in rendered["dom"] if c not in "\n\t\r" and unicodedata.category(c) == "Cc"]


def test_every_figure_resolves(rendered: dict) -> None:
    info = rendered["info"]
    assert info["images"] >= 1, "the small report should carry at least one figure"
    assert not info["broken"], f"figures that did not load: {info['broken']}"


def test_nothing_wider_than_the_page(rendered: dict) -> None:
    info = rendered["info"]
    assert info["scrollWidth"] <= info["clientWidth"], (
        f"page scrolls horizontally: {info['scrollWidth']} > {info['clientWidth']} px")
    assert not info["wide"], f"math wider than the page: {info['wide']}"


def test_screenshot_kept(rendered: dict) -> None:
    shot: Path = rendered["screenshot"]
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
