"""Mutation sensitivity of the checks: ``python -m verify mutate [IDS] [--eps E]``.

A check that still passes when what it verifies is wrong proves nothing (docs/architecture.md,
"One source of truth, and checks that can catch it being wrong"; Hook & Kelly, "Mutation
sensitivity testing", CiSE 2009).  Two kinds of mutant:

- **derivation mutants**: each entry of a claim's ``Derivation.results`` (a SymPy
  expression, a matrix, a number; nested dicts, lists and tuples are entered) is replaced,
  one at a time, by ``e (1 + eps) + eps``;
- **formula mutants**: the output of each verified formula users import
  (``verify.formulas.__all__``) is multiplied by ``1 + eps``.  A formula that is an
  *algorithm* (``formula.algorithm`` is true: an optimal-transport solve, a group
  average, a least-squares fit) verifies no derived closed form; its mutants run against
  the claim whose properties it is verified against but are listed under the algorithm,
  not credited to the claim.

Each mutant runs the claim's check, with one outcome:

- ``caught``: a sub-check failed with a *measured* error beyond its tolerance (finite
  error > finite tolerance);
- ``raised``: the check (or one of its instances) raised; listed as ``raised: <type>``;
- ``unmeasured``: the check failed, but no sub-check measured an error beyond its
  tolerance (e.g. an infinite error or an explicit verdict);
- ``missed``: the check passed.

A ``caught`` mutant whose failing sub-checks include a certified one (``verify.certify``)
with disjoint balls is recorded as **disproved** (its ``how`` starts with "disproved",
``MutantResult.disproved``): the closed form is proven wrong at an instance, a stronger
catch than a measured error beyond a tolerance.

Only ``caught`` counts.  Two modes give the same outcomes: by default the perturbed
derivation is swapped into this process's cache (:func:`verify.derived.overridden`); with
``--source`` each derivation mutant runs in a fresh Python process in which the builder in
``derivations.<topic>.DERIVATIONS`` is wrapped, so that the perturbation enters where the
derivation is produced and reaches every reader (check, formulas, simulations) from there.

Without ``--eps`` the smallest decade ``eps = 10^-k`` (k = 1..14) at which each mutant is
caught is found by bisection (assuming detection is monotone in eps);
``--json-sensitivity FILE`` merges the per-claim result into the committed sensitivity
file read by :mod:`verify.sensitivity` (the report's sensitivity column).

Mutants are tasks of :class:`verify.runner.Executor`, as claim checks are: in this process
by default, on a local Dask cluster with ``--workers N``, on an existing one with
``--scheduler ADDRESS``; the results come back in a fixed order.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Sequence

import sympy as sp

from derivations.base import Derivation
from verify import derived
from verify._subchecks import FirstFailure, fails_by_measurement, stop_at_first_failure

__all__ = ["Mutant", "MutantResult", "CAUGHT", "RAISED", "UNMEASURED", "MISSED", "DISPROVED",
           "mutation_sites", "mutated", "mutated_all", "unmutable_entries",
           "derivation_mutants", "formula_mutants", "is_algorithm", "classify",
           "run_mutant", "run_mutant_at_source", "smallest_caught", "mutate", "summarize",
           "source_formula_outputs", "add_arguments", "run", "main"]

DECADES = tuple(range(1, 15))  # eps = 10^-k
CAUGHT, RAISED, UNMEASURED, MISSED = "caught", "raised", "unmeasured", "missed"
#: the prefix of ``how`` for a caught mutant proven wrong by disjoint certified balls
DISPROVED = "disproved"
#: seconds a fresh-process (``--source``) mutant may take before it is reported as raised
SOURCE_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Mutant:
    """One perturbation: ``kind`` is "derived" (``path`` into the results) or "formula"
    (``path`` = (formula name,)); ``algorithm``: a formula mutant of an algorithm."""
    claim_id: str
    kind: str
    path: tuple
    algorithm: bool = False

    @property
    def label(self) -> str:
        return ("results" + "".join(f"[{p!r}]" for p in self.path) if self.kind == "derived"
                else f"formula {self.path[0]}")


@dataclass
class MutantResult:
    """The outcome of one mutant: at ``eps`` (fixed mode; ``status``) or the smallest eps
    caught (bisection mode, ``eps`` None; ``smallest_caught`` None when not caught at 0.1)."""
    claim_id: str
    kind: str
    label: str
    eps: float | None
    status: str | None
    smallest_caught: float | None = None
    how: str = ""
    seconds: float = 0.0
    algorithm: bool = False
    source: bool = False

    @property
    def caught(self) -> bool:
        return (self.status == CAUGHT) if self.eps is not None else self.smallest_caught is not None

    @property
    def disproved(self) -> bool:
        """Caught, and proven wrong by disjoint certified (Arb) balls."""
        return self.caught and self.how.startswith(DISPROVED)


# -- derivation results ------------------------------------------------------------

def _perturb_leaf(leaf: Any, eps: float) -> Any | None:
    """``leaf (1 + eps) + eps``, or None for what is not a number or an expression."""
    f = sp.Float(eps, 30)
    if isinstance(leaf, bool) or leaf is None or isinstance(leaf, str):
        return None
    if isinstance(leaf, (int, float)):
        return leaf * (1 + eps) + eps
    if isinstance(leaf, sp.MatrixBase):
        return leaf.applyfunc(lambda e: e * (1 + f) + f)
    if isinstance(leaf, sp.Equality):
        return sp.Eq(leaf.lhs, leaf.rhs * (1 + f) + f, evaluate=False)
    if isinstance(leaf, sp.Lambda):
        return sp.Lambda(leaf.variables, leaf.expr * (1 + f) + f)
    if isinstance(leaf, sp.Symbol):
        return None  # a variable, not a result
    if isinstance(leaf, sp.Expr):
        return leaf * (1 + f) + f
    return None


def _is_container(obj: Any) -> bool:
    return isinstance(obj, dict) or (isinstance(obj, (list, tuple)) and not isinstance(obj, sp.Basic))


def mutation_sites(results: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, leaf) of ``results`` that :func:`mutated` can perturb."""
    if isinstance(results, dict):
        for k, v in results.items():
            yield from mutation_sites(v, prefix + (k,))
    elif _is_container(results):
        for i, v in enumerate(results):
            yield from mutation_sites(v, prefix + (i,))
    elif _perturb_leaf(results, 1e-2) is not None:
        yield prefix, results


