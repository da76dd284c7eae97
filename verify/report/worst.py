"""The sub-check a summary row shows: the WORST one (the failing one when the claim fails,
else the one closest to or furthest beyond its bound), with its kind and unit.

Shared by ``python -m verify check`` and the report's summary table, so both name what
failed instead of the headline (first) sub-check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from verify._units import UNITS, is_unit
from verify.kit import control_margin, fmt

__all__ = ["Worst", "worst_subcheck", "unit_of", "UNITS", "is_unit"]

_RATE = re.compile(r"% interval .*predicted", re.S)
# "sigma" alone names units and activations (sigma(x, z)); only "k sigma" counts
_SE = re.compile(r"\b(SE|standard errors?)\b|\d\s*sigma\b")


@dataclass(frozen=True)
class Worst:
    """One sub-check's numbers as a summary shows them."""
    name: str
    error: float
    tolerance: float
    passed: bool
    kind: str   # "at most", "at least", "condition" or "rate"
    unit: str   # one of UNITS, "mixed (...)", or "-" when the sub-check does not say
    severity: float = 0.0  # above 1 exactly when the bound is broken

    def cell(self) -> str:
        """``1.0e-03 / 1e-08 (relative, at most)``."""
        return f"{fmt(self.error)} / {fmt(self.tolerance)} ({self.unit}, {self.kind})"


def unit_of(reason: str, name: str = "", stated: str = "") -> str:
    """The unit of a sub-check's error: the one it states (``SubCheck.unit``, set by the
    kit's constructors: compare, rate studies, certified comparisons, drawn instances);
    else read from its reason and name (a rate study's ``|slope - predicted|``, standard
    errors, ulps, relative or absolute); ``-`` when neither says."""
    if isinstance(stated, str) and stated.strip():
        return stated.strip()
    text = f"{name} {reason}"
    if _RATE.search(reason):
        return "|slope - predicted|"
    if _SE.search(text):
        return "SE"
    low = text.lower()
    if "relative" in low or "rtol" in low:
        return "relative"
    if "absolute" in low or "atol" in low:
        return "absolute"
    if re.search(r"\bulps?\b", low):
        return "ulps"
    return "-"


def _subcheck_dicts(ev: Any) -> list[dict[str, Any]]:
    details = getattr(ev, "details", None) or {}
    return [d for d in (details.get("subchecks") or [])
            if isinstance(d, dict) and "error" in d and "tolerance" in d]


def worst_subcheck(ev: Any) -> Worst:
    """The worst sub-check of an evidence (:func:`verify.kit.control_margin` with no
    target: a failing one first, then the one furthest beyond its bound); an evidence
    without sub-checks gives its headline, named by what it compared."""
    m = control_margin(ev, "")
    subs = _subcheck_dicts(ev)
    match = next((d for d in subs if str(d.get("name", "")) == m.name), None)
    reason = (str(match.get("reason", "")) if match is not None
              else str(getattr(ev, "tolerance_reason", "") or ""))
    unit = unit_of(reason, m.name or "", str((match or {}).get("unit", "") or ""))
    kind = "rate" if unit == "|slope - predicted|" else m.sense
    name = m.name or str(getattr(ev, "compared", "") or "headline")
    return Worst(name, m.error, m.tolerance, m.passed, kind, unit, m.severity())
