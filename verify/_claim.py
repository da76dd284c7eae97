"""The claim data model: a claim pairs one SymPy derivation with one independent numeric
check and a negative control that must fail (docs/architecture.md).

A claim module in ``verify/claims/`` defines a module-level list ``CLAIMS`` of
:class:`Claim` objects; the registry (``verify.claims``) discovers them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np

from derivations.base import Derivation, Step
from numerics.validation import ArgumentTypeError, long_runs, require_choice, wants_long_run
from numerics.rng import make_rng
from verify import derived

PROFILES = ("quick", "full")
Profile = Literal["quick", "full"]
Kind = Literal["theorem", "reconstructed", "numerical-evidence", "convention"]


def _kind(x: Any) -> str:
    """``str 'abc'``: a value's type and the start of its repr, for a refusal."""
    return f"{type(x).__name__} {x!r:.40}"


def _real(owner: str, label: str, x: Any, what: str = "", *, finite: bool = False,
          nan_ok: bool = True) -> float:
    """``x`` as a float, refusing what is not a real number (text, None, booleans, complex,
    arrays); ``finite`` refuses nan and inf, ``nan_ok=False`` nan.  A wrong kind of value
    (here and in the checks below) is an :class:`ArgumentTypeError`, a TypeError that
    callers catching ValueError catch too."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError(f"{owner}: {label} must be a real number{what}; got {_kind(x)}")
    try:
        v = float(x)
    except OverflowError:   # an integer beyond float64
        v = math.inf if x > 0 else -math.inf
    if (finite and not math.isfinite(v)) or (not nan_ok and v != v):
        need = "finite" if finite else "a number, not nan"
        raise ValueError(f"{owner}: {label} must be {need}{what}; got {v!r}")
    return v


def _text(owner: str, label: str, x: Any, what: str, *, empty_ok: bool = False) -> None:
    """``x`` is a string, non-blank unless ``empty_ok``; ``what`` says what it must say."""
    if not isinstance(x, str):
        raise ArgumentTypeError(f"{owner}: {label} must be text ({what}); got {_kind(x)}")
    if not empty_ok and not x.strip():
        raise ValueError(f"{owner}: {label} must not be empty; give {what}")


def _flag(owner: str, label: str, x: Any, what: str, *, none_ok: bool = False) -> None:
    """``x`` is True or False (a numpy boolean too), or None when ``none_ok``."""
    if not (isinstance(x, (bool, np.bool_)) or (none_ok and x is None)):
        alt = ", or None" if none_ok else ""
        raise ArgumentTypeError(f"{owner}: {label} must be True or False{alt} ({what}); "
                                f"got {_kind(x)}")


def _whole(owner: str, label: str, x: Any, lo: int, hi: int | None = None, *,
           none_ok: bool = False) -> None:
    """``x`` is an integer (Python or numpy, not a boolean) in [lo, hi], or None when
    ``none_ok``."""
    if none_ok and x is None:
        return
    span = f">= {lo}" if hi is None else f"in {lo}..{hi}"
    alt = " or None" if none_ok else ""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ArgumentTypeError(f"{owner}: {label} must be an integer {span}{alt}; got {_kind(x)}")
    if x < lo or (hi is not None and x > hi):
        raise ValueError(f"{owner}: {label} must be an integer {span}{alt}; got {int(x)}")


def _instance(owner: str, label: str, x: Any, kinds: type | tuple[type, ...], what: str, *,
              none_ok: bool = False) -> None:
    """``x`` is of one of ``kinds`` (``what`` names them), or None when ``none_ok``."""
    if not (isinstance(x, kinds) or (none_ok and x is None)):
        raise ArgumentTypeError(f"{owner}: {label} must be {what}; got {type(x).__name__}")


def _verdict_fields(owner: str, error: Any, error_what: str, tolerance: Any, reason_label: str,
                    reason: Any, passed: Any) -> None:
    """The fields a verdict is made of (Outcome, SubCheck): a real error (nan or inf for a
    failed measurement), a finite real tolerance, the reason for it, passed None or a flag."""
    _real(owner, "error", error, f" ({error_what}; nan or inf for a failed measurement)")
    _real(owner, "tolerance", tolerance, " (the bound the error is compared with)", finite=True)
    _text(owner, reason_label, reason, "why the tolerance is what it is")
    _flag(owner, "passed", passed, "the verdict; None: error <= tolerance", none_ok=True)


@dataclass
class Table:
    """A small table for the report and the JSON evidence."""
    title: str
    headers: list[str]
    rows: list[list[Any]]


@dataclass
class Outcome:
    """What a check function returns; the registry turns it into :class:`Evidence`.

    ``error`` is the headline measured error and ``tolerance`` the bound it must stay
    under; ``tolerance_reason`` says WHY that bound (quadrature error, O(m^-1/2) Monte
    Carlo, step size, ODE tolerance).  ``passed`` defaults to ``error <= tolerance`` and
    may be set explicitly for checks with several conditions (then ``details`` must say
    which conditions were tested)."""
    compared: str
    error: float
    tolerance: float
    tolerance_reason: str
    details: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    passed: bool | None = None
    # Data kept in memory for the figure functions (not written to JSON).
    artifacts: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        o = "Outcome"
        _text(o, "compared", self.compared, "what was compared with what")
        _verdict_fields(o, self.error, "the headline measured error", self.tolerance,
                        "tolerance_reason", self.tolerance_reason, self.passed)
        _instance(o, "details", self.details, dict, "a dict")
        _instance(o, "artifacts", self.artifacts, dict, "a dict")
        _instance(o, "tables", self.tables, list, "a list of Table")
        _instance(o, "notes", self.notes, list, "a list of strings")
        for i, t in enumerate(self.tables):
            _instance(o, f"tables[{i}]", t, Table, "a Table")
        for i, n in enumerate(self.notes):
            _text(o, f"notes[{i}]", n, "a note for the report")

    def verdict(self) -> bool:
        if self.passed is not None:
            return bool(self.passed)
        return bool(np.isfinite(self.error) and self.error <= self.tolerance)


@dataclass
class Evidence:
    """The result of running one claim's check (or its negative control)."""
    claim_id: str
    passed: bool
    error: float
    tolerance: float
    tolerance_reason: str
    compared: str
    details: dict[str, Any]
    seconds: float
    profile: str
    seed: int
    negative_control: bool = False
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("artifacts")
        return jsonable(d)


