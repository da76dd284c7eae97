"""The registry of claims.  Every claim id of docs/claims.md maps to exactly one :class:`Claim`.

Claim modules are the non-underscore modules of this package; each defines ``CLAIMS``
(a list of :class:`Claim`).  Adding a claim = adding it to such a list.  Installed packages
add theirs through the entry-point group ``meanfield_verify.claims`` (docs/adding-a-claim.md):
the entry point's name is their namespace, and their ids read ``<namespace>.<id>``.

>>> from verify import claims
>>> claims.get("H1f").title
'The Gamma-function constant alpha(d_H)'
"""
from __future__ import annotations

import difflib
import re

from verify._discovery import PluginError, discover, external_claim_modules
from verify._claim import (PROFILES, Claim, Derivation, Evidence, Outcome,
                                 RunContext, Step, Table)

__all__ = ["Claim", "Derivation", "Evidence", "Outcome", "RunContext", "Step", "Table",
           "PROFILES", "all_claims", "get", "run", "UnknownClaimError", "PluginError",
           "sort_key"]

_PAPER_ORDER = {"W": 0, "H": 1, "M": 2}
_REGISTRY: dict[str, Claim] | None = None


class UnknownClaimError(KeyError):
    """An id that names no claim; ``suggestions`` holds the closest ids."""

    def __init__(self, claim_id: str, suggestions: list[str]):
        self.claim_id, self.suggestions = claim_id, suggestions
        hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
        super().__init__(f"unknown claim id {claim_id!r}{hint} (see `python -m verify list`)")

    def __str__(self) -> str:
        return self.args[0]


def sort_key(claim_id: str) -> tuple:
    """Papers in paper order (W, H, M), then section and letter; installed packages' claims
    (``<namespace>.<id>``) after ours, by namespace and id."""
    if "." in claim_id:
        return (10, claim_id)
    m = re.match(r"([A-Z])(\d+)([a-z]*)", claim_id)
    if not m:
        return (9, claim_id)
    return (_PAPER_ORDER.get(m.group(1), 9), int(m.group(2)), m.group(3))


def _load() -> dict[str, Claim]:
    global _REGISTRY
    if _REGISTRY is None:
        reg = discover(__name__, __path__, "CLAIMS", key=lambda c: c.id)
        reg.update(_external_claims(reg))
        _REGISTRY = dict(sorted(reg.items(), key=lambda kv: sort_key(kv[0])))
    return _REGISTRY


_NAMESPACED_ID = re.compile(r"[A-Za-z0-9_]+")


def _external_claims(ours: dict[str, Claim]) -> dict[str, Claim]:
    """The claims of installed packages (entry-point group ``meanfield_verify.claims``),
    each id checked against its package's namespace."""
    found: dict[str, Claim] = {}
    for namespace, module in external_claim_modules():
        listed = getattr(module, "CLAIMS", None)
        if not isinstance(listed, (list, tuple)) or not listed:
            raise PluginError(f"claims package {namespace!r} ({module.__name__}) must define a "
                              "non-empty list CLAIMS of verify.kit.Claim")
        for c in listed:
            if not isinstance(c, Claim):
                raise PluginError(f"{module.__name__}.CLAIMS holds {type(c).__name__}, not a "
                                  "verify.kit.Claim")
            prefix, dot, local = c.id.partition(".")
            if prefix != namespace or not dot or not _NAMESPACED_ID.fullmatch(local):
                raise PluginError(f"claim id {c.id!r} from {module.__name__} must read "
                                  f"'{namespace}.<id>' (letters, digits, _) in its namespace")
            if c.id in found or c.id in ours:
                raise PluginError(f"claim id {c.id!r} is defined twice")
            found[c.id] = c
    return found


def all_claims() -> list[Claim]:
    """Every registered claim, in paper order."""
    return list(_load().values())


def get(claim_id: str) -> Claim:
    """The claim with this id, matched case-insensitively (``h1f`` is ``H1f``; the command
    line says so when the case differs); :class:`UnknownClaimError` otherwise, with the
    closest ids by case-folded match.

    >>> get("h1F").id
    'H1f'
    """
    reg = _load()
    if claim_id in reg:
        return reg[claim_id]
    text = str(claim_id)
    folded = {k.casefold(): k for k in reg}
    if text.casefold() in folded:
        return reg[folded[text.casefold()]]
    close = difflib.get_close_matches(text.casefold(), list(folded), n=3, cutoff=0.3)
    raise UnknownClaimError(text, [folded[k] for k in close])


def run(claim_id: str, profile: str = "quick", seed: int = 0, *,
        negative_control: bool = False) -> Evidence:
    """Run the claim's derivation and check (or its negative control) and return the
    :class:`Evidence`: ``claim_id``, ``passed``, ``error``, ``tolerance``, ``details``,
    ``seconds`` and more."""
    return get(claim_id).run(profile, seed, negative_control=negative_control)
