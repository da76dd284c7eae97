"""The public kit for writing a claim: everything a claim author needs, ours or a user's.

A claim pairs a SymPy derivation with an independent numeric check and a negative control
(docs/adding-a-claim.md walks through one, in a package of your own).  Import from here,
never from the private modules behind it (``verify._claim``, ``verify._subchecks``,
``verify._rate_study``):

- declaration: :class:`Claim`, :class:`Derivation`, :class:`Step`;
- the run: :class:`RunContext` (``ctx.profile``, ``ctx.seed``, ``ctx.rng(name)``,
  ``ctx.derivation()``, ``ctx.n_examples(quick, full)``), :class:`Outcome`,
  :class:`Evidence`, :class:`Table`;
- sub-checks: :class:`SubCheck`, :func:`combine`, :func:`for_all_instances` (instances
  drawn from Hypothesis, seeded from the run);
- the comparators (every comparison of a claim goes through one of them): :func:`compare`
  (values against a reference at points, with the worst point), :func:`compare_derivative`
  (a derived derivative against finite differences), :func:`rate_study` (a log-log rate
  with its confidence interval over seeds, :class:`RateStudy`) and the certified one,
  :func:`certified_compare` (Arb balls of a derived expression and of its definition:
  overlap and a tiny radius prove agreement at an instance, disjoint balls disprove it;
  :class:`CertifiedInstance`, :func:`certified_details`, :class:`UndecidableCondition`);
- derived results: :func:`derived_results` and :func:`lambdified` (cached per mutation
  generation, so the mutation harness's perturbations reach your check);
  :func:`derived_generation` to key your own caches of anything that reads them;
- fits and formatting: :func:`loglog_slope`, :func:`fmt`, :func:`jsonable`;
- verdicts: :class:`Margin`, :func:`margin`, :func:`control_margin` (how far a sub-check
  lies beyond its bound, in the direction of its verdict);
- runs: :func:`without_local_constants` (seed-only Hypothesis draws) and
  :class:`no_shrinking` (report the first failing instance unshrunk);
- figures: :func:`new_figure`, :func:`save_figure`, :func:`rate_study_panel` (a width
  study on log-log axes; matplotlib, loaded on first use).

>>> import numpy as np
>>> sc = compare("sin vs its series", np.sin(0.1), 0.1 - 0.1**3 / 6 + 0.1**5 / 120,
...              rtol=1e-9, reason="series remainder x^7/5040 < 2e-11 relative")
>>> sc.ok(), sc.tolerance
(True, 1e-09)
"""
from __future__ import annotations

from typing import Any

from derivations.base import Derivation, Step
from verify._claim import Claim, Evidence, Outcome, RunContext, Table
from verify._claim import jsonable
from verify._rate_study import RateStudy, loglog_slope, rate_study
from verify._subchecks import (Margin, SubCheck, combine, compare, compare_derivative,
                               control_margin, fmt, for_all_instances, margin, no_shrinking,
                               without_local_constants)
from verify.certify import (CertifiedInstance, UndecidableCondition, certified_compare,
                            certified_details)
from verify.derived import generation as derived_generation
from verify.derived import lambdified
from verify.derived import results as derived_results

__all__ = ["Claim", "Derivation", "Step", "RunContext", "Outcome", "Evidence", "Table",
           "SubCheck", "combine", "compare", "compare_derivative", "for_all_instances",
           "derived_results", "derived_generation", "lambdified", "loglog_slope", "RateStudy",
           "rate_study", "fmt",
           "jsonable", "Margin", "margin", "control_margin", "without_local_constants",
           "no_shrinking", "new_figure", "save_figure", "rate_study_panel",
           "CertifiedInstance", "UndecidableCondition", "certified_compare", "certified_details"]


def __getattr__(name: str) -> Any:
    # The figure helpers import matplotlib: only when a claim draws.
    if name in ("new_figure", "save_figure", "rate_study_panel"):
        from verify import plotting
        return getattr(plotting, name)
    raise AttributeError(f"module 'verify.kit' has no attribute {name!r}")

