"""The one cache of derived results, shared by the claims (their checks) and the
verified formulas users import.

``derivation(claim_id)`` builds the claim's :class:`~derivations.base.Derivation` once per
process from ``derivations.<topic>.DERIVATIONS`` and hands every caller the same object.
The mutation harness (``python -m verify mutate``) swaps in a perturbed derivation with
:func:`overridden`; :func:`generation` changes whenever that happens, so anything that
caches an evaluator built from a derived expression must key it by the generation
(:func:`lambdified` and :func:`per_generation` do).

>>> from verify import derived
>>> "H1f" in derived.known_ids()
True
>>> derived.derivation("H1f") is derived.derivation("H1f")  # one object for every reader
True
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import pkgutil
import threading
from typing import Any, Callable, Iterator

import numpy as np

from derivations.base import Derivation

__all__ = ["derivation", "results", "generation", "overridden", "lambdified",
           "per_generation", "known_ids", "register"]

_LOCK = threading.RLock()
_BUILDERS: dict[str, Callable[[], Derivation]] | None = None
_EXTRA: dict[str, Callable[[], Derivation]] = {}
_CACHE: dict[str, Derivation] = {}
_OVERRIDES: dict[str, Derivation] = {}
_GENERATION = 0


def _builders() -> dict[str, Callable[[], Derivation]]:
    global _BUILDERS
    if _BUILDERS is None:
        import derivations
        found: dict[str, Callable[[], Derivation]] = {}
        for info in pkgutil.iter_modules(derivations.__path__):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"derivations.{info.name}")
            for cid, fn in getattr(mod, "DERIVATIONS", {}).items():
                if cid in found:
                    raise RuntimeError(f"derivation of {cid!r} defined twice "
                                       f"(again in derivations.{info.name})")
                found[cid] = fn
        _BUILDERS = found
    return _BUILDERS


def register(claim_id: str, build: Callable[[], Derivation]) -> None:
    """Register a builder for a claim whose derivation is not (yet) in
    ``derivations.*.DERIVATIONS`` (used by ``Claim(derive=...)``); the first one wins."""
    if claim_id not in _builders():
        _EXTRA.setdefault(claim_id, build)


def known_ids() -> list[str]:
    """Claim ids with a derivation."""
    return sorted(set(_builders()) | set(_EXTRA))


def derivation(claim_id: str) -> Derivation:
    """The claim's derivation (computed once per process; the mutation harness's
    override while one is active)."""
    with _LOCK:
        if claim_id in _OVERRIDES:
            return _OVERRIDES[claim_id]
        if claim_id not in _CACHE:
            build = _builders().get(claim_id) or _EXTRA.get(claim_id)
            if build is None:
                raise KeyError(f"no derivation registered for claim {claim_id!r}; define it "
                               "in derivations/<topic>.py under DERIVATIONS")
            d = build()
            if not isinstance(d, Derivation):
                raise TypeError(f"the derivation of {claim_id!r} returned "
                                f"{type(d).__name__}, expected derivations.base.Derivation")
            _CACHE[claim_id] = d
        return _CACHE[claim_id]


def results(claim_id: str) -> dict[str, Any]:
    """``derivation(claim_id).results``: the named closed forms."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a claim id string such as 'H1f'; got "
                        f"{type(claim_id).__name__}")
    if claim_id not in _OVERRIDES and claim_id not in known_ids():
        import difflib
        near = difflib.get_close_matches(claim_id, known_ids(), n=3, cutoff=0.3)
        raise ValueError(f"claim_id {claim_id!r} has no derivation"
                         + (f"; did you mean {', '.join(near)}?" if near else
                            f"; known: {', '.join(known_ids())}"))
    return derivation(claim_id).results


def generation() -> int:
    """A counter that changes whenever a derivation override starts or ends."""
    return _GENERATION


