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
from numerics.validation import long_runs, wants_long_run
from numerics.rng import make_rng
from verify import derived

PROFILES = ("quick", "full")
Profile = Literal["quick", "full"]
Kind = Literal["theorem", "reconstructed", "numerical-evidence", "convention"]


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
        """The :class:`RunContext` of one run (validated), with the profile's sizes."""
        if not isinstance(profile, str) or profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}; got {profile!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
        if examples is not None and (isinstance(examples, bool)
                                     or not isinstance(examples, (int, np.integer))
                                     or not 1 <= examples <= 100_000):
            raise ValueError(f"examples must be an integer in 1..100000; got {examples!r}")
        if not isinstance(negative_control, (bool, np.bool_)):
            raise TypeError(f"negative_control must be True or False; got "
                            f"{type(negative_control).__name__} {negative_control!r:.40}")
        items = tuple(self.sizes.get(profile, {}).items())
        return RunContext(self.id, profile, int(seed), bool(negative_control),
                          None if examples is None else int(examples), items)

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