#: the largest array :func:`jsonable` converts (evidence is for results, not raw data)
MAX_JSON_ENTRIES = 10 ** 7


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON data: dicts, lists, numbers (non-finite floats as text),
    strings; numpy arrays and scalars converted, anything else by ``str``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.size > MAX_JSON_ENTRIES:
            raise ValueError(f"jsonable: obj is an array of {obj.size} entries, too large for the "
                             f"evidence (at most {MAX_JSON_ENTRIES}); store a summary instead")
        return jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else str(f)
    if isinstance(obj, (int, str)) or obj is None:
        return obj
    return str(obj)


@dataclass(frozen=True)
class RunContext:
    """Handed to check functions: the profile, the seed, the (cached) derivation."""
    claim_id: str
    profile: Profile
    seed: int
    negative_control: bool = False
    examples: int | None = None  # Hypothesis instances per claim (``--examples N``)
    # The claim's declared sizes for this profile (``Claim.sizes[profile]``), as items.
    size_items: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        o = "RunContext"
        _text(o, "claim_id", self.claim_id, "the id of the claim this run belongs to")
        require_choice(self.profile, f"{o}: profile", PROFILES)
        _whole(o, "seed", self.seed, 0)
        _flag(o, "negative_control", self.negative_control, "whether this run is the "
              "negative control")
        _whole(o, "examples", self.examples, 1, 100_000, none_ok=True)
        _size_items(self.size_items)
        object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "negative_control", bool(self.negative_control))
        if self.examples is not None:
            object.__setattr__(self, "examples", int(self.examples))

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    @property
    def sizes(self) -> dict[str, Any]:
        """The claim's declared sizes for this run's profile (``Claim.sizes[profile]``)."""
        return dict(self.size_items)

    def size(self, name: str) -> Any:
        """One declared size of this run's profile, e.g. ``ctx.size("widths")``; a name
        the claim does not declare raises ValueError listing the declared ones."""
        if not isinstance(name, str):
            raise TypeError(f"size: name must be a declared size's name (text); got "
                            f"{type(name).__name__}")
        for key, value in self.size_items:
            if key == name:
                return value
        known = ", ".join(k for k, _ in self.size_items) or "none"
        raise ValueError(f"size: claim {self.claim_id} declares no size name {name!r} for "
                         f"profile {self.profile!r} (declared: {known}); add it to the "
                         "claim's sizes")

    def n_examples(self, quick: int, full: int) -> int:
        """How many instances to draw: ``--examples N`` if given, else the profile's."""
        if self.examples is not None:
            return self.examples
        return quick if self.quick else full

    def rng(self, *names: str | int) -> np.random.Generator:
        """An independent stream for ``names`` under this run's seed (same for the check
        and its negative control, so the control differs only by the perturbation)."""
        return make_rng(self.seed, self.claim_id, *names)

    def shared(self) -> "RunContext":
        """This run without the negative-control flag: the key of a cached simulation that
        a check and its control share (their ``rng`` streams are the same), so a control
        that perturbs something downstream reuses the check's simulation in one process."""
        return dataclasses.replace(self, negative_control=False)

    def derivation(self) -> Derivation:
        """The claim's derivation, read from the shared cache :mod:`verify.derived`
        (the object the formulas read too, and the one the mutation harness perturbs)."""
        return derived.derivation(self.claim_id)


