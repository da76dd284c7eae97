"""The project explains itself: docs/ covers every claim, its examples run, its links resolve,
docstring examples run as doctests, and nothing points outside the repository."""
from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
REQUIRED_DOCS = ["conventions.md", "claims.md", "errata.md", "architecture.md",
                 "adding-a-claim.md"]


def _modules() -> list[str]:
    names = []
    for pkg in ("derivations", "numerics", "verify"):
        mod = importlib.import_module(pkg)
        names.append(pkg)
        for info in pkgutil.walk_packages(mod.__path__, prefix=f"{pkg}.", onerror=lambda _n: None):
            if info.name.rsplit(".", 1)[-1] == "__main__":
                continue  # running it would start the command line
            names.append(info.name)
    return sorted(names)


# ---------------------------------------------------------------------------- doctests
@pytest.mark.parametrize("module", _modules())
def test_docstring_examples(module: str) -> None:
    """Every ``>>>`` example in the docstrings of derivations/, numerics/ and verify/ runs."""
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    tests = [t for t in finder.find(mod, module) if t.examples]
    for t in tests:
        runner.run(t, out=lambda s: None)
    failures = runner.summarize(verbose=False).failed if tests else 0
    if failures:
        report = []
        runner2 = doctest.DocTestRunner(optionflags=FLAGS)
        for t in tests:
            runner2.run(t, out=report.append)
        pytest.fail(f"{failures} docstring example(s) failed in {module}:\n" + "".join(report)[-6000:])


_EXAMPLE = re.compile(r"<!-- example -->\s*\n```python\n(.*?)```", re.S)


def _doc_examples() -> list[tuple[str, int, str]]:
    out = []
    for md in sorted(DOCS.glob("*.md")):
        text = md.read_text(encoding="utf-8")
        for m in _EXAMPLE.finditer(text):
            out.append((md.name, text[:m.start()].count("\n") + 2, m.group(1)))
    return out


@pytest.mark.parametrize("doc,line,code", _doc_examples(),
                         ids=[f"{d}:{n}" for d, n, _ in _doc_examples()])
def test_docs_examples(doc: str, line: int, code: str) -> None:
    """The Python blocks of docs/*.md marked ``<!-- example -->`` run as doctests."""
    test = doctest.DocTestParser().get_doctest(code, {}, f"{doc}:{line}", doc, line)
    assert test.examples, f"{doc}:{line}: an example block without >>> lines"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)


def test_docs_have_runnable_examples() -> None:
    assert len(_doc_examples()) >= 4


# ---------------------------------------------------------------------------- coverage
def _registry_ids() -> list[str]:
    from verify.claims import all_claims
    return [c.id for c in all_claims()]


def test_required_docs_exist() -> None:
    missing = [n for n in REQUIRED_DOCS if not (DOCS / n).is_file()]
    assert not missing, f"missing docs: {missing}"


