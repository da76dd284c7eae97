"""Mutation sensitivity of the checks: ``python -m verify mutate [IDS] [--eps E]``.

A check that still passes when what it verifies is wrong proves nothing (docs/architecture.md; "One
source of truth, and checks that can catch it being wrong"; Hook & Kelly 2009).  Two kinds
of mutant:

- **derivation mutants**: each entry of a claim's ``Derivation.results`` (a SymPy
  expression, a matrix, a number; nested dicts, lists and tuples are entered) is replaced,
  one at a time, by ``e (1 + eps) + eps`` through :func:`verify.derived.overridden`;
- **formula mutants**: the output of each verified formula users import
  (``verify.formulas.__all__``) is multiplied by ``1 + eps``.

Each mutant runs the claim's check; it is *caught* when the check does not pass (an
exception raised by the check counts as caught and is recorded).  Without ``--eps`` the
smallest decade ``eps = 10^-k`` (k = 1..14) at which each mutant is caught is found by
bisection, assuming detection is monotone in eps.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Sequence

import sympy as sp

from derivations.base import Derivation
from verify import derived

__all__ = ["Mutant", "MutantResult", "mutation_sites", "mutated", "derivation_mutants",
           "formula_mutants", "run_mutant", "smallest_caught", "add_arguments", "run", "main"]

DECADES = tuple(range(1, 15))  # eps = 10^-k


@dataclass(frozen=True)
class Mutant:
    """One perturbation: ``kind`` is "derived" (``path`` into the results) or "formula"
    (``path`` = (formula name,))."""
    claim_id: str
    kind: str
    path: tuple

    @property
    def label(self) -> str:
        return ("results" + "".join(f"[{p!r}]" for p in self.path) if self.kind == "derived"
                else f"formula {self.path[0]}")


@dataclass
class MutantResult:
    claim_id: str
    kind: str
    label: str
    eps: float | None          # the eps run (fixed mode) or None (bisection mode)
    caught: bool | None        # at eps (fixed mode)
    smallest_caught: float | None = None  # bisection mode: smallest eps caught
    how: str = ""              # "check failed", "check raised ...", "passed"
    seconds: float = 0.0


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


def mutation_sites(results: Any, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, leaf) of ``results`` that :func:`mutated` can perturb."""
    if isinstance(results, dict):
        for k, v in results.items():
            yield from mutation_sites(v, prefix + (k,))
    elif isinstance(results, (list, tuple)) and not isinstance(results, sp.Basic):
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
    elif isinstance(results, (list, tuple)) and not isinstance(results, sp.Basic):
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


def derivation_mutants(claim_id: str) -> list[Mutant]:
    res = derived.results(claim_id)
    return [Mutant(claim_id, "derived", path) for path, _ in mutation_sites(res)]


def formula_mutants(claim_ids: Sequence[str]) -> list[Mutant]:
    """One mutant per formula in ``verify.formulas.__all__`` whose claim is selected."""
    from verify import formulas
    wanted = set(claim_ids)
    out = []
    for name in formulas.__all__:
        obj = getattr(formulas, name)
        cid = getattr(obj, "claim", None)
        if isinstance(cid, str) and cid in wanted and not isinstance(obj, type):
            out.append(Mutant(cid, "formula", (name,)))
    return out


# -- running -----------------------------------------------------------------------

def run_mutant(m: Mutant, eps: float, profile: str = "quick", seed: int = 0) -> tuple[bool, str]:
    """Run the claim's check under mutant ``m`` at ``eps``; (caught, how)."""
    from verify.claims import get
    from verify.claims._helpers import no_shrinking
    from verify.formulas._base import perturbed_output
    claim = get(m.claim_id)
    if m.kind == "derived":
        orig = derived.derivation(m.claim_id)
        d = Derivation(steps=orig.steps, results=mutated(orig.results, m.path, eps))
        ctx = derived.overridden(m.claim_id, d)
    else:
        ctx = perturbed_output(m.path[0], 1 + eps)
    with ctx, no_shrinking():
        try:
            ev = claim.run(profile, seed)
        except Exception as exc:
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            return True, f"check raised {msg}"
    if ev.passed:
        return False, f"passed (error {ev.error:.3g} <= tolerance {ev.tolerance:.3g})"
    failed = [s["name"] for s in ev.details.get("subchecks", []) if not s.get("passed", True)]
    return True, "check failed" + (f" ({', '.join(failed)})" if failed else "")


def smallest_caught(m: Mutant, profile: str = "quick", seed: int = 0) -> tuple[float | None, str]:
    """Smallest eps = 10^-k caught, by bisection over k = 1..14 (None: not caught at 0.1)."""
    caught, how = run_mutant(m, 10.0 ** -DECADES[0], profile, seed)
    if not caught:
        return None, how
    lo, hi = 0, len(DECADES)  # index lo is caught; index hi (eps 1e-15) assumed not caught
    best_how = how
    while hi - lo > 1:
        mid = (lo + hi) // 2
        c, h = run_mutant(m, 10.0 ** -DECADES[mid], profile, seed)
        if c:
            lo, best_how = mid, h
        else:
            hi = mid
    return 10.0 ** -DECADES[lo], best_how