@contextlib.contextmanager
def overridden(claim_id: str, replacement: Derivation) -> Iterator[None]:
    """Within the block, ``derivation(claim_id)`` is ``replacement`` (mutation testing)."""
    global _GENERATION
    with _LOCK:
        previous = _OVERRIDES.get(claim_id)
        _OVERRIDES[claim_id] = replacement
        _GENERATION += 1
    try:
        yield
    finally:
        with _LOCK:
            if previous is None:
                _OVERRIDES.pop(claim_id, None)
            else:
                _OVERRIDES[claim_id] = previous
            _GENERATION += 1


def per_generation(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Memoize a zero-argument function (e.g. one that lambdifies derived results) until
    the next :func:`generation` change."""
    cache: dict[int, Any] = {}

    @functools.wraps(fn)
    def wrapper() -> Any:
        g = _GENERATION
        if g not in cache:
            cache.clear()
            cache[g] = fn()
        return cache[g]

    return wrapper


_LAMBDIFIED: dict[tuple, Callable] = {}


#: the most argument symbols a lambdified result takes (nested lists included)
MAX_ARG_SYMBOLS = 10_000


def _symbol_args(args: Any, budget: list | None = None) -> bool:
    """True iff ``args`` is a SymPy symbol or a (nested) list/tuple of them, with at most
    MAX_ARG_SYMBOLS symbols (checked without building anything)."""
    import sympy as sp
    budget = [MAX_ARG_SYMBOLS] if budget is None else budget
    if isinstance(args, sp.Symbol) or (isinstance(args, sp.MatrixBase) and all(
            isinstance(e, sp.Symbol) for e in args)):
        budget[0] -= 1 if isinstance(args, sp.Symbol) else len(args)
        return budget[0] >= 0
    if isinstance(args, (list, tuple)):
        if len(args) > budget[0]:
            return False
        return all(_symbol_args(a, budget) for a in args)
    return False


def lambdified(claim_id: str, key: str | tuple, args: Any,
               modules: Any = ("scipy", "numpy")) -> Callable:
    """``sympy.lambdify(args, results(claim_id)[key], modules)``, cached per generation.
    ``key`` may be a tuple to index into nested results (``("K", "uniform")``)."""
    import sympy as sp
    if not isinstance(claim_id, str):
        raise TypeError(f"lambdified: claim_id must be a claim id (text); got "
                        f"{type(claim_id).__name__}")
    keys = key if isinstance(key, tuple) else (key,)
    if not keys or not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in keys):
        raise TypeError(f"lambdified: key must be a result's name (text) or a tuple of names "
                        f"and indices; got {key!r}"[:200])
    if isinstance(args, np.ndarray) or not _symbol_args(args):
        raise TypeError("lambdified: args must be SymPy symbols (a symbol, or a list/tuple of "
                        f"symbols and lists of symbols); got {type(args).__name__} {args!r:.60}")
    mods = tuple(modules) if isinstance(modules, (list, tuple)) else (modules,)
    if not mods or not all(isinstance(m, (str, dict)) for m in mods):
        raise TypeError("lambdified: modules must be a module name ('numpy', 'mpmath', ...), "
                        "a dict of translations, or a list of them")
    from sympy.utilities.lambdify import MODULES
    unknown = [m for m in mods if isinstance(m, str) and m not in MODULES]
    if unknown:
        raise ValueError(f"lambdified: unknown module name {unknown[0]!r:.40}; use one of "
                         f"{sorted(MODULES)} or a dict of translations")
    ck = (claim_id, key, str(args), tuple(str(m) if not isinstance(m, dict) else id(m)
                                          for m in mods), _GENERATION)
    fn = _LAMBDIFIED.get(ck)
    if fn is None:
        expr: Any = results(claim_id)
        for k in keys:
            try:
                expr = expr[k]
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"lambdified: claim {claim_id} has no derived result key "
                                 f"{key!r}") from None
        fn = sp.lambdify(args, expr, modules=list(mods))
        if len(_LAMBDIFIED) > 4096:
            _LAMBDIFIED.clear()
        _LAMBDIFIED[ck] = fn
    return fn