def _size_items(items: Any) -> None:
    """``RunContext.size_items``: a tuple of (name, value) pairs, distinct non-empty names,
    hashable values (the run is a cache key)."""
    how = "a tuple of (name, value) pairs, e.g. tuple(claim.sizes[profile].items())"
    _instance("RunContext", "size_items", items, tuple, how)
    names: set[str] = set()
    for i, pair in enumerate(items):
        _instance("RunContext", f"size_items[{i}]", pair, tuple, "a (name, value) pair")
        if len(pair) != 2:
            raise ValueError(f"RunContext: size_items[{i}] must be a (name, value) pair; got "
                             f"{len(pair)} entries")
        _text("RunContext", f"size_items[{i}][0]", pair[0], "the size's name")
        if pair[0] in names:
            raise ValueError(f"RunContext: size_items names {pair[0]!r} twice; give each "
                             "size once")
        names.add(pair[0])
        try:
            hash(pair[1])
        except TypeError:
            raise ArgumentTypeError(f"RunContext: size_items[{i}][1] (size {pair[0]!r}) must "
                                    "be a number, a string or a tuple; got "
                                    f"{type(pair[1]).__name__}") from None


FigureFn = Callable[[Evidence, Path], list[tuple[str, str]]]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: the default of :attr:`Claim.exact` / :attr:`Claim.near_miss`: not given
UNSET: Any = _Unset()


def _validate_sizes(cid: str, sizes: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(sizes, dict):
        raise TypeError(f"claim {cid}: sizes must be a dict {{profile: {{name: value}}}}; "
                        f"got {type(sizes).__name__}")
    if not sizes:
        return {}
    if set(sizes) != set(PROFILES):
        raise ValueError(f"claim {cid}: sizes must declare every profile "
                         f"({', '.join(PROFILES)}); got {', '.join(map(str, sizes))}")
    names = None
    out: dict[str, dict[str, Any]] = {}
    for prof in PROFILES:
        table = sizes[prof]
        if not isinstance(table, dict) or not all(isinstance(k, str) and k for k in table):
            raise TypeError(f"claim {cid}: sizes[{prof!r}] must be a dict of named sizes")
        if names is None:
            names = set(table)
        elif set(table) != names:
            raise ValueError(f"claim {cid}: sizes['quick'] and sizes['full'] must name the "
                             f"same sizes; differ in {sorted(names ^ set(table))}")
        for k, v in table.items():
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"claim {cid}: size {k!r} of profile {prof!r} must be a "
                                f"number, a string or a tuple; got {type(v).__name__}") from None
        out[prof] = dict(table)
    return out


