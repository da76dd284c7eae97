"""Claims from installed packages: the entry-point group, the id namespace, clear errors."""
from __future__ import annotations

import types

import pytest

from verify import claims
from verify import _discovery
import sympy as sp

from verify.kit import Claim, Derivation, Step, combine, compare


def _claim(cid: str) -> Claim:
    def check(ctx):
        return combine("x", [compare("x", 1.0, 1.0, rtol=1e-15, reason="exact")])
    return Claim(id=cid, title="t", source="s", statement="$x$", check=check,
                 derive=lambda: Derivation([Step("one", sp.Integer(1))], results={"one": sp.Integer(1)}),
                 negative_control=check, negative_control_description="none")


@pytest.fixture
def plugins(monkeypatch):
    """Install fake entry points: a list of (namespace, module) pairs."""
    def install(pairs):
        monkeypatch.setattr(claims, "external_claim_modules", lambda: pairs)
        monkeypatch.setattr(claims, "_REGISTRY", None)
    yield install
    claims._REGISTRY = None
    from verify import derived
    for cid in [c for c in derived._EXTRA if c.startswith("demo.")]:
        derived._EXTRA.pop(cid)


def _module(*ids: str) -> types.ModuleType:
    mod = types.ModuleType("fake_claims")
    mod.CLAIMS = [_claim(i) for i in ids]
    return mod


def test_external_claims_join_the_registry_after_ours(plugins) -> None:
    plugins([("demo", _module("demo.X1", "demo.X2"))])
    ids = [c.id for c in claims.all_claims()]
    assert ids[-2:] == ["demo.X1", "demo.X2"] and "H1f" in ids
    assert claims.get("demo.X1").id == "demo.X1"
    assert claims.run("demo.X1").passed


@pytest.mark.parametrize("cid", ["X1", "other.X1", "demo.", "demo.X-1", "H1f"])
def test_ids_outside_the_namespace_are_refused(plugins, cid: str) -> None:
    plugins([("demo", _module(cid))])
    with pytest.raises(claims.PluginError, match="must read 'demo.<id>'"):
        claims.all_claims()


def test_duplicate_ids_and_empty_packages_are_refused(plugins) -> None:
    plugins([("demo", _module("demo.X1", "demo.X1"))])
    with pytest.raises(claims.PluginError, match="defined twice"):
        claims.all_claims()
    plugins([("demo", _module())])
    with pytest.raises(claims.PluginError, match="non-empty list CLAIMS"):
        claims.all_claims()


def test_entry_point_problems_name_the_package(monkeypatch) -> None:
    class EP:
        def __init__(self, name, value, load):
            self.name, self.value, self.load = name, value, load

    def broken():
        raise ImportError("no module named nowhere")

    import importlib.metadata as md
    monkeypatch.setattr(md, "entry_points", lambda group: [EP("demo", "nowhere", broken)])
    with pytest.raises(_discovery.PluginError, match="'demo' = 'nowhere' failed to load"):
        _discovery.external_claim_modules()
    monkeypatch.setattr(md, "entry_points", lambda group: [EP("Demo", "x", broken)])
    with pytest.raises(_discovery.PluginError, match="lowercase identifier"):
        _discovery.external_claim_modules()
    ok = lambda: types.ModuleType("m")  # noqa: E731
    monkeypatch.setattr(md, "entry_points", lambda group: [EP("a", "m", ok), EP("a", "n", ok)])
    with pytest.raises(_discovery.PluginError, match="two installed packages"):
        _discovery.external_claim_modules()


def test_no_plugin_installed_here() -> None:
    assert _discovery.external_claim_modules() == []
