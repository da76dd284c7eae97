"""The derivation report: ``python -m verify report`` (the project's main job).

Writes ``DIR/report.md`` (Markdown, LaTeX math), ``DIR/index.html`` (self-contained:
MathML from SymPy's printer for derived expressions, latex2mathml for the hand-written
statements, figures embedded as data URIs), ``DIR/figures/*.png`` and
``DIR/evidence.json`` (the full evidence, with run times).  Everything is built in a
temporary sibling directory and moved into place at the end (atomic); ``report.md`` and
``index.html`` contain no timings, so two runs with the same seed are byte-identical.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from verify.claims import Claim, Evidence, all_claims, get
from verify.claims._core import _jsonable
from verify.report.render import render_html, render_markdown

__all__ = ["ClaimSection", "build_report", "collect_sections"]


@dataclass
class ClaimSection:
    """Everything the renderers need about one claim."""
    claim: Claim
    evidence: Evidence | None
    negative: Evidence | None
    figures: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None  # an exception raised while deriving/checking


def _progress(stream: TextIO | None, i: int, n: int, label: str) -> None:
    if stream is None:
        return
    width = 24
    done = int(width * i / max(n, 1))
    stream.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label:<40}")
    if i == n:
        stream.write("\n")
    stream.flush()


def collect_sections(claims: list[Claim], profile: str, seed: int, figdir: Path,
                     progress: TextIO | None = None) -> list[ClaimSection]:
    """Run derivation, check, negative control and figures of every claim."""
    sections = []
    for i, claim in enumerate(claims):
        _progress(progress, i, len(claims), claim.id)
        sec = ClaimSection(claim, None, None)
        try:
            sec.evidence = claim.run(profile, seed)
            sec.negative = claim.run(profile, seed, negative_control=True)
            if claim.figures is not None:
                sec.figures = list(claim.figures(sec.evidence, figdir))
        except Exception as exc:  # a broken claim is reported, not fatal
            sec.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        sections.append(sec)
    _progress(progress, len(claims), len(claims), "done")
    return sections


def _performance(outdir: Path) -> tuple[str, list[tuple[str, str]]] | None:
    """The Performance section from the committed benchmark results, if present."""
    try:
        from verify import bench
    except ImportError:
        return None
    if not hasattr(bench, "performance_section"):
        return None
    root = Path(__file__).resolve().parents[2]
    for cand in (Path.cwd() / "benchmarks" / "results.json", root / "benchmarks" / "results.json"):
        if cand.is_file():
            data = json.loads(cand.read_text())
            return bench.performance_section(data, outdir)
    return None


def build_report(out: str | Path = "report", profile: str = "quick", seed: int = 0,
                 only: list[str] | None = None, progress: TextIO | None = sys.stderr,
                 ) -> dict[str, object]:
    """Regenerate the report into ``out``; returns a summary dict (paths, pass counts)."""
    claims = [get(c) for c in only] if only else all_claims()
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp", dir=out.parent))
    try:
        figdir = staging / "figures"
        figdir.mkdir()
        t0 = time.perf_counter()
        sections = collect_sections(claims, profile, seed, figdir, progress)
        perf = _performance(figdir)
        meta = {"profile": profile, "seed": seed}
        md = render_markdown(sections, meta, perf)
        (staging / "report.md").write_text(md, encoding="utf-8")
        html = render_html(sections, meta, perf, figdir)
        (staging / "index.html").write_text(html, encoding="utf-8")
        evidence = {"profile": profile, "seed": seed,
                    "seconds": time.perf_counter() - t0,
                    "claims": [{"id": s.claim.id,
                                "check": s.evidence.to_json() if s.evidence else None,
                                "negative_control": s.negative.to_json() if s.negative else None,
                                "error": s.error} for s in sections]}
        (staging / "evidence.json").write_text(json.dumps(_jsonable(evidence), indent=1))
        from verify._atomic import replace_dir
        replace_dir(staging, out)
    except BaseException:
        import shutil
        shutil.rmtree(staging, ignore_errors=True)
        raise
    ok = sum(1 for s in sections if s.evidence and s.evidence.passed)
    neg_ok = sum(1 for s in sections if s.negative and not s.negative.passed)
    return {"out": str(out), "claims": len(sections), "verified": ok,
            "negative_controls_failing": neg_ok,
            "figures": sorted(p.name for p in (out / "figures").glob("*.png"))}