@dataclass(eq=False)
class Claim:
    """A statement from one of the papers with its derivation, check and negative control.

    The one shape (docs/adding-a-claim.md):

    - ``check(ctx, variant)`` returns an :class:`Outcome` comparing the derived statement
      with an independent computation (quadrature, simulation), for a variant of the
      derived object: ``exact`` (the verified run) or ``near_miss`` (the negative control,
      a deliberately wrong variant given as data, described by
      ``negative_control_description``; it must FAIL).  When ``exact`` is not given the
      verified run passes ``None``.
    - ``sizes`` declares the sizes per profile, ``{"quick": {...}, "full": {...}}`` with
      the same names in both; the check reads them as ``ctx.size(name)`` and the report
      prints them.
    - ``derive()`` returns a :class:`Derivation` (SymPy only; cached in
      :mod:`verify.derived`).  Omit it when ``derivations.<topic>.DERIVATIONS`` has the
      claim's id (the preferred place: the formulas can then read it without the claims).
    - ``figures(evidence, outdir)`` (optional) writes PNGs into ``outdir`` and returns
      ``[(filename, caption), ...]``.
    - ``negative_target``: the name (or name prefix) of the :class:`SubCheck` the negative
      control is meant to break; the registry test asserts that this one fails.

    The older shape, ``check(ctx)`` plus a ``negative_control(ctx)`` function, is still
    accepted while claims move to this one: give ``negative_control`` and no ``near_miss``.
    """
    id: str
    title: str
    source: str
    statement: str  # LaTeX (inline math with $...$, display with $$...$$)
    check: Callable[..., Outcome]
    negative_control: Callable[[RunContext], Outcome] | None = None
    negative_control_description: str = ""
    derive: Callable[[], Derivation] | None = None
    figures: FigureFn | None = None
    kind: Kind = "theorem"
    notes: tuple[str, ...] = ()
    negative_target: str = ""
    exact: Any = UNSET
    near_miss: Any = UNSET
    sizes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("a claim needs a non-empty string id")
        if not callable(self.check):
            raise TypeError(f"claim {self.id}: check must be callable")
        has_variant = self.near_miss is not UNSET
        if has_variant == (self.negative_control is not None):
            raise ValueError(f"claim {self.id}: give either near_miss (the wrong variant "
                             "check(ctx, variant) runs as the negative control) or a "
                             "negative_control function, not both and not neither")
        if not isinstance(self.negative_control_description, str) \
                or not self.negative_control_description.strip():
            raise ValueError(f"claim {self.id}: negative_control_description must say what "
                             "the near miss is")
        self.sizes = _validate_sizes(self.id, self.sizes)
        if self.derive is not None:
            derived.register(self.id, self.derive)

    @property
    def declares_variants(self) -> bool:
        """True for the one shape: ``check(ctx, variant)`` with ``exact``/``near_miss``."""
        return self.near_miss is not UNSET

    def derivation(self) -> Derivation:
        """The derivation, computed once per process (:func:`verify.derived.derivation`)."""
        return derived.derivation(self.id)

    def context(self, profile: Profile = "quick", seed: int = 0, *,
                negative_control: bool = False, examples: int | None = None) -> RunContext:
        """The :class:`RunContext` of one run (validated there), with the profile's sizes."""
        table = self.sizes.get(profile, {}) if isinstance(profile, str) else {}
        return RunContext(self.id, profile, seed, negative_control, examples,
                          tuple(table.items()))

    def outcome(self, ctx: RunContext) -> Outcome:
        """Run the check (or the negative control, per ``ctx.negative_control``)."""
        if not isinstance(ctx, RunContext):
            raise TypeError(f"outcome: ctx must be a RunContext (from claim.context(profile, "
                            f"seed)); got {type(ctx).__name__}")
        if ctx.claim_id != self.id:
            raise ValueError(f"outcome: ctx belongs to claim {ctx.claim_id}, not {self.id}; "
                             f"build it with this claim's context()")
        if self.declares_variants:
            variant = self.near_miss if ctx.negative_control else (
                None if self.exact is UNSET else self.exact)
            return self.check(ctx, variant)
        fn = self.negative_control if ctx.negative_control else self.check
        return fn(ctx)  # type: ignore[misc]

    def run(self, profile: Profile = "quick", seed: int = 0, *,
            negative_control: bool = False, examples: int | None = None) -> Evidence:
        ctx = self.context(profile, seed, negative_control=negative_control,
                           examples=examples)
        t0 = time.perf_counter()
        self.derivation()
        # a claim's run is asked for explicitly: its engines may run above QUICK_WORK
        with contextlib.nullcontext() if wants_long_run() else long_runs():
            out = self.outcome(ctx)
        if not isinstance(out, Outcome):
            raise TypeError(f"claim {self.id}: the check returned {type(out).__name__}, "
                            "not an Outcome (build one with kit.combine or kit.Outcome)")
        seconds = time.perf_counter() - t0
        return Evidence(
            claim_id=self.id, passed=out.verdict(), error=float(out.error),
            tolerance=float(out.tolerance), tolerance_reason=out.tolerance_reason,
            compared=out.compared, details=out.details, seconds=seconds,
            profile=profile, seed=int(seed), negative_control=negative_control,
            tables=out.tables, notes=out.notes, artifacts=out.artifacts)
