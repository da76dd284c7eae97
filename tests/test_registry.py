"""The claim registry: metadata, and every claim's quick check passes while its negative
control fails, at seeds 0-2 (``VERIFY_TEST_SEEDS`` widens it, e.g. ``0-19``; the
longest quick runs at the first seed unless ``--run-slow``), and the
negative control breaks the sub-check it targets."""
from __future__ import annotations

import os
import re

import pytest

from verify import claims
from verify.claims import Derivation, Evidence
from verify.report.worst import UNITS, is_unit


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


ALL = claims.all_claims()
IDS = [c.id for c in ALL]
SEEDS = _seeds(os.environ.get("VERIFY_TEST_SEEDS", "0-2"))
#: claims whose quick run and control take over 5 s of CPU (the width studies, the
#: finite-width training of Fig. 4, H1d's flows, M1a's Arb Haar integrals, the figures' studies
#: of W2k, H1g, H1l, W3b's Theorem-5 families): the default run
#: checks them at the first seed, the slow profile at every seed
LONG_QUICK = {"W2i", "W2j", "W2k", "H1g", "H1i", "H1k", "H1l", "H1m", "W3f", "M1f", "H1d", "M1a",
              "W3b"}


def _claim_seed_params() -> list:
    return [pytest.param(cid, seed, id=f"{cid}-{seed}",
                         marks=[pytest.mark.slow] if cid in LONG_QUICK and i else [])
            for cid in IDS for i, seed in enumerate(SEEDS)]


def test_registry_not_empty_and_ordered() -> None:
    assert "H1f" in IDS
    assert IDS == sorted(IDS, key=claims.sort_key)


@pytest.mark.parametrize("claim", ALL, ids=IDS)
def test_metadata(claim: claims.Claim) -> None:
    assert re.fullmatch(r"[WHM]\d[a-z]", claim.id)
    assert claim.title and claim.source and claim.statement
    assert claim.negative_control_description
    assert claim.kind in ("theorem", "reconstructed", "numerical-evidence", "convention")
    d = claim.derivation()
    assert isinstance(d, Derivation) and d.steps


def _without_unit(ev: Evidence) -> list[str]:
    """The sub-checks of ``ev`` whose ``SubCheck.unit`` is unset or outside the vocabulary
    (the summary would have to guess it from the reason)."""
    return [f"{s.get('name')!s:.60} (unit {s.get('unit', '')!r})"
            for s in (ev.details or {}).get("subchecks", [])
            if isinstance(s, dict) and "error" in s and not is_unit(str(s.get("unit") or ""))]


def _subchecks(ev: Evidence, prefix: str) -> list[dict]:
    return [s for s in ev.details.get("subchecks", []) if str(s["name"]).startswith(prefix)]


@pytest.mark.parametrize(("claim_id", "seed"), _claim_seed_params())
def test_claim_passes_and_negative_control_fails(claim_id: str, seed: int) -> None:
    ev = claims.run(claim_id, "quick", seed=seed)
    assert isinstance(ev, Evidence) and ev.seed == seed
    assert ev.passed, (f"{claim_id} seed {seed}: error {ev.error} > tolerance {ev.tolerance}: "
                       f"{ev.details}")
    assert ev.claim_id == claim_id and ev.seconds >= 0 and ev.tolerance_reason
    if claims.get(claim_id).check.__module__.startswith("verify.claims."):
        unstated = _without_unit(ev)
        assert not unstated, (f"{claim_id}: sub-checks without a unit of {UNITS} or "
                              f"'mixed (...)' (set SubCheck(..., unit=...)): {unstated}")
    neg = claims.run(claim_id, "quick", seed=seed, negative_control=True)
    assert not neg.passed, (f"{claim_id} seed {seed}: negative control did not fail "
                            f"({neg.error} <= {neg.tolerance})")
    assert neg.negative_control
    target = claims.get(claim_id).negative_target
    if target:
        hit = _subchecks(neg, target)
        assert hit, f"{claim_id}: the negative control has no sub-check named {target!r}"
        assert not all(s["passed"] for s in hit), (
            f"{claim_id} seed {seed}: the negative control failed, but not in its target "
            f"sub-check {target!r}")
        assert all(s["passed"] for s in _subchecks(ev, target))


@pytest.mark.parametrize("claim_id", IDS)
def test_claim_has_derived_results(claim_id: str) -> None:
    """Every claim derives what it checks: its results hold numbers or expressions the
    mutation harness can perturb."""
    from verify.mutate import mutation_sites
    sites = list(mutation_sites(claims.get(claim_id).derivation().results))
    assert sites, f"{claim_id} has no derived results to check"


def test_get_is_case_insensitive_and_suggests() -> None:
    assert claims.get("h1f").id == "H1f"
    with pytest.raises(claims.UnknownClaimError) as exc:
        claims.get("H1fx")
    assert "H1f" in str(exc.value)


def test_run_rejects_bad_profile_and_seed() -> None:
    with pytest.raises(ValueError, match="profile"):
        claims.run("H1f", profile="slow")
    with pytest.raises(ValueError, match="seed"):
        claims.run("H1f", seed=-1)
