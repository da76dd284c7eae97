"""Verification power: every claim's check catches a 1e-2 perturbation of each of its
derived results, the closed-form claims catch 1e-8, and every verified formula's claim
fails when the formula's output is off by 1e-6 relative (``python -m verify mutate``)."""
from __future__ import annotations

import pytest

from verify import claims
from verify.mutate import derivation_mutants, formula_mutants, run_mutant

IDS = [c.id for c in claims.all_claims()]
#: claims whose every mutant costs a full simulation of 15-90 s on 2 cores: their 1e-2
#: mutation run is in the thorough profile (``--run-slow``), the others run in CI
SLOW_MUTATION = {"H1h", "W3f", "H1b"}
CLOSED_FORMS = ["W2a", "W2e", "W2f", "W3a", "W3c", "W3d", "W3e", "H1e", "H1f", "M1a", "M1b"]


def _missed(mutants, eps: float) -> list[str]:
    out = []
    for m in mutants:
        caught, how = run_mutant(m, eps)
        if not caught:
            out.append(f"{m.label}: {how}")
    return out


@pytest.mark.parametrize("claim_id", [pytest.param(i, marks=pytest.mark.slow)
                                      if i in SLOW_MUTATION else i for i in IDS])
def test_every_derived_result_is_checked(claim_id: str) -> None:
    mutants = derivation_mutants(claim_id)
    assert mutants, f"{claim_id} has no derived results"
    missed = _missed(mutants, 1e-2)
    assert not missed, f"{claim_id} passes with a derived result off by 1e-2: {missed}"


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", CLOSED_FORMS)
def test_closed_forms_are_pinned_to_1e8(claim_id: str) -> None:
    missed = _missed(derivation_mutants(claim_id), 1e-8)
    assert not missed, f"{claim_id} passes with a derived result off by 1e-8: {missed}"


FORMULAS = formula_mutants(IDS)


@pytest.mark.parametrize("mutant", FORMULAS, ids=[m.path[0] for m in FORMULAS])
def test_every_formula_is_what_its_claim_verified(mutant) -> None:
    caught, how = run_mutant(mutant, 1e-6)
    assert caught, f"{mutant.claim_id} passes with {mutant.path[0]} off by 1e-6: {how}"
