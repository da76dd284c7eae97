"""The suite's claims as pytest items in any project: ``pytest --claims H1f,W2e``.

Installed with ``meanfield-verify`` (entry point ``pytest11``).  Each selected claim
becomes two items: ``<ID>::check`` (passes when the claim's check passes) and
``<ID>::negative-control`` (passes when the deliberately wrong variant FAILS).  A failing
item's message is the evidence summary.  Without ``--claims`` the plugin adds nothing and
imports nothing of the suite.
"""
from __future__ import annotations

from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_collection_modifyitems"]


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("meanfield-verify", "verified claims of the mean-field theory")
    g.addoption("--claims", metavar="IDS", default=None,
                help="run these claims as test items: a comma list of ids (e.g. H1f,W2e) or 'all'")
    g.addoption("--claims-profile", metavar="PROFILE", default="quick",
                choices=("quick", "full"), help="claim profile: quick (default) or full")
    g.addoption("--claims-seed", metavar="N", type=int, default=0,
                help="seed of the claim runs (default 0)")


def _selected(config: pytest.Config) -> list[str]:
    spec = config.getoption("--claims")
    if not spec:
        return []
    from verify import claims
    if spec.strip().lower() == "all":
        return [c.id for c in claims.all_claims()]
    ids = []
    for raw in spec.split(","):
        raw = raw.strip()
        if not raw:
            continue
        try:
            ids.append(claims.get(raw).id)
        except claims.UnknownClaimError as exc:
            raise pytest.UsageError(f"--claims: {exc}") from None
    if not ids:
        raise pytest.UsageError("--claims needs claim ids (e.g. H1f,W2e) or 'all'")
    return ids


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("--claims-seed", default=0)
    if seed is not None and seed < 0:
        raise pytest.UsageError(f"--claims-seed must be a non-negative integer; got {seed}")
    config.addinivalue_line("markers", "claims: a verified claim of meanfield-verify run as a test item")
    config._meanfield_claims = _selected(config)  # type: ignore[attr-defined]


class ClaimFailure(Exception):
    """A claim item that did not give the required verdict; the message is the evidence."""


class ClaimItem(pytest.Item):
    """One claim's check (``negative=False``) or negative control (``negative=True``)."""

    def __init__(self, *, claim_id: str, negative: bool, profile: str, seed: int,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.claim_id, self.negative, self.profile, self.seed = claim_id, negative, profile, seed
        self.add_marker(pytest.mark.claims)

    def runtest(self) -> None:
        from verify import claims
        ev = claims.run(self.claim_id, self.profile, self.seed, negative_control=self.negative)
        ok = (not ev.passed) if self.negative else ev.passed
        if not ok:
            raise ClaimFailure(_summary(ev, self.negative))

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ClaimFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"claim {self.name}"


def _summary(ev: Any, negative: bool) -> str:
    head = (f"{ev.claim_id}: the negative control did NOT fail" if negative
            else f"{ev.claim_id}: the check FAILED")
    lines = [head, f"  compared: {ev.compared}",
             f"  error {ev.error:.6g} vs tolerance {ev.tolerance:.6g} ({ev.tolerance_reason})",
             f"  profile {ev.profile}, seed {ev.seed}"]
    for s in ev.details.get("subchecks", []):
        if negative or not s.get("passed", True):
            lines.append(f"  sub-check {s['name']}: error {s['error']!s} vs tolerance "
                         f"{s['tolerance']!s} -> {'pass' if s['passed'] else 'FAIL'} ({s['reason']})")
    if "counterexample" in ev.details:
        lines.append(f"  counterexample: {ev.details['counterexample']}")
    return "\n".join(lines)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    ids = getattr(config, "_meanfield_claims", [])
    if not ids:
        return
    profile = config.getoption("--claims-profile")
    seed = config.getoption("--claims-seed")
    for cid in ids:
        for negative in (False, True):
            items.append(ClaimItem.from_parent(
                session, name=f"{cid}::{'negative-control' if negative else 'check'}",
                claim_id=cid, negative=negative, profile=profile, seed=seed))
