"""The mutation harness (``python -m verify mutate``) and the shared derived-results cache,
on cheap test claims: a check that reads its derivation catches every mutant, a check
that ignores it is reported as missing them."""
from __future__ import annotations

import json

import mpmath
import numpy as np
import pytest
import sympy as sp

from derivations.base import Derivation, Step
from verify import derived
from verify.claims import Claim, Outcome
from verify.mutate import mutated, mutation_sites, run_mutant, smallest_caught, Mutant

x = sp.Symbol("x", positive=True)


def _derive() -> Derivation:
    integral = sp.integrate(sp.exp(-x), (x, 0, sp.oo))
    density = sp.exp(-x)
    return Derivation([Step("the integral", integral, lhs="I")],
                      {"I": integral, "parts": (density, sp.Integer(2)), "name": "text"})


def _reads(ctx) -> Outcome:
    """Compares the derived I and the derived density with mpmath quadrature."""
    res = ctx.derivation().results
    i_ref = mpmath.quad(lambda t: mpmath.exp(-t), [0, mpmath.inf])
    dens = sp.lambdify(x, res["parts"][0], "mpmath")
    err = max(abs(float(res["I"]) - float(i_ref)),
              abs(float(mpmath.quad(dens, [0, mpmath.inf])) - float(i_ref)),
              abs(float(res["parts"][1]) - 2.0))
    return Outcome("I vs quadrature", err, 1e-12, "quadrature to ~1e-15")


def _ignores(ctx) -> Outcome:
    return Outcome("nothing", 0.0, 1e-12, "ignores its derivation")


GOOD = Claim(id="T1a", title="reads", source="tests", statement="$I=1$", derive=_derive,
             check=_reads, negative_control=_ignores, negative_control_description="-")
BLIND = Claim(id="T1b", title="blind", source="tests", statement="$I=1$", derive=_derive,
              check=_ignores, negative_control=_ignores, negative_control_description="-")


@pytest.fixture
def registry(monkeypatch):
    import verify.claims as reg
    monkeypatch.setattr(reg, "_REGISTRY", {"T1a": GOOD, "T1b": BLIND})
    return reg


def test_sites_skip_text_and_enter_containers() -> None:
    paths = [p for p, _ in mutation_sites(_derive().results)]
    assert paths == [("I",), ("parts", 0), ("parts", 1)]


def test_mutated_changes_only_its_leaf() -> None:
    res = _derive().results
    m = mutated(res, ("parts", 1), 1e-2)
    assert m["parts"][0] == res["parts"][0] and m["I"] == res["I"]
    assert float(m["parts"][1]) == pytest.approx(2 * 1.01 + 0.01, rel=1e-15)
    assert res["parts"][1] == 2  # the original is untouched


def test_override_changes_generation_and_restores() -> None:
    g0 = derived.generation()
    orig = derived.derivation("T1a")
    with derived.overridden("T1a", Derivation([], {"I": sp.Integer(5)})):
        assert derived.generation() != g0
        assert derived.results("T1a")["I"] == 5
    assert derived.derivation("T1a") is orig and derived.generation() != g0


@pytest.mark.parametrize("path", [("I",), ("parts", 0), ("parts", 1)])
def test_reading_check_catches_small_mutants(registry, path) -> None:
    caught, how = run_mutant(Mutant("T1a", "derived", path), 1e-8)
    assert caught, how
    eps, _ = smallest_caught(Mutant("T1a", "derived", path))
    assert eps is not None and eps <= 1e-10


def test_blind_check_misses_and_cli_exits_1(registry, tmp_path, capsys) -> None:
    from verify.mutate import add_arguments, run
    import argparse
    p = argparse.ArgumentParser()
    add_arguments(p)
    out = tmp_path / "m.json"
    rc = run(p.parse_args(["T1a", "T1b", "--eps", "1e-2", "--json", str(out)]))
    assert rc == 1
    data = json.loads(out.read_text())
    rows = {r["claim"]: r for r in data["claims"]}
    assert rows["T1a"]["derived"] == "3/3" and not rows["T1a"]["missed"]
    assert rows["T1b"]["derived"] == "0/3" and len(rows["T1b"]["missed"]) == 3
    assert "[" in rows["T1a"]["unmutable"][0]  # the text entry is listed, not run


def test_formula_output_perturbation_is_scoped() -> None:
    from verify import formulas
    from verify.formulas._base import perturbed_output
    base = float(formulas.alpha_constant(5))
    with perturbed_output("alpha_constant", 1 + 1e-6):
        assert float(formulas.alpha_constant(5)) == pytest.approx(base * (1 + 1e-6), rel=1e-15)
    assert float(formulas.alpha_constant(5)) == base
    assert np.isclose(base, 16 / 3, rtol=1e-15)