def unmutable_entries(results: Any, prefix: tuple = ()) -> list[str]:
    """Paths of leaves that are neither numbers nor expressions (reported, not run)."""
    out: list[str] = []
    if isinstance(results, dict):
        for k, v in results.items():
            out += unmutable_entries(v, prefix + (k,))
    elif _is_container(results):
        for i, v in enumerate(results):
            out += unmutable_entries(v, prefix + (i,))
    elif _perturb_leaf(results, 1e-2) is None:
        out.append("".join(f"[{p!r}]" for p in prefix) + f" ({type(results).__name__})")
    return out


def mutated(results: Any, path: tuple, eps: float) -> Any:
    """A copy of ``results`` with the leaf at ``path`` perturbed (containers rebuilt)."""
    if not path:
        new = _perturb_leaf(results, eps)
        if new is None:
            raise ValueError(f"cannot perturb a {type(results).__name__}")
        return new
    head, rest = path[0], path[1:]
    if isinstance(results, dict):
        out = dict(results)
        out[head] = mutated(results[head], rest, eps)
        return out
    items = list(results)
    items[head] = mutated(items[head], rest, eps)
    if isinstance(results, tuple) and hasattr(results, "_fields"):
        return type(results)(*items)
    return type(results)(items)


def mutated_all(results: Any, eps: float) -> Any:
    """A copy of ``results`` with EVERY perturbable leaf perturbed (the acceptance test:
    every derivation wrong at once)."""
    for path, _ in list(mutation_sites(results)):
        results = mutated(results, path, eps)
    return results


def derivation_mutants(claim_id: str) -> list[Mutant]:
    res = derived.results(claim_id)
    return [Mutant(claim_id, "derived", path) for path, _ in mutation_sites(res)]


def is_algorithm(formula: Any) -> bool:
    """Whether a verified formula is an algorithm (its ``algorithm`` flag), verified
    against claim properties rather than evaluating a derived closed form."""
    return bool(getattr(formula, "algorithm", False))


