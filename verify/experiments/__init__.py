"""Named experiments: ``python -m verify experiment NAME [--set key=value ...] [--out DIR]``
writes ``DIR/NAME.json`` (the numbers behind the figure) and ``DIR/NAME.png``.

An experiment module in this package (non-underscore name) defines ``EXPERIMENTS``, a
list of :class:`Experiment`.

Every setting has a declared type and range (a :class:`Setting`).  An experiment may give
explicit specs in ``Experiment.settings``; any setting without one gets a spec inferred from
its default (int, float, bool, str or a list of them) and its name (sizes such as ``m``,
``N``, ``n``, ``steps`` are positive integers with an upper bound; times ``T`` and step
sizes ``eta`` are finite and positive; every float is finite), see :func:`setting_spec`.
``Experiment.memory_bytes(params)`` (optional) estimates the peak memory of a run; a run
above :data:`MEMORY_LIMIT_BYTES` is refused before it starts.
"""
from __future__ import annotations

import difflib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from verify._atomic import atomic_write_bytes
from verify._discovery import discover

__all__ = ["Experiment", "is_experiment_output", "MEMORY_LIMIT_BYTES", "Setting", "UnknownExperimentError",
           "all_experiments", "describe_settings", "get", "parse_settings", "prepare", "run",
           "setting_spec", "validate_params"]

#: Refuse a run whose ``memory_bytes`` estimate exceeds this (override with the environment
#: variable MEANFIELD_VERIFY_MEMORY_LIMIT, in bytes).
MEMORY_LIMIT_BYTES = 4 * 2 ** 30

_KINDS = ("int", "float", "bool", "str", "int list", "float list", "str list")


@dataclass(frozen=True)
class Setting:
    """Declared type and range of one experiment setting.

    ``kind``: one of "int", "float", "bool", "str", "int list", "float list", "str list";
    ``lo``/``hi``: inclusive bounds (``lo_open=True`` excludes ``lo``: "> lo"); ``choices``
    for strings; lists hold ``min_len..max_len`` entries, each checked like a scalar.
    Floats are always finite."""
    kind: str
    default: Any = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    choices: tuple[str, ...] | None = None
    min_len: int = 1
    max_len: int = 100
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Setting kind must be one of {', '.join(_KINDS)}; got {self.kind!r}")

    @property
    def scalar_kind(self) -> str:
        return self.kind.split()[0]

    @property
    def is_list(self) -> bool:
        return self.kind.endswith(" list")

    def range_text(self) -> str:
        """The allowed values, e.g. ``1..10^6``, ``(0, 10]``, ``one of a, b``."""
        k = self.scalar_kind
        if k == "bool":
            return "true/false"
        if k == "str":
            return f"one of {', '.join(self.choices)}" if self.choices else "any text"
        lo = "-inf" if self.lo is None else _num(self.lo)
        hi = "inf" if self.hi is None else _num(self.hi)
        if k == "int":
            return f"{lo}..{hi}"
        return f"{'(' if self.lo_open or self.lo is None else '['}{lo}, {hi}{']' if self.hi is not None else ')'}"

    def describe(self) -> str:
        """``int, 1..10^6`` or ``float list of 1..100, each [-10^6, 10^6]``."""
        if self.is_list:
            return f"{self.kind} of {self.min_len}..{self.max_len}, each {self.range_text()}"
        return f"{self.kind}, {self.range_text()}"

    def check(self, key: str, value: Any, where: str) -> Any:
        """``value`` converted to this setting's type; ValueError naming the setting and
        the allowed range otherwise."""
        if self.is_list:
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise ValueError(f"setting {key} of {where} must be a list ({self.describe()}); "
                                 f"got {value!r}")
            if not self.min_len <= len(value) <= self.max_len:
                raise ValueError(f"setting {key} of {where} must have {self.min_len}.."
                                 f"{self.max_len} entries; got {len(value)}")
            return [self._check_scalar(key, v, where, f"each entry of {key}") for v in value]
        return self._check_scalar(key, value, where, key)

    def _check_scalar(self, key: str, v: Any, where: str, label: str) -> Any:
        k = self.scalar_kind
        bad = f"setting {key}={_show(v)} of {where}: {label} must be"
        if k == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"{bad} true or false")
            return v
        if k == "str":
            if not isinstance(v, str) or not v:
                raise ValueError(f"{bad} a non-empty text ({self.range_text()})")
            if self.choices and v not in self.choices:
                raise ValueError(f"{bad} {self.range_text()}")
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{bad} a number ({self.describe()})")
        if k == "int":
            if isinstance(v, float):
                if not math.isfinite(v) or not v.is_integer():
                    raise ValueError(f"{bad} an integer in {self.range_text()}")
                v = int(v)
        else:
            v = float(v)
            if not math.isfinite(v):
                raise ValueError(f"{bad} a finite number in {self.range_text()}")
        if (self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo))) or \
                (self.hi is not None and v > self.hi):
            what = "an integer" if k == "int" else "a number"
            raise ValueError(f"{bad} {what} in {self.range_text()}")
        return v


