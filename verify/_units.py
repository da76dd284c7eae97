"""The vocabulary of ``SubCheck.unit``: what a sub-check's error and tolerance are
measured in (read by :func:`verify.kit.compare`, the report's summary and the registry test)."""
from __future__ import annotations

__all__ = ["UNITS", "is_unit"]

#: the units a sub-check's error is measured in (``SubCheck.unit``): "relative" (to the
#: reference, or to a scale the reason names), "absolute" (the quantity's own units),
#: "ulps", "radians", "SE" (standard errors), "tolerances" (divided by its own bound(s):
#: tolerance 1), "ratio" (of two measured quantities, e.g. bound / value),
#: "|slope - predicted|" (a fitted log-log slope vs the predicted rate), "slope" (a fitted
#: slope vs a threshold), "order" (an observed convergence order vs the scheme's), "count"
#: (events, instances, dimensions), "flag" (1 when a yes/no condition fails, else 0);
#: besides these, "mixed (c relative, theta radians)" names each component's unit
UNITS = ("relative", "absolute", "ulps", "radians", "SE", "tolerances", "ratio",
         "|slope - predicted|", "slope", "order", "count", "flag")


def is_unit(text: str) -> bool:
    """Whether ``text`` is a unit of the vocabulary: one of :data:`UNITS`, or
    ``"mixed (...)"`` naming the units of its components."""
    if not isinstance(text, str):
        return False
    return text in UNITS or (text.startswith("mixed (") and text.endswith(")") and len(text) > 8)
