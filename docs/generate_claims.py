"""Regenerate the registry-derived parts of ``docs/claims.md``.

    python docs/generate_claims.py                       # registry fields + derived results
    python docs/generate_claims.py --evidence report/evidence.json   # + what each check compared

Every claim section of ``docs/claims.md`` has a block between ``<!-- BEGIN GENERATED: ID -->``
and ``<!-- END GENERATED: ID -->`` written by this script from the registry (source, kind,
statement, negative control and the sub-check it targets, the names of the derived
results) and, with ``--evidence``, from the evidence JSON of a report or of
``python -m verify check --json`` (what the check compared, each sub-check with its
tolerance and the reason for it).  Everything outside those blocks is hand-written and
kept.  A claim missing from the file gets a new section; a section whose id is no longer
registered is an error.  ``tests/test_docs.py`` checks that the registry fields are up to
date.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "claims.md"
BLOCK = re.compile(r"<!-- BEGIN GENERATED: (\S+) -->\n(.*?)<!-- END GENERATED: \1 -->", re.S)
KINDS = {"theorem": "theorem (a statement the paper proves)",
         "reconstructed": "reconstructed (a statement this project had to reconstruct; "
                          "verified or refuted here)",
         "numerical-evidence": "numerical evidence (the paper reports an observation, "
                               "not a theorem)",
         "convention": "convention (a definition the project fixes; verified to be "
                       "consistent)"}


def _one_line(s: str) -> str:
    return " ".join(str(s).split())


def registry_lines(claim: Any) -> list[str]:
    """The lines of a claim's generated block that come from the registry alone."""
    target = getattr(claim, "negative_target", None)
    neg = _one_line(claim.negative_control_description)
    if target:
        neg += f" (it must break the sub-check *{_one_line(target)}*)"
    return [f"- **Title:** {_one_line(claim.title)}",
            f"- **Source:** {_one_line(claim.source)}",
            f"- **Kind:** {KINDS.get(claim.kind, claim.kind)}",
            f"- **Statement:** {_one_line(claim.statement)}",
            f"- **Negative control:** {neg}"]


def _derived_lines(claim_id: str) -> list[str]:
    try:
        from verify import derived
        results = derived.results(claim_id)
    except Exception as exc:  # a derivation mid-edit: say so, do not stop the others
        return [f"- **Derived results:** (not available: {type(exc).__name__})"]
    names = ", ".join(f"`{k}`" for k in results)
    return [f"- **Derived results** (`verify.derived.results(\"{claim_id}\")`, what the "
            f"check reads and the mutation harness perturbs): {names or 'none'}"]


def _plain(s: str) -> str:
    """Run-time text as Markdown text: brackets escaped (no accidental links)."""
    return _one_line(s).replace("[", "\\[").replace("]", "\\]")


def _evidence_lines(ev: dict[str, Any] | None) -> list[str]:
    if not ev:
        return []
    out = [f"- **Check** ({ev.get('profile', '?')} profile, seed {ev.get('seed', '?')}): "
           f"{_plain(ev.get('compared', ''))}"]
    subs = (ev.get("details") or {}).get("subchecks") or []
    if not subs:
        out.append(f"  - tolerance {ev.get('tolerance')}: {_plain(ev.get('tolerance_reason', ''))}")
    for s in subs:
        out.append(f"  - *{_plain(s.get('name', ''))}*: tolerance {s.get('tolerance'):.3g}, "
                   f"because {_plain(s.get('reason', ''))}")
    return out


def _load_evidence(path: Path | None) -> dict[str, dict[str, Any]]:
    """Evidence per claim id from a report's ``evidence.json`` (``{"claims": [{"id",
    "check"}]}``) or from ``check --json`` (``{"evidence": [rows]}``; first seed kept)."""
    if path is None:
        return {}
    data = json.loads(path.read_text())
    out: dict[str, dict[str, Any]] = {}
    for row in data.get("claims") or []:
        if row.get("check"):
            out.setdefault(row["id"], row["check"])
    for row in data.get("evidence") or []:
        if row.get("claim_id") and not row.get("negative_control") and "compared" in row:
            out.setdefault(row["claim_id"], row)
    return out


def block(claim: Any, evidence: dict[str, Any] | None, derivations: bool = True) -> str:
    lines = registry_lines(claim)
    if derivations:
        lines += _derived_lines(claim.id)
    lines += _evidence_lines(evidence)
    return "\n".join(lines) + "\n"


def regenerate(text: str, claims: list[Any], evidence: dict[str, dict[str, Any]],
               derivations: bool = True) -> str:
    ids = [c.id for c in claims]
    found = [m.group(1) for m in BLOCK.finditer(text)]
    stale = [i for i in found if i not in ids]
    if stale:
        raise SystemExit(f"docs/claims.md has sections for unregistered claims {stale}: "
                         "remove or rename them")
    by_id = {c.id: c for c in claims}
    old = {m.group(1): m.group(2) for m in BLOCK.finditer(text)}

    def repl(m: re.Match) -> str:
        cid = m.group(1)
        ev = evidence.get(cid)
        body = "\n".join(registry_lines(by_id[cid])) + "\n"
        if derivations:
            body += "\n".join(_derived_lines(cid)) + "\n"
        else:  # keep the previously generated derived-results line
            body += "".join(line + "\n" for line in old[cid].splitlines()
                            if line.startswith("- **Derived results**"))
        body += "".join(line + "\n" for line in _evidence_lines(ev))
        if ev is None:  # keep a previously generated check description
            body += "".join(line + "\n" for line in old[cid].splitlines()
                            if line.startswith("- **Check**") or line.startswith("  - "))
        return f"<!-- BEGIN GENERATED: {cid} -->\n{body}<!-- END GENERATED: {cid} -->"

    text = BLOCK.sub(repl, text)
    for c in claims:
        if c.id not in found:
            text = text.rstrip() + (
                f"\n\n### {c.id}\n\n<!-- BEGIN GENERATED: {c.id} -->\n"
                f"{block(c, evidence.get(c.id), derivations)}<!-- END GENERATED: {c.id} -->\n\n"
                "**Derivation.** (to be written)\n\n**Check and tolerance.** (to be written)\n\n"
                "**Known deviations.** none known.\n")
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--evidence", type=Path, help="evidence.json of a report or check --json")
    p.add_argument("--no-derivations", action="store_true",
                   help="do not compute derivations (faster; drops the derived-results line)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from verify.claims import all_claims
    new = regenerate(DOC.read_text(encoding="utf-8"), all_claims(), _load_evidence(args.evidence),
                     derivations=not args.no_derivations)
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