def _num(x: float) -> str:
    """1000000 -> 10^6, 1e-06 -> 10^-6, 0.05 -> 0.05."""
    if x != 0 and math.isfinite(x):
        e = math.log10(abs(x))
        if abs(e) >= 4 and float(e).is_integer():
            return f"{'-' if x < 0 else ''}10^{int(e)}"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:g}"


def _show(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


# Generic rules by setting name (used when an experiment gives no explicit spec).
# Integers: (lo, hi); floats: (lo, hi, lo_open).
_INT_RULES: dict[str, tuple[int, int]] = {
    "m": (1, 10 ** 6), "N": (1, 10 ** 6), "n": (1, 10 ** 7), "s": (1, 10 ** 5),
    "d": (1, 10 ** 4), "d_H": (1, 10 ** 4), "steps": (1, 10 ** 7), "frames": (2, 10 ** 4),
    "grid": (2, 10 ** 6), "replicates": (1, 10 ** 3), "max_iter": (1, 10 ** 3),
    "n_theta": (2, 10 ** 5), "n_phi": (2, 10 ** 5), "seeds": (1, 10 ** 4),
}
_FLOAT_RULES: dict[str, tuple[float | None, float | None, bool]] = {
    "T": (0.0, 1e5, True), "T0": (0.0, 1e5, True), "eta": (0.0, 10.0, True),
    "step": (0.0, 10.0, True), "lr": (0.0, 10.0, True), "beta": (0.0, 1e3, False),
    "delta": (-1e6, 1e6, False), "r_max": (0.0, 1e6, True), "sigma": (0.0, 1e6, True),
    "sigma_c": (0.0, 1e6, True),
}
_LIST_ALIASES = {"Ns": "N", "deltas": "delta", "ms": "m", "ds": "d", "etas": "eta"}


def _rule_name(key: str) -> str:
    return _LIST_ALIASES.get(key, key)


def setting_spec(exp: Experiment, key: str) -> Setting:
    """The declared spec of ``key`` (``exp.settings[key]``) or the one inferred from its
    default and name."""
    if key in exp.settings:
        return exp.settings[key]
    default = exp.defaults[key]
    name = _rule_name(key)
    choices = tuple(exp.choices[key]) if key in exp.choices else None
    if isinstance(default, (list, tuple)):
        first = default[0] if default else 0.0
        base = _infer(name, first)
        return Setting(base.kind + " list", list(default), base.lo, base.hi, base.lo_open,
                       choices if base.kind == "str" else base.choices)
    base = _infer(name, default)
    return Setting("str", default, choices=choices) if base.kind == "str" else base


def _infer(name: str, default: Any) -> Setting:
    if isinstance(default, bool):
        return Setting("bool", default)
    if isinstance(default, int):
        if name in _INT_RULES:
            lo, hi = _INT_RULES[name]
        else:
            lo = 1 if default >= 1 else (0 if default >= 0 else -10 ** 7)
            hi = 10 ** 7
        return Setting("int", default, lo, hi)
    if isinstance(default, float):
        if name in _FLOAT_RULES:
            lo, hi, lo_open = _FLOAT_RULES[name]
        elif name.endswith(("threshold", "tol", "eps")):
            lo, hi, lo_open = 0.0, 1e6, True
        else:
            lo, hi, lo_open = -1e12, 1e12, False
        return Setting("float", default, lo, hi, lo_open)
    return Setting("str", default)


@dataclass(frozen=True)
class Experiment:
    """``fn(params, profile, seed) -> (data, figure)``: ``data`` is JSON-serializable,
    ``figure`` a matplotlib Figure (or None).  ``defaults`` lists every accepted setting
    with its default value; ``quick``/``full`` override defaults per profile.
    ``settings`` (optional) declares the type and range of some settings explicitly (the
    rest are inferred, see :func:`setting_spec`); ``memory_bytes(params)`` (optional)
    estimates the peak memory so that absurd sizes are refused up front; ``constraints``
    (optional) ``(params) -> None`` raises ValueError for invalid combinations; ``metric``
    (optional) names the scalar of ``data`` that ``--sweep`` plots by default.
    ``choices`` (optional) declares the accepted values of text settings,
    ``{"init": ("uniform", "gaussian")}``: ``--set`` refuses anything else with a one-line
    error and ``--list`` shows them (a text setting without declared choices accepts any
    text, which only a free-form label should)."""
    name: str
    description: str
    fn: Callable[[dict[str, Any], str, int], tuple[dict[str, Any], Any]]
    defaults: dict[str, Any]
    quick: dict[str, Any] = field(default_factory=dict)
    full: dict[str, Any] = field(default_factory=dict)
    claims: tuple[str, ...] = ()
    settings: dict[str, Setting] = field(default_factory=dict)
    memory_bytes: Callable[[dict[str, Any]], float] | None = None
    constraints: Callable[[dict[str, Any]], None] | None = None
    metric: str | None = None  # the scalar in ``data`` a ``--sweep`` plots by default
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, values in self.choices.items():
            if key not in self.defaults:
                raise ValueError(f"experiment {self.name}: choices for {key!r}, which is not "
                                 f"a setting; settings: {', '.join(sorted(self.defaults))}")
            if not values or not all(isinstance(v, str) and v for v in values):
                raise ValueError(f"experiment {self.name}: choices[{key!r}] must be a "
                                 f"non-empty tuple of non-empty strings; got {values!r}")


class UnknownExperimentError(KeyError):
    """An experiment name not in the registry (``str()`` is the plain message)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown experiment"


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
    if not isinstance(name, str) or name not in reg:
        close = difflib.get_close_matches(str(name), list(reg), n=3, cutoff=0.3)
        hint = f"; closest: {', '.join(close)}" if close else ""
        raise UnknownExperimentError(f"unknown experiment {name}{hint} (see `python -m verify "
                                     "experiment --list`)")
    return reg[name]


def describe_settings(exp: Experiment) -> list[str]:
    """One line per setting: ``m=40 (int, 1..10^6; full: 200)`` (default, type, range,
    profile overrides)."""
    lines = []
    for key in sorted(exp.defaults, key=str.lower):
        spec = setting_spec(exp, key)
        extra = [f"{p}: {_fmt_value(over[key])}" for p, over in (("quick", exp.quick),
                                                                 ("full", exp.full))
                 if key in over and over[key] != exp.defaults[key]]
        doc = f" - {spec.doc}" if spec.doc else ""
        lines.append(f"{key}={_fmt_value(exp.defaults[key])} ({'; '.join([spec.describe()] + extra)})"
                     + doc)
    return lines


def _fmt_value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(_fmt_value(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return _show(v)


def _parse_raw(spec: Setting, raw: str, key: str, where: str) -> Any:
    """The ``--set`` text ``raw`` as a value of ``spec``'s type (range checked later)."""
    if spec.is_list:
        items = [t.strip() for t in raw.split(",")]
        if not raw.strip() or any(not t for t in items):
            raise ValueError(f"setting {key}={raw} of {where}: expected a comma-separated list "
                             f"({spec.describe()}), e.g. {key}={_fmt_value(spec.default)}")
        return [_parse_scalar(spec, t, key, where) for t in items]
    return _parse_scalar(spec, raw, key, where)


def _parse_scalar(spec: Setting, raw: str, key: str, where: str) -> Any:
    k = spec.scalar_kind
    if k == "bool":
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"setting {key}={raw} of {where}: {key} must be true or false")
    if k == "str":
        return raw
    try:
        if k == "int":
            try:
                return int(raw.replace("_", ""))
            except ValueError:
                f = float(raw)
                if math.isfinite(f) and f.is_integer() and abs(f) <= 2 ** 62:
                    return int(f)
                if math.isfinite(f) and f.is_integer():
                    return f  # out of range: reported by the range check with the range
                raise ValueError from None
        return float(raw)
    except ValueError:
        what = "an integer" if k == "int" else "a finite number"
        raise ValueError(f"setting {key}={raw} of {where}: {key} must be {what} in "
                         f"{spec.range_text()}") from None


