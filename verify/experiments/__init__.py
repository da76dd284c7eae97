"""Named experiments: ``python -m verify experiment NAME [--set key=value ...] [--out DIR]``
writes ``DIR/NAME.json`` (the numbers behind the figure) and ``DIR/NAME.png``.

An experiment module in this package (non-underscore name) defines ``EXPERIMENTS``, a
list of :class:`Experiment`.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from verify._atomic import atomic_write_bytes
from verify._discovery import discover

__all__ = ["Experiment", "all_experiments", "get", "parse_settings", "run"]


@dataclass(frozen=True)
class Experiment:
    """``fn(params, profile, seed) -> (data, figure)``: ``data`` is JSON-serializable,
    ``figure`` a matplotlib Figure (or None).  ``defaults`` lists every accepted setting
    with its default value (the type of the default decides how ``--set`` values parse);
    ``quick``/``full`` override defaults per profile."""
    name: str
    description: str
    fn: Callable[[dict[str, Any], str, int], tuple[dict[str, Any], Any]]
    defaults: dict[str, Any]
    quick: dict[str, Any] = field(default_factory=dict)
    full: dict[str, Any] = field(default_factory=dict)
    claims: tuple[str, ...] = ()


_REG: dict[str, Experiment] | None = None


def _load() -> dict[str, Experiment]:
    global _REG
    if _REG is None:
        _REG = dict(sorted(discover(__name__, __path__, "EXPERIMENTS", key=lambda e: e.name).items()))
    return _REG


def all_experiments() -> list[Experiment]:
    return list(_load().values())


def get(name: str) -> Experiment:
    reg = _load()
    if name not in reg:
        close = difflib.get_close_matches(name, list(reg), n=3, cutoff=0.3)
        hint = f"; closest: {', '.join(close)}" if close else ""
        raise KeyError(f"unknown experiment {name!r}{hint} (see `python -m verify experiment --list`)")
    return reg[name]


def parse_settings(exp: Experiment, settings: list[str], profile: str) -> dict[str, Any]:
    """Defaults, then the profile's overrides, then ``key=value`` strings."""
    params = dict(exp.defaults)
    params.update(exp.quick if profile == "quick" else exp.full)
    for item in settings:
        if "=" not in item:
            raise ValueError(f"--set expects key=value; got {item!r}")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in exp.defaults:
            raise ValueError(f"experiment {exp.name} has no setting {key!r}; "
                             f"settings: {', '.join(sorted(exp.defaults))}")
        params[key] = _parse_like(exp.defaults[key], raw.strip(), key)
    return params


def _parse_like(default: Any, raw: str, key: str) -> Any:
    try:
        if isinstance(default, bool):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(float(raw)) if float(raw).is_integer() else int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, (list, tuple)):
            kind = type(default[0]) if default else float
            return [kind(float(v)) if kind is int else kind(v) for v in raw.split(",") if v]
    except ValueError:
        raise ValueError(f"setting {key}={raw!r}: expected a value like {default!r}") from None
    return raw


def run(name: str, settings: list[str] | None = None, out: str | Path = "out",
        profile: str = "quick", seed: int = 0) -> dict[str, Any]:
    """Run experiment ``name`` and write ``out/NAME.json`` and ``out/NAME.png``."""
    exp = get(name)
    params = parse_settings(exp, settings or [], profile)
    data, fig = exp.fn(params, profile, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from verify.claims._core import _jsonable
    payload = {"experiment": name, "profile": profile, "seed": seed,
               "params": params, "data": data}
    atomic_write_bytes(out / f"{name}.json",
                       json.dumps(_jsonable(payload), indent=1, sort_keys=True).encode())
    if fig is not None:
        from verify.plotting import save_figure
        save_figure(fig, out / f"{name}.png")
    return payload
