"""Plug-in discovery: the non-underscore modules of a package each contribute a list."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, Iterable


def discover(package: str, path: Iterable[str], attr: str,
             key: Callable[[Any], str]) -> dict[str, Any]:
    """``{key(item): item}`` over ``module.<attr>`` of every public module of ``package``;
    a key defined twice raises ``RuntimeError`` naming the module."""
    found: dict[str, Any] = {}
    for info in pkgutil.iter_modules(path):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{package}.{info.name}")
        for item in getattr(mod, attr, []):
            k = key(item)
            if k in found:
                raise RuntimeError(f"{k!r} from {package}.{info.name} is defined twice")
            found[k] = item
    return found
