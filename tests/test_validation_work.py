"""numerics.validation's work bound: the refusal says how to ask for a long run, with the
remedy the caller can use (``long_run=True`` for an engine, ``long_runs()`` for a function
without that argument)."""
from __future__ import annotations

import numpy as np
import pytest

from numerics import validation as V


def test_require_work_names_long_run_by_default() -> None:
    with pytest.raises(ValueError, match=r"^steps is too large for a quick call.*; use fewer "
                                         r"steps or smaller sizes, or pass long_run=True to run "
                                         r"it anyway \(it then shows its progress"):
        V.require_work(V.QUICK_WORK + 1, "steps")


def test_require_work_takes_the_remedy_to_name() -> None:
    with pytest.raises(ValueError, match=r"; fewer, or call it twice \(it then shows") as exc:
        V.require_work(V.QUICK_WORK + 1, "steps", hint="fewer", remedy="call it twice")
    assert "long_run=True" not in str(exc.value)
    with pytest.raises(TypeError, match="^remedy must be a non-empty string"):
        V.require_work(10, "steps", remedy="")
    with pytest.raises(TypeError, match="^remedy must be a non-empty string"):
        V.require_work(10, "steps", remedy=None)


def test_require_broadcast_work_names_long_runs_from_shapes_alone() -> None:
    view = np.broadcast_to(np.float64(0.5), (10 ** 9,))
    with pytest.raises(ValueError) as exc:
        V.require_broadcast_work(8, "x", "8 per point", view, 0.3)
    msg = str(exc.value)
    assert msg.startswith("x is too large for a quick call")
    assert "evaluate fewer points, or run it inside numerics.validation.long_runs() (it then" in msg
    assert "long_run=True" not in msg
    assert V.require_broadcast_work(8, "x", "8 per point", np.ones(3), 0.3) == 3
    with V.long_runs():
        assert V.require_broadcast_work(8, "x", "8 per point", view) == 10 ** 9


@pytest.mark.parametrize("bad", [np.array([0.5 + 1j]), np.array([True, False])],
                         ids=["complex", "boolean"])
def test_range_and_distinct_checks_refuse_complex_and_boolean_arrays(bad) -> None:
    """require_in_range / require_distinct cast a complex array to its real part (a
    ComplexWarning, then 'in range') and booleans to 0/1; both are refused by name now."""
    with pytest.raises(TypeError, match="^arg_x must be a real number or an array of real"):
        V.require_in_range(bad, "arg_x", 0.0, 1.0)
    with pytest.raises(TypeError, match="^arg_x must be a real number or an array of real"):
        V.require_distinct(bad, "arg_x")
    V.require_in_range(np.array([0.5]), "arg_x", 0.0, 1.0)
