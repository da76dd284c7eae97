"""Input validation shared by ``numerics`` and ``verify.formulas``.

Every public function of the suite validates shapes, domains, finiteness and sizes and
raises ``ValueError`` (or ``TypeError`` for a value of the wrong kind) with a message that
names the argument and says what to change.  These helpers are the one place where that is
done.  A wrong *kind* of value (a string, None, a complex number, a boolean where a number
is expected) raises :class:`ArgumentTypeError`, which is both a ``TypeError`` and a
``ValueError`` so that callers catching either keep working.

Results: :func:`require_finite_result` turns a non-finite output into a ValueError that
names the overflow (never NaN or inf silently).

Sizes: :func:`require_size` refuses, before any allocation or loop, a problem whose
element count or step count would take more memory or time than the suite allows;
:func:`as_float_array` refuses an array of more than ``max_size`` entries from its shape,
before any copy (a zero-copy ``np.broadcast_to`` view of 10^9 entries is refused at once).

Long runs (one mechanism for every engine): :func:`require_work` compares a run's work
(elementary updates: steps x width x samples, plus a fixed per-step overhead) with
:data:`QUICK_WORK` (a few seconds of one core).  Above it the run must be asked for,
with the engine's ``long_run=True`` argument or inside :func:`long_runs`; it then shows
its progress (:class:`RunProgress`, on stderr) and stops at Ctrl-C (``KeyboardInterrupt``,
after a line saying where).  Above :data:`MAX_LONG_WORK` it is refused in any case.  A run
whose length is not known in advance (an error-controlled flow) gets the same work as a
cap on its steps or field evaluations (:func:`flow_budget`) and stops with
:class:`IntegratorError` (budget exhausted, naming ``long_run``).
The mechanism lives in ``numerics._longrun`` and the primitives it shares with this
module in ``numerics._checks``; both are re-exported here, the one place to import them
from (the quick budget is read in ``numerics._longrun``: a test lowering it patches it
there).

Exact arithmetic helpers (one place for the whole package):

- power-of-two rescaling, exact in binary floating point: :func:`pow2_exponent`,
  :func:`pow2_scale`, :func:`ldexp_clipped`, and the (mantissa, exponent) sums
  :func:`row_pow2_scale`, :func:`sum_pow2`, :func:`merge_pow2` that evaluate a sum whose
  terms or partial sums would overflow/underflow float64 while the result does not;
- error-free transformations (Dekker's TwoProduct with Veltkamp splitting, Knuth's
  TwoSum): :func:`two_product`, :func:`two_sum`, and :func:`dot2`, a sum of products
  computed as if in twice the working precision (Ogita, Rump & Oishi, "Accurate sum and
  dot product", SIAM J. Sci. Comput. 26, 2005, Algorithm 5.3), e.g. for an invariant
  c^2 - a^2 - b^2 that cancels.
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from numerics._checks import (MAX_ELEMENTS, MAX_STEPS, ArgumentTypeError, _count_text,
                              _flag, _kind, _label, require_callable, require_positive_int,
                              require_size)
from numerics._longrun import (MAX_LONG_WORK, QUICK_WORK, RunProgress, flow_budget,
                               long_runs, require_work, wants_long_run)

__all__ = [
    "DivergenceError",
    "ArgumentTypeError",
    "as_float_array",
    "as_float_scalar",
    "as_int_array",
    "require_same_shape",
    "require_positive_int",
    "require_in_range",
    "require_choice",
    "require_distinct",
    "require_finite_result",
    "require_tolerance",
    "require_time_grid",
    "MAX_TIME_POINTS",
    "require_generator",
    "require_size",
    "require_dps",
    "require_callable",
    "require_work",
    "require_broadcast_work",
    "wants_long_run",
    "flow_budget",
    "IntegratorError",
    "long_runs",
    "RunProgress",
    "MAX_ELEMENTS",
    "MAX_STEPS",
    "QUICK_WORK",
    "MAX_LONG_WORK",
    "MAX_DPS",
    "pow2_exponent",
    "pow2_scale",
    "ldexp_clipped",
    "POW2_ZERO_EXPONENT",
    "row_pow2_scale",
    "sum_pow2",
    "merge_pow2",
    "two_product",
    "two_sum",
    "dot2",
]


class DivergenceError(FloatingPointError):
    """A simulation (gradient descent, noisy SGD, a flow) produced a non-finite or exploding
    state; the message names the step and the step size or budget to change.  One class
    for every engine (``numerics.twolayer``, ``numerics.equivariant``)."""


class IntegratorError(DivergenceError, RuntimeError):
    """An error-controlled integrator stopped before the last requested time: the solver
    failed (its step size underflowed on a stiff or huge field) or a step, event or
    evaluation budget ran out; the message names the cause and what to change.  Both a
    :class:`DivergenceError` and a ``RuntimeError``."""


_INT64_MAX = int(np.iinfo(np.int64).max)


def _require_entries(raw: Any, name: str, limit: int | None) -> None:
    """Refuse, from its shape alone (before any copy or pass over the data), an array of
    more than ``limit`` (default :data:`MAX_ELEMENTS`) entries."""
    limit = MAX_ELEMENTS if limit is None else limit
    size = math.prod(np.shape(raw)) if isinstance(raw, np.ndarray) else 0
    if size > limit:
        raise ValueError(f"{name} is too large: it has {_count_text(size)} entries (shape "
                         f"{np.shape(raw)}), above the limit {_count_text(limit)}; pass a "
                         "smaller array")


def _real_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a float64 array (NaN allowed: it compares outside every range); text,
    None, complex or ragged input is an ArgumentTypeError naming ``name``."""
    what = "a real number or an array of real numbers"
    _reject_non_numeric(x, name, what)
    _require_entries(x, name, None)
    try:
        raw = np.asarray(x)
        if raw.dtype.kind in "bc":  # a cast would drop the imaginary part or read 0/1
            raise ArgumentTypeError(f"{name} must be {what}; got "
                                    f"{'complex values' if raw.dtype.kind == 'c' else 'booleans'}"
                                    " (convert them to real numbers first)")
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, ArgumentTypeError):
            raise
        raise ArgumentTypeError(f"{name} must be {what}; got {_kind(x)}") from None
    return arr


