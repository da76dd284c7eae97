"""The mutation harness (``python -m verify mutate``) and the shared derived-results cache,
on cheap test claims: a check that reads its derivation catches every mutant by
measurement, a check that ignores it is reported as missing them, a check that raises is
listed as raised (never as caught), algorithm formulas are listed apart, and perturbing a
derivation at its source (a fresh process) gives the same outcomes as the in-process
override."""
from __future__ import annotations

import argparse
import json

import mpmath
import numpy as np
import pytest
import sympy as sp

from derivations.base import Derivation, Step
from verify import derived
from verify.claims import Claim, Outcome
from verify.kit import SubCheck, combine
from verify.mutate import (CAUGHT, MISSED, RAISED, UNMEASURED, Mutant, MutantResult,
                           add_arguments, derivation_mutants, formula_mutants, mutated,
                           mutated_all, mutation_sites, run, run_mutant, run_mutant_at_source,
                           smallest_caught, summarize, summarize_algorithms)

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


def _raises(ctx) -> Outcome:
    """Breaks (instead of measuring) when the derived I is not exactly 1."""
    if ctx.derivation().results["I"] != 1:
        raise ArithmeticError("I is not one")
    return Outcome("I == 1", 0.0, 1e-12, "exact")


def _instance_raises(ctx) -> Outcome:
    """A sub-check that turns an exception into an infinite error (as for_all_instances
    does): a failure, but not by measurement."""
    try:
        _raises(ctx)
        sc = SubCheck("I == 1", 0.0, 1e-12, "exact")
    except ArithmeticError as exc:
        sc = SubCheck("I == 1", float("inf"), 0.0, f"ArithmeticError: {exc}", passed=False)
    return combine("I", [sc])


def _claim(cid: str, check) -> Claim:
    return Claim(id=cid, title=cid, source="tests", statement="$I=1$", derive=_derive,
                 check=check, negative_control=_ignores, negative_control_description="-")


GOOD, BLIND = _claim("T1a", _reads), _claim("T1b", _ignores)
RAISING, INSTANCE = _claim("T1c", _raises), _claim("T1d", _instance_raises)


@pytest.fixture
def registry(monkeypatch):
    import verify.claims as reg
    monkeypatch.setattr(reg, "_REGISTRY", {c.id: c for c in (GOOD, BLIND, RAISING, INSTANCE)})
    return reg


