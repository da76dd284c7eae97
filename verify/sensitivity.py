"""The sensitivity column of the report: per claim, the smallest relative perturbation
``e -> e (1 + eps) + eps`` of its derived results (and ``(1 + eps)`` of its formulas'
outputs) that its check catches by measurement, from the mutation harness.

The numbers live in a committed JSON file (``verify/data/sensitivity.json``), written by
``python -m verify mutate --json-sensitivity verify/data/sensitivity.json`` (bisection over
``eps = 1e-1 .. 1e-14``).  Each entry is keyed by a hash of the claim's derived results
(:func:`results_hash`, a SHA-256 of their ``srepr``): when a derivation changes, its entry
shows as ``stale`` until the file is regenerated.

An installed package's claims (``<namespace>.<id>``) keep theirs in the package, in
``sensitivity.json`` beside its top-level ``__init__.py`` (:func:`package_file`), written by
``python -m verify mutate NS.ID --json-sensitivity <package dir>/sensitivity.json``.
An entry may name the sub-check that limits the sensitivity (``"limited_by"``); the report
shows it.

>>> from verify import sensitivity
>>> isinstance(sensitivity.describe("W2a"), str)
True
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Sequence

import sympy as sp

from verify import derived

__all__ = ["DATA_FILE", "package_file", "results_hash", "load", "update", "describe", "stale_entries",
           "missing_entries"]

DATA_FILE = Path(__file__).with_name("data") / "sensitivity.json"
_FORMAT = 1


def _canonical(obj: Any) -> str:
    """A process-independent text of derived results: ``srepr`` of SymPy objects, dicts
    sorted by key, containers with their type."""
    if isinstance(obj, dict):
        items = sorted(((repr(k), _canonical(v)) for k, v in obj.items()))
        return "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
    if isinstance(obj, (list, tuple)) and not isinstance(obj, sp.Basic):
        return f"{type(obj).__name__}[" + ",".join(_canonical(v) for v in obj) + "]"
    if isinstance(obj, (sp.Basic, sp.MatrixBase)):
        return sp.srepr(obj)
    return repr(obj)


def _number_dummies(text: str) -> str:
    """Dummy indices depend on what the process built before; number them by appearance."""
    seen: dict[str, int] = {}
    return re.sub(r"dummy_index=(\d+)",
                  lambda m: f"dummy_index={seen.setdefault(m.group(1), len(seen))}", text)


def results_hash(claim_id: str) -> str:
    """SHA-256 (first 16 hex digits) of the claim's derived results."""
    text = _number_dummies(_canonical(derived.results(claim_id)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load(path: str | Path | None = None) -> dict[str, Any]:
    """The sensitivity file as a dict (``{"format": 1, "claims": {id: entry}}``); an
    empty one when the file does not exist."""
    p = Path(path) if path is not None else DATA_FILE
    if not p.is_file():
        return {"format": _FORMAT, "claims": {}}
    data = json.loads(p.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("claims"), dict):
        raise ValueError(f"{p} is not a sensitivity file (no 'claims' table); regenerate it "
                         "with python -m verify mutate --json-sensitivity " + str(p))
    return data


def update(path: str | Path, rows: Sequence[dict[str, Any]], *, profile: str,
           seed: int) -> None:
    """Merge the per-claim rows of :func:`verify.mutate.summarize` (bisection mode) into
    the file at ``path`` (other claims' entries are kept)."""
    from verify._atomic import atomic_write_bytes
    data = load(path)
    for row in rows:
        cid = row["claim"]
        data["claims"][cid] = {
            "hash": results_hash(cid), "eps": row.get("sensitivity"),
            "derived": row["derived"], "formula": row["formula"],
            "raised": row.get("raised", 0), "not_caught": list(row.get("missed", [])),
            "profile": profile, "seed": seed,
            **({"limited_by": row["limited_by"]} if row.get("limited_by") else {})}
    data["format"] = _FORMAT
    data["claims"] = dict(sorted(data["claims"].items()))
    atomic_write_bytes(str(path), (json.dumps(data, indent=1, sort_keys=False) + "\n").encode())


def package_file(claim_id: str) -> Path | None:
    """The sensitivity file of an installed package's claim ``<namespace>.<id>``:
    ``sensitivity.json`` in the directory of the package that defines its check; ``None``
    for our own claims (they use :data:`DATA_FILE`) or when the package is not found."""
    if "." not in claim_id:
        return None
    import importlib
    import sys
    from verify.claims import UnknownClaimError, get
    try:
        module = getattr(get(claim_id).check, "__module__", None)
    except UnknownClaimError:
        return None
    top = (module or "").split(".")[0]
    try:
        mod = sys.modules.get(top) or importlib.import_module(top)
    except ImportError:
        return None
    origin = getattr(mod, "__file__", None)
    return Path(origin).with_name("sensitivity.json") if origin else None


def describe(claim_id: str, path: str | Path | None = None) -> str:
    """For the report: the claim's sensitivity as ``"1e-08"`` (with ``", limited by NAME"``
    when the entry names the limiting sub-check); ``"stale"`` when its derivation changed
    since the file was written; ``"not caught"`` when one of its mutants is not caught at
    eps = 0.1; ``"-"`` when the file has no entry.  An installed package's claim is read
    from its :func:`package_file` unless ``path`` is given."""
    if path is None:
        path = package_file(claim_id)
    entry = load(path)["claims"].get(claim_id)
    if entry is None:
        return "-"
    if entry.get("hash") != results_hash(claim_id):
        return "stale"
    eps = entry.get("eps")
    if eps is None:
        return "not caught"
    limit = entry.get("limited_by")
    return f"{float(eps):.0e}" + (f", limited by {limit}" if limit else "")


def stale_entries(path: str | Path | None = None) -> list[str]:
    """Ids whose entry no longer matches the claim's derived results (or whose claim no
    longer has a derivation)."""
    known = set(derived.known_ids())
    return [cid for cid, e in load(path)["claims"].items()
            if cid not in known or e.get("hash") != results_hash(cid)]


def missing_entries(path: str | Path | None = None) -> list[str]:
    """Registered claims without an entry."""
    from verify.claims import all_claims
    have = load(path)["claims"]
    return [c.id for c in all_claims() if c.id not in have]
