"""Command line: ``python -m verify {list,check,report,experiment,bench}``.

Exit codes: 0 success; 1 a check failed (or a negative control did not fail);
2 usage errors (unknown claim id, bad option value) with a one-line message.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from verify.claims import PROFILES, UnknownClaimError, all_claims, get
from verify.claims._helpers import fmt

__all__ = ["main"]


class UsageError(Exception):
    """A bad command line: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise UsageError(f"{message} (see `python -m verify {self.prog.split()[-1]} --help`)"
                         if " " in self.prog else f"{message} (see `python -m verify --help`)")


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed must be a non-negative integer; got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"--seed must be a non-negative integer; got {text!r}")
    return v


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="verify", description="Symbolic-numeric verification suite for the "
                "mean-field theory of wide two-layer ReLU networks.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.add_parser("list", help="list the claims: id, title, source")

    c = sub.add_parser("check", help="run derivations and checks; exit 0 only if all pass")
    c.add_argument("ids", nargs="*", metavar="ID", help="claim ids (default: all)")
    c.add_argument("--profile", choices=PROFILES, default="quick")
    c.add_argument("--seed", type=_seed, default=0)
    c.add_argument("--json", metavar="FILE", help="write the evidence as JSON")
    c.add_argument("--negative-controls", action="store_true",
                   help="run the negative controls instead; exit 0 only if every one fails")

    r = sub.add_parser("report", help="regenerate the derivation report (Markdown + HTML + figures)")
    r.add_argument("--out", default="report", metavar="DIR")
    r.add_argument("--profile", choices=PROFILES, default="quick")
    r.add_argument("--seed", type=_seed, default=0)
    r.add_argument("--only", nargs="+", metavar="ID", help="restrict to these claim ids")

    e = sub.add_parser("experiment", help="run a named experiment (writes NAME.json and NAME.png)")
    e.add_argument("name", nargs="?", help="experiment name (see --list)")
    e.add_argument("--list", action="store_true", help="list the experiments")
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting (repeatable)")
    e.add_argument("--out", default="out", metavar="DIR")
    e.add_argument("--profile", choices=PROFILES, default="quick")
    e.add_argument("--seed", type=_seed, default=0)

    b = sub.add_parser("bench", help="time the particle engines against the references (and PyTorch)")
    try:
        from verify import bench
        bench.add_arguments(b)
    except ImportError:
        pass
    return p


def _resolve(ids: Sequence[str]):
    return [get(i) for i in ids] if ids else all_claims()


def _cmd_list() -> int:
    claims = all_claims()
    w = max((len(c.title) for c in claims), default=10)
    for c in claims:
        print(f"{c.id:<5} {c.title:<{w}}  {c.source}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    claims = _resolve(args.ids)
    neg = args.negative_controls
    evidence, bad = [], 0
    print(f"{'id':<5} {'measured error':>14} {'tolerance':>10}  {'verdict':<22} {'seconds':>7}")
    for c in claims:
        t0 = time.perf_counter()
        try:
            ev = c.run(args.profile, args.seed, negative_control=neg)
            evidence.append(ev.to_json())
            ok = (not ev.passed) if neg else ev.passed
            verdict = ("fails (as required)" if ok else "DID NOT FAIL") if neg else \
                      ("pass" if ok else "FAIL")
            line = f"{c.id:<5} {fmt(ev.error):>14} {fmt(ev.tolerance):>10}  {verdict:<22} {ev.seconds:7.1f}"
        except Exception as exc:
            ok = False
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            evidence.append({"claim_id": c.id, "exception": msg})
            line = f"{c.id:<5} {'-':>14} {'-':>10}  {'ERROR':<22} {time.perf_counter() - t0:7.1f}  {msg}"
        bad += not ok
        print(line, flush=True)
    what = "negative controls failed as required" if neg else "claims verified"
    print(f"{len(claims) - bad}/{len(claims)} {what}" + ("" if not bad else f"; {bad} problem(s)"))
    if args.json:
        from verify._atomic import atomic_write_bytes
        atomic_write_bytes(args.json, json.dumps(
            {"profile": args.profile, "seed": args.seed, "negative_controls": neg,
             "evidence": evidence}, indent=1).encode())
    return 0 if bad == 0 else 1


def _cmd_report(args: argparse.Namespace) -> int:
    from verify.report import build_report
    if args.only:
        _resolve(args.only)  # unknown ids -> exit 2 before any work
    summary = build_report(args.out, args.profile, args.seed, args.only)
    print(f"report written to {summary['out']}/ (report.md, index.html, "
          f"{len(summary['figures'])} figures): {summary['verified']}/{summary['claims']} "
          f"claims verified, {summary['negative_controls_failing']}/{summary['claims']} "
          "negative controls fail as required")
    return 0 if summary["verified"] == summary["claims"] == summary["negative_controls_failing"] else 1


def _cmd_experiment(args: argparse.Namespace) -> int:
    from verify import experiments
    if args.list or not args.name:
        if not args.list:
            raise UsageError("experiment needs a NAME or --list")
        for exp in experiments.all_experiments():
            claims = f" [{', '.join(exp.claims)}]" if exp.claims else ""
            print(f"{exp.name:<20} {exp.description}{claims}")
        return 0
    try:
        exp = experiments.get(args.name)
        experiments.parse_settings(exp, args.set, args.profile)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    experiments.run(args.name, args.set, args.out, args.profile, args.seed)
    png = Path(args.out) / f"{args.name}.png"
    print(f"wrote {args.out}/{args.name}.json" + (f" and {png}" if png.exists() else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        if args.command == "list":
            return _cmd_list()
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "report":
            return _cmd_report(args)
        if args.command == "experiment":
            return _cmd_experiment(args)
        if args.command == "bench":
            try:
                from verify import bench
            except ImportError:
                raise UsageError("the bench command is not available in this build") from None
            return bench.run(args)
    except UsageError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    except UnknownClaimError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("verify: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
