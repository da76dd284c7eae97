"""Command line: ``python -m verify {list,check,report,experiment,bench,mutate}``.

Exit codes: 0 success; 1 a check failed (or a negative control did not fail, or a task
raised); 2 a usage error (unknown claim id, bad option value, an output path the suite
refuses to write, an unreachable Dask scheduler) with a one-line message, before any work
starts; 130 interrupted (Ctrl-C: running tasks are cancelled, nothing is written).

Where the work runs (``check``, ``report``, ``experiment``): in this process by default;
``--workers N`` starts a local Dask cluster of N single-threaded processes,
``--scheduler ADDRESS`` uses an existing one (see docs/scale-out.md).  The results are
gathered in a fixed order, so the output is the same wherever the work ran.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from verify.claims import PROFILES, PluginError, UnknownClaimError, all_claims, get
from verify.kit import fmt
from verify.runner import parse_ids

__all__ = ["main", "UsageError"]


class UsageError(Exception):
    """A bad command line: printed as one line, exit status 2."""


_REPEATED_OPTION = re.compile(r"^argument (-[-\w]+(?:/-[-\w]+)?): (?:\1:? )")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        # "argument --seeds: --seeds: ..." (argparse's prefix before our own) said once
        message = _REPEATED_OPTION.sub(r"argument \1: ", message)
        raise UsageError(f"{message} (see `python -m verify {self.prog.split()[-1]} --help`)"
                         if " " in self.prog else f"{message} (see `python -m verify --help`)")


# ----------------------------------------------------------------------------- option types

def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed must be a non-negative integer; got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"--seed must be a non-negative integer; got {text!r}")
    return v


def _seeds(text: str) -> list[int]:
    from verify.runner import parse_seeds
    try:
        return parse_seeds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(name: str, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer in 1..{hi}; got {text!r}") from None
        if not 1 <= v <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be an integer in 1..{hi}; got {text!r}")
        return v
    return parse


def _timeout(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"--timeout must be a positive number of seconds; got {text!r}")
    return v


def _add_seeds(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seed", type=_seed, default=None, metavar="N",
                   help="one seed (default 0); shorthand for --seeds N")
    g.add_argument("--seeds", type=_seeds, default=None, metavar="SPEC",
                   help="several seeds: 0-19, 1,5,9 or a mix such as 0-3,7")


def _add_execution(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=_positive_int("--workers", 256), metavar="N",
                   help="run on a local Dask cluster of N single-threaded worker processes")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://127.0.0.1:8786")


def _add_claim_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", choices=PROFILES, default="quick")
    _add_seeds(p)
    p.add_argument("--examples", type=_positive_int("--examples", 100_000), metavar="N",
                   help="Hypothesis-drawn instances per claim (default: the profile's)")
    p.add_argument("--timeout", type=_timeout, metavar="SECONDS",
                   help="time budget of each (claim, seed) run; a run over it is reported "
                        "as an error and the others go on")
    _add_execution(p)


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="verify", description="Symbolic-numeric verification suite for the "
                "mean-field theory of wide two-layer ReLU networks.",
                epilog="`python -m verify COMMAND --help` describes a command; "
                       "docs/scale-out.md describes --workers and --scheduler.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.add_parser("list", help="list the claims: id, title, source")

    c = sub.add_parser("check", help="run derivations and checks; exit 0 only if all pass")
    c.add_argument("ids", nargs="*", type=parse_ids, metavar="ID",
                   help="claim ids, separated by spaces or commas (default: all)")
    _add_claim_run(c)
    c.add_argument("--json", metavar="FILE",
                   help="write the evidence as JSON: one row per (claim, seed)")
    c.add_argument("--negative-controls", action="store_true",
                   help="run the negative controls instead; exit 0 only if every one fails")

    r = sub.add_parser("report", help="regenerate the derivation report (Markdown + HTML + figures)")
    r.add_argument("--out", default="report", metavar="DIR")
    r.add_argument("--only", nargs="+", type=parse_ids, metavar="ID",
                   help="restrict to these claim ids (H1f W3a or H1f,W3a); without the "
                        "Performance section")
    _add_claim_run(r)

    e = sub.add_parser("experiment", help="run a named experiment (writes NAME.json and NAME.png)")
    e.add_argument("name", nargs="?", help="experiment name (see --list)")
    e.add_argument("--list", action="store_true",
                   help="list the experiments with every setting, its default and range")
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting (repeatable)")
    e.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="run the grid of these values (repeatable: the product of all "
                        "sweeps, times the seeds); writes NAME-sweep.json and NAME-sweep.png")
    e.add_argument("--metric", metavar="KEY",
                   help="the measured quantity a sweep plots (a scalar in the experiment's "
                        "data; default: the experiment's declared metric, else the first scalar)")
    e.add_argument("--out", default="out", metavar="DIR")
    e.add_argument("--profile", choices=PROFILES, default="quick")
    _add_seeds(e)
    e.add_argument("--timeout", type=_timeout, metavar="SECONDS",
                   help="time budget of each run (each sweep point)")
    _add_execution(e)

    b = sub.add_parser("bench", help="time the particle engines against the references (and PyTorch)")
    try:
        from verify import bench
        bench.add_arguments(b)
    except ImportError:
        pass

    mutate = _optional("verify.mutate")
    if mutate is not None and hasattr(mutate, "add_arguments"):
        m = sub.add_parser("mutate", help="mutation sensitivity: perturb each derived result "
                           "and formula output; exit 0 only if every mutant is caught")
        mutate.add_arguments(m)
    return p


def _optional(module: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


# ----------------------------------------------------------------------------- display

class _Display:
    """Result lines on stdout (verdicts coloured on a terminal) and, on a terminal, a
    progress bar with ETA on stderr; in a log file one plain line per result, no ``\\r``."""

    def __init__(self) -> None:
        from rich.console import Console
        self.out = Console(highlight=False, soft_wrap=True)  # follows sys.stdout
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.live = self.err.is_terminal and not self.err.is_dumb_terminal
        self._progress = None
        self._task = None
        self._sub = None

    def line(self, *parts: tuple[str, str | None] | str) -> None:
        from rich.text import Text
        text = Text()
        for part in parts:
            if isinstance(part, tuple):
                text.append(part[0], style=part[1] if self.out.is_terminal else None)
            else:
                text.append(part)
        if self._progress is not None and self.out.is_terminal:
            self._progress.console.print(text)  # above the bar, on the same screen
        else:
            self.out.print(text)

    def log(self, message: str) -> None:
        """A progress line on stderr, for log files (the bar shows it on a terminal)."""
        if not self.live:
            print(message, file=sys.stderr, flush=True)

    def start(self, total: int, what: str) -> None:
        if not self.live:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                                   TextColumn, TimeElapsedColumn, TimeRemainingColumn)
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(),
                                  TextColumn("ETA"), TimeRemainingColumn(),
                                  console=self.err, transient=True)
        self._progress.start()
        self._task = self._progress.add_task(what, total=total)

    def advance(self, description: str | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1,
                                  **({"description": description} if description else {}))

    def sub_progress(self, done: int, total: int, what: str) -> None:
        """Progress inside one long task (``verify.runner.report_progress``)."""
        if self._progress is None:
            return
        if self._sub is None:
            self._sub = self._progress.add_task(what or "instances", total=total)
        self._progress.update(self._sub, completed=done, total=total, description=what or "instances",
                              visible=done < total)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _style(ok: bool | None) -> str | None:
    return None if ok is None else ("green" if ok else "bold red")


# ----------------------------------------------------------------------------- helpers

def _resolve(ids: Sequence[str]):
    """The claims named by ``ids`` (all claims when empty); an id given in another case
    runs the claim and says its canonical id on stderr."""
    claims = [get(i) for i in ids] if ids else all_claims()
    for given, c in zip(ids, claims):
        if given != c.id:
            print(f"verify: note: claim ids are case-insensitive; {given!r} is {c.id}",
                  file=sys.stderr)
    return claims


def _seed_list(args: argparse.Namespace) -> list[int]:
    if getattr(args, "seeds", None) is not None:
        return list(args.seeds)
    return [args.seed if args.seed is not None else 0]


def _executor(args: argparse.Namespace):
    from verify.runner import ExecutionError, Executor
    try:
        return Executor(workers=getattr(args, "workers", None),
                        scheduler=getattr(args, "scheduler", None))
    except ExecutionError as exc:
        raise UsageError(str(exc)) from None


def _validate_file(path: str | None, what: str) -> Path | None:
    if path is None:
        return None
    from verify._paths import validate_output_file
    try:
        return validate_output_file(path, what)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _cmd_list() -> int:
    claims = all_claims()
    w = max((len(c.title) for c in claims), default=10)
    wid = max([5] + [len(c.id) for c in claims])
    for c in claims:
        print(f"{c.id:<{wid}} {c.title:<{w}}  {c.source}")
    return 0


# ----------------------------------------------------------------------------- check

def _shown(ev: Any, neg: bool) -> tuple[float, float, float, str, str, str]:
    """(error, tolerance, severity, margin text, sub-check name, "unit, kind") to show for
    an evidence: for a check, its WORST sub-check (the failing one when it fails, else the
    one nearest its bound; :func:`verify.report.worst.worst_subcheck`); for a negative
    control, the sub-check it targets (``Claim.negative_target``).  The severity is above 1
    exactly when the bound is broken; the margin is ``x7.98`` (error / tolerance, tolerance
    / error for an "at least" bound) or ``excess +0.25`` (a bound on a signed quantity)."""
    from verify.report.worst import unit_of, worst_subcheck
    if not neg:
        w = worst_subcheck(ev)
        return w.error, w.tolerance, w.severity, "", w.name, f"{w.unit}, {w.kind}"
    from verify.kit import control_margin
    m = control_margin(ev, getattr(_claim_of(ev.claim_id), "negative_target", "") or "")
    sub = next((d for d in (ev.details or {}).get("subchecks", [])
                if isinstance(d, dict) and d.get("name") == m.name), {})
    unit = unit_of(str(sub.get("reason", "")), m.name or "", str(sub.get("unit", "") or ""))
    return (m.error, m.tolerance, m.severity(), m.factor_text(), m.name or "", f"{unit}, {m.sense}")


def _short(name: str, width: int = 70) -> str:
    """A sub-check name on one line, cut to ``width`` characters."""
    text = " ".join(str(name).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _claim_of(claim_id: str) -> Any:
    try:
        return get(claim_id)
    except UnknownClaimError:
        return None


def _claim_summary(results: list, neg: bool) -> dict[str, Any]:
    """Per claim over its seeds: passes, worst seed (an error first, then a wrong verdict,
    then the largest error/tolerance of a check or the smallest margin of a control)."""
    def ok_of(r):
        if r.error is not None:
            return False
        return (not r.evidence.passed) if neg else r.evidence.passed

    def badness(r):
        if r.error is not None:
            return (2, 0.0, -r.task.seed)
        ratio = _shown(r.evidence, neg)[2]
        return (0 if ok_of(r) else 1, (-ratio if neg else ratio), -r.task.seed)

    worst = max(results, key=badness)
    return {"ok": sum(ok_of(r) for r in results), "n": len(results), "worst": worst,
            "errors": sum(r.error is not None for r in results),
            "bad": [r for r in results if not ok_of(r)],
            "seconds": sum(r.seconds for r in results)}


def _write_check_json(json_path: Path, args: argparse.Namespace, seeds: list[int], neg: bool,
                      results: list) -> None:
    """``check --json FILE``: one row per (claim, seed), written atomically."""
    rows = []
    for r in results:
        if r.evidence is not None:
            row = r.evidence.to_json()
            if r.error is not None:
                row["exception"] = r.error_line
        else:
            row = {"claim_id": r.task.name, "seed": r.task.seed, "profile": r.task.profile,
                   "negative_control": neg, "passed": False, "exception": r.error_line,
                   "seconds": r.seconds}
        rows.append(row)
    from verify._atomic import atomic_write_bytes
    atomic_write_bytes(json_path, json.dumps(
        {"profile": args.profile, "seeds": seeds, "negative_controls": neg,
         "examples": args.examples, "evidence": rows}, indent=1).encode())


def _check_counts(claims: list, results: list, seeds: list[int], neg: bool) -> tuple[str, int]:
    """check's last line (verified / observed / failed, or controls that failed) and the
    number of claims with a problem."""
    from verify.runner import format_seeds
    ns = len(seeds)
    ok = [_claim_summary(results[k * ns:(k + 1) * ns], neg)["ok"] == ns
          for k in range(len(claims))]
    bad = ok.count(False)
    at = f" at every seed ({format_seeds(seeds)})" if ns > 1 else ""
    if neg:
        counts = f"{len(claims) - bad}/{len(claims)} negative controls failed as required"
    else:  # a numerical-evidence claim that passes is "observed", not "verified"
        observed = sum(c.kind == "numerical-evidence" and good for c, good in zip(claims, ok))
        counts = (f"{len(claims) - bad - observed}/{len(claims)} claims verified"
                  + (f", {observed} observed (numerical evidence)" if observed else ""))
    return counts + at + ("" if not bad else f"; {bad} problem(s)"), bad


def _cmd_check(args: argparse.Namespace) -> int:
    from verify.runner import Task
    claims = _resolve([i for group in args.ids for i in group])
    seeds = _seed_list(args)
    json_path = _validate_file(args.json, "--json")
    neg = args.negative_controls
    tasks = [Task("claim", c.id, args.profile, s, negative_control=neg, examples=args.examples,
                  timeout=args.timeout) for c in claims for s in seeds]
    ns = len(seeds)
    display = _Display()
    wid = max([5] + [len(c.id) for c in claims])
    header = (f"{'id':<{wid}} {'failed' if neg else 'passed':>7} {'worst seed':>10} {'measured error':>14} "
              f"{'tolerance':>10}  {'unit, kind':<22}  " + (f"{'margin':<14}  " if neg else "")
              + f"{'verdict':<20} {'seconds':>7}  "
              + ("targeted sub-check" if neg else "worst sub-check"))
    printed = [0]
    done = [0] * len(claims)
    results: list = [None] * len(tasks)

    def print_claim(k: int) -> None:
        rs = results[k * ns:(k + 1) * ns]
        s = _claim_summary(rs, neg)
        w = s["worst"]
        all_ok = s["ok"] == s["n"]
        if s["errors"] and (w.error is not None):
            verdict = "ERROR"
        elif neg:
            verdict = "fails (as required)" if all_ok else "DID NOT FAIL"
        else:
            verdict = "pass" if all_ok else "FAIL"
        shown = None if w.error is not None else _shown(w.evidence, neg)
        err = "-" if shown is None else fmt(shown[0])
        tol = "-" if shown is None else fmt(shown[1])
        margin = "" if not neg else f"{'-' if shown is None else shown[3]:<14}  "
        unit = "-" if shown is None else shown[5]
        name = "" if shown is None else _short(shown[4])
        display.line(f"{claims[k].id:<{wid}} {s['ok']:>3}/{s['n']:<3} {w.task.seed:>10} {err:>14} "
                     f"{tol:>10}  {unit:<22}  {margin}", (f"{verdict:<20}", _style(all_ok)),
                     f" {s['seconds']:7.1f}", f"  {name}" if name else "",
                     f"  {w.error_line}" if w.error is not None and ns == 1 else "")
        if ns > 1:
            for r in s["bad"][:8]:
                e_t = None if r.error is not None else _shown(r.evidence, neg)
                what = (f"ERROR {r.error_line}" if e_t is None else
                        f"{'passed' if neg else 'failed'}: {_short(e_t[4])}: error {fmt(e_t[0])}, "
                        f"tolerance {fmt(e_t[1])} ({e_t[5]})" + (f" ({e_t[3]})" if neg else ""))
                display.line(f"      seed {r.task.seed}: ", (what, _style(False)))
            if len(s["bad"]) > 8:
                display.line(f"      ... and {len(s['bad']) - 8} more seed(s)")

    def on_result(i: int, r) -> None:
        results[i] = r
        k = i // ns
        done[k] += 1
        display.advance(f"{r.task.label}")
        while printed[0] < len(claims) and done[printed[0]] == ns:
            print_claim(printed[0])
            printed[0] += 1

    with _executor(args) as ex:
        print(header, flush=True)
        display.start(len(tasks), "check")
        from verify.runner import progress_hook
        try:
            with progress_hook(display.sub_progress):
                ex.run(tasks, on_result=on_result)
        finally:
            display.stop()
    counts, bad = _check_counts(claims, results, seeds, neg)
    print(counts)
    if len(tasks) > 1:
        slow = max(results, key=lambda r: r.seconds)
        print(f"slowest run: {slow.task.label}, {slow.seconds:.1f} s")
    if json_path is not None:
        _write_check_json(json_path, args, seeds, neg, results)
    return 0 if bad == 0 else 1


# ----------------------------------------------------------------------------- report

def _cmd_report(args: argparse.Namespace) -> int:
    from verify.report import build_report
    if args.only:  # unknown ids -> exit 2 before any work; canonical ids, no repeats
        args.only = list(dict.fromkeys(
            c.id for c in _resolve([i for group in args.only for i in group])))
    from verify._paths import validate_report_out
    try:
        out = validate_report_out(args.out, "--out")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    seeds = _seed_list(args)
    display = _Display()
    with _executor(args) as ex:
        from verify.runner import progress_hook
        n_claims = len(args.only) if args.only else len(all_claims())
        display.start(n_claims * len(seeds) * 2, "report")
        try:
            with progress_hook(display.sub_progress):
                summary = build_report(
                    out, args.profile, seeds=seeds, only=args.only, executor=ex,
                    examples=args.examples, timeout=args.timeout,
                    progress=None if display.live else sys.stderr,
                    on_task=lambda i, n, r: display.advance(r.task.label))
        finally:
            display.stop()
    ok = summary["verified"] == summary["claims"] == summary["negative_controls_failing"]
    observed = summary.get("observed", 0)
    counts = (f"{summary['verified'] - observed} verified, {observed} observed (numerical "
              f"evidence), {summary['claims'] - summary['verified']} failed of "
              f"{summary['claims']} claims")
    display.line(f"report written to {summary['out']}/ (report.md, index.html, "
                 f"{len(summary['figures'])} figures): ",
                 (counts, _style(summary["verified"] == summary["claims"])),
                 (f"; {summary['negative_controls_failing']}/{summary['claims']} negative controls "
                  "fail as required", _style(summary["negative_controls_failing"] == summary["claims"])),
                 f" at every seed ({summary['seeds']})" if len(seeds) > 1 else "")
    return 0 if ok else 1


# ----------------------------------------------------------------------------- experiment

def _cmd_experiment(args: argparse.Namespace) -> int:
    from verify import experiments
    if args.list or not args.name:
        if not args.list:
            raise UsageError("experiment needs a NAME or --list")
        describe = getattr(experiments, "describe_settings", None)
        for exp in experiments.all_experiments():
            claims = f" [{', '.join(exp.claims)}]" if exp.claims else ""
            print(f"{exp.name:<20} {exp.description}{claims}")
            lines = describe(exp) if describe is not None else [
                f"{k}={v!r}" for k, v in sorted(exp.defaults.items())]
            for line in lines:
                print(f"    {line}")
        return 0
    if args.sweep:
        from verify import sweep
        try:
            plan = sweep.plan(args.name, args.set, args.sweep, args.out, args.profile,
                              _seed_list(args), metric=args.metric, timeout=args.timeout)
        except (KeyError, ValueError) as exc:
            raise UsageError(str(exc).strip("'\"")) from None
        display = _Display()
        with _executor(args) as ex:
            display.start(len(plan.tasks), f"sweep {args.name}")
            try:
                count = [0]

                def on_result(i: int, r) -> None:
                    count[0] += 1
                    display.advance(sweep.point_label(plan, r))
                    display.log(f"[{count[0]}/{len(plan.tasks)}] {sweep.point_label(plan, r)}")
                results = ex.run(plan.tasks, on_result=on_result)
            finally:
                display.stop()
        summary = sweep.write(plan, results)
        for line in summary["lines"]:
            print(line)
        return 0 if summary["errors"] == 0 else 1
    if args.metric:
        raise UsageError("--metric applies to --sweep runs only")
    seeds = _seed_list(args)
    if len(seeds) != 1:
        raise UsageError("an experiment runs at one seed (--seed N); use --sweep with --seeds "
                         "to run several")
    try:
        if hasattr(experiments, "prepare"):
            exp, params, outdir = experiments.prepare(args.name, args.set, args.out, args.profile)
        else:
            exp = experiments.get(args.name)
            params = experiments.parse_settings(exp, args.set, args.profile)
            outdir = Path(args.out)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    from verify.runner import Task, write_experiment
    task = Task("experiment", exp.name, args.profile, seeds[0], params=params, figures=True,
                timeout=args.timeout)
    with _executor(args) as ex:
        [result] = ex.run([task])
    if result.error is not None:
        print(f"verify: experiment {exp.name} failed: {result.error_line}", file=sys.stderr)
        if result.traceback:
            print(result.traceback, file=sys.stderr)
        return 1
    written = write_experiment(result, outdir)
    print("wrote " + " and ".join(str(p) for p in written))
    return 0


# ----------------------------------------------------------------------------- main

def _delegate(module: str, args: argparse.Namespace) -> int:
    mod = _optional(module)
    if mod is None:
        raise UsageError(f"the {args.command} command is not available in this build")
    for opt in ("json",):
        if getattr(args, opt, None) is not None:
            _validate_file(getattr(args, opt), f"--{opt}")
    try:
        return mod.run(args)
    except ValueError as exc:  # argument validation of the command
        raise UsageError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (see the module docstring).  A closed output
    pipe (``python -m verify list | head -1``) ends the command quietly, as for any Unix
    tool: status 141 (128 + SIGPIPE), no traceback."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush is quiet.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141


def _main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    from verify.runner import ExecutionError
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        if args.command == "list":
            return _cmd_list()
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "report":
            return _cmd_report(args)
        if args.command == "experiment":
            return _cmd_experiment(args)
        if args.command == "bench":
            return _delegate("verify.bench", args)
        if args.command == "mutate":
            return _delegate("verify.mutate", args)
    except (UsageError, UnknownClaimError, ExecutionError, PluginError) as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("verify: interrupted; nothing was written", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
