"""What a derivation hands to the rest of the suite: the steps shown in the report and the
named closed forms (``results``) that the checks and ``verify.formulas`` evaluate.

Each derivations module that serves claims defines ``DERIVATIONS``, a dict mapping a claim
id to a zero-argument function returning a :class:`Derivation`; ``verify.derived`` finds
them by id.  SymPy only: no numpy, no randomness, no import of ``verify``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Derivation", "DerivationSelfTestError", "Step"]


class DerivationSelfTestError(AssertionError):
    """A derivation's own self-test failed (a closed form that does not match its
    definition at high precision, a symbolic value where a number was derived): the
    derivation is wrong, which is a catch, not a crash of the suite."""


@dataclass(frozen=True)
class Step:
    """One step of a derivation: prose, and optionally a SymPy object rendered as LaTeX
    in Markdown and as MathML in HTML.  ``lhs`` (LaTeX) is printed as ``lhs = expr``;
    use it for a readable left-hand side, or pass an ``Eq`` as ``expr``."""
    text: str
    expr: Any = None
    lhs: str | None = None


@dataclass
class Derivation:
    """The output of a claim's derivation: the steps shown in the report and the named
    closed forms (SymPy expressions, matrices, numbers; possibly nested in dicts, lists
    and tuples) that the check and ``verify.formulas`` consume.  Everything in
    ``results`` is perturbed by the mutation harness (``python -m verify mutate``), so
    it must hold only what the check actually evaluates."""
    steps: list[Step]
    results: dict[str, Any] = field(default_factory=dict)
