"""The primitives under ``numerics.validation`` and its long-run mechanism
(``numerics._longrun``): the wrong-kind error, argument labels and flags, whole counts,
size limits and callables.  Both modules import them from here, so neither imports the
other's internals; ``numerics.validation`` re-exports the public ones, which is where
callers import them from."""
from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np

__all__ = ["ArgumentTypeError", "require_positive_int", "require_size", "require_callable",
           "MAX_ELEMENTS", "MAX_STEPS"]


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong kind (string, None, complex, bool, object): both a
    ``TypeError`` and a ``ValueError``."""


def _kind(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of dtype {x.dtype}"
    return type(x).__name__


def _label(name: Any) -> str:
    """The argument's label used in messages: it must be text (a caller's bug otherwise)."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"name (the argument's label in error messages) must be text; "
                                f"got {_kind(name)}")
    return name


def _flag(v: Any, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False; got {_kind(v)}")
    return bool(v)


def _count_text(n: int) -> str:
    """A possibly astronomically large count as 1.23e+45 (no float overflow)."""
    return f"{n:.3g}" if n < 10 ** 300 else f"~1e+{int(math.log10(n))}"


def require_positive_int(x: Any, name: str, *, minimum: int = 1,
                         maximum: int | None = None) -> int:
    """A Python int in ``[minimum, maximum]`` (rejects bools, floats with fractions,
    strings, None; accepts whole floats and numpy integers)."""
    name = _label(name)
    rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if isinstance(x, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be an integer {rng}, not a boolean; got {x!r}")
    if not isinstance(x, (Integral, np.integer)):
        if isinstance(x, (float, np.floating)) and math.isfinite(x) and float(x).is_integer():
            x = int(x)
        elif isinstance(x, (float, np.floating)):
            raise ValueError(f"{name} must be an integer {rng}; got {x!r}")
        else:
            raise ArgumentTypeError(f"{name} must be an integer {rng}; got {_kind(x)} "
                                    f"{x!r:.40}")
    if int(x) < minimum or (maximum is not None and int(x) > maximum):
        raise ValueError(f"{name} must be an integer {rng}; got {int(x)!r}")
    return int(x)


# --------------------------------------------------------------------------- sizes
#: largest number of float64 entries one call may allocate (2^27 entries = 1 GiB)
MAX_ELEMENTS = 2 ** 27
#: largest number of iterations (steps x work per step, in elementary updates) one call
#: may run; at ~1e8 simple updates per second this is ~ a few minutes
MAX_STEPS = 2 ** 35


def require_size(count: Any, name: str, *, limit: int = MAX_ELEMENTS, what: str = "entries",
                 hint: str = "use smaller sizes") -> int:
    """``count`` (an exact integer, e.g. a product of sizes) unchanged when it is at most
    ``limit``; else a ValueError naming ``name`` raised before any work is done."""
    name = _label(name)
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (Integral, np.integer)):
        if isinstance(count, (float, np.floating)) and math.isfinite(count) and count >= 0:
            count = math.ceil(count)
        else:
            raise ArgumentTypeError(f"{name}: its size must be a count (a non-negative "
                                    f"integer); got {_kind(count)} {count!r:.40}")
    count = int(count)
    limit = require_positive_int(limit, "limit (largest allowed count)", minimum=0)
    if count > limit:
        raise ValueError(f"{name} is too large: it needs {_count_text(count)} {what}, above the "
                         f"limit {_count_text(limit)}; {hint}")
    return count


def require_callable(fn: Any, name: str, signature: str = "") -> Any:
    """``fn`` itself if callable; else an :class:`ArgumentTypeError` naming ``name``."""
    name = _label(name)
    if callable(fn):
        return fn
    want = f" {signature}" if signature else ""
    raise ArgumentTypeError(f"{name} must be a callable{want}; got {_kind(fn)} {fn!r:.40}")
