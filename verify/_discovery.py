"""Plug-in discovery: the non-underscore modules of a package each contribute a list."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, Iterable, Iterator


def public_modules(package: str, path: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """``(name, module)`` for every non-underscore module of ``package``, imported."""
    for info in pkgutil.iter_modules(path):
        if not info.name.startswith("_"):
            yield info.name, importlib.import_module(f"{package}.{info.name}")


def discover(package: str, path: Iterable[str], attr: str,
             key: Callable[[Any], str]) -> dict[str, Any]:
    """``{key(item): item}`` over ``module.<attr>`` of every public module of ``package``;
    a key defined twice raises ``RuntimeError`` naming the module."""
    found: dict[str, Any] = {}
    for name, mod in public_modules(package, path):
        for item in getattr(mod, attr, []):
            k = key(item)
            if k in found:
                raise RuntimeError(f"{k!r} from {package}.{name} is defined twice")
            found[k] = item
    return found


#: The entry-point group through which installed packages contribute claims.
CLAIMS_GROUP = "meanfield_verify.claims"


class PluginError(RuntimeError):
    """An installed claims package that cannot be loaded or breaks the id namespace."""


def external_claim_modules(group: str = CLAIMS_GROUP) -> list[tuple[str, Any]]:
    """``[(namespace, module), ...]`` for the installed packages that declare an entry
    point in ``group``, sorted by namespace.  The entry point's *name* is the package's
    namespace: every claim id the module lists in ``CLAIMS`` must read ``<namespace>.<id>``,
    so an outside id can never collide with ours (ours contain no dot) or another
    package's.  A module that fails to import raises :class:`PluginError` naming it."""
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for ep in entry_points(group=group):
        if not ep.name.isidentifier() or not ep.name.islower():
            raise PluginError(f"claims entry point {ep.name!r} ({ep.value}): the name is the "
                              "claim-id namespace and must be a lowercase identifier")
        if ep.name in found:
            raise PluginError(f"two installed packages claim the namespace {ep.name!r} in "
                              f"entry-point group {group!r}; uninstall one")
        try:
            found[ep.name] = ep.load()
        except Exception as exc:  # a broken plug-in names itself instead of a traceback
            raise PluginError(f"claims entry point {ep.name!r} = {ep.value!r} failed to "
                              f"load: {type(exc).__name__}: {exc}") from exc
    return sorted(found.items())