def formula_mutants(claim_ids: Sequence[str]) -> list[Mutant]:
    """One mutant per formula in ``verify.formulas.__all__`` whose claim is selected."""
    from verify import formulas
    wanted = set(claim_ids)
    out = []
    for name in formulas.__all__:
        obj = getattr(formulas, name)
        cid = getattr(obj, "claim", None)
        if isinstance(cid, str) and cid in wanted and not isinstance(obj, type):
            out.append(Mutant(cid, "formula", (name,), algorithm=is_algorithm(obj)))
    return out


# -- outcomes ----------------------------------------------------------------------

def classify(ev: Any) -> tuple[str, str]:
    """(status, how) of a check's :class:`~verify.claims.Evidence` under a mutant: caught
    only when a failing sub-check measured an error beyond its tolerance."""
    if ev.passed:
        return MISSED, f"passed (error {ev.error:.3g} <= tolerance {ev.tolerance:.3g})"
    subs = ev.details.get("subchecks") or [{"name": ev.compared, "error": ev.error,
                                            "tolerance": ev.tolerance, "passed": False,
                                            "reason": ev.tolerance_reason}]
    failed = [s for s in subs if not s.get("passed", True)]
    measured = [s for s in failed if fails_by_measurement(s.get("error"), s.get("tolerance"))]
    disproofs = [s for s in failed if (s.get("counterexample") or {}).get("disproved") is True]
    if disproofs:
        s = disproofs[0]
        ce = s["counterexample"]
        return CAUGHT, (f"{DISPROVED} by certified balls: {s['name'][:80]} (disjoint at "
                        f"{str(ce.get('instance', '?'))[:60]}: proven gap {float(ce.get('proven_gap', 0)):.3g})"
                        + (f" and {len(disproofs) - 1} more certified" if len(disproofs) > 1 else ""))
    if measured:
        s = max(measured, key=lambda s: float(s["error"]) / max(float(s["tolerance"]), 1e-300))
        return CAUGHT, (f"failed by measurement: {s['name'][:80]} (error {float(s['error']):.3g}"
                        f" > tolerance {float(s['tolerance']):.3g})"
                        + (f" and {len(measured) - 1} more" if len(measured) > 1 else ""))
    if not failed and fails_by_measurement(ev.error, ev.tolerance):
        return CAUGHT, f"failed by measurement (error {ev.error:.3g} > tolerance {ev.tolerance:.3g})"
    for s in failed:  # for_all_instances reports an exception as "<Type>: message"
        reason = str(s.get("reason", ""))
        head = reason.split(":", 1)[0].strip()
        if head.isidentifier() and (head.endswith(("Error", "Exception", "Warning"))
                                    or head in ("StopIteration", "KeyboardInterrupt")):
            return RAISED, f"raised: {head} (in {s['name'][:60]}): {reason[:160]}"
    names = ", ".join(str(s.get("name", ""))[:60] for s in failed) or ev.compared[:60]
    return UNMEASURED, f"failed without a measured error beyond tolerance ({names})"


def _run_check(claim_id: str, profile: str, seed: int,
               first_failure: bool = False) -> tuple[str, str]:
    """Run the claim's check here, under whatever perturbation is active."""
    from verify.claims import get
    from verify.kit import no_shrinking, without_local_constants
    from verify.runner import describe_exception, one_blas_thread
    claim = get(claim_id)
    stop = stop_at_first_failure() if first_failure else contextlib.nullcontext()
    with one_blas_thread(), without_local_constants(), no_shrinking(), stop:
        try:
            ev = claim.run(profile, seed)
        except FirstFailure as caught:
            s = caught.subcheck
            status, how = classify(SimpleNamespace(
                passed=False, error=s.error, tolerance=s.tolerance, compared=s.name,
                tolerance_reason=s.reason,
                details={"subchecks": [{"name": s.name, "error": s.error, "tolerance": s.tolerance,
                                        "reason": s.reason, "passed": False,
                                        "counterexample": s.counterexample}]}))
            return status, f"{how} (the first failing sub-check; the check stopped there)"
        except Exception as exc:
            return RAISED, f"raised: {describe_exception(exc).splitlines()[0][:240]}"
    return classify(ev)


