"""Input validation shared by ``numerics`` and ``verify.formulas``.

Every public function of the suite validates shapes, domains, finiteness and sizes and
raises ``ValueError`` with a message that says what to change.  These helpers are the
one place where that is done.
"""
from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

__all__ = [
    "as_float_array",
    "as_int_array",
    "require_same_shape",
    "require_positive_int",
    "require_in_range",
    "require_choice",
    "require_distinct",
]


def as_float_array(x: Any, name: str, *, ndim: int | None = None,
                   allow_empty: bool = True) -> np.ndarray:
    """``x`` as a finite float64 array; raise ``ValueError`` naming ``name`` otherwise."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real number or an array of real numbers; got {type(x).__name__}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional; got shape {arr.shape}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr.ravel()))[:5].tolist()
        raise ValueError(f"{name} must be finite; found NaN or inf at flat index {bad}")
    return arr


def as_int_array(x: Any, name: str, *, minimum: int | None = None,
                 maximum: int | None = None) -> np.ndarray:
    """``x`` as an int64 array of whole numbers in ``[minimum, maximum]``."""
    if isinstance(x, bool) or (isinstance(x, np.ndarray) and x.dtype == bool):
        raise ValueError(f"{name} must be an integer, not a boolean")
    arr = np.asarray(x)
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must be a whole number; got {arr.ravel()[:5].tolist()}")
        out = arr.astype(np.int64)
    else:
        raise ValueError(f"{name} must be an integer or an integer array; got {type(x).__name__}")
    if minimum is not None and np.any(out < minimum):
        raise ValueError(f"{name} must be >= {minimum}; got {out[out < minimum].ravel()[:5].tolist()}")
    if maximum is not None and np.any(out > maximum):
        raise ValueError(f"{name} must be <= {maximum}; got {out[out > maximum].ravel()[:5].tolist()}")
    return out


def require_positive_int(x: Any, name: str, *, minimum: int = 1) -> int:
    """A Python int >= ``minimum`` (rejects bools, floats with fractions, strings)."""
    if isinstance(x, bool) or not isinstance(x, (Integral, np.integer)):
        if isinstance(x, float) and x.is_integer():
            x = int(x)
        else:
            raise ValueError(f"{name} must be an integer >= {minimum}; got {x!r}")
    if int(x) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {x!r}")
    return int(x)


def require_same_shape(**arrays: np.ndarray) -> None:
    """All arrays have one shape; the message lists every name with its shape."""
    shapes = {k: np.shape(v) for k, v in arrays.items()}
    if len(set(shapes.values())) > 1:
        desc = ", ".join(f"{k}{s}" for k, s in shapes.items())
        raise ValueError(f"shapes must match: {desc}")


def require_in_range(arr: np.ndarray, name: str, lo: float, hi: float) -> None:
    """Every entry of ``arr`` lies in the closed interval ``[lo, hi]``."""
    bad = (arr < lo) | (arr > hi)
    if np.any(bad):
        raise ValueError(f"{name} must lie in [{lo}, {hi}]; got {np.asarray(arr)[bad].ravel()[:5].tolist()}")


def require_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def require_distinct(arr: np.ndarray, name: str) -> None:
    """No two entries of the 1-D array ``arr`` are equal."""
    srt = np.sort(np.ravel(arr))
    dup = srt[1:][srt[1:] == srt[:-1]]
    if dup.size:
        raise ValueError(f"{name} must have distinct entries; repeated: {np.unique(dup)[:5].tolist()}")