def _preview(arr: Any) -> list:
    return np.asarray(arr).ravel()[:5].tolist()


def _reject_non_numeric(x: Any, name: str, what: str) -> None:
    """ArgumentTypeError for strings, None, bytes, booleans, complex numbers (scalars or
    inside arrays/lists)."""
    if x is None:
        raise ArgumentTypeError(f"{name} must be {what}; got None")
    if isinstance(x, (str, bytes)):
        raise ArgumentTypeError(f"{name} must be {what}; got the text {x!r:.40} (convert it "
                                "to a number first)")
    if isinstance(x, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be {what}; got the boolean {x} (pass 0.0/1.0 "
                                "explicitly if you mean a number)")
    if isinstance(x, (complex, np.complexfloating)):
        raise ArgumentTypeError(f"{name} must be {what}; got the complex number {x} (pass "
                                "its real part)")


def as_float_array(x: Any, name: str, *, ndim: int | None = None,
                   allow_empty: bool = True, max_abs: float | None = None,
                   max_size: int | None = None) -> np.ndarray:
    """``x`` as a finite float64 array; raise ``ValueError`` naming ``name`` otherwise.

    Refused: strings, None, booleans and complex values (ArgumentTypeError), ragged
    nestings, the wrong number of dimensions, an empty array unless ``allow_empty``,
    more than ``max_size`` entries (default :data:`MAX_ELEMENTS`; checked from the shape,
    before any copy), NaN/inf, and entries with ``|x| > max_abs`` when ``max_abs`` is given."""
    name = _label(name)
    if ndim is not None:
        ndim = require_positive_int(ndim, "ndim (required number of dimensions)", minimum=0,
                                    maximum=32)
    allow_empty = _flag(allow_empty, "allow_empty")
    if max_abs is not None:
        max_abs = as_float_scalar(max_abs, "max_abs (largest allowed magnitude)", lo=0.0)
    if max_size is not None:
        max_size = require_positive_int(max_size, "max_size (largest allowed entry count)",
                                        minimum=0)
    what = "a real number or an array of real numbers"
    _reject_non_numeric(x, name, what)
    _require_entries(x, name, max_size)
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(f"{name} must be {what} (a rectangular nesting of numbers); "
                                f"got {_kind(x)}") from exc
    _require_entries(raw, name, max_size)
    if raw.dtype.kind in "bcUSV" or raw.dtype.kind == "O":
        if raw.dtype.kind == "O":
            for v in raw.ravel()[:1000]:
                _reject_non_numeric(v, f"{name} (entry)", what)
                if not isinstance(v, (Real, np.number)):
                    raise ArgumentTypeError(f"{name} must be {what}; got an entry of type "
                                            f"{type(v).__name__}")
        elif raw.dtype.kind == "b":
            raise ArgumentTypeError(f"{name} must be {what}; got booleans (convert them with "
                                    ".astype(float) if you mean 0/1)")
        elif raw.dtype.kind == "c":
            raise ArgumentTypeError(f"{name} must be {what}; got complex values (pass the "
                                    ".real part)")
        else:
            raise ArgumentTypeError(f"{name} must be {what}; got text {_preview(raw)}")
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except OverflowError:
        raise ValueError(f"{name} must be finite: an entry is too large for float64 "
                         "(|x| > 1.8e308); rescale it") from None
    except (TypeError, ValueError) as exc:
        raise ArgumentTypeError(f"{name} must be {what}; got {_kind(x)}") from exc
    if ndim is not None and arr.ndim != ndim:
        shape_hint = {0: "a scalar", 1: "a 1-D array (shape (n,))",
                      2: "a 2-D array (shape (n, d))"}.get(ndim, f"{ndim}-dimensional")
        raise ValueError(f"{name} must be {ndim}-dimensional ({shape_hint}); got shape "
                         f"{arr.shape}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        flat = arr.ravel()
        bad = np.flatnonzero(~np.isfinite(flat))[:5].tolist()
        raise ValueError(f"{name} must be finite; found NaN or inf at flat index {bad}: "
                         f"{flat[bad].tolist()}")
    if max_abs is not None and arr.size and np.max(np.abs(arr)) > max_abs:
        big = np.abs(arr) > max_abs
        raise ValueError(f"{name} must satisfy |{name.split()[0]}| <= {max_abs:.6g}; got "
                         f"{arr[big].ravel()[:5].tolist()}")
    return arr


def as_float_scalar(x: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                    lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite real scalar (Python float) in the interval given by ``lo``/``hi``
    (closed unless ``lo_open``/``hi_open``)."""
    name = _label(name)
    lo = None if lo is None else as_float_scalar(lo, "lo (lower bound)")
    hi = None if hi is None else as_float_scalar(hi, "hi (upper bound)")
    lo_open, hi_open = _flag(lo_open, "lo_open"), _flag(hi_open, "hi_open")
    arr = as_float_array(x, name)
    if arr.ndim != 0 and arr.size != 1:
        raise ValueError(f"{name} must be a single number; got shape {arr.shape}")
    v = float(arr.reshape(()))
    lo_bad = lo is not None and (v < lo or (lo_open and v == lo))
    hi_bad = hi is not None and (v > hi or (hi_open and v == hi))
    if lo_bad or hi_bad:
        left = "-inf" if lo is None else f"{lo:g}"
        right = "inf" if hi is None else f"{hi:g}"
        interval = f"{'(' if lo_open or lo is None else '['}{left}, {right}{')' if hi_open or hi is None else ']'}"
        raise ValueError(f"{name} must lie in {interval}; got {v!r}")
    return v


def as_int_array(x: Any, name: str, *, minimum: int | None = None,
                 maximum: int | None = None) -> np.ndarray:
    """``x`` as an int64 array of whole numbers in ``[minimum, maximum]``."""
    name = _label(name)
    what = "an integer or an integer array"
    if isinstance(x, bool) or (isinstance(x, np.ndarray) and x.dtype == bool):
        raise ArgumentTypeError(f"{name} must be an integer, not a boolean")
    _reject_non_numeric(x, name, what)
    _require_entries(x, name, None)
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ArgumentTypeError(f"{name} must be {what}; got {_kind(x)}") from exc
    _require_entries(arr, name, None)
    lo_text = "" if minimum is None else f" >= {minimum}"
    if arr.dtype.kind == "O":
        vals = arr.ravel().tolist()
        if not all(isinstance(v, (Integral, np.integer)) and not isinstance(v, bool)
                   for v in vals):
            raise ArgumentTypeError(f"{name} must be {what}; got {_preview(arr)}")
        big = [v for v in vals if abs(int(v)) > _INT64_MAX]
        if big:
            raise ValueError(f"{name} is too large: {big[:3]} exceeds 2^63 - 1; pass an "
                             f"integer{lo_text} below 2^63")
        arr = np.asarray(vals, dtype=np.int64).reshape(arr.shape)
    if arr.dtype.kind == "u":
        if arr.size and int(arr.max()) > _INT64_MAX:
            raise ValueError(f"{name} is too large: {_preview(arr[arr > _INT64_MAX])} exceeds "
                             f"2^63 - 1; pass an integer{lo_text} below 2^63")
        out = arr.astype(np.int64)
    elif arr.dtype.kind == "i":
        out = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must be a whole number; got {_preview(arr)}")
        if arr.size and np.max(np.abs(arr)) >= 2.0 ** 63:
            raise ValueError(f"{name} is too large: {_preview(arr[np.abs(arr) >= 2.0 ** 63])} "
                             f"exceeds 2^63 - 1; pass an integer{lo_text} below 2^63")
        out = arr.astype(np.int64)
    elif arr.dtype.kind == "b":
        raise ArgumentTypeError(f"{name} must be an integer, not a boolean")
    else:
        raise ArgumentTypeError(f"{name} must be {what}; got {_kind(x)}")
    if minimum is not None and np.any(out < minimum):
        raise ValueError(f"{name} must be >= {minimum}; got {out[out < minimum].ravel()[:5].tolist()}")
    if maximum is not None and np.any(out > maximum):
        raise ValueError(f"{name} must be <= {maximum}; got {out[out > maximum].ravel()[:5].tolist()}")
    return out


def require_broadcast_work(per_entry: int, name: str, what: str, *arrays: Any,
                           hint: str = "evaluate fewer points") -> int:
    """The broadcast entry count of ``arrays``, read from their shapes alone (before any
    copy or pass over the data); a call costing ``per_entry`` work units per entry above the
    quick budget is refused as by :func:`require_work`.  Shapes that do not broadcast are
    left to the caller's own validation (0 is returned)."""
    per_entry = require_positive_int(per_entry, "per_entry (work units per entry)", minimum=0)
    try:
        entries = math.prod(np.broadcast_shapes(*(np.shape(a) if isinstance(a, np.ndarray)
                                                  else () for a in arrays)))
    except ValueError:
        return 0
    require_work(entries * per_entry, name, what=f"work units ({what})", hint=hint,
                 remedy="run it inside numerics.validation.long_runs()")
    return entries


def require_same_shape(**arrays: np.ndarray) -> None:
    """All arrays have one shape; the message lists every name with its shape."""
    shapes = {k: np.shape(v) for k, v in arrays.items()}
    if len(set(shapes.values())) > 1:
        desc = ", ".join(f"{k}{s}" for k, s in shapes.items())
        raise ValueError(f"shapes must match: {desc} (pass arrays of one shape)")


#: measured cost (ns, one loaded core) of one entry of a range check (~5 ns) and of one
#: entry x log2(entries) of a sort (~1 ns, 10^8 entries: 2.1 s), with a margin of 2-4
_SCAN_NS, _SORT_NS = 16, 4


def _bound_text(v: Any) -> str:
    """A bound for a message: ``1.5`` for a scalar, ``[0, 1, ...]`` for an array bound."""
    arr = np.asarray(v)
    if arr.ndim == 0:
        try:
            return f"{float(arr):g}"
        except (TypeError, ValueError):
            return repr(v)[:40]
    vals = arr.ravel()[:5].tolist()
    return f"{vals}{' ...' if arr.size > 5 else ''} (per entry)"


def require_in_range(arr: np.ndarray, name: str, lo: Any, hi: Any) -> None:
    """Every entry of ``arr`` lies in the closed interval ``[lo, hi]`` (NaN is outside);
    ``lo`` and ``hi`` may be scalars or arrays broadcasting against ``arr``.  Checked in
    blocks of rows (no full-size temporary), after a size bound read from the shapes."""
    name = _label(name)
    require_broadcast_work(_SCAN_NS, name, f"entries x {_SCAN_NS} ns per comparison", arr,
                           lo, hi, hint="check a smaller array")
    a = _real_array(arr, name)
    lo, hi = _real_array(lo, "lo (lower bound)"), _real_array(hi, "hi (upper bound)")
    try:
        shape = np.broadcast_shapes(a.shape, lo.shape, hi.shape)
    except ValueError:
        raise ValueError(f"{name}: the bounds lo {lo.shape}, hi {hi.shape} must broadcast "
                         f"against its shape {a.shape}") from None
    text = f"[{_bound_text(lo)}, {_bound_text(hi)}]"
    a, lo, hi = (np.broadcast_to(v, shape) for v in (a, lo, hi))
    if a.ndim == 0:
        a, lo, hi = a[None], lo[None], hi[None]
    rows = max(1, 2 ** 20 // max(1, math.prod(a.shape[1:])))
    vals: list = []
    for i in range(0, a.shape[0], rows):
        blk = a[i:i + rows]
        vals += blk[~((blk >= lo[i:i + rows]) & (blk <= hi[i:i + rows]))][:5 - len(vals)].tolist()
        if len(vals) == 5:
            break
    if vals:
        raise ValueError(f"{name} must lie in {text}; got {vals}")


def require_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value`` is one of ``choices``."""
    name = _label(name)
    if not isinstance(choices, (tuple, list)) or not choices:
        raise ArgumentTypeError(f"choices (the allowed values of {name}) must be a non-empty "
                                f"tuple; got {_kind(choices)}")
    ok = isinstance(value, type(choices[0]))   # before comparing: an array compares per entry
    if ok:
        try:
            ok = value in choices
        except (TypeError, ValueError):  # uncomparable value
            ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r:.60}")
    return value


def require_distinct(arr: np.ndarray, name: str) -> None:
    """No two entries of the 1-D array ``arr`` are equal."""
    name = _label(name)
    n = math.prod(np.shape(arr)) if isinstance(arr, np.ndarray) else 0
    require_work(n * _SORT_NS * max(1, n.bit_length()), name, what=f"work units (entries x "
                 f"log2(entries) x {_SORT_NS} ns: a sort)", hint="check a smaller array")
    srt = np.sort(np.ravel(_real_array(arr, name)))
    dup = srt[1:][srt[1:] == srt[:-1]]
    if dup.size:
        raise ValueError(f"{name} must have distinct entries; repeated: "
                         f"{np.unique(dup)[:5].tolist()} (merge or remove duplicates)")


def require_finite_result(value: Any, name: str, cause: str = "") -> Any:
    """``value`` unchanged if every entry is finite; otherwise ValueError naming the
    overflow (``cause``: what input makes it unrepresentable)."""
    name = _label(name)
    try:
        arr = np.asarray(value, dtype=np.float64) if not isinstance(value, tuple) else None
        parts = [np.asarray(v, dtype=np.float64) for v in value] if arr is None else [arr]
    except (TypeError, ValueError, OverflowError):
        raise ArgumentTypeError(f"{name} must be a number, an array or a tuple of them (a "
                                f"result to check); got {_kind(value)}") from None
    for p in parts:
        if not np.all(np.isfinite(p)):
            bad = np.flatnonzero(~np.isfinite(p.ravel()))[:5].tolist()
            why = f" ({cause})" if cause else ""
            raise ValueError(f"{name} is not representable in float64 at flat index {bad}: "
                             f"the result overflows{why}; rescale the inputs")
    return value


def require_tolerance(x: Any, name: str, *, hi: float = 1.0) -> float:
    """An integrator tolerance (``rtol``, ``atol``): a finite number in (0, hi]."""
    name = _label(name)
    hi = as_float_scalar(hi, "hi (largest tolerance)", lo=0.0, lo_open=True)
    return as_float_scalar(x, name, lo=0.0, hi=hi, lo_open=True)


#: most output times of one run (a 10^8-time view took 2.3 s to scan before a refusal)
MAX_TIME_POINTS = 2 ** 24


def require_time_grid(t: Any, name: str = "t_eval", *, allow_empty: bool = False,
                      strictly: bool = True, start: float | None = None) -> np.ndarray:
    """A 1-D finite, (strictly) increasing array of at most :data:`MAX_TIME_POINTS` times
    (counted from the shape, before any pass over them), non-empty unless allowed, not
    before ``start`` when given."""
    name = _label(name)
    strictly = _flag(strictly, "strictly")
    if start is not None:
        start = as_float_scalar(start, "start (earliest allowed time)")
    arr = as_float_array(t, name, ndim=1, allow_empty=allow_empty, max_size=MAX_TIME_POINTS)
    d = np.diff(arr)
    if np.any(d <= 0 if strictly else d < 0):
        i = int(np.flatnonzero(d <= 0 if strictly else d < 0)[0])
        raise ValueError(f"{name} must be {'strictly ' if strictly else ''}increasing; "
                         f"{name}[{i + 1}] = {arr[i + 1]!r} follows {arr[i]!r} (sort it)")
    if start is not None and arr.size and arr[0] < start:
        raise ValueError(f"{name} must start at or after {start!r}; got {arr[0]!r}")
    return arr


def require_generator(rng: Any, name: str = "rng") -> np.random.Generator:
    """``rng`` itself if it is a ``numpy.random.Generator``; otherwise an
    :class:`ArgumentTypeError` saying how to make one."""
    name = _label(name)
    if isinstance(rng, np.random.Generator):
        return rng
    raise ArgumentTypeError(f"{name} must be a numpy.random.Generator (e.g. "
                            f"numpy.random.default_rng(seed) or numerics.rng.make_rng(seed, ...)); "
                            f"got {_kind(rng)}")


# --------------------------------------------------------------------------- dps
#: largest mpmath precision (decimal digits): beyond it one special-function call takes
#: minutes (the same cap as ``verify.formulas``)
MAX_DPS = 2000



def require_dps(dps: Any, name: str = "dps") -> int:
    """An mpmath precision in decimal digits: an integer in 1..:data:`MAX_DPS`."""
    name = _label(name)
    return require_positive_int(dps, f"{name} (decimal digits for mpmath)", minimum=1,
                                maximum=MAX_DPS)


# --------------------------------------------------------------------------- exact rescaling
#: exponent of an exact zero in a (mantissa, exponent) pair: below every real exponent
POW2_ZERO_EXPONENT = -(1 << 40)


def _floats(x: Any, name: str) -> np.ndarray:
    """A float64 array: passed through when it already is one (hot paths), else
    validated by :func:`as_float_array` (finite, real)."""
    if type(x) is np.ndarray and x.dtype == np.float64:
        _require_entries(x, name, None)
        return x
    return as_float_array(x, name)


def _exponents(e: Any, name: str) -> np.ndarray:
    if type(e) is np.ndarray and e.dtype.kind == "i":
        _require_entries(e, name, None)
        return e
    return as_int_array(e, name)


def pow2_exponent(x: Any) -> int:
    """The integer e with max |x| * 2^-e in [1/2, 1) (0 for an empty or all-zero ``x``):
    dividing ``x`` by 2^e is exact (no rounding) and brings its largest entry near 1."""
    arr = _floats(x, "x")
    big = float(np.max(np.abs(arr), initial=0.0))
    if big == 0.0 or not math.isfinite(big):
        return 0
    return int(math.frexp(big)[1])


def ldexp_clipped(mant: Any, exp: Any, name: str = "mant * 2^exp", cause: str = "") -> np.ndarray:
    """mant * 2^exp, exact unless the result is subnormal; exponents are clipped to
    [-4000, 4000] (where every float64 result is already 0 or beyond float64).  A result
    beyond float64 for a finite ``mant`` raises ValueError naming ``name`` (``cause``:
    what makes it unrepresentable)."""
    m = _floats(mant, "mant")
    e = np.clip(_exponents(exp, "exp"), -4000, 4000)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(m, e)
    if not np.all(np.isfinite(out)):
        require_finite_result(out, name, cause or "the scale 2^exp is beyond float64")
    return out


def pow2_scale(x: Any) -> tuple[np.ndarray, int]:
    """``(x * 2^-e, e)`` with e = :func:`pow2_exponent` (x): an exact rescaling whose
    largest entry lies in [1/2, 1); ``x == ldexp_clipped(x_scaled, e)`` unless entries
    smaller than 2^-1022 relative to the largest one became subnormal (and lost bits)."""
    arr = _floats(x, "x")
    e = pow2_exponent(arr)
    return (ldexp_clipped(arr, -e) if e else arr.copy()), e


def row_pow2_scale(M: Any) -> tuple[np.ndarray, np.ndarray]:
    """M = diag(2^e) Mh with max |row of Mh| in [1/2, 1) (zero rows: e = 0), exactly."""
    M = _floats(M, "M")
    if M.ndim != 2:
        raise ValueError(f"M must be 2-dimensional (rows to scale); got shape {M.shape}")
    top = np.max(np.abs(M), axis=1, initial=0.0)
    e = np.frexp(top)[1].astype(np.int64)
    return ldexp_clipped(M, -e[:, None]), e


def sum_pow2(P: Any, E: Any, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum over ``axis`` of P * 2^E as (mantissa, exponent): the exponent is the largest
    exponent of a non-zero term (:data:`POW2_ZERO_EXPONENT` for an all-zero sum), so
    neither the terms nor the partial sums overflow; only terms below 2^-1074 of the
    largest term are lost (as in any float64 sum)."""
    P = _floats(P, "P")
    E = _exponents(E, "E")
    try:
        E = np.broadcast_to(E, P.shape)
    except ValueError:
        raise ValueError(f"E must broadcast to the shape of P {P.shape}; got {E.shape}") from None
    axis = require_positive_int(axis, "axis", minimum=-max(P.ndim, 1), maximum=max(P.ndim - 1, 0))
    top = np.max(np.where(P != 0, E, POW2_ZERO_EXPONENT), axis=axis)
    mant = np.sum(ldexp_clipped(P, E - np.expand_dims(top, axis)), axis=axis)
    return mant, top


def _pow2_pair(v: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(v, tuple) or len(v) != 2:
        raise ArgumentTypeError(f"{name} must be a (mantissa, exponent) pair as returned by "
                                f"sum_pow2; got {_kind(v)}")
    return _floats(v[0], f"{name}[0] (mantissa)"), _exponents(v[1], f"{name}[1] (exponent)")


def merge_pow2(acc: tuple[np.ndarray, np.ndarray], new: tuple[np.ndarray, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray]:
    """Sum of two (mantissa, exponent) values (as returned by :func:`sum_pow2`)."""
    acc, new = _pow2_pair(acc, "acc"), _pow2_pair(new, "new")
    top = np.maximum(acc[1], new[1])
    return ldexp_clipped(acc[0], acc[1] - top) + ldexp_clipped(new[0], new[1] - top), top


# --------------------------------------------------------------------------- error-free transformations
_SPLITTER = 134217729.0  # 2^27 + 1, Veltkamp's splitting constant for float64
_TWO_PRODUCT_MAX = 2.0 ** 995


def _veltkamp(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * v
    hi = t - (t - v)
    return hi, v - hi


def two_product(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(p, e)`` with p = fl(a b) and p + e = a b EXACTLY (Dekker's TwoProduct,
    broadcasting), valid when |a|, |b| <= 2^995 and a b is zero or above 2^-969 in
    magnitude (no overflow in the splitting, no underflow in the error term); rescale
    with :func:`pow2_scale` first otherwise."""
    a = _floats(a, "a")
    b = _floats(b, "b")
    for v, nm in ((a, "a"), (b, "b")):
        if v.size and float(np.max(np.abs(v))) > _TWO_PRODUCT_MAX:
            raise ValueError(f"{nm} must satisfy |{nm}| <= 2^995 ~ 6.7e299 (the exact split "
                             "overflows beyond); rescale the factors with pow2_scale first")
    with np.errstate(over="ignore"):
        p = a * b
    if not np.all(np.isfinite(p)):
        raise ValueError("a * b is not representable in float64 (the product overflows); "
                         "rescale a or b with pow2_scale first")
    ah, al = _veltkamp(a)
    bh, bl = _veltkamp(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def two_sum(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with s = fl(a + b) and s + e = a + b EXACTLY (Knuth's TwoSum,
    broadcasting; any finite operands whose sum does not overflow: an overflowing sum is a
    ValueError)."""
    a = _floats(a, "a")
    b = _floats(b, "b")
    with np.errstate(over="ignore", invalid="ignore"):
        s = a + b
        bv = s - a
        e = (a - (s - bv)) + (b - bv)
    if not np.all(np.isfinite(s)):
        raise ValueError("a + b is not representable in float64 (the sum overflows beyond "
                         "1.8e308); rescale a and b with pow2_scale first")
    return s, e


def dot2(xs: Any, ys: Any) -> np.ndarray:
    """sum_k xs[k] * ys[k] (elementwise over the broadcast shape of the entries), correctly
    rounded in practice: every product is split exactly (:func:`two_product`) and the 2n
    exact parts are summed with Ogita-Rump-Oishi Dot2 (error <= u |s| + 2 gamma_n^2
    sum_k |xs[k] ys[k]|, u = 2^-53); where that bound is not below u |s| (a sum that
    cancels by more than 2^-40 of its terms, e.g. c^2 - a^2 - b^2 near zero) the exact
    parts are summed again with ``math.fsum`` (correctly rounded).

    The operands are rescaled exactly by powers of two (one factor per sequence) so that
    the splitting neither overflows nor underflows; a result beyond float64 raises
    ValueError; a subnormal result (below 2.2e-308) is rounded a second time, to the
    subnormal grid (one more unit of 2^-1074).  Exactness needs every nonzero scaled
    product above 2^-969 (products
    smaller than that relative to the largest factors contribute with an absolute error
    below 2^-1074 of the scale)."""
    for seq, nm in ((xs, "xs"), (ys, "ys")):
        if not isinstance(seq, (list, tuple)):
            raise ArgumentTypeError(f"{nm} must be a list or tuple of factors (numbers or "
                                    f"arrays); got {_kind(seq)}")
    if len(xs) != len(ys) or not xs:
        raise ValueError(f"xs and ys must be non-empty sequences of one length; got "
                         f"{len(xs)} and {len(ys)} factors")
    xs = [_floats(v, f"xs[{k}]") for k, v in enumerate(xs)]
    ys = [_floats(v, f"ys[{k}]") for k, v in enumerate(ys)]
    try:
        np.broadcast_shapes(*(v.shape for v in xs + ys))
    except ValueError:
        raise ValueError("xs, ys: the factors must broadcast to one shape; got shapes "
                         f"{[v.shape for v in xs]} and {[v.shape for v in ys]}") from None
    ex = max(pow2_exponent(v) for v in xs)
    ey = max(pow2_exponent(v) for v in ys)
    shape = np.broadcast_shapes(*(v.shape for v in xs + ys))
    p = np.zeros(shape)
    s = np.zeros(shape)
    mag = np.zeros(shape)
    parts = []
    for x, y in zip(xs, ys):
        h, r = two_product(ldexp_clipped(x, -ex), ldexp_clipped(y, -ey))
        parts += [np.broadcast_to(h, shape), np.broadcast_to(r, shape)]
        mag = mag + np.abs(h)
        p, q = two_sum(p, h)
        s = s + (q + r)
    res = np.asarray(p + s)
    hard = np.abs(res) < 2.0 ** -40 * mag
    if np.any(hard):
        res = res.copy()
        idx = np.flatnonzero(hard.ravel())
        flat = [np.ravel(v) for v in parts]
        res.ravel()[idx] = [math.fsum(float(v[i]) for v in flat) for i in idx.tolist()]
    out = ldexp_clipped(res, ex + ey)
    return require_finite_result(out, "the sum of products", "its magnitude exceeds "
                                 "float64 (1.8e308); rescale the inputs")

