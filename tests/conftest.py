"""Hypothesis profiles and the ``slow`` marker.

Profiles (select with HYPOTHESIS_PROFILE; the default is ``ci`` when CI is set, else
``dev``).  They are registered and loaded here explicitly because Hypothesis loads its
own "ci" profile when CI=true is in the environment.
- ``dev``: 30 examples, randomized.
- ``ci``: 20 examples, derandomized, no deadline (reproducible on slow CI machines).
- ``thorough``: 500 examples, no deadline; also runs the tests marked ``slow``.
None runs Hypothesis's "explain" phase (see ``_PHASES``).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

#: every phase but "explain": after a failure it re-runs the shrunk example under a line
#: tracer to name the lines involved, which in mpmath-heavy tests took over 20 minutes and
#: looked like a hang; the failing example itself is reported either way
_PHASES = tuple(p for p in Phase if p is not Phase.explain)
settings.register_profile("dev", max_examples=30, deadline=None, phases=_PHASES)
settings.register_profile("ci", max_examples=20, derandomize=True, deadline=None,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow],
                          phases=_PHASES)
settings.register_profile("thorough", max_examples=500, deadline=None, phases=_PHASES,
                          suppress_health_check=[HealthCheck.too_slow])

PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="run tests marked slow (full-profile sizes)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow") or PROFILE == "thorough":
        return
    skip = pytest.mark.skip(reason="slow: use --run-slow or HYPOTHESIS_PROFILE=thorough")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch):
    """Replace the claim registry by two cheap test claims (T0a passes, T0b raises)."""
    import verify.claims as reg
    from tests._fake_claim import BROKEN, FAKE
    monkeypatch.setattr(reg, "_REGISTRY", {"T0a": FAKE, "T0b": BROKEN})
    return reg
