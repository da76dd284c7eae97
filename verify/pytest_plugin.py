"""The suite's claims as pytest items in any project: ``pytest --claims H1f,W2e``.

Installed with ``meanfield-verify`` (entry point ``pytest11``).  Each selected claim
becomes two items, ``verify::<ID>::check`` (passes when the claim's check passes) and
``verify::<ID>::negative-control`` (passes when the deliberately wrong variant FAILS),
under one collector per claim (``verify::<ID>``).  These node ids select on the command
line like any other: ``pytest --claims H1f verify::H1f::check`` runs that item alone
(a claim node id alone, ``pytest verify::H1f``, selects its claim too).  The items carry
the markers ``claims`` and ``claim`` (``-m claim``, ``-m "not claims"``).  A failing
item's message is the evidence summary.  Without ``--claims`` or a ``verify::`` node id
the plugin adds nothing and imports nothing of the suite.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_collection_modifyitems",
           "pytest_ignore_collect", "pytest_load_initial_conftests"]

#: The root of the claim items' node ids.
ROOT = "verify"
_KINDS = ("check", "negative-control")
_NODE_ID = re.compile(rf"^{ROOT}::([^:\s]+)(?:::({'|'.join(_KINDS)}))?$")


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("meanfield-verify", "verified claims of the mean-field theory")
    g.addoption("--claims", metavar="IDS", default=None,
                help="run these claims as test items: a comma list of ids (e.g. H1f,W2e) or 'all'")
    g.addoption("--claims-profile", metavar="PROFILE", default="quick",
                choices=("quick", "full"), help="claim profile: quick (default) or full")
    g.addoption("--claims-seed", metavar="N", type=int, default=0,
                help="seed of the claim runs (default 0)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """Take the claim node ids (``verify::H1f``, ``verify::H1f::check``) out of the
    command line, where pytest would look for a file named ``verify``; remember them."""
    picked = [a for a in args if isinstance(a, str) and _NODE_ID.match(a)]
    if picked:
        args[:] = [a for a in args if not (isinstance(a, str) and _NODE_ID.match(a))]
    early_config._meanfield_node_args = picked  # type: ignore[attr-defined]


def _claim_id(raw: str, what: str) -> str:
    from verify import claims
    try:
        return claims.get(raw).id
    except claims.UnknownClaimError as exc:
        raise pytest.UsageError(f"{what}: {exc}") from None


def _selected(config: pytest.Config) -> list[str]:
    spec = config.getoption("--claims")
    if not spec:
        return []
    from verify import claims
    if spec.strip().lower() == "all":
        return [c.id for c in claims.all_claims()]
    ids = [_claim_id(raw.strip(), "--claims") for raw in spec.split(",") if raw.strip()]
    if not ids:
        raise pytest.UsageError("--claims needs claim ids (e.g. H1f,W2e) or 'all'")
    return list(dict.fromkeys(ids))


def _node_selection(config: pytest.Config) -> dict[str, set[str]] | None:
    """``{claim id: kinds}`` named by node-id arguments, or None when there are none."""
    picked = getattr(config, "_meanfield_node_args", [])
    if not picked:
        return None
    sel: dict[str, set[str]] = {}
    for arg in picked:
        m = _NODE_ID.match(arg)
        cid = _claim_id(m.group(1), arg)
        sel.setdefault(cid, set()).update([m.group(2)] if m.group(2) else _KINDS)
    return sel


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("--claims-seed", default=0)
    if seed is not None and seed < 0:
        raise pytest.UsageError(f"--claims-seed must be a non-negative integer; got {seed}")
    for name in ("claims", "claim"):
        config.addinivalue_line("markers", f"{name}: a verified claim of meanfield-verify "
                                "run as a test item")
    ids = _selected(config)
    nodes = _node_selection(config)
    if nodes is not None:  # node ids restrict (and may add) claims, as pytest's own do
        ids = list(dict.fromkeys([*[i for i in ids if i in nodes], *nodes]))
    config._meanfield_claims = ids  # type: ignore[attr-defined]
    config._meanfield_kinds = nodes  # type: ignore[attr-defined]
    # Only claim node ids on the command line: collect nothing else (pytest would
    # otherwise fall back to the current directory or ``testpaths``).
    config._meanfield_only_claims = (  # type: ignore[attr-defined]
        nodes is not None and config.args_source != pytest.Config.ArgsSource.ARGS)


def pytest_ignore_collect(collection_path: Any, config: pytest.Config) -> bool | None:
    return True if getattr(config, "_meanfield_only_claims", False) else None


class ClaimFailure(Exception):
    """A claim item that did not give the required verdict; the message is the evidence."""


class ClaimItem(pytest.Item):
    """One claim's check (``negative=False``) or negative control (``negative=True``)."""

    def __init__(self, *, claim_id: str, negative: bool, profile: str, seed: int,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.claim_id, self.negative, self.profile, self.seed = claim_id, negative, profile, seed
        self.add_marker(pytest.mark.claims)
        self.add_marker(pytest.mark.claim)

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
        return self.path, None, f"claim {self.claim_id}::{self.name}"


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


class ClaimGroup(pytest.Collector):
    """``verify::<ID>``: one claim's items (check, negative control)."""

    def __init__(self, *, claim_id: str, kinds: tuple[str, ...], profile: str, seed: int,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.claim_id, self.kinds, self.profile, self.seed = claim_id, kinds, profile, seed

    def collect(self) -> Iterator[ClaimItem]:
        for kind in self.kinds:
            yield ClaimItem.from_parent(self, name=kind, claim_id=self.claim_id,
                                        negative=kind == "negative-control",
                                        profile=self.profile, seed=self.seed)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Append the claim items, collected through ``session.genitems`` so that pytest
    counts and reports them like any other (runs before ``-m``/``-k`` deselection)."""
    ids = getattr(config, "_meanfield_claims", [])
    if not ids:
        return
    kinds_of = getattr(config, "_meanfield_kinds", None)
    profile = config.getoption("--claims-profile")
    seed = config.getoption("--claims-seed")
    for cid in ids:
        kinds = tuple(k for k in _KINDS if kinds_of is None or k in kinds_of[cid])
        group = ClaimGroup.from_parent(session, name=cid, nodeid=f"{ROOT}::{cid}",
                                       claim_id=cid, kinds=kinds, profile=profile, seed=seed)
        items.extend(session.genitems(group))