def validate_params(exp: Experiment, params: dict[str, Any]) -> dict[str, Any]:
    """Every setting of ``params`` checked against its spec (converted), cross-setting
    rules (``d_H < d``; ``exp.constraints``) and the memory estimate."""
    where = exp.name
    out = {}
    for key, value in params.items():
        if key not in exp.defaults:
            raise ValueError(f"experiment {where} has no setting {key}; settings: "
                             f"{', '.join(sorted(exp.defaults))}")
        out[key] = setting_spec(exp, key).check(key, value, where)
    if isinstance(out.get("d"), int) and isinstance(out.get("d_H"), int) \
            and "d_H" not in exp.settings and not out["d_H"] < out["d"]:
        raise ValueError(f"settings d_H={out['d_H']}, d={out['d']} of {where}: d_H must be "
                         "smaller than d (1 <= d_H <= d - 1)")
    if exp.constraints is not None:
        exp.constraints(out)
    need = float(exp.memory_bytes(out) if exp.memory_bytes is not None else _generic_bytes(out))
    limit = float(os.environ.get("MEANFIELD_VERIFY_MEMORY_LIMIT", MEMORY_LIMIT_BYTES))
    if not need <= limit:
        raise ValueError(f"experiment {where} with these settings needs about "
                         f"{need / 2 ** 30:.3g} GiB of memory (limit {limit / 2 ** 30:.3g} GiB): "
                         "use smaller sizes")
    return out


