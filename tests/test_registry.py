"""The claim registry: metadata, and every claim's quick check passes while its negative
control fails (the real checks run here, once each)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from verify import claims
from verify.claims import Derivation, Evidence

MATH = (Path(__file__).resolve().parents[1].parent / "shared" / "MATH.md")
ALL = claims.all_claims()
IDS = [c.id for c in ALL]


def test_registry_not_empty_and_ordered() -> None:
    assert "H1f" in IDS
    assert IDS == sorted(IDS, key=claims.sort_key)


@pytest.mark.parametrize("claim", ALL, ids=IDS)
def test_metadata(claim: claims.Claim) -> None:
    assert re.fullmatch(r"[WHM]\d[a-z]", claim.id)
    if MATH.is_file():
        assert re.search(rf"\b{claim.id}\b", MATH.read_text()), f"{claim.id} not in MATH.md"
    assert claim.title and claim.source and claim.statement
    assert claim.negative_control_description
    assert claim.kind in ("theorem", "reconstructed", "numerical-evidence", "convention")
    d = claim.derivation()
    assert isinstance(d, Derivation) and d.steps


@pytest.mark.parametrize("claim_id", IDS)
def test_claim_passes_and_negative_control_fails(claim_id: str) -> None:
    ev = claims.run(claim_id, "quick", seed=0)
    assert isinstance(ev, Evidence)
    assert ev.passed, f"{claim_id}: error {ev.error} > tolerance {ev.tolerance}: {ev.details}"
    assert ev.claim_id == claim_id and ev.seconds >= 0 and ev.tolerance_reason
    neg = claims.run(claim_id, "quick", seed=0, negative_control=True)
    assert not neg.passed, f"{claim_id}: negative control did not fail ({neg.error} <= {neg.tolerance})"
    assert neg.negative_control


def test_get_is_case_insensitive_and_suggests() -> None:
    assert claims.get("h1f").id == "H1f"
    with pytest.raises(claims.UnknownClaimError) as exc:
        claims.get("H1x")
    assert "H1f" in str(exc.value)


def test_run_rejects_bad_profile_and_seed() -> None:
    with pytest.raises(ValueError, match="profile"):
        claims.run("H1f", profile="slow")
    with pytest.raises(ValueError, match="seed"):
        claims.run("H1f", seed=-1)
