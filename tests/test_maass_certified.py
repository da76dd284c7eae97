"""The certified (Arb) sub-checks of M1c, M1d, M1e (verify/claims/_maass_certified.py): they
prove the derived closed forms at the drawn points and disprove each one as the mutation
harness perturbs it at eps = 1e-12 (leaf (1 + eps) + eps)."""
from __future__ import annotations

import pytest

from derivations.base import Derivation
from verify import derived
from verify.claims import get
from verify.claims import _maass_certified as mc
from verify.mutate import mutated

CASES = [("M1c", mc.certified_risk_gap, ("orbit_variance_c2", "orbit_variance_c3", "risk_gap_c2")),
         ("M1d", mc.certified_projected_drift,
          ("projected_drift", "transversal_drift", "drift_minus_projected_vanilla")),
         ("M1e", mc.certified_fixed_space_bases, ("basis_c2", "basis_c3", "basis_uv"))]


@pytest.mark.parametrize("cid, fn, keys", CASES, ids=[c[0] for c in CASES])
def test_derived_closed_forms_proven(cid, fn, keys) -> None:
    subs = fn(get(cid).context("quick", 0))
    assert subs and all(s.ok() for s in subs), [(s.name, s.counterexample) for s in subs if not s.ok()]
    assert all(s.certified["instances"] > 0 and not s.certified["disproved"] for s in subs)


@pytest.mark.parametrize("cid, fn, keys", CASES, ids=[c[0] for c in CASES])
def test_mutants_at_1e_12_disproved(cid, fn, keys) -> None:
    orig = derived.derivation(cid)
    for key in keys:
        res = mutated(dict(orig.results), (key,), 1e-12)
        with derived.overridden(cid, Derivation(steps=orig.steps, results=res)):
            subs = fn(get(cid).context("quick", 0))
        assert any(s.counterexample and s.counterexample.get("disproved") for s in subs), key