def _generic_bytes(params: dict[str, Any]) -> float:
    """Memory estimate for an experiment that declares none: the float64 arrays of a
    two-layer network with m neurons on n samples in dimension d (m x n activations,
    n x d data, m x d weights), with the largest entry of a list of sizes."""
    def size(*names: str) -> float:
        vals = [params[k] for k in names if k in params]
        flat = [float(x) for v in vals for x in (v if isinstance(v, list) else [v])
                if isinstance(x, (int, float)) and not isinstance(x, bool)]
        return max(flat, default=0.0)
    m, n, d = size("m", "N", "Ns"), size("n", "s"), size("d")
    return 8.0 * (m * n + n * d + m * d)


def parse_settings(exp: Experiment, settings: list[str], profile: str) -> dict[str, Any]:
    """Defaults, then the profile's overrides, then ``key=value`` strings; every value is
    checked against its declared (or inferred) type and range: ValueError with a one-line
    message naming the setting and the allowed values otherwise."""
    params = dict(exp.defaults)
    params.update(exp.quick if profile == "quick" else exp.full)
    for item in settings:
        if not isinstance(item, str) or "=" not in item:
            key = str(item).strip()
            example = f"{key}={_fmt_value(exp.defaults[key])}" if key in exp.defaults else "m=100"
            raise ValueError(f"--set {key}: expected KEY=VALUE, e.g. --set {example}")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in exp.defaults:
            close = difflib.get_close_matches(key, list(exp.defaults), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"experiment {exp.name} has no setting {key or '(empty)'}{hint}; "
                             f"settings: {', '.join(sorted(exp.defaults))}")
        params[key] = _parse_raw(setting_spec(exp, key), raw.strip(), key, exp.name)
    return validate_params(exp, params)


def prepare(name: str, settings: list[str] | None = None, out: str | Path = "out",
            profile: str = "quick") -> tuple[Experiment, dict[str, Any], Path]:
    """Everything checked before an experiment runs: the name (UnknownExperimentError, a
    KeyError), the settings and the output directory (ValueError).  Returns
    ``(experiment, params, output directory)``."""
    from verify._paths import validate_output_dir
    exp = get(name)
    params = parse_settings(exp, settings or [], profile)
    outdir = validate_output_dir(out, "--out", files=(f"{name}.json", f"{name}.png"),
                                 owned=is_experiment_output)
    return exp, params, outdir


def is_experiment_output(filename: str) -> bool:
    """Whether a file name is one an experiment or a sweep writes (``NAME.json``,
    ``NAME.png``, ``NAME-sweep.json``, ``NAME-sweep.png`` of a registered experiment)."""
    stem, dot, ext = filename.rpartition(".")
    if not dot or ext not in ("json", "png"):
        return False
    stem = stem[:-len("-sweep")] if stem.endswith("-sweep") else stem
    return stem in {e.name for e in all_experiments()}


def run(name: str, settings: list[str] | None = None, out: str | Path = "out",
        profile: str = "quick", seed: int = 0) -> dict[str, Any]:
    """Run experiment ``name`` and write ``out/NAME.json`` and ``out/NAME.png``."""
    exp, params, outdir = prepare(name, settings, out, profile)
    data, fig = exp.fn(params, profile, seed)
    outdir.mkdir(parents=True, exist_ok=True)
    from verify.kit import jsonable as _jsonable
    payload = {"experiment": name, "profile": profile, "seed": seed,
               "params": params, "data": data}
    atomic_write_bytes(outdir / f"{name}.json",
                       json.dumps(_jsonable(payload), indent=1, sort_keys=True).encode())
    if fig is not None:
        from verify.plotting import save_figure
        save_figure(fig, outdir / f"{name}.png")
    return payload
