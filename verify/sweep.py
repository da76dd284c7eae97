"""Parameter sweeps: ``python -m verify experiment NAME --sweep KEY=V1,V2,... [--seeds SPEC]``.

Every point of the grid (the product of all ``--sweep`` lists, times the seeds) is one
task of :mod:`verify.runner`, so a sweep runs on a Dask cluster with ``--workers`` or
``--scheduler`` like any other work.  Output: ``DIR/NAME-sweep.json`` with every point
(its parameters, seed, the experiment's data and the measured quantity) and the fitted
rates, and ``DIR/NAME-sweep.png``.

The measured quantity of a point is, in this order: the ``--metric KEY`` given on the
command line; the experiment's declared ``metric`` (an attribute of
:class:`verify.experiments.Experiment`); the first entry of the experiment's ``data``
that is a finite real number.  ``KEY`` may name a nested entry as ``a.b``.

The figure: when a swept key takes positive numeric values (a width ``m``, a particle
number ``N``, ...), the measured quantity against that key on log-log axes, one faint
marker per (point, seed), the median over seeds, and the fitted rate: the least-squares
slope of log(quantity) against log(key), fitted per seed and reported as mean +- standard
deviation across seeds (the spread) and pooled over all seeds.  Other swept keys give one
curve (and one fit) per value.  Otherwise the quantity is plotted per point on linear axes.
"""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from verify.runner import Task, TaskResult, format_seeds

__all__ = ["SweepPlan", "plan", "write", "measured", "point_label"]


@dataclass
class SweepPlan:
    """A checked sweep: the grid, the tasks (grid-major, seeds inner) and where it goes."""
    name: str
    profile: str
    seeds: list[int]
    axes: dict[str, list[Any]]      # swept key -> values (parsed)
    fixed: list[str]                # the --set strings
    metric: str | None              # None: decided from the data
    outdir: Path
    tasks: list[Task]


def _parse_sweep(item: str) -> tuple[str, list[str]]:
    if "=" not in item:
        raise ValueError(f"--sweep {item}: expected KEY=V1,V2,..., e.g. --sweep m=100,1000,10000")
    key, raw = item.split("=", 1)
    key = key.strip()
    values = [v.strip() for v in raw.split(",")]
    if not key or not raw.strip() or any(not v for v in values):
        raise ValueError(f"--sweep {item}: expected KEY=V1,V2,... with non-empty values")
    return key, values


def plan(name: str, settings: Sequence[str], sweeps: Sequence[str], out: str | Path,
         profile: str, seeds: Sequence[int], metric: str | None = None,
         timeout: float | None = None) -> SweepPlan:
    """Check everything before any work: the experiment, every setting of every grid point
    (type, range, memory estimate), the output directory; ValueError/KeyError otherwise."""
    from verify import experiments
    from verify._paths import validate_output_dir
    exp = experiments.get(name)
    fixed = list(settings)
    fixed_keys = {s.split("=", 1)[0].strip() for s in fixed if "=" in s}
    axes_raw: dict[str, list[str]] = {}
    for item in sweeps:
        key, values = _parse_sweep(item)
        if key not in exp.defaults:
            raise ValueError(f"--sweep {key}: experiment {name} has no setting {key}; settings: "
                             f"{', '.join(sorted(exp.defaults))}")
        if isinstance(exp.defaults[key], (list, tuple)):
            raise ValueError(f"--sweep {key}: {key} is a list setting; sweep a scalar setting "
                             "(a list setting is already a sweep inside the experiment)")
        if key in axes_raw:
            raise ValueError(f"--sweep {key} given twice; list all its values in one --sweep")
        if key in fixed_keys:
            raise ValueError(f"{key} is both --set and --sweep; give it once")
        if len(set(values)) != len(values):
            raise ValueError(f"--sweep {key}: a value is repeated")
        axes_raw[key] = values
    keys = list(axes_raw)
    npoints = math.prod(len(v) for v in axes_raw.values()) * len(seeds)
    if npoints > 100_000:
        raise ValueError(f"the sweep has {npoints} runs; at most 100000")
    tasks, axes = [], {k: [] for k in keys}
    for combo in itertools.product(*(axes_raw[k] for k in keys)):
        params = experiments.parse_settings(exp, fixed + [f"{k}={v}" for k, v in zip(keys, combo)],
                                            profile)
        for k in keys:
            if params[k] not in axes[k]:
                axes[k].append(params[k])
        tasks += [Task("experiment", name, profile, s, params=params, timeout=timeout)
                  for s in seeds]
    outdir = validate_output_dir(out, "--out", files=(f"{name}-sweep.json", f"{name}-sweep.png"),
                                 owned=experiments.is_experiment_output)
    return SweepPlan(name, profile, list(seeds), axes, fixed,
                     metric or getattr(exp, "metric", None), outdir, tasks)