def run_mutant(m: Mutant, eps: float, profile: str = "quick", seed: int = 0, *,
               first_failure: bool = False) -> tuple[str, str]:
    """Run the claim's check under mutant ``m`` at ``eps`` in this process; (status, how).
    ``first_failure``: stop the check at its first sub-check that fails by measurement
    (the status is the same whenever one does; certified disproofs after it go unreported)."""
    from verify.formulas import perturbed_output
    if m.kind == "derived":
        orig = derived.derivation(m.claim_id)
        d = Derivation(steps=orig.steps, results=mutated(orig.results, m.path, eps))
        ctx = derived.overridden(m.claim_id, d)
    else:
        ctx = perturbed_output(m.path[0], 1 + eps)
    with ctx:
        return _run_check(m.claim_id, profile, seed, first_failure)


# -- perturbing at the source (fresh processes) --------------------------------------

def _wrap_builders(select: Callable[[str], Callable[[Any], Any] | None]) -> list[str]:
    """In this (fresh) process, wrap every builder in ``derivations.*.DERIVATIONS`` for
    which ``select(claim_id)`` gives a results transformation; before any derivation is
    built.  Returns the wrapped claim ids."""
    import derivations
    if derived._BUILDERS is not None or derived._CACHE:
        raise RuntimeError("perturbing at the source needs a fresh process: derivations "
                           "were already built here")
    wrapped = []
    for info in pkgutil.iter_modules(derivations.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"derivations.{info.name}")
        table = getattr(mod, "DERIVATIONS", {})
        for cid, build in list(table.items()):
            change = select(cid)
            if change is None:
                continue

            def wrapper(build=build, change=change) -> Derivation:
                d = build()
                return Derivation(steps=d.steps, results=change(d.results))
            table[cid] = wrapper
            wrapped.append(cid)
    return wrapped


def _child_env() -> dict[str, str]:
    from verify.runner import BLAS_ENV
    env = dict(os.environ)
    env.update(BLAS_ENV)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run_child(spec: dict[str, Any], timeout: float = SOURCE_TIMEOUT) -> dict[str, Any]:
    """Run :func:`_child_main` in a fresh interpreter on ``spec`` (JSON in, JSON out)."""
    proc = subprocess.run([sys.executable, "-m", "verify.mutate", "--source-child"],
                          input=json.dumps(spec), capture_output=True, text=True,
                          timeout=timeout, env=_child_env())
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        raise RuntimeError(f"the fresh process failed (exit {proc.returncode}): {tail}")
    return json.loads(lines[-1])


def run_mutant_at_source(m: Mutant, eps: float, profile: str = "quick",
                         seed: int = 0) -> tuple[str, str]:
    """As :func:`run_mutant`, but a derivation mutant enters at its source: a fresh
    process wraps the claim's builder in ``derivations.<topic>.DERIVATIONS``.  (A formula
    mutant is an output perturbation; it runs here as in :func:`run_mutant`.)"""
    if m.kind != "derived":
        return run_mutant(m, eps, profile, seed)
    try:
        out = _run_child({"mode": "check", "claim": m.claim_id, "path": repr(m.path),
                          "eps": eps, "profile": profile, "seed": seed})
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return RAISED, f"raised: {type(exc).__name__} ({str(exc)[:200]})"
    return out["status"], out["how"]


def source_formula_outputs(calls: Sequence[str], eps: float | None) -> list[Any]:
    """Evaluate each expression in ``calls`` (Python source using ``formulas`` and
    ``np``, e.g. ``"formulas.rf_kernel(0.3, 0.5, init='gaussian')"``) in a fresh process in
    which EVERY derivation's results are perturbed at the source by ``e (1+eps) + eps``
    (``eps`` None: unperturbed).  Returns the outputs as nested lists of floats, or the
    text ``"raised: ..."`` for a call that raised."""
    return _run_child({"mode": "formulas", "calls": list(calls), "eps": eps})["outputs"]


def _to_floats(out: Any) -> Any:
    import numpy as np
    if hasattr(out, "__call__") and not isinstance(out, (np.ndarray, float, int)):
        raise TypeError(f"the call returned a {type(out).__name__}; evaluate it")
    if isinstance(out, (tuple, list)):
        return [_to_floats(o) for o in out]
    return np.asarray(out, dtype=float).tolist()


