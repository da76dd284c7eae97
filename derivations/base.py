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

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise _refusal("Step", "text", self.text, "text (the step's prose)")
        if not self.text.strip() and self.expr is None:
            raise _refusal("Step", "text", self.text, "non-empty text (the step's prose) when "
                           "the step shows no expr", text=True)
        if self.lhs is not None and (not isinstance(self.lhs, str) or not self.lhs.strip()):
            raise _refusal("Step", "lhs", self.lhs, "non-empty LaTeX (the left-hand side) "
                           "or None", text=True)


@dataclass
class Derivation:
    """The output of a claim's derivation: the steps shown in the report and the named
    closed forms (SymPy expressions, matrices, numbers; possibly nested in dicts, lists
    and tuples) that the check and ``verify.formulas`` consume.  Everything in
    ``results`` is perturbed by the mutation harness (``python -m verify mutate``), so
    it must hold only what the check actually evaluates."""
    steps: list[Step]
    results: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.steps, list):
            raise _refusal("Derivation", "steps", self.steps, "a list of Step (possibly empty)")
        for i, step in enumerate(self.steps):
            if not isinstance(step, Step):
                raise _refusal("Derivation", f"steps[{i}]", step, "a Step")
        what = "a dict of closed forms keyed by non-empty names (text)"
        if not isinstance(self.results, dict):
            raise _refusal("Derivation", "results", self.results, what)
        for key in self.results:
            if not isinstance(key, str) or not key:
                raise _refusal("Derivation", "results", key, what, text=True)


def _refusal(owner: str, label: str, x: Any, what: str, *, text: bool = False) -> Exception:
    """The error refusing ``x`` as ``owner.label`` (``what`` says what to give): a
    ValueError for empty text where ``text`` is wanted, else a TypeError."""
    kind = ValueError if text and isinstance(x, str) else TypeError
    return kind(f"{owner}: {label} must be {what}; got {type(x).__name__} {x!r:.60}")