def _task(args: tuple[Mutant, float | None, str, int]) -> MutantResult:
    m, eps, profile, seed = args
    t0 = time.perf_counter()
    if eps is None:
        s, how = smallest_caught(m, profile, seed)
        return MutantResult(m.claim_id, m.kind, m.label, None, None, s, how,
                            time.perf_counter() - t0)
    caught, how = run_mutant(m, eps, profile, seed)
    return MutantResult(m.claim_id, m.kind, m.label, eps, caught, None, how,
                        time.perf_counter() - t0)


def mutate(claim_ids: Sequence[str], eps: float | None = 1e-2, *, profile: str = "quick",
           seed: int = 0, jobs: int = 1, formulas_only: bool = False,
           progress: Any = None) -> list[MutantResult]:
    """Run every mutant of the given claims; results in a fixed order."""
    mutants: list[Mutant] = []
    if not formulas_only:
        for cid in claim_ids:
            mutants += derivation_mutants(cid)
    mutants += formula_mutants(claim_ids)
    tasks = [(m, eps, profile, seed) for m in mutants]
    if jobs <= 1:
        out = []
        for i, t in enumerate(tasks):
            r = _task(t)
            out.append(r)
            if progress is not None:
                progress(i + 1, len(tasks), r)
        return out
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        out = []
        for i, r in enumerate(pool.map(_task, tasks)):
            out.append(r)
            if progress is not None:
                progress(i + 1, len(tasks), r)
        return out


def summarize(results: list[MutantResult], claim_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Per claim: mutants caught/total (derived, formula) and its sensitivity, the largest
    over its mutants of the smallest eps caught (bisection mode)."""
    rows = []
    for cid in claim_ids:
        rs = [r for r in results if r.claim_id == cid]
        row: dict[str, Any] = {"claim": cid}
        for kind in ("derived", "formula"):
            k = [r for r in rs if r.kind == kind]
            if k and k[0].eps is not None:
                row[kind] = f"{sum(bool(r.caught) for r in k)}/{len(k)}"
            else:
                row[kind] = f"{sum(r.smallest_caught is not None for r in k)}/{len(k)}"
        if rs and rs[0].eps is None:
            sens = [r.smallest_caught for r in rs]
            row["sensitivity"] = None if (not sens or any(s is None for s in sens)) else max(sens)
        row["unmutable"] = unmutable_entries(derived.results(cid))
        row["missed"] = [r.label for r in rs if (r.caught is False)
                         or (r.eps is None and r.smallest_caught is None)]
        rows.append(row)
    return rows


# -- command line ------------------------------------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID", help="claim ids (default: all)")
    p.add_argument("--eps", type=float, default=None,
                   help="run every mutant at this relative perturbation (e.g. 1e-2); "
                        "default: bisect the smallest eps caught over 1e-1 .. 1e-14")
    p.add_argument("--profile", choices=("quick", "full"), default="quick")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--formulas-only", action="store_true",
                   help="only the formula-output mutants")
    p.add_argument("--json", metavar="FILE", help="write every mutant's result as JSON")


def run(args: argparse.Namespace) -> int:
    """The ``mutate`` command; exit 0 iff every mutant is caught."""
    from verify.claims import all_claims, get
    ids = [get(i).id for i in args.ids] if args.ids else [c.id for c in all_claims()]
    if args.eps is not None and not (0 < args.eps < 1):
        raise ValueError(f"--eps must be in (0, 1); got {args.eps!r}")
    if not 1 <= args.jobs <= 64:
        raise ValueError(f"--jobs must be in 1..64; got {args.jobs!r}")
    if args.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer; got {args.seed!r}")
    if args.json:  # refuse a bad output path before the (long) run, not after it
        from verify._paths import validate_output_file
        validate_output_file(args.json)

    def progress(i: int, n: int, r: MutantResult) -> None:
        state = (("caught" if r.caught else "MISSED") if r.eps is not None else
                 (f"caught down to {r.smallest_caught:.0e}" if r.smallest_caught else "MISSED"))
        print(f"[{i}/{n}] {r.claim_id} {r.label}: {state} ({r.how}) {r.seconds:.1f}s",
              flush=True)

    t0 = time.perf_counter()
    results = mutate(ids, args.eps, profile=args.profile, seed=args.seed, jobs=args.jobs,
                     formulas_only=args.formulas_only, progress=progress)
    rows = summarize(results, ids)
    print(f"\n{'claim':<6} {'derived':>9} {'formula':>8} {'sensitivity':>12}")
    for row in rows:
        sens = row.get("sensitivity", "")
        sens = "-" if sens is None else (f"{sens:.0e}" if sens != "" else "")
        print(f"{row['claim']:<6} {row['derived']:>9} {row['formula']:>8} {sens:>12}"
              + (f"  missed: {', '.join(row['missed'])}" if row["missed"] else ""))
    missed = sum(len(r["missed"]) for r in rows)
    print(f"{len(results) - missed}/{len(results)} mutants caught "
          f"({time.perf_counter() - t0:.0f} s)")
    if args.json:
        from verify._atomic import atomic_write_bytes
        atomic_write_bytes(args.json, json.dumps(
            {"eps": args.eps, "profile": args.profile, "seed": args.seed,
             "claims": rows, "mutants": [asdict(r) for r in results]},
            indent=1, default=str).encode())
    return 0 if missed == 0 else 1


main = run  # the CLI calls ``mutate.main(args)``


if __name__ == "__main__":  # pragma: no cover
    ap = argparse.ArgumentParser(prog="verify mutate")
    add_arguments(ap)
    sys.exit(run(ap.parse_args()))
