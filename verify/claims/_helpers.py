"""Small helpers shared by claim modules (one place for each idea)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from verify.claims._core import Outcome, Table

__all__ = ["SubCheck", "combine", "fmt", "loglog_slope"]


@dataclass
class SubCheck:
    """One condition of a multi-part check: measured ``error`` vs ``tolerance``, and why."""
    name: str
    error: float
    tolerance: float
    reason: str
    passed: bool | None = None

    def ok(self) -> bool:
        if self.passed is not None:
            return bool(self.passed)
        return bool(np.isfinite(self.error) and self.error <= self.tolerance)


def combine(compared: str, subchecks: list[SubCheck], *, headline: int = 0,
            details: dict[str, Any] | None = None, tables: list[Table] | None = None,
            notes: list[str] | None = None, artifacts: dict[str, Any] | None = None) -> Outcome:
    """An :class:`Outcome` that passes only if every sub-check passes; the headline error
    and tolerance are those of ``subchecks[headline]``; all sub-checks go into the first
    table and into ``details["subchecks"]``."""
    table = Table("Sub-checks", ["check", "measured error", "tolerance", "why this tolerance", "verdict"],
                  [[s.name, fmt(s.error), fmt(s.tolerance), s.reason, "pass" if s.ok() else "FAIL"]
                   for s in subchecks])
    det = dict(details or {})
    det["subchecks"] = [{"name": s.name, "error": s.error, "tolerance": s.tolerance,
                         "reason": s.reason, "passed": s.ok()} for s in subchecks]
    h = subchecks[headline]
    return Outcome(compared=compared, error=h.error, tolerance=h.tolerance,
                   tolerance_reason=h.reason, details=det, tables=[table] + list(tables or []),
                   notes=list(notes or []), passed=all(s.ok() for s in subchecks),
                   artifacts=dict(artifacts or {}))


def fmt(x: Any, digits: int = 3) -> str:
    """Compact, deterministic number formatting for tables."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not np.isfinite(f):
        return str(f)
    if f == 0:
        return "0"
    if 1e-3 <= abs(f) < 1e5:
        return f"{f:.{digits + 1}g}"
    return f"{f:.{digits - 1}e}"


def loglog_slope(x: Any, y: Any) -> float:
    """Least-squares slope of log(y) against log(x): the measured rate of a power law
    (e.g. -1/2 for an O(m^-1/2) Monte Carlo error)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size < 2 or x.shape != y.shape or np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("loglog_slope needs >= 2 matching positive values of x and y")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