def _child_main() -> int:
    """Entry of a fresh process (``python -m verify.mutate --source-child``): read a JSON
    spec on stdin, wrap the builders, run, print one JSON line."""
    spec = json.loads(sys.stdin.read())
    eps = spec.get("eps")
    if spec["mode"] == "check":
        cid, path = spec["claim"], ast.literal_eval(spec["path"])
        wrapped = _wrap_builders(lambda c: (lambda r: mutated(r, path, eps)) if c == cid else None)
        if cid not in wrapped:
            status, how = RAISED, (f"raised: KeyError (the derivation of {cid} is not in "
                                   "derivations.*.DERIVATIONS; no source to perturb)")
        else:
            status, how = _run_check(cid, spec["profile"], int(spec["seed"]))
        print(json.dumps({"status": status, "how": how}), flush=True)
        return 0
    if spec["mode"] == "formulas":
        import numpy as np
        if eps is not None:
            _wrap_builders(lambda c: (lambda r: mutated_all(r, eps)))
        from verify import formulas
        outs: list[Any] = []
        for call in spec["calls"]:
            try:
                outs.append(_to_floats(eval(call, {"formulas": formulas, "np": np})))
            except Exception as exc:
                outs.append(f"raised: {type(exc).__name__}: {str(exc)[:200]}")
        print(json.dumps({"outputs": outs}), flush=True)
        return 0
    raise ValueError(f"unknown mode {spec['mode']!r}")


# -- bisection and the task runner ----------------------------------------------------

Runner = Callable[[Mutant, float, str, int], tuple[str, str]]


def smallest_caught(m: Mutant, profile: str = "quick", seed: int = 0,
                    runner: Runner = run_mutant) -> tuple[float | None, str]:
    """Smallest eps = 10^-k caught, by bisection over k = 1..14 (None: not caught at 0.1,
    with that run's outcome).  In this process the bisection's runs stop at their first
    sub-check failing by measurement (the same verdict); the smallest caught eps is then
    run in full, for the outcome reported."""
    step = (lambda *a: run_mutant(*a, first_failure=True)) if runner is run_mutant else runner
    status, how = step(m, 10.0 ** -DECADES[0], profile, seed)
    if status != CAUGHT:
        return None, f"{status}: {how}" if not how.startswith(status) else how
    lo, hi = 0, len(DECADES)  # index lo is caught; index hi (eps 1e-15) assumed not caught
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if step(m, 10.0 ** -DECADES[mid], profile, seed)[0] == CAUGHT:
            lo = mid
        else:
            hi = mid
    status, how = runner(m, 10.0 ** -DECADES[lo], profile, seed)
    if status != CAUGHT:
        raise RuntimeError(f"{m.label}: caught at eps 1e-{DECADES[lo]} when stopped at the first "
                           f"failing sub-check, but not in the full run ({how}): a check builds "
                           "a failing sub-check it does not report")
    return 10.0 ** -DECADES[lo], how


def _task(args: tuple[Mutant, float | None, str, int, bool]) -> MutantResult:
    """One mutant (a module-level function: the Dask workers import it)."""
    m, eps, profile, seed, source = args
    runner = run_mutant_at_source if source else run_mutant
    t0 = time.perf_counter()
    if eps is None:
        s, how = smallest_caught(m, profile, seed, runner)
        return MutantResult(m.claim_id, m.kind, m.label, None, None, s, how,
                            time.perf_counter() - t0, m.algorithm, source)
    status, how = runner(m, eps, profile, seed)
    return MutantResult(m.claim_id, m.kind, m.label, eps, status, None, how,
                        time.perf_counter() - t0, m.algorithm, source)


def _failed_task(args: tuple, exc: BaseException) -> MutantResult:
    m, eps, _, _, source = args
    return MutantResult(m.claim_id, m.kind, m.label, eps, RAISED if eps is not None else None,
                        None, f"raised: {type(exc).__name__} (the task was lost: {exc})",
                        0.0, m.algorithm, source)


