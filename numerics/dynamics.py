"""Training dynamics shared by the particle engines: the results of gradient descent and
of gradient flows, and the chattering guard of a flow across ReLU kinks.

One result type per kind of run, whatever the engine:

- :class:`GDResult`: a gradient-descent run z <- z - eta grad L(z), recorded every few
  steps (``numerics.relu1d`` for the univariate networks of Williams et al. 2019, claims
  W2a..W2h; ``numerics.twolayer`` for the d-dimensional networks of Hajjar et al.);
- :class:`FlowResult`: a gradient flow dz/dt = -grad L(z) reported at output times (the
  event-driven piecewise-smooth integrator of ``numerics.relu1d``, the error-controlled
  SciPy integration of ``numerics.twolayer``).

Both name their parameters (``names``: ``("a", "b", "c")``, ``("r", "theta")`` or
``("a", "B")``) and give them as attributes: ``result.a``.

The chattering guard, :class:`ChatteringGuard`, counts the activation switches of every
(neuron, sample) pair of a flow: the activation 1{u_ij > 0} of neuron i at sample j
switches when the trajectory crosses the kink u_ij = 0.  Where the field points into the
kink from both sides (a Filippov sliding mode) an integrator that does not resolve the
sliding switches without end at an ever smaller step size; the guard stops it with a
:class:`ChatteringError`, a :class:`~numerics.validation.DivergenceError` naming the
neuron, the sample and the sliding mode.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from numerics.validation import (ArgumentTypeError, DivergenceError, as_float_array,
                                 as_float_scalar, as_int_array, require_positive_int,
                                 require_size)

__all__ = ["GDResult", "FlowResult", "ChatteringGuard", "ChatteringError", "MAX_CROSSINGS",
           "SAMPLED_SWITCHES_PER_CROSSING"]


# --------------------------------------------------------------------------- result types
#: largest number of recorded steps of a GDResult (validating 2^24 entries takes ~0.4 s)
MAX_RECORDS = 2 ** 24


def _names(names: Any, field_name: str) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, (tuple, list)):
        raise ArgumentTypeError(f"{field_name} must be a tuple of parameter names such as "
                                f"('a', 'b', 'c'); got {type(names).__name__}")
    if not all(isinstance(n, str) and n.isidentifier() and not n.startswith("_") for n in names):
        raise ValueError(f"{field_name} must hold parameter names (identifiers without a "
                         f"leading underscore); got {list(names)!r:.80}")
    if len(set(names)) != len(names):
        raise ValueError(f"{field_name} must not repeat a name; got {list(names)!r:.80}")
    return tuple(names)


def _arrays(table: Any, field_name: str, leading: int | None) -> dict[str, np.ndarray]:
    """``table`` as {name: finite float64 array}, each with ``leading`` rows if given."""
    if not isinstance(table, dict):
        raise ArgumentTypeError(f"{field_name} must be a dict {{parameter name: array}}; got "
                                f"{type(table).__name__}")
    _names(list(table), f"the keys of {field_name}")
    out = {}
    for name, arr in table.items():
        arr = as_float_array(arr, f"{field_name}[{name!r}]")
        if leading is not None and (arr.ndim == 0 or arr.shape[0] != leading):
            raise ValueError(f"{field_name}[{name!r}] must hold one entry per record "
                             f"({leading}) along its first axis; got shape {arr.shape}")
        out[name] = arr
    return out


class _ByName:
    """``result.<name>`` for a parameter name: looked up in the table that
    ``_by_name_table`` names (instances only; dunder and private names are never
    parameters, so pickling and copying see plain attributes)."""

    def _by_name_table(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _check_names(self) -> None:
        """A parameter name must not hide a field, property or method of the result."""
        taken = {f.name for f in fields(self)} | {n for n in dir(type(self)) if not n.startswith("_")}
        clash = [n for n in self.names if n in taken]
        if clash:
            raise ValueError(f"parameter names {clash} are taken by {type(self).__name__}'s own "
                             "attributes; rename the parameters")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or "names" not in self.__dict__:
            raise AttributeError(name)
        table = self._by_name_table()
        if name in table:
            return table[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (its parameters "
                             f"are {', '.join(self.names) or 'not named'})")

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.__dict__.get("names", ())))


@dataclass
class GDResult(_ByName):
    """A gradient-descent run z <- z - eta grad L(z), recorded at the steps ``steps``.

    ``steps`` (n_rec,) the recorded step indices k, ``times`` (n_rec,) the matching times
    k eta (the engine's time: ``numerics.twolayer`` runs in mean-field time),
    ``losses`` (n_rec,) the loss there; ``trajectory[name]`` (n_rec, ...) each parameter at
    the recorded steps, ``final[name]`` each parameter after the last step.

    ``result.<name>`` is ``trajectory[name]`` when ``by_name == "trajectory"`` (the 1-D
    engine ``numerics.relu1d``: ``result.a[k]``) and ``final[name]`` when
    ``by_name == "final"`` (the d-dimensional engine ``numerics.twolayer``, whose runs
    may record nothing: ``result.a``); ``trajectory`` and ``final`` are unambiguous for
    both.  ``loss`` is ``losses`` and ``snapshots`` the list of per-record tuples in
    ``names`` order (the names each engine's callers read)."""
    steps: np.ndarray
    times: np.ndarray
    losses: np.ndarray
    trajectory: dict[str, np.ndarray]
    final: dict[str, np.ndarray]
    by_name: str = "trajectory"
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.steps, np.ndarray):   # before a copy or scan of a huge view
            require_size(self.steps.size, "steps (recorded step indices)",
                         limit=MAX_RECORDS, hint="record fewer steps (record_every)")
        steps = as_int_array(self.steps, "steps (recorded step indices)", minimum=0)
        if steps.ndim != 1 or np.any(np.diff(steps) <= 0):
            raise ValueError("steps (recorded step indices) must be a 1-D increasing array; "
                             f"got shape {steps.shape}")
        self.steps = steps
        n = steps.size
        self.times = as_float_array(self.times, "times (recorded times)", ndim=1)
        self.losses = as_float_array(self.losses, "losses (recorded losses)", ndim=1)
        if self.times.size != n or self.losses.size != n:
            raise ValueError(f"times ({self.times.size}) and losses ({self.losses.size}) must "
                             f"hold one entry per recorded step ({n})")
        self.trajectory = _arrays(self.trajectory, "trajectory", n)
        self.final = _arrays(self.final, "final", None)
        if list(self.trajectory) != list(self.final):
            raise ValueError(f"trajectory and final must name the same parameters in one "
                             f"order; got {list(self.trajectory)} and {list(self.final)}")
        if self.by_name not in ("trajectory", "final"):
            raise ValueError(f"by_name must be 'trajectory' or 'final'; got {self.by_name!r:.40}")
        self.names = tuple(self.final)
        self._check_names()

    def _by_name_table(self) -> dict[str, np.ndarray]:
        return self.final if self.by_name == "final" else self.trajectory

    @property
    def loss(self) -> np.ndarray:
        """The recorded losses (same array as ``losses``)."""
        return self.losses

    @property
    def snapshots(self) -> list[tuple[np.ndarray, ...]]:
        """The parameters at each record, one tuple in ``names`` order per record."""
        return list(zip(*(self.trajectory[n] for n in self.names)))


@dataclass
class FlowResult(_ByName):
    """A gradient flow reported at the output times ``t`` (also ``times``), shape (n_t,).

    ``state`` (n_t, k, m): the parameters stacked, when they share one shape (the 1-D
    engine: ``(a, b, c)`` or ``(r, theta)``); else None.  ``names`` the parameter names
    (of ``state``'s second axis when stacked), ``trajectory[name]`` (n_t, ...) each
    parameter at the output times (views into ``state`` when stacked); ``result.<name>``
    is ``trajectory[name]``.

    Solver record: ``n_steps`` accepted steps, ``nfev`` field evaluations, ``rtol`` and
    ``atol`` the tolerances.  Event-driven runs (``numerics.relu1d``) add ``events``, a list
    of ``(t, kind, i, j)`` with kind in {"cross", "slide", "unslide", "collapse"} (j = -1
    for a collapse), ``sliding`` the (m, s) boolean mask of sliding pairs at the end, and
    with ``dense=True`` the ``segments`` ``(t0, t1, interp, P, S)`` behind :meth:`dense`
    and :meth:`pattern`."""
    t: np.ndarray
    state: np.ndarray | None = None
    events: list[tuple[float, str, int, int]] = field(default_factory=list)
    sliding: np.ndarray | None = None
    n_steps: int = 0
    segments: list[tuple] = field(default_factory=list, repr=False)  # (t0, t1, interp, P, S)
    names: tuple[str, ...] = ()
    trajectory: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    nfev: int = 0
    rtol: float | None = None
    atol: float | None = None

    def __post_init__(self) -> None:
        self.t = as_float_array(self.t, "t (output times)", ndim=1)
        n_t = self.t.size
        self.names = _names(self.names, "names")
        if not isinstance(self.trajectory, dict):
            raise ArgumentTypeError("trajectory must be a dict {parameter name: array}; got "
                                    f"{type(self.trajectory).__name__}")
        if self.state is not None:
            self.state = as_float_array(self.state, "state (stacked parameters, shape "
                                        "(n_t, k, m))", ndim=3)
            if self.state.shape[0] != n_t:
                raise ValueError(f"state must hold one state per output time ({n_t}); got "
                                 f"shape {self.state.shape}")
            if self.names and len(self.names) != self.state.shape[1]:
                raise ValueError(f"names must name the {self.state.shape[1]} rows of state; "
                                 f"got {list(self.names)}")
            if self.trajectory and (tuple(self.trajectory) != self.names or not all(
                    np.array_equal(self.trajectory[n], self.state[:, k])
                    for k, n in enumerate(self.names))):  # (dataclasses.replace passes both)
                raise ValueError("trajectory: pass either the stacked state or the "
                                 "trajectory by name, not both (unless it holds the rows of "
                                 "state)")
            self.trajectory = {n: self.state[:, k] for k, n in enumerate(self.names)}
        else:
            self.trajectory = _arrays(self.trajectory, "trajectory", n_t)
            if self.names and tuple(self.trajectory) != self.names:
                raise ValueError(f"names {list(self.names)} must be the keys of trajectory "
                                 f"{list(self.trajectory)}")
            self.names = tuple(self.trajectory)
        self._check_names()
        if not isinstance(self.events, list):
            raise ArgumentTypeError(f"events must be a list of (t, kind, i, j); got "
                                    f"{type(self.events).__name__}")
        if self.sliding is not None:
            if not (isinstance(self.sliding, np.ndarray) and self.sliding.dtype == bool
                    and self.sliding.ndim == 2):
                raise ArgumentTypeError("sliding must be None or an (m, s) boolean array; "
                                        f"got {type(self.sliding).__name__}")
        if not isinstance(self.segments, list):
            raise ArgumentTypeError(f"segments must be a list; got {type(self.segments).__name__}")
        self.n_steps = require_positive_int(self.n_steps, "n_steps (accepted steps)", minimum=0)
        self.nfev = require_positive_int(self.nfev, "nfev (field evaluations)", minimum=0)
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, as_float_scalar(v, name, lo=0.0, lo_open=True))

    def _by_name_table(self) -> dict[str, np.ndarray]:
        return self.trajectory

    @property
    def times(self) -> np.ndarray:
        """The output times (same array as ``t``)."""
        return self.t

    def dense(self, t: float) -> np.ndarray:
        """The state at any time ``t`` in [0, t[-1]] from the solver's dense output (runs
        with ``dense=True`` only); flat vector of the parameters in ``names`` order."""
        k = self._segment(t)
        t0, t1, interp = self.segments[k][:3]
        return interp(min(max(t, t0), t1))

    def pattern(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """``(P, S)`` used by the integrator on the segment containing ``t`` (``dense=True``
        runs only): P the (m, s) activation pattern (pair (i, j) active), S the sliding
        pairs (held on their sample line by the Filippov projection)."""
        k = self._segment(t)
        return self.segments[k][3], self.segments[k][4]

    def _segment(self, t: Any) -> int:
        t = as_float_scalar(t, "t (a time of the run)")
        if not self.segments:
            raise ValueError("t: no dense output stored for this run; run the flow with "
                             "dense=True")
        starts = [s[0] for s in self.segments]
        return max(0, min(len(starts) - 1, int(np.searchsorted(starts, t, side="right")) - 1))

    @property
    def event_times(self) -> np.ndarray:
        return np.array([e[0] for e in self.events])

    @property
    def n_crossings(self) -> int:
        return sum(1 for e in self.events if e[1] == "cross")

    @property
    def n_slides(self) -> int:
        return sum(1 for e in self.events if e[1] == "slide")


# --------------------------------------------------------------------------- chattering
class ChatteringError(DivergenceError, RuntimeError):
    """A flow chatters across a ReLU kink (a sliding mode its integrator does not resolve):
    a :class:`~numerics.validation.DivergenceError`, and a ``RuntimeError`` like the other
    stops of an integrator on a budget."""


#: crossings of one sample's kink by one neuron after which a flow is declared chattering
MAX_CROSSINGS = 100
#: switches one crossing can cost where the pattern is compared between field evaluations
SAMPLED_SWITCHES_PER_CROSSING = 300


class ChatteringGuard:
    """Counts the activation switches of every (neuron i, sample j) pair of a flow and
    raises :class:`ChatteringError` once one pair exceeds ``limit``.

    ``limit = crossings * switches_per_crossing``: each pair may cross its kink u_ij = 0
    (the knot of neuron i passing sample j) ``crossings`` times, by default
    :data:`MAX_CROSSINGS` = 100.  An honest flow crosses a given kink a handful of times
    over a horizon: the knot turns only where its velocity changes sign, and each turn
    takes a finite time (at most 5 events of one pair in every flow of claims W2b, W2c,
    W2g, W2h at seeds 0-19), so 100 is a 20-fold margin.  A sliding mode that the
    integrator does not resolve switches the pair at every step of a step size that
    shrinks towards the rounding level: it reaches the limit in a fraction of a second
    instead of running for minutes into a step budget.

    ``switches_per_crossing`` is what one crossing costs in the engine's bookkeeping:

    - 1 where crossings are located as events and the integrator restarts on the new
      side (``numerics.relu1d``, :meth:`switch`);
    - up to :data:`SAMPLED_SWITCHES_PER_CROSSING` = 300 where the pattern is compared
      between successive field evaluations (:meth:`switches`): the field jumps at the
      kink, so DOP853 rejects steps until h ~ tol / jump, and each attempt evaluates
      stages on both sides (its 12 stages are not in time order).  Measured for one
      crossing of a jump (speed ratios 1/4..4 across it, rtol 1e-3..2.3e-14): at most 257
      switches, growing like log(1/rtol), which float64 bounds (rtol >= 100 eps).  Under
      that bookkeeping a sliding mode costs about 4 field evaluations per switch, so
      100 crossings' worth is 1.2e5 evaluations; an engine whose evaluations are
      expensive may allow fewer ``crossings`` and must say so where it builds its guard.

    ``kink`` describes the kink in the engine's notation (e.g. ``"b_j . x_i = 0"``) and
    ``hint`` what the user may change; both go into the message."""

    def __init__(self, n_neurons: int, n_samples: int, *, switches_per_crossing: int = 1,
                 crossings: int = MAX_CROSSINGS, kink: str = "u_ij = 0", hint: str = ""):
        self.n_neurons = require_positive_int(n_neurons, "n_neurons")
        self.n_samples = require_positive_int(n_samples, "n_samples")
        require_size(self.n_neurons * self.n_samples, "n_neurons x n_samples (the switch "
                     "counts)", hint="use fewer neurons or samples")
        self.crossings = require_positive_int(crossings, "crossings", maximum=10 ** 6)
        self.limit = self.crossings * require_positive_int(
            switches_per_crossing, "switches_per_crossing", maximum=1000)
        for name, v in (("kink", kink), ("hint", hint)):
            if not isinstance(v, str):
                raise ArgumentTypeError(f"{name} must be text; got {type(v).__name__}")
        self.kink, self.hint = kink, hint
        self.counts = np.zeros((self.n_neurons, self.n_samples), dtype=np.int32)

    def switch(self, i: int, j: int, t: float) -> None:
        """One switch of pair (neuron ``i``, sample ``j``) at time ``t``."""
        i = require_positive_int(i, "i (neuron index)", minimum=0, maximum=self.n_neurons - 1)
        j = require_positive_int(j, "j (sample index)", minimum=0, maximum=self.n_samples - 1)
        t = as_float_scalar(t, "t (time of the switch)")
        self.counts[i, j] += 1
        if self.counts[i, j] > self.limit:
            raise self._error(i, j, t)

    def switches(self, changed: Any, t: float) -> None:
        """The pairs whose activation changed since the last call: ``changed`` an
        (n_neurons, n_samples) boolean array (a transposed view is fine), at time ``t``.
        Of several pairs over the limit at once, the first in (neuron, sample) order is
        named."""
        if not (isinstance(changed, np.ndarray) and changed.dtype == bool):
            raise ArgumentTypeError("changed must be a boolean array of shape (n_neurons, "
                                    f"n_samples); got {type(changed).__name__}")
        if changed.shape != self.counts.shape:
            raise ValueError(f"changed must have shape {self.counts.shape} (n_neurons, "
                             f"n_samples); got {changed.shape}")
        self.counts += changed
        if self.counts.max() > self.limit:
            i, j = np.unravel_index(int(np.argmax(self.counts)), self.counts.shape)
            raise self._error(int(i), int(j), as_float_scalar(t, "t (time of the switches)"))

    def _error(self, i: int, j: int, t: float) -> ChatteringError:
        return ChatteringError(
            f"chattering: neuron {i} switched more than {self.limit} times at sample {j} "
            f"before t={t:.6g}: it slides along its kink {self.kink} for that sample (the "
            "field points into the kink from both sides, a Filippov sliding mode the "
            f"integrator does not resolve; more than {self.crossings} crossings)"
            + (f"; {self.hint}" if self.hint else ""))