def _cli(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return run(p.parse_args(argv))


def test_sites_skip_text_and_enter_containers() -> None:
    paths = [p for p, _ in mutation_sites(_derive().results)]
    assert paths == [("I",), ("parts", 0), ("parts", 1)]


def test_mutated_changes_only_its_leaf() -> None:
    res = _derive().results
    m = mutated(res, ("parts", 1), 1e-2)
    assert m["parts"][0] == res["parts"][0] and m["I"] == res["I"]
    assert float(m["parts"][1]) == pytest.approx(2 * 1.01 + 0.01, rel=1e-15)
    assert res["parts"][1] == 2  # the original is untouched


def test_mutated_all_changes_every_leaf() -> None:
    res = _derive().results
    m = mutated_all(res, 1e-3)
    assert float(m["I"]) == pytest.approx(1.002, rel=1e-15)
    assert float(m["parts"][1]) == pytest.approx(2 * 1.001 + 1e-3, rel=1e-15)
    assert m["name"] == "text" and m["parts"][0] != res["parts"][0]


def test_override_changes_generation_and_restores() -> None:
    g0 = derived.generation()
    orig = derived.derivation("T1a")
    with derived.overridden("T1a", Derivation([], {"I": sp.Integer(5)})):
        assert derived.generation() != g0
        assert derived.results("T1a")["I"] == 5
    assert derived.derivation("T1a") is orig and derived.generation() != g0


@pytest.mark.parametrize("path", [("I",), ("parts", 0), ("parts", 1)])
def test_reading_check_catches_small_mutants(registry, path) -> None:
    status, how = run_mutant(Mutant("T1a", "derived", path), 1e-8)
    assert status == CAUGHT and how.startswith("failed by measurement"), how
    eps, _ = smallest_caught(Mutant("T1a", "derived", path))
    assert eps is not None and eps <= 1e-10


def test_an_exception_is_not_a_catch(registry) -> None:
    status, how = run_mutant(Mutant("T1c", "derived", ("I",)), 1e-2)
    assert status == RAISED and how.startswith("raised: ArithmeticError"), how
    status, how = run_mutant(Mutant("T1d", "derived", ("I",)), 1e-2)
    assert status == RAISED and "ArithmeticError" in how, how
    assert smallest_caught(Mutant("T1c", "derived", ("I",)))[0] is None


def test_first_failure_stops_at_the_first_measured_failure_with_the_same_verdict(
        registry, monkeypatch) -> None:
    """``run_mutant(..., first_failure=True)`` (the mutation-power tests): the check stops at
    its first sub-check that fails BY MEASUREMENT; an instance that raised (an infinite
    error) does not stop it, so the verdicts are those of the full run."""
    ran: list[str] = []

    def two_parts(ctx):
        ran.append("first")
        err = abs(float(ctx.derivation().results["I"]) - 1.0)
        first = SubCheck("I", err, 1e-12, "exact")
        ran.append("second")
        return combine("I", [first, SubCheck("second", 0.0, 1.0, "-")])
    monkeypatch.setattr(GOOD, "check", two_parts)
    full = run_mutant(Mutant("T1a", "derived", ("I",)), 1e-8)
    assert ran == ["first", "second"]
    ran.clear()
    fast = run_mutant(Mutant("T1a", "derived", ("I",)), 1e-8, first_failure=True)
    assert ran == ["first"] and fast[0] == full[0] == CAUGHT
    assert fast[1].startswith(full[1].split(" (error")[0]) and "first failing" in fast[1]
    assert run_mutant(Mutant("T1a", "derived", ("I",)), 1e-14, first_failure=True)[0] == MISSED
    assert run_mutant(Mutant("T1d", "derived", ("I",)), 1e-2, first_failure=True)[0] == RAISED


def test_a_failure_without_a_measured_error_is_not_a_catch(registry, monkeypatch) -> None:
    def explicit(ctx):
        return Outcome("I", 0.0, 1e-12, "exact", passed=ctx.derivation().results["I"] == 1)
    monkeypatch.setattr(GOOD, "check", explicit)
    status, how = run_mutant(Mutant("T1a", "derived", ("I",)), 1e-2)
    assert status == UNMEASURED, how


def test_blind_and_raising_checks_are_not_caught_and_cli_exits_1(registry, tmp_path,
                                                                  capsys) -> None:
    out = tmp_path / "m.json"
    assert _cli(["T1a", "T1b", "T1c", "--eps", "1e-2", "--json", str(out)]) == 1
    data = json.loads(out.read_text())
    rows = {r["claim"]: r for r in data["claims"]}
    assert rows["T1a"]["derived"] == "3/3" and not rows["T1a"]["missed"]
    assert rows["T1b"]["derived"] == "0/3" and len(rows["T1b"]["missed"]) == 3
    assert rows["T1c"]["derived"] == "0/3" and rows["T1c"]["raised"] == 1
    assert "results['I'] (raised)" in rows["T1c"]["missed"]
    assert "[" in rows["T1a"]["unmutable"][0]  # the text entry is listed, not run
    assert "0 raised" not in capsys.readouterr().out


def test_cli_runs_on_the_task_runner(registry, monkeypatch) -> None:
    """The mutants go through verify.runner.Executor (the --workers/--scheduler one)."""
    import verify.runner as runner
    seen = {}
    real = runner.Executor

    class Spy(real):
        def __init__(self, workers=None, scheduler=None, **kw):
            seen["args"] = (workers, scheduler)
            super().__init__(workers=workers, scheduler=scheduler, **kw)
    monkeypatch.setattr(runner, "Executor", Spy)
    assert _cli(["T1a", "--eps", "1e-2"]) == 0
    assert seen["args"] == (None, None)


def test_algorithm_formulas_are_listed_apart() -> None:
    ms = formula_mutants(["M1a", "M1b", "M1c", "W2a"])
    algos = {m.path[0] for m in ms if m.algorithm}
    assert {"symmetrize", "project_to_fixed_space"} <= algos
    # rmd is a convention with one derived definition: its mutant is M1c's to catch
    assert "rmd" not in algos and any(m.claim_id == "M1c" and not m.algorithm for m in ms)
    assert not any(m.algorithm for m in ms if m.claim_id == "W2a")
    results = [MutantResult(m.claim_id, m.kind, m.label, 1e-6, MISSED if m.algorithm else CAUGHT,
                            algorithm=m.algorithm) for m in ms]
    rows = {r["claim"]: r for r in summarize(results, ["M1a", "M1b", "M1c", "W2a"])}
    assert rows["M1a"]["formula"] == "0/0" and not rows["M1a"]["missed"]
    assert rows["W2a"]["formula"] == f"{sum(m.claim_id == 'W2a' for m in ms)}/" \
                                     f"{sum(m.claim_id == 'W2a' for m in ms)}"
    listed = {a["algorithm"]: a for a in summarize_algorithms(results)}
    assert listed["symmetrize"]["verified_by"] == "M1a" and listed["symmetrize"]["state"] == MISSED


@pytest.mark.parametrize("claim_id, eps", [("W2a", 1e-2), ("W2e", 1e-14),
                                           pytest.param("M1a", 1e-2, marks=pytest.mark.slow)])
def test_source_mode_agrees_with_the_override(claim_id: str, eps: float) -> None:
    """The builder wrapped in derivations.*.DERIVATIONS in a fresh process gives the same
    caught / not caught outcome (and the same measured errors) as the in-process
    override, mutant by mutant, at a seed other than 0."""
    for m in derivation_mutants(claim_id):
        here = run_mutant(m, eps, seed=3)
        there = run_mutant_at_source(m, eps, seed=3)
        assert here == there, (m.label, here, there)


def test_formula_outputs_move_when_their_derivation_is_perturbed_at_the_source() -> None:
    from verify.mutate import source_formula_outputs
    calls = ["formulas.alpha_constant(5)", "formulas.alpha_constant(np.array([2, 7]))",
             "formulas.no_such_formula(1)"]
    base = source_formula_outputs(calls, None)
    moved = source_formula_outputs(calls, 1e-3)
    assert base[0] == pytest.approx(16 / 3, rel=1e-15)
    assert abs(moved[0] / base[0] - 1) > 1e-4
    assert base[2].startswith("raised: AttributeError")


def test_formula_output_perturbation_is_scoped() -> None:
    from verify import formulas
    from verify.formulas._base import perturbed_output
    base = float(formulas.alpha_constant(5))
    with perturbed_output("alpha_constant", 1 + 1e-6):
        assert float(formulas.alpha_constant(5)) == pytest.approx(base * (1 + 1e-6), rel=1e-15)
    assert float(formulas.alpha_constant(5)) == base
    assert np.isclose(base, 16 / 3, rtol=1e-15)


def test_json_sensitivity_needs_bisection(registry, tmp_path) -> None:
    with pytest.raises(ValueError, match="--json-sensitivity needs the bisection"):
        _cli(["T1a", "--eps", "1e-2", "--json-sensitivity", str(tmp_path / "s.json")])


def test_json_sensitivity_is_written_and_read(registry, tmp_path) -> None:
    from verify import sensitivity
    path = tmp_path / "s.json"
    assert _cli(["T1a", "--json-sensitivity", str(path)]) == 0
    entry = sensitivity.load(path)["claims"]["T1a"]
    assert entry["hash"] == sensitivity.results_hash("T1a") and entry["eps"] <= 1e-10
    assert sensitivity.describe("T1a", path) == f"{entry['eps']:.0e}"
    assert sensitivity.stale_entries(path) == []
    assert _cli(["T1b", "--json-sensitivity", str(path)]) == 1  # merged, T1a kept
    assert sensitivity.describe("T1b", path) == "not caught"
    assert sensitivity.describe("T1a", path) == f"{entry['eps']:.0e}"
    with derived.overridden("T1a", Derivation([], {"I": sp.Integer(2)})):
        assert sensitivity.describe("T1a", path) == "stale"
        assert sensitivity.stale_entries(path) == ["T1a"]
    assert sensitivity.describe("T1c", path) == "-"


def test_results_hash_does_not_depend_on_the_process() -> None:
    """The key of a sensitivity entry is the same in a fresh process that built other
    derivations first (SymPy dummy indices depend on that order)."""
    import subprocess
    import sys
    from verify import sensitivity
    code = ("from verify import derived, sensitivity\n"
            "for cid in ('M1e', 'M1d', 'W2c'): derived.derivation(cid)\n"
            "print(sensitivity.results_hash('W2a'), sensitivity.results_hash('M1c'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [sensitivity.results_hash("W2a"), sensitivity.results_hash("M1c")]


def test_committed_sensitivity_file_covers_every_claim() -> None:
    """The report's sensitivity column: an up-to-date entry for every registered claim.
    Regenerate with ``python -m verify mutate --workers 2 --json-sensitivity
    verify/data/sensitivity.json`` after a derivation changes."""
    from verify import sensitivity
    assert sensitivity.DATA_FILE.is_file(), "verify/data/sensitivity.json is missing"
    stale, missing = sensitivity.stale_entries(), sensitivity.missing_entries()
    assert not stale and not missing, f"stale: {stale}; missing: {missing}"


def test_sensitivity_file_is_packaged() -> None:
    """The JSON is package data of ``verify`` (pyproject), so an installed suite has it."""
    import tomllib
    from pathlib import Path
    cfg = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    patterns = cfg.get("tool", {}).get("setuptools", {}).get("package-data", {}).get("verify", [])
    assert any(p in ("data/*.json", "data/sensitivity.json", "data/*") for p in patterns), \
        "add [tool.setuptools.package-data] verify = [\"data/*.json\"] to pyproject.toml"