def mutate(claim_ids: Sequence[str], eps: float | None = 1e-2, *, profile: str = "quick",
           seed: int = 0, workers: int | None = None, scheduler: str | None = None,
           source: bool = False, formulas_only: bool = False,
           progress: Callable[[int, int, MutantResult], None] | None = None
           ) -> list[MutantResult]:
    """Run every mutant of the given claims through :class:`verify.runner.Executor`;
    results in a fixed order (derivation mutants claim by claim, then formula mutants)."""
    from verify.runner import Executor
    mutants: list[Mutant] = []
    if not formulas_only:
        for cid in claim_ids:
            mutants += derivation_mutants(cid)
    mutants += formula_mutants(claim_ids)
    tasks = [(m, eps, profile, seed, source) for m in mutants]
    done = [0]

    def on_result(i: int, r: MutantResult) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], len(tasks), r)

    with Executor(workers=workers, scheduler=scheduler) as ex:
        return ex.map(_task, tasks, keys=[f"verify-mutant-{m.claim_id}" for m in mutants],
                      on_result=on_result, on_failure=_failed_task)


def _state(r: MutantResult) -> str:
    if r.eps is not None:
        return r.status or RAISED
    return CAUGHT if r.smallest_caught is not None else r.how.split(":", 1)[0]


