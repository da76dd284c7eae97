"""The public kit for writing a claim: everything a claim author needs, ours or a user's.

A claim pairs a SymPy derivation with an independent numeric check and a negative control
(docs/adding-a-claim.md walks through one, in a package of your own).  Import from here,
never from the private modules behind it (``verify._claim``, ``verify._subchecks``):

- declaration: :class:`Claim`, :class:`Derivation`, :class:`Step`;
- the run: :class:`RunContext` (``ctx.profile``, ``ctx.seed``, ``ctx.rng(name)``,
  ``ctx.derivation()``, ``ctx.n_examples(quick, full)``), :class:`Outcome`,
  :class:`Evidence`, :class:`Table`;
- sub-checks: :class:`SubCheck`, :func:`combine`, the comparator :func:`compare`,
  :func:`for_all_instances` (instances drawn from Hypothesis, seeded from the run);
- derived results: :func:`derived_results` and :func:`lambdified` (cached per mutation
  generation, so the mutation harness's perturbations reach your check);
- fits and formatting: :func:`loglog_slope`, :func:`fmt`, :func:`jsonable`;
- verdicts: :class:`Margin`, :func:`margin`, :func:`control_margin` (how far a sub-check
  lies beyond its bound, in the direction of its verdict);
- runs: :func:`without_local_constants` (seed-only Hypothesis draws) and
  :class:`no_shrinking` (report the first failing instance unshrunk);
- figures: :func:`new_figure`, :func:`save_figure` (matplotlib, loaded on first use).

>>> import numpy as np
>>> sc = compare("sin vs its series", np.sin(0.1), 0.1 - 0.1**3 / 6 + 0.1**5 / 120,
...              rtol=1e-9, reason="series remainder x^7/5040 < 2e-11 relative")
>>> sc.ok(), sc.tolerance
(True, 1e-09)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from derivations.base import Derivation, Step
from verify._claim import Claim, Evidence, Outcome, RunContext, Table
from verify._claim import jsonable
from verify._subchecks import (Margin, SubCheck, combine, control_margin, fmt,
                                    for_all_instances, loglog_slope, margin, no_shrinking,
                                    without_local_constants)
from verify.derived import lambdified
from verify.derived import results as derived_results

__all__ = ["Claim", "Derivation", "Step", "RunContext", "Outcome", "Evidence", "Table",
           "SubCheck", "combine", "compare", "for_all_instances", "derived_results", "lambdified",
           "loglog_slope", "fmt",
           "jsonable", "Margin", "margin", "control_margin", "without_local_constants",
           "no_shrinking", "new_figure", "save_figure"]


def __getattr__(name: str) -> Any:
    # The figure helpers import matplotlib: only when a claim draws.
    if name in ("new_figure", "save_figure"):
        from verify import plotting
        return getattr(plotting, name)
    raise AttributeError(f"module 'verify.kit' has no attribute {name!r}")


def compare(name: str, value: Any, reference: Any, *, rtol: float, atol: float = 0.0,
            reason: str) -> SubCheck:
    """One sub-check comparing ``value`` with ``reference`` elementwise (broadcast), in the
    style of scipy's ``assert_mpmath_equal``.

    The measured error is ``max |value - reference| / (atol / rtol + |reference|)``, a
    relative error with an absolute floor ``atol`` (``max |value - reference|`` when
    ``rtol = 0``), and the tolerance is ``rtol`` (``atol`` when ``rtol = 0``).  ``reason``
    says why those tolerances (a rounding analysis, a quadrature error bound, ...); it is
    required.  A non-finite value where the reference is finite is an infinite error.  The
    worst point goes into the sub-check's ``counterexample``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("compare: name must be a non-empty string naming the sub-check")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("compare: reason must say why rtol/atol are what they are")
    for label, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) \
                or not np.isfinite(tol) or tol < 0:
            raise ValueError(f"compare: {label} must be a finite number >= 0; got {tol!r}")
    if rtol == 0 and atol == 0:
        raise ValueError("compare: give rtol > 0 or atol > 0")
    try:
        v, r = np.broadcast_arrays(np.asarray(value, dtype=np.float64),
                                   np.asarray(reference, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"compare: value and reference must be real arrays of broadcastable "
                         f"shapes ({exc})") from None
    if v.size == 0:
        raise ValueError("compare: nothing to compare (empty arrays)")
    if not np.all(np.isfinite(r)):
        raise ValueError("compare: the reference has non-finite entries; a reference must be "
                         "a number")
    diff = np.where(np.isfinite(v), np.abs(v - r), np.inf)
    scale = (atol / rtol + np.abs(r)) if rtol > 0 else np.ones_like(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.where(diff == 0, 0.0, diff / scale)
    i = int(np.argmax(err))
    worst = {"index": list(np.unravel_index(i, err.shape)) if err.ndim else [],
             "value": float(v.flat[i]), "reference": float(r.flat[i])}
    return SubCheck(name, float(err.flat[i]), float(rtol if rtol > 0 else atol), reason,
                    counterexample=worst if err.flat[i] > (rtol if rtol > 0 else atol) else None)
