"""The derivation report: ``python -m verify report`` (the project's main job).

Writes ``DIR/report.md`` (Markdown, LaTeX math), ``DIR/index.html`` (self-contained:
MathML from SymPy's printer for derived expressions, latex2mathml for the hand-written
statements, figures embedded as data URIs), ``DIR/figures/*.png`` and
``DIR/evidence.json`` (the full evidence, with run times).  Everything is built in a
staging directory next to DIR and moved into place at the end (``verify._atomic``: a
directory the report did not write is never replaced); ``report.md`` and ``index.html``
contain no timings, so two runs with the same seeds are byte-identical, whether the
claims ran in this process or on a Dask cluster (``verify.runner``).
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from verify.claims import Claim, Evidence, all_claims, get
from verify.kit import jsonable as _jsonable
from verify.report.render import render_html, render_markdown
from verify.runner import Executor, Task, TaskResult, format_seeds

__all__ = ["ClaimSection", "SeedFailure", "build_report", "collect_sections"]


@dataclass
class SeedFailure:
    """A run at one seed that raised instead of returning evidence."""
    claim_id: str
    seed: int
    exception: str
    negative_control: bool = False
    passed: bool = False


@dataclass
class ClaimSection:
    """Everything the renderers need about one claim.  ``evidence``/``negative`` are the
    runs at the first seed (shown in full); with several seeds, ``seed_evidence`` and
    ``negative_seed_evidence`` hold one entry per seed (an :class:`Evidence`, or a
    :class:`SeedFailure` when that run raised), in seed order."""
    claim: Claim
    evidence: Evidence | None
    negative: Evidence | None
    figures: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None  # an exception raised while deriving/checking
    seed_evidence: list[Evidence | SeedFailure] = field(default_factory=list)
    negative_seed_evidence: list[Evidence | SeedFailure] = field(default_factory=list)

    @property
    def passed_every_seed(self) -> bool:
        runs = self.seed_evidence or ([self.evidence] if self.evidence else [])
        return self.error is None and bool(runs) and all(r.passed for r in runs)

    @property
    def negative_failed_every_seed(self) -> bool:
        runs = self.negative_seed_evidence or ([self.negative] if self.negative else [])
        return self.error is None and bool(runs) and all(
            isinstance(r, Evidence) and not r.passed for r in runs)


def _tasks(claims: Sequence[Claim], profile: str, seeds: Sequence[int], examples: int | None,
           timeout: float | None) -> list[Task]:
    """Per claim and seed: the check (figures at the first seed), then the control."""
    return [Task("claim", c.id, profile, s, negative_control=neg, examples=examples,
                 figures=(not neg and j == 0), timeout=timeout)
            for c in claims for j, s in enumerate(seeds) for neg in (False, True)]


def _seed_entry(r: TaskResult) -> Evidence | SeedFailure:
    if r.evidence is not None:
        return r.evidence
    return SeedFailure(r.task.name, r.task.seed, r.error or "error", r.task.negative_control)


def collect_sections(claims: list[Claim], profile: str = "quick", seeds: Sequence[int] = (0,),
                     figdir: Path | None = None, executor: Executor | None = None,
                     examples: int | None = None, timeout: float | None = None,
                     progress: TextIO | None = None,
                     on_task: Callable[[int, int, TaskResult], None] | None = None,
                     ) -> list[ClaimSection]:
    """Run check, negative control (every seed) and figures (first seed) of every claim;
    figure files are written into ``figdir``.  ``progress`` gets one line per finished
    claim; ``on_task(i, n, result)`` is called per finished task."""
    seeds = list(seeds)
    tasks = _tasks(claims, profile, seeds, examples, timeout)
    per_claim = 2 * len(seeds)
    done = [0] * len(claims)
    finished = [0]

    def on_result(i: int, r: TaskResult) -> None:
        k = i // per_claim
        done[k] += 1
        if on_task is not None:
            on_task(i, len(tasks), r)
        if done[k] == per_claim and progress is not None:
            finished[0] += 1
            bad = "" if r.error is None else "  (error)"
            progress.write(f"[{finished[0]}/{len(claims)}] {claims[k].id} done{bad}\n")
            progress.flush()

    ex = executor if executor is not None else Executor()
    results = ex.run(tasks, on_result=on_result)
    sections = []
    for k, claim in enumerate(claims):
        rs = results[k * per_claim:(k + 1) * per_claim]
        checks, negs = rs[0::2], rs[1::2]
        sec = ClaimSection(claim, checks[0].evidence, negs[0].evidence)
        first_error = checks[0].error or negs[0].error
        if first_error is not None:
            sec.error = first_error
        else:
            sec.figures = list(checks[0].figures)
            if figdir is not None:
                for name, data in checks[0].files.items():
                    (figdir / name).parent.mkdir(parents=True, exist_ok=True)
                    (figdir / name).write_bytes(data)
        if len(seeds) > 1:
            sec.seed_evidence = [_seed_entry(r) for r in checks]
            sec.negative_seed_evidence = [_seed_entry(r) for r in negs]
        sections.append(sec)
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


def _seed_json(entries: list[Evidence | SeedFailure]) -> list[dict[str, Any]]:
    return [e.to_json() if isinstance(e, Evidence) else
            {"claim_id": e.claim_id, "seed": e.seed, "passed": False, "exception": e.exception}
            for e in entries]


def build_report(out: str | Path = "report", profile: str = "quick", seed: int = 0,
                 only: list[str] | None = None, progress: TextIO | None = sys.stderr, *,
                 seeds: Sequence[int] | None = None, executor: Executor | None = None,
                 examples: int | None = None, timeout: float | None = None,
                 on_task: Callable[[int, int, TaskResult], None] | None = None,
                 ) -> dict[str, object]:
    """Regenerate the report into ``out`` (checked with ``validate_report_out`` first);
    returns a summary dict (paths, pass counts: ``verified`` counts every claim whose check
    passed at every seed, ``observed`` those of them that are numerical evidence, shown
    as "observed", ``failed`` the others).  With ``only``, no Performance section.  ``seeds`` (default ``[seed]``): a claim
    counts as verified when its check passes at every seed and its negative control fails
    at every seed."""
    from verify._atomic import make_staging, replace_dir
    from verify._paths import validate_report_out
    claims = [get(c) for c in only] if only else all_claims()
    seeds = sorted(set(seeds)) if seeds is not None else [seed]
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    out = validate_report_out(out, "out")
    staging = make_staging(out)
    try:
        figdir = staging / "figures"
        figdir.mkdir()
        t0 = time.perf_counter()
        sections = collect_sections(claims, profile, seeds, figdir, executor, examples, timeout,
                                    progress, on_task)
        perf = None if only else _performance(figdir)  # --only: the named claims only
        meta: dict[str, Any] = {"profile": profile, "seed": seeds[0]}
        if len(seeds) > 1:
            meta["seeds"] = format_seeds(seeds)
        md = render_markdown(sections, meta, perf)
        (staging / "report.md").write_text(md, encoding="utf-8")
        html = render_html(sections, meta, perf, figdir)
        (staging / "index.html").write_text(html, encoding="utf-8")
        evidence = {"profile": profile, "seeds": seeds,
                    "seconds": time.perf_counter() - t0,
                    "claims": [{"id": s.claim.id,
                                "check": s.evidence.to_json() if s.evidence else None,
                                "negative_control": s.negative.to_json() if s.negative else None,
                                "error": s.error,
                                **({"seeds": _seed_json(s.seed_evidence),
                                    "negative_control_seeds": _seed_json(s.negative_seed_evidence)}
                                   if s.seed_evidence else {})} for s in sections]}
        (staging / "evidence.json").write_text(json.dumps(_jsonable(evidence), indent=1))
        replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    ok = sum(1 for s in sections if s.passed_every_seed)
    neg_ok = sum(1 for s in sections if s.negative_failed_every_seed)
    observed = sum(1 for s in sections
                   if s.passed_every_seed and s.claim.kind == "numerical-evidence")
    return {"out": str(out), "claims": len(sections), "verified": ok,
            "observed": observed, "failed": len(sections) - ok,
            "negative_controls_failing": neg_ok, "seeds": format_seeds(seeds),
            "figures": sorted(p.name for p in (out / "figures").glob("*.png"))}