def summarize(results: list[MutantResult], claim_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Per claim: its derivation and (non-algorithm) formula mutants caught/total, how many
    raised, its sensitivity (bisection mode: the largest over its mutants of the smallest
    eps caught; None when one is never caught), the entries not perturbed, and the mutants
    not caught with their outcome.  Algorithm-formula mutants are left out (see
    :func:`summarize_algorithms`)."""
    rows = []
    for cid in claim_ids:
        rs = [r for r in results if r.claim_id == cid and not r.algorithm]
        row: dict[str, Any] = {"claim": cid}
        for kind in ("derived", "formula"):
            k = [r for r in rs if r.kind == kind]
            row[kind] = f"{sum(r.caught for r in k)}/{len(k)}"
        row["raised"] = sum(_state(r) == RAISED for r in rs)
        row["disproved"] = sum(r.disproved for r in rs)
        if rs and rs[0].eps is None:
            sens = [r.smallest_caught for r in rs]
            row["sensitivity"] = None if any(s is None for s in sens) else max(sens)
        elif rs:  # one eps: the sensitivity is at most eps when every mutant was caught
            row["sensitivity_bound"] = (("<=" if all(r.caught for r in rs) else ">"), rs[0].eps)
        row["unmutable"] = unmutable_entries(derived.results(cid))
        row["missed"] = [f"{r.label} ({_state(r)})" for r in rs if not r.caught]
        rows.append(row)
    return rows


def summarize_algorithms(results: list[MutantResult]) -> list[dict[str, Any]]:
    """The algorithm-formula mutants: name, the claim they are verified against, outcome."""
    return [{"algorithm": r.label.split(" ", 1)[1], "verified_by": r.claim_id,
             "state": _state(r), "smallest_caught": r.smallest_caught, "how": r.how}
            for r in results if r.algorithm]


# -- command line ------------------------------------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> None:
    from verify.runner import parse_ids
    p.add_argument("ids", nargs="*", type=parse_ids, metavar="ID",
                   help="claim ids, separated by spaces or commas (default: all)")
    p.add_argument("--eps", type=float, default=None,
                   help="run every mutant at this relative perturbation (e.g. 1e-2); "
                        "default: bisect the smallest eps caught over 1e-1 .. 1e-14")
    p.add_argument("--profile", choices=("quick", "full"), default="quick")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None,
                   help="run the mutants on a local Dask cluster of N worker processes")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the mutants on an existing Dask scheduler")
    p.add_argument("--source", action="store_true",
                   help="perturb each derivation at its source (its builder in "
                        "derivations.*.DERIVATIONS), in a fresh process per mutant")
    p.add_argument("--formulas-only", action="store_true",
                   help="only the formula-output mutants")
    p.add_argument("--json", metavar="FILE", help="write every mutant's result as JSON")
    p.add_argument("--json-sensitivity", metavar="FILE",
                   help="bisection mode: merge each claim's sensitivity, keyed by the hash "
                        "of its derived results, into FILE (the committed one is "
                        "verify/data/sensitivity.json)")


def run(args: argparse.Namespace) -> int:
    """The ``mutate`` command; exit 0 iff every mutant is caught."""
    from verify.claims import all_claims, get
    ids = ([get(i).id for group in args.ids for i in group] if args.ids
           else [c.id for c in all_claims()])
    if args.eps is not None and not (0 < args.eps < 1):
        raise ValueError(f"--eps must be in (0, 1); got {args.eps!r}")
    if args.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer; got {args.seed!r}")
    sens_path = getattr(args, "json_sensitivity", None)
    if sens_path and args.eps is not None:
        raise ValueError("--json-sensitivity needs the bisection mode: drop --eps")
    if sens_path and args.formulas_only:
        raise ValueError("--json-sensitivity needs the derivation mutants: drop --formulas-only")
    from verify._paths import validate_output_file
    for path, what in ((args.json, "--json"), (sens_path, "--json-sensitivity")):
        if path:  # refuse a bad output path before the (long) run, not after it
            validate_output_file(path, what)

    def progress(i: int, n: int, r: MutantResult) -> None:
        state = (_state(r).upper() if r.eps is not None and not r.caught else
                 (DISPROVED if r.disproved else "caught") if r.eps is not None else
                 (f"caught down to {r.smallest_caught:.0e}" if r.caught else _state(r).upper()))
        where = " [algorithm]" if r.algorithm else ""
        print(f"[{i}/{n}] {r.claim_id} {r.label}{where}: {state} ({r.how}) {r.seconds:.1f}s",
              flush=True)

    t0 = time.perf_counter()
    results = mutate(ids, args.eps, profile=args.profile, seed=args.seed,
                     workers=getattr(args, "workers", None),
                     scheduler=getattr(args, "scheduler", None),
                     source=getattr(args, "source", False),
                     formulas_only=args.formulas_only, progress=progress)
    rows = summarize(results, ids)
    algos = summarize_algorithms(results)
    print(f"\n{'claim':<6} {'derived':>9} {'formula':>8} {'disproved':>10} {'raised':>7} {'sensitivity':>12}")
    for row in rows:
        sens = row.get("sensitivity", "")
        sens = "-" if sens is None else (f"{sens:.0e}" if sens != "" else "")
        if "sensitivity_bound" in row:
            op, e = row["sensitivity_bound"]
            sens = f"{op} {e:.0e}"
        print(f"{row['claim']:<6} {row['derived']:>9} {row['formula']:>8} {row['disproved']:>10} "
              f"{row['raised']:>7} {sens:>12}"
              + (f"  not caught: {', '.join(row['missed'])}" if row["missed"] else ""))
    if algos:
        print("\nalgorithms (verified against claim properties; not credited to claims):")
        for a in algos:
            extra = f" down to {a['smallest_caught']:.0e}" if a["smallest_caught"] else ""
            print(f"  {a['algorithm']} (via {a['verified_by']}): {a['state']}{extra}")
    not_caught = sum(not r.caught for r in results)
    print(f"{len(results) - not_caught}/{len(results)} mutants caught by measurement "
          f"({sum(r.disproved for r in results)} of them disproved by certified balls), "
          f"{sum(_state(r) == RAISED for r in results)} raised "
          f"({time.perf_counter() - t0:.0f} s{', at the source' if args.source else ''})")
    if args.json:
        from verify._atomic import atomic_write_bytes
        atomic_write_bytes(args.json, json.dumps(
            {"eps": args.eps, "profile": args.profile, "seed": args.seed,
             "source": bool(args.source), "claims": rows, "algorithms": algos,
             "mutants": [asdict(r) for r in results]},
            indent=1, default=str).encode())
    if sens_path:
        from verify import sensitivity
        sensitivity.update(sens_path, rows, profile=args.profile, seed=args.seed)
    return 0 if not_caught == 0 else 1


main = run  # the CLI calls ``mutate.main(args)``


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:2] == ["--source-child"]:
        sys.exit(_child_main())
    ap = argparse.ArgumentParser(prog="verify mutate")
    add_arguments(ap)
    sys.exit(run(ap.parse_args()))