def test_claims_md_has_a_section_for_every_listed_claim() -> None:
    """docs/claims.md has one section per claim id, the same ids as `python -m verify list`."""
    out = subprocess.run([sys.executable, "-m", "verify", "list"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    listed = [line.split()[0] for line in out.splitlines() if re.match(r"^[A-Z]\d[a-z]\b", line)]
    assert listed == _registry_ids()
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### ([A-Z]\d[a-z])\b", text, flags=re.M)
    assert sections == listed, ("docs/claims.md sections differ from `python -m verify list`: "
                                f"missing {sorted(set(listed) - set(sections))}, "
                                f"extra {sorted(set(sections) - set(listed))}")
    for cid in listed:
        body = text.split(f"### {cid}", 1)[1].split("\n### ", 1)[0]
        for part in ("**Derivation.**", "**Check and tolerance.**", "**Known deviations.**"):
            assert part in body and "(to be written)" not in body.split(part, 1)[1][:40], (
                f"docs/claims.md: {cid} lacks a written {part}")


def test_claims_md_generated_blocks_are_up_to_date() -> None:
    """The registry fields (title, source, kind, statement, negative control) in
    docs/claims.md match the registry: regenerate with `python docs/generate_claims.py`."""
    sys.path.insert(0, str(DOCS))
    try:
        import generate_claims
    finally:
        sys.path.remove(str(DOCS))
    from verify.claims import all_claims
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    blocks = {m.group(1): m.group(2) for m in generate_claims.BLOCK.finditer(text)}
    stale = []
    for c in all_claims():
        have = blocks.get(c.id, "")
        stale += [f"{c.id}: {line[:80]}" for line in generate_claims.registry_lines(c)
                  if line not in have.splitlines()]
    assert not stale, ("docs/claims.md is out of date with the registry; run "
                       "`python docs/generate_claims.py`:\n" + "\n".join(stale))


def test_every_claim_id_is_mentioned_in_docs() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    missing = [cid for cid in _registry_ids() if cid not in text]
    assert not missing, f"claim ids not mentioned in docs/: {missing}"


@pytest.mark.parametrize("entry", [
    "u x_j + v = 0", "4.4", "(1 + x')/16", "particle-plane", "sliding", "orbit-coupled",
    "transversally", "Further findings"])
def test_errata_entries(entry: str) -> None:
    """docs/errata.md carries the known findings, each with a command to reproduce it."""
    text = (DOCS / "errata.md").read_text(encoding="utf-8")
    assert entry in text
    sections = re.split(r"\n### ", text)[1:]
    for sec in sections:
        assert "**Reproduce.**" in sec or sec.startswith("Further"), sec.splitlines()[0]


# ---------------------------------------------------------------------------- links, paths
_LINK = re.compile(r"(?<!\\)\]\(([^)#\s]+)(#[^)]*)?\)")


@pytest.mark.parametrize("path", [README, *sorted(DOCS.glob("*.md"))],
                         ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    text = re.sub(r"\$[^$]*\$", " ", path.read_text(encoding="utf-8"))  # not inside math
    text = re.sub(r"`[^`]*`", " ", text.replace("\\]", " "))  # no link in code or after \]
    broken = [t for t, _ in _LINK.findall(text)
              if not re.match(r"^[a-z]+:", t) and not (path.parent / t).exists()]
    assert not broken, f"{path.name}: links to missing files {broken}"


def test_readme_links_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    for name in REQUIRED_DOCS:
        assert f"docs/{name}" in text, f"README.md does not link docs/{name}"


_OUTSIDE = re.compile(r"\.\./shared|/work/|MATH\.md|DESIGN\.md|seeds/0\d\d_")


@pytest.mark.parametrize("path", [README, *sorted(DOCS.glob("*.md")),
                                  ROOT / "verify" / "report" / "render.py"],
                         ids=lambda p: p.name)
def test_no_reference_outside_the_repository(path: Path) -> None:
    """A user has only the repository: docs, README and the report cite files inside it."""
    hits = [f"{path.name}:{i}: {line.strip()[:100]}"
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if _OUTSIDE.search(line)]
    assert not hits, "\n".join(hits)


def test_no_issue_numbers_in_docs() -> None:
    hits = [f"{p.name}: {m.group(0)}" for p in [README, *DOCS.glob("*.md")]
            for m in re.finditer(r"\b[Ii]ssue #?\d+\b", p.read_text(encoding="utf-8"))]
    assert not hits, hits


def test_readme_formulas_example_runs_and_shows_50_digits() -> None:
    """The README's "Verified formulas" block is a doctest that passes (each line shows its
    value), and its "to 50 digits" line shows 50 digits."""
    import doctest
    text = README.read_text(encoding="utf-8")
    m = re.search(r"### Verified formulas\s*```pycon\n(.*?)```", text, re.S)
    assert m, "README.md lost its Verified formulas example"
    code = m.group(1)
    test = doctest.DocTestParser().get_doctest(code, {}, "README.md", "README.md", 0)
    assert len(test.examples) >= 5 and all(e.want.strip() or "import" in e.source
                                           for e in test.examples), \
        "every non-import line of the example shows its value"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{runner.failures} README example line(s) show other values"
    line = next(e for e in test.examples if "50 digits" in e.source)
    shown = line.want.strip()
    assert len(shown.replace(".", "").lstrip("0")) >= 50, shown
    assert shown.startswith("5.3333333333333333333333333333333333333333333333333"), shown