def _lookup(data: Any, key: str) -> Any:
    cur = data
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _scalar(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def measured(data: dict[str, Any] | None, metric: str | None) -> tuple[str | None, float | None]:
    """``(key, value)`` of the measured quantity in one point's data (see the module doc)."""
    if not isinstance(data, dict):
        return metric, None
    if metric is not None:
        return metric, _scalar(_lookup(data, metric))
    for k, v in data.items():
        if _scalar(v) is not None:
            return k, _scalar(v)
    return None, None


def point_label(p: SweepPlan, r: TaskResult) -> str:
    """``"odd-target m=960 seed 2: done"`` (or the error) for the progress log."""
    where = " ".join(f"{k}={r.task.params[k]}" for k in p.axes)
    state = f"ERROR {r.error_line}" if r.error is not None else f"done ({r.seconds:.1f} s)"
    return f"{p.name} {where} seed {r.task.seed}: {state}"


def _width_key(axes: dict[str, list[Any]]) -> str | None:
    for k, vals in axes.items():
        if len(vals) >= 2 and all(_scalar(v) is not None and v > 0 for v in vals):
            return k
    return None


def _fit(xs: list[float], ys: list[float]) -> float | None:
    from verify.kit import loglog_slope
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and y > 0 and x > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    return loglog_slope([x for x, _ in pts], [y for _, y in pts])


def write(p: SweepPlan, results: list[TaskResult]) -> dict[str, Any]:
    """Write the sweep's JSON and figure; returns ``{"lines": summary lines, "errors": n}``."""
    from verify._atomic import atomic_write_bytes
    from verify.kit import jsonable as _jsonable
    metric = p.metric
    if metric is None:  # the first scalar of the first point that has data
        for r in results:
            key, _ = measured(r.data, None)
            if key is not None:
                metric = key
                break
    points = []
    for r in results:
        _, value = measured(r.data, metric)
        points.append({"params": r.task.params, "seed": r.task.seed,
                       "swept": {k: r.task.params[k] for k in p.axes}, "value": value,
                       "error": r.error, "seconds": r.seconds, "data": r.data})
    wkey = _width_key(p.axes)
    others = [k for k in p.axes if k != wkey]
    fits = []
    if wkey is not None:
        for combo in itertools.product(*(p.axes[k] for k in others)):
            group = dict(zip(others, combo))
            sel = [pt for pt in points if all(pt["swept"][k] == v for k, v in group.items())]
            per_seed = {}
            for s in p.seeds:
                mine = [pt for pt in sel if pt["seed"] == s]
                per_seed[s] = _fit([float(pt["swept"][wkey]) for pt in mine],
                                   [pt["value"] for pt in mine])
            rates = [r for r in per_seed.values() if r is not None]
            pooled = _fit([float(pt["swept"][wkey]) for pt in sel], [pt["value"] for pt in sel])
            fits.append({"group": group, "x": wkey, "rate_per_seed": per_seed,
                         "rate_mean": float(np.mean(rates)) if rates else None,
                         "rate_std": float(np.std(rates, ddof=1)) if len(rates) > 1 else None,
                         "rate_pooled": pooled})
    errors = sum(r.error is not None for r in results)
    doc = {"experiment": p.name, "profile": p.profile, "seeds": p.seeds, "set": p.fixed,
           "sweep": p.axes, "metric": metric, "x": wkey, "fits": fits, "points": points}
    p.outdir.mkdir(parents=True, exist_ok=True)
    json_path = p.outdir / f"{p.name}-sweep.json"
    atomic_write_bytes(json_path, json.dumps(_jsonable(doc), indent=1, sort_keys=True).encode())
    lines = [f"wrote {json_path}"]
    if metric is not None and any(pt["value"] is not None for pt in points):
        png = p.outdir / f"{p.name}-sweep.png"
        _figure(p, points, metric, wkey, others, fits, png)
        lines[0] += f" and {png}"
    else:
        lines.append("no scalar measured quantity in the data: no figure (choose one with --metric KEY)")
    for f in fits:
        g = ", ".join(f"{k}={v}" for k, v in f["group"].items())
        spread = (f" +- {f['rate_std']:.3g} over {len(p.seeds)} seeds" if f["rate_std"] is not None
                  else "")
        if f["rate_pooled"] is not None:
            mean = f["rate_mean"] if f["rate_mean"] is not None else f["rate_pooled"]
            lines.append(f"{metric} ~ {wkey}^rate{(' (' + g + ')') if g else ''}: rate "
                         f"{mean:.3g}{spread} (pooled fit {f['rate_pooled']:.3g})")
    lines.append(f"{len(points) - errors}/{len(points)} runs finished"
                 + (f"; {errors} raised (see 'error' in the JSON)" if errors else ""))
    return {"lines": lines, "errors": errors, "json": str(json_path)}


def _figure(p: SweepPlan, points: list[dict], metric: str, wkey: str | None,
            others: list[str], fits: list[dict], path: Path) -> None:
    from verify.plotting import new_figure, save_figure
    fig, ax = new_figure(width=5.5, height=4.0)
    if wkey is None:
        labels = [", ".join(f"{k}={pt['swept'][k]}" for k in p.axes) for pt in points]
        order = list(dict.fromkeys(labels))
        for pt, lab in zip(points, labels):
            if pt["value"] is not None:
                ax.plot(order.index(lab), pt["value"], "o", color="C0", alpha=0.5, ms=4)
        ax.set_xticks(range(len(order)), order, rotation=30, ha="right")
        ax.set_ylabel(metric)
        ax.set_title(f"{p.name}: {metric} per point (seeds {format_seeds(p.seeds)})")
        save_figure(fig, path)
        return
    xs_all = sorted({float(v) for v in p.axes[wkey]})
    for j, f in enumerate(fits):
        color = f"C{j % 10}"
        sel = [pt for pt in points if all(pt["swept"][k] == v for k, v in f["group"].items())
               and pt["value"] is not None and pt["value"] > 0]
        if not sel:
            continue
        ax.plot([float(pt["swept"][wkey]) for pt in sel], [pt["value"] for pt in sel], "o",
                color=color, alpha=0.35, ms=3)
        med = [(x, float(np.median([pt["value"] for pt in sel if float(pt["swept"][wkey]) == x])))
               for x in xs_all if any(float(pt["swept"][wkey]) == x for pt in sel)]
        g = ", ".join(f"{k}={v}" for k, v in f["group"].items())
        label = (g + ": " if g else "") + "median over seeds"
        ax.plot([x for x, _ in med], [y for _, y in med], "-", color=color, label=label)
        if f["rate_pooled"] is not None:
            xs = np.array([x for x, _ in med])
            logc = np.mean([math.log(pt["value"]) - f["rate_pooled"] * math.log(float(pt["swept"][wkey]))
                            for pt in sel])
            spread = f" ± {f['rate_std']:.2g}" if f["rate_std"] is not None else ""
            mean = f["rate_mean"] if f["rate_mean"] is not None else f["rate_pooled"]
            ax.plot(xs, np.exp(logc) * xs ** f["rate_pooled"], "--", color=color,
                    label=f"fit: rate {mean:.3g}{spread} (across seeds)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(wkey)
    ax.set_ylabel(metric)
    ax.set_title(f"{p.name}: {metric} against {wkey} (seeds {format_seeds(p.seeds)})", fontsize=8)
    ax.legend(fontsize=7)
    save_figure(fig, path)
