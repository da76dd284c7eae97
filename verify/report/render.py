"""Markdown and HTML renderers for the report (pure functions of the collected data).

Rendering rules (checked by ``tests/test_report.py`` and the headless-browser test):

- every derived expression goes through SymPy's MathML printer, with ``Piecewise`` shown as
  cases (a brace and one row per piece) instead of SymPy's ``piecewise((...), True)`` text;
- an expression too wide for the page is shown in a readable form: sums are broken over
  several lines and wide sub-expressions are named (``Ξ_1, Ξ_2, ...``, defined below it);
  the full expression follows in a collapsible ``<details>`` element;
- hand-written LaTeX (statements, ``$...$`` in prose) is converted with latex2mathml; a
  conversion failure FAILS the build (:class:`ReportRenderError`) instead of leaking LaTeX
  source into the page;
- text outside math must contain no control characters and no LaTeX commands: both fail
  the build with a message naming the place.
"""
from __future__ import annotations

import base64
import html
import platform
import re
import unicodedata
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import sympy as sp
from sympy.printing.mathml import MathMLPresentationPrinter

import verify
from verify.kit import Margin, control_margin, fmt

if TYPE_CHECKING:
    from verify.report import ClaimSection

__all__ = ["ReportRenderError", "render_html", "render_markdown", "expression_mathml",
           "expression_latex", "raw_text_problems", "symbol_tex", "SYMBOL_TEX"]

_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+|\\[{}|,;!]")
MATHML_NS = "http://www.w3.org/1998/Math/MathML"

TITLE = "Derivation report: mean-field theory of wide two-layer ReLU networks"
INTRO = ("Every statement below is DERIVED with SymPy from the definitions in "
         "`docs/conventions.md` and CHECKED against an independent high-precision "
         "computation (mpmath quadrature, particle simulations). Each claim also carries a "
         "negative control: the same check run on a deliberately wrong variant, which must "
         "fail. The catalogue of claims is `docs/claims.md`; what the verification found "
         "wrong or weaker in the sources is `docs/errata.md`.")
PAPERS = {"W": "Williams et al. (2019), Gradient dynamics of shallow univariate ReLU networks",
          "H": "Hajjar & Chizat (2023), On the symmetries in the dynamics of wide two-layer networks",
          "M": "Maass Martinez & Fontbona (2024), Symmetries in overparametrized neural networks"}

# Width budget for one displayed line, in the estimate of :func:`_width` (about one unit per
# glyph): the page is 62rem wide, i.e. ~110 glyphs of math; keep a margin for the lhs.
LINE_BUDGET = 72.0


class ReportRenderError(ValueError):
    """The report cannot be rendered cleanly (a LaTeX-to-MathML conversion failed, or text
    outside math holds a control character or a raw LaTeX command)."""


# ---------------------------------------------------------------------------- checks
def raw_text_problems(text: str) -> list[str]:
    r"""What is wrong with ``text`` as prose outside math: control characters (other than
    newline) and LaTeX commands.  Used by the renderer and by the report tests.

    >>> raw_text_problems("the angle theta")
    []
    >>> raw_text_problems(r"the angle \theta")
    ['LaTeX command \\theta outside math']
    >>> raw_text_problems("a\abell")
    ['control character U+0007']
    """
    out = [f"control character U+{ord(ch):04X}" for ch in sorted(set(text))
           if ch != "\n" and unicodedata.category(ch) == "Cc"]
    out += [f"LaTeX command {m.group(0)} outside math" for m in _LATEX_COMMAND.finditer(text)]
    return out


def _check_prose(text: str, where: str) -> None:
    problems = raw_text_problems(text)
    if problems:
        raise ReportRenderError(f"{where}: {'; '.join(dict.fromkeys(problems))} in {text[:160]!r} "
                                "(put mathematics inside $...$ and escape backslashes in "
                                "Python strings: use r-strings)")


def _check_control(text: str, where: str) -> None:
    bad = [ch for ch in text if ch != "\n" and unicodedata.category(ch) == "Cc"]
    if bad:
        raise ReportRenderError(f"{where}: control character U+{ord(bad[0]):04X} in {text[:160]!r} "
                                "(an unescaped backslash in a Python string? use an r-string)")


# ---------------------------------------------------------------------------- symbol names
#: Symbol names of the derivations that SymPy would print as text ("W2sq"), with the
#: mathematics they stand for (the derivations' docstrings say which).
SYMBOL_TEX = {"W2sq": r"W_2^2", "m2mu": r"m_2(\mu)", "m2nu": r"m_2(\nu)", "mc": r"m_c",
              "RMD": r"\mathrm{RMD}", "RMD^2": r"\mathrm{RMD}^2",
              "dG_theta": r"\partial_\theta G"}


def symbol_tex(name: str) -> str | None:
    r"""LaTeX for a symbol name SymPy would print as text, else None: the names of
    :data:`SYMBOL_TEX`, names that are LaTeX already (``n_{x'}``), indexed one-sided
    values (``fL0`` -> ``f_{L,0}``), perturbations (``dk``), primes (``nu'`` ->
    ``\nu'``) and ``_perp`` (``k_perp`` -> ``k_{\perp}``).

    >>> symbol_tex("nu'"), symbol_tex("W2sq"), symbol_tex("theta")
    ("\\nu'", 'W_2^2', None)
    """
    if name in SYMBOL_TEX:
        return SYMBOL_TEX[name]
    if "{" in name and "\\" not in name:  # already LaTeX: n_{x'}
        return name
    m = re.fullmatch(r"([A-Za-z])([A-Z])(\d+)", name)  # fL0 -> f_{L,0}
    if m:
        return f"{m.group(1)}_{{{m.group(2)},{m.group(3)}}}"
    m = re.fullmatch(r"d([A-Za-z])", name)  # dk, dK: a perturbation, d times k
    if m:
        return f"d{m.group(1)}"
    m = re.fullmatch(r"(.+?)('+)", name)
    if m:
        return sp.latex(sp.Symbol(m.group(1))) + m.group(2)
    m = re.fullmatch(r"(.+?)_perp", name)
    if m:
        return sp.latex(sp.Symbol(m.group(1))) + r"_{\perp}"
    return None


def _tex(expr: Any) -> str:
    """``sp.latex`` with the names of :func:`symbol_tex` as mathematics."""
    names = {s: t for s in getattr(expr, "free_symbols", ()) if isinstance(s, sp.Symbol)
             for t in [symbol_tex(s.name)] if t is not None}
    return sp.latex(expr, symbol_names=names) if names else sp.latex(expr)


# ---------------------------------------------------------------------------- SymPy -> MathML
class _Printer(MathMLPresentationPrinter):
    """SymPy's presentation printer with ``Piecewise`` as cases and the symbol names of
    :func:`symbol_tex` as mathematics."""

    def _print_Symbol(self, sym: sp.Symbol, style: str = "plain") -> Any:
        tex = symbol_tex(sym.name)
        if tex is None:
            return super()._print_Symbol(sym, style)
        from xml.dom import minidom
        body = _strip_math(_mathml_from_latex(tex, False, where=f"symbol {sym.name!r}"))
        return minidom.parseString(body).documentElement

    def _print_Piecewise(self, expr: sp.Piecewise) -> Any:
        dom = self.dom
        mrow = dom.createElement("mrow")
        brace = dom.createElement("mo")
        brace.setAttribute("stretchy", "true")
        brace.appendChild(dom.createTextNode("{"))
        mrow.appendChild(brace)
        table = dom.createElement("mtable")
        table.setAttribute("columnalign", "left left")
        table.setAttribute("displaystyle", "true")
        table.setAttribute("class", "cases")
        for value, cond in expr.args:
            tr = dom.createElement("mtr")
            td = dom.createElement("mtd")
            td.appendChild(self._print(value))
            tr.appendChild(td)
            td = dom.createElement("mtd")
            text = dom.createElement("mtext")
            if cond == sp.true:
                text.appendChild(dom.createTextNode("\u2003otherwise"))
                td.appendChild(text)
            else:
                text.appendChild(dom.createTextNode("\u2003if\u2002"))
                row = dom.createElement("mrow")
                row.appendChild(text)
                row.appendChild(self._print(cond))
                td.appendChild(row)
            tr.appendChild(td)
            table.appendChild(tr)
        mrow.appendChild(table)
        return mrow


_TOKEN = re.compile(r"<(mi|mn|mo|mtext|ms)((?:\s[^>]*)?)>(.*?)</\1>", re.S)


def _escape_tokens(mathml: str) -> str:
    """SymPy's printer writes token text unescaped (``<mo><</mo>`` for x < 0): escape it.
    Also: a true minus sign for ``-``, and a plain upright d for the differential."""
    def fix(m: re.Match) -> str:
        body = re.sub(r"&(?!#?\w+;)", "&amp;", m.group(3)).replace("<", "&lt;").replace(">", "&gt;")
        if m.group(1) == "mo" and body == "-":
            body = "&#x2212;"
        return f"<{m.group(1)}{m.group(2)}>{body}</{m.group(1)}>"
    mathml = mathml.replace("<mo>&dd;</mo>", '<mi mathvariant="normal">d</mi>')
    return _TOKEN.sub(fix, mathml)


@lru_cache(maxsize=4096)
def _mathml_cached(expr: Any) -> str:
    return _escape_tokens(_Printer().doprint(expr))


def expression_mathml(expr: Any) -> str:
    """Presentation MathML (no ``<math>`` wrapper) of a SymPy object.

    >>> import sympy as sp
    >>> x = sp.Symbol("x")
    >>> "piecewise" in expression_mathml(sp.Piecewise((x, x < 0), (0, True)))
    False
    >>> "&lt;" in expression_mathml(sp.Piecewise((x, x < 0), (0, True)))
    True
    """
    try:
        return _mathml_cached(expr)
    except TypeError:  # unhashable (e.g. a mutable Matrix)
        return _escape_tokens(_Printer().doprint(expr))


def expression_latex(expr: Any) -> str:
    """LaTeX of a SymPy object (Piecewise as ``cases``); strings are passed through."""
    return expr if isinstance(expr, str) else _tex(expr)


# ---------------------------------------------------------------------------- widths
_SCRIPT = 0.7


def _node_width(node: ET.Element) -> float:
    tag = node.tag.split("}")[-1]
    kids = list(node)
    if tag in ("mi", "mn", "mtext", "ms"):
        return float(len((node.text or "").strip()) or 1)
    if tag == "mo":
        t = (node.text or "").strip()
        return len(t) + (0.6 if t in "+-=<>\u2212\u2264\u2265\u2260\u00b7\u00d7" else 0.1)
    w = [_node_width(k) for k in kids]
    if tag == "mfrac":
        return max(w, default=0) + 0.4
    if tag in ("msup", "msub"):
        return w[0] + _SCRIPT * w[1] if len(w) == 2 else sum(w)
    if tag == "msubsup":
        return w[0] + _SCRIPT * max(w[1], w[2]) if len(w) == 3 else sum(w)
    if tag in ("munder", "mover", "munderover"):
        return max([w[0]] + [_SCRIPT * v for v in w[1:]]) if w else 0
    if tag == "msqrt":
        return sum(w) + 1.2
    if tag == "mroot":
        return w[0] + 0.5 * w[1] + 1.2 if len(w) == 2 else sum(w)
    if tag == "mtable":
        return max((_node_width(r) for r in kids), default=0)
    if tag == "mtr":
        return sum(w) + 1.0 * max(len(w) - 1, 0)
    return sum(w)


def _mathml_width(mathml: str) -> float:
    """Estimated rendered width (about one unit per glyph) of a MathML fragment."""
    try:
        root = ET.fromstring(re.sub(r"&\w+;", "x", mathml))
    except ET.ParseError:
        return float(len(re.sub(r"<[^>]+>", "", mathml)))
    return _node_width(root)


def _width(expr: Any) -> float:
    return _mathml_width(expression_mathml(expr))


# ---------------------------------------------------------------------------- layout
class _Layout:
    """A display of ``lhs = expr`` that fits the page: ``rows`` are the lines of the main
    formula (each a list of summands; the first row carries ``lhs =``), ``where`` the
    named sub-expressions ``(symbol, layout)`` shown under it."""

    def __init__(self, rows: list[list[Any]], where: list[tuple[sp.Symbol, "_Layout"]],
                 approx: bool = False):
        self.rows, self.where, self.approx = rows, where, approx


def _summands(expr: Any) -> list[Any]:
    return list(expr.as_ordered_terms()) if isinstance(expr, sp.Add) else [expr]


def _pack(terms: list[Any], budget: float) -> list[list[Any]]:
    rows: list[list[Any]] = [[]]
    used = 0.0
    for t in terms:
        w = _width(t) + 2.0
        if rows[-1] and used + w > budget:
            rows.append([])
            used = 0.0
        rows[-1].append(t)
        used += w
    return rows


def _proper_subexpressions(expr: Any) -> Iterable[Any]:
    seen = set()
    for sub in sp.preorder_traversal(expr):
        if sub is expr or not isinstance(sub, sp.Basic) or sub.is_Atom or sub in seen:
            continue
        if isinstance(sub, (sp.logic.boolalg.Boolean, sp.Tuple)) and not isinstance(sub, sp.Expr):
            continue
        seen.add(sub)
        yield sub


def _fresh_symbols(expr: Any) -> Iterable[sp.Symbol]:
    taken = {s.name for s in getattr(expr, "free_symbols", ())}
    for base in ("Xi", "Psi", "Omega", "Upsilon"):
        if not any(n.startswith(base) for n in taken):
            k = 1
            while True:
                yield sp.Symbol(f"{base}_{k}")
                k += 1
    raise ReportRenderError("no free placeholder names for a long expression")


def _layout(expr: Any, budget: float = LINE_BUDGET, names: Iterable[sp.Symbol] | None = None,
            depth: int = 0) -> _Layout:
    """Break a wide expression: sums over several lines, wide sub-expressions named."""
    names = iter(names) if names is not None else _fresh_symbols(expr)
    where: list[tuple[sp.Symbol, _Layout]] = []
    e = expr
    for _ in range(12):
        rows = _pack(_summands(e), budget)
        widest = max(rows, key=lambda r: sum(_width(t) + 2.0 for t in r))
        if sum(_width(t) + 2.0 for t in widest) <= budget or depth > 3:
            break
        term = max(widest, key=_width)
        cands = [s for s in _proper_subexpressions(term) if _width(s) >= 6.0]
        if term is not e and _width(term) >= 6.0 and not isinstance(e, sp.Add):
            cands.append(term)
        if not cands:
            break
        # name the widest part that fits on a line, or a sum (its definition is broken
        # over lines in turn): few, large names read better than many small ones
        fitting = [s for s in cands if _width(s) <= budget or isinstance(s, sp.Add)]
        sub = max(fitting or cands, key=_width)
        sym = next(names)
        where.append((sym, _layout(sub, budget, names, depth + 1)))
        e = e.xreplace({sub: sym})
    return _Layout(_pack(_summands(e), budget), where)


def _rows_mathml(lhs_mathml: str | None, rows: list[list[Any]], rel: str = "=") -> str:
    def terms(row: list[Any], first: bool) -> str:
        out = []
        for i, t in enumerate(row):
            neg = t.could_extract_minus_sign() if isinstance(t, sp.Expr) else False
            if neg:
                out.append("<mo>&#x2212;</mo>" + expression_mathml(-t))
            else:
                out.append(("" if (first and i == 0) else "<mo>+</mo>") + expression_mathml(t))
        return "<mrow>" + "".join(out) + "</mrow>"
    left = f"<mrow>{lhs_mathml}</mrow><mo>{rel}</mo>" if lhs_mathml else ""
    if len(rows) == 1:
        return f"<mrow>{left}{terms(rows[0], True)}</mrow>"
    trs = []
    for k, row in enumerate(rows):
        head = f"<mtd>{left}</mtd>" if k == 0 else "<mtd></mtd>"
        trs.append(f"<mtr>{head}<mtd>{terms(row, k == 0)}</mtd></mtr>")
    return (f'<mtable columnalign="right left" displaystyle="true" class="lines">'
            f'{"".join(trs)}</mtable>')


def _rows_latex(lhs_latex: str | None, rows: list[list[Any]], rel: str = "=") -> str:
    def terms(row: list[Any], first: bool) -> str:
        out = []
        for i, t in enumerate(row):
            if isinstance(t, sp.Expr) and t.could_extract_minus_sign():
                out.append("- " + _tex(-t))
            else:
                out.append(("" if (first and i == 0) else "+ ") + _tex(t))
        return " ".join(out)
    left = f"{lhs_latex} {rel} " if lhs_latex else ""
    if len(rows) == 1:
        return left + terms(rows[0], True)
    lines = [(f"{lhs_latex} &{rel} " if lhs_latex else "&") + terms(rows[0], True)]
    lines += [("&\\quad " if lhs_latex else "&\\quad ") + terms(r, False) for r in rows[1:]]
    return "\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}"


def _split_eq(expr: Any, lhs: str | None) -> tuple[str | None, Any, Any]:
    """(lhs LaTeX, lhs SymPy or None, rhs) of a step (mutable matrices made immutable)."""
    if isinstance(expr, sp.MatrixBase) and not isinstance(expr, sp.ImmutableMatrix):
        expr = sp.ImmutableMatrix(expr)
    if isinstance(expr, sp.Equality) and lhs is None:
        return None, expr.lhs, expr.rhs
    return lhs, None, expr


def _flatten_where(layout: _Layout) -> list[tuple[sp.Symbol, _Layout]]:
    out = []
    for sym, sub in layout.where:
        out.append((sym, sub))
        out += _flatten_where(sub)
    return out


def _readable_layout(rhs: Any) -> _Layout:
    """The layout of a wide right-hand side; a numeric one still too wide (long exact
    rationals) is shown to 6 significant digits (the exact value is in the full form)."""
    lay = _layout(rhs)
    widest = max(sum(_width(t) + 2.0 for t in row) for row in lay.rows)
    if widest > LINE_BUDGET + 20 and not getattr(rhs, "free_symbols", True):
        approx = rhs.evalf(6)
        if _width(approx) < widest:
            lay = _layout(approx)
            lay.approx = True
    return lay


def _is_long(lhs_tex: str | None, lhs_expr: Any, rhs: Any) -> bool:
    extra = _width(lhs_expr) + 2 if lhs_expr is not None else (len(lhs_tex) / 2 + 2 if lhs_tex else 0)
    return _width(rhs) + extra > LINE_BUDGET + 20


def display_mathml(expr: Any, lhs: str | None = None) -> str:
    """The HTML for one derived step: one ``<math display="block">``, or, when too wide
    for the page, a readable layout followed by the full expression in ``<details>``."""
    if isinstance(expr, str):
        return _mathml_from_latex((f"{lhs} = " if lhs else "") + expr, True)
    lhs_tex, lhs_expr, rhs = _split_eq(expr, lhs)
    lhs_mml = (expression_mathml(lhs_expr) if lhs_expr is not None
               else _strip_math(_mathml_from_latex(lhs_tex, False)) if lhs_tex else None)
    full = _math_block(f"<mrow>{lhs_mml}</mrow><mo>=</mo>{expression_mathml(rhs)}"
                       if lhs_mml else expression_mathml(rhs))
    if not isinstance(rhs, sp.Basic) or not _is_long(lhs_tex, lhs_expr, rhs):
        return full
    lay = _readable_layout(rhs)
    parts = [_math_block(_rows_mathml(lhs_mml, lay.rows, "&#x2248;" if lay.approx else "="))]
    defs = _flatten_where(lay)
    if defs:
        items = "".join(f"<li>{_math_block(_rows_mathml(expression_mathml(sym), sub.rows), inline=True)}</li>"
                        for sym, sub in defs)
        parts.append(f'<div class="where">where<ul>{items}</ul></div>')
    return (f'<div class="longexpr">{"".join(parts)}<details><summary>full expression</summary>'
            f'<div class="full">{full}</div></details></div>')


def display_latex(expr: Any, lhs: str | None = None) -> list[str]:
    """Markdown lines for one derived step (same layout as :func:`display_mathml`)."""
    if isinstance(expr, str):
        return [f"   $$ {(lhs + ' = ') if lhs else ''}{expr} $$"]
    lhs_tex, lhs_expr, rhs = _split_eq(expr, lhs)
    left = _tex(lhs_expr) if lhs_expr is not None else lhs_tex
    full = f"   $$ {(left + ' = ') if left else ''}{expression_latex(rhs)} $$"
    if not isinstance(rhs, sp.Basic) or not _is_long(lhs_tex, lhs_expr, rhs):
        return [full]
    lay = _readable_layout(rhs)
    rel = "\\approx" if lay.approx else "="
    out = [f"   $$ {_rows_latex(left, lay.rows, rel)} $$"]
    defs = _flatten_where(lay)
    if defs:
        out += ["", "   where"] + [f"   - $$ {_rows_latex(_tex(sym), sub.rows)} $$" for sym, sub in defs]
    return out + ["", "   <details><summary>full expression</summary>", "", full, "", "   </details>"]


def _strip_math(mathml: str) -> str:
    return re.sub(r"^<math[^>]*>|</math>$", "", mathml.strip())


def _math_block(body: str, inline: bool = False) -> str:
    """A ``<math>`` element; ``inline=True`` gives a left-aligned one in display style."""
    if inline:
        return f'<math xmlns="{MATHML_NS}" display="inline" displaystyle="true">{body}</math>'
    return f'<math xmlns="{MATHML_NS}" display="block">{body}</math>'


def _mathml_from_latex(tex: str, display: bool, where: str = "text") -> str:
    """latex2mathml conversion; a failure (unsupported macro, unbalanced braces) or a
    result holding an ``merror`` element fails the build."""
    from latex2mathml.converter import convert
    # TeX reads f''^2 as f^{\prime\prime 2}; latex2mathml rejects it as a double
    # superscript: group the primes with their base first ({f''}^2 renders the same)
    tex = re.sub(r"([A-Za-z])('+)\^", r"{\1\2}^", tex)
    try:
        out = convert(tex, display="block" if display else "inline")
    except Exception as exc:
        raise ReportRenderError(f"{where}: cannot convert LaTeX to MathML: {tex!r} ({type(exc).__name__}: "
                                f"{exc}); use macros latex2mathml supports") from exc
    if "<merror" in out:
        raise ReportRenderError(f"{where}: LaTeX to MathML gave an error element for {tex!r}")
    leftover = _LATEX_COMMAND.findall(re.sub(r"<[^>]+>", " ", out).replace("&#x", ""))
    if leftover:
        raise ReportRenderError(f"{where}: LaTeX to MathML left commands {sorted(set(leftover))} as text "
                                f"in {tex!r}; use macros latex2mathml supports")
    return out


# ---------------------------------------------------------------------------- summary
def _versions() -> str:
    import matplotlib
    import mpmath
    import numpy
    import scipy
    return (f"meanfield-verify {verify.__version__}; Python {platform.python_version()}, "
            f"SymPy {sp.__version__}, mpmath {mpmath.__version__}, NumPy {numpy.__version__}, "
            f"SciPy {scipy.__version__}, Matplotlib {matplotlib.__version__}")


def _verdict(sec: "ClaimSection") -> str:
    if sec.error:
        return "ERROR"
    if sec.claim.kind == "numerical-evidence":
        return "observed" if sec.evidence.passed else "FAILED"
    return "verified" if sec.evidence.passed else "FAILED"


def _margin(ev: Any) -> str:
    """error / tolerance of an evidence, e.g. ``x3.2``."""
    try:
        r = float(ev.error) / float(ev.tolerance)
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"
    return f"x{fmt(r, 2)}" if r == r else "-"


def _neg_target(sec: "ClaimSection") -> Margin:
    """The sub-check the negative control targets (the claim's ``negative_target``), with
    its own numbers (:func:`verify.kit.control_margin`)."""
    return control_margin(sec.negative, getattr(sec.claim, "negative_target", "") or "")


def _neg_margin(sec: "ClaimSection") -> str:
    """``x7.98``: how far the targeted sub-check lies beyond its bound (above 1 fails)."""
    return _neg_target(sec).factor_text()


def _neg_verdict(sec: "ClaimSection") -> str:
    if sec.negative is None:
        return "-"
    verdict = "fails" if not sec.negative.passed else "DID NOT FAIL"
    return f"{verdict} ({_neg_margin(sec)})"


def _sensitivity(sec: "ClaimSection") -> str:
    """Smallest relative perturbation of the derived results the check detects, from the
    mutation harness's committed numbers (``verify.sensitivity.describe``); ``-`` when
    that module is absent."""
    try:
        from verify import sensitivity
    except ImportError:
        return "-"
    return str(sensitivity.describe(sec.claim.id))


def _seed_rate(sec: "ClaimSection") -> str:
    """``passed/run`` over seeds when several seeds were run (``section.seed_evidence``)."""
    evs = getattr(sec, "seed_evidence", None)
    if not evs:
        return "-"
    evs = list(evs)
    ok = sum(1 for e in evs if getattr(e, "passed", False))
    return f"{ok}/{len(evs)}"


def _md_cell(x: Any) -> str:
    s = x if isinstance(x, str) else fmt(x)
    return s.replace("|", "\\|").replace("\n", " ")


def _md_table(headers: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(_md_cell(h) for h in headers) + " |",
           "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _summary_columns(sections: list["ClaimSection"]) -> tuple[list[str], list[list[str]]]:
    seeds = any(getattr(s, "seed_evidence", None) for s in sections)
    headers = ["id", "claim", "kind", "verdict", "measured error", "tolerance",
               "negative control (margin)", "sensitivity"] + (["seeds passed"] if seeds else [])
    rows = []
    for s in sections:
        ev = s.evidence
        row = [f"[{s.claim.id}](#{s.claim.id.lower()})", s.claim.title, s.claim.kind,
               _verdict(s), fmt(ev.error) if ev else "-", fmt(ev.tolerance) if ev else "-",
               _neg_verdict(s), _sensitivity(s)]
        rows.append(row + ([_seed_rate(s)] if seeds else []))
    return headers, rows


SUMMARY_NOTE = ("*negative control*: the same check on a deliberately wrong variant must fail; "
                "the margin is how far the sub-check it targets lies beyond its bound: "
                "error/tolerance (tolerance/error for an \"at least\" bound), above 1 fails; "
                "for a bound on a signed quantity (a fitted rate) the excess over the bound, "
                "above 0 fails. *sensitivity*: "
                "the smallest relative perturbation e -> e(1+eps)+eps of a derived result that the check detects "
                "(`python -m verify mutate`).")


# ---------------------------------------------------------------------------- Markdown
def render_markdown(sections: list["ClaimSection"], meta: dict[str, Any],
                    perf: tuple[str, list[tuple[str, str]]] | None) -> str:
    headers, rows = _summary_columns(sections)
    L = [f"# {TITLE}", "", INTRO, "",
         f"Generated by `python -m verify report --profile {meta['profile']} --seed {meta['seed']}` "
         f"({_versions()}). Run times are in `evidence.json`.", "",
         "## Summary", "", _md_table(headers, rows), "", SUMMARY_NOTE, ""]
    paper = None
    for s in sections:
        if s.claim.id[0] != paper:
            paper = s.claim.id[0]
            L += [f"## {PAPERS.get(paper, paper)}", ""]
        L += _md_claim(s)
    if perf is not None:
        text, figs = perf
        L += [text.rstrip(), ""]
        L += [f"![{cap}](figures/{name})\n\n*{cap}*\n" for name, cap in figs]
    md = "\n".join(L).rstrip() + "\n"
    _check_control(md, "report.md")
    return md


def _md_claim(s: "ClaimSection") -> list[str]:
    c = s.claim
    L = [f'<a id="{c.id.lower()}"></a>', f"### {c.id}: {c.title}", "",
         f"**Source:** {c.source}  ", f"**Kind:** {c.kind}  ", f"**Verdict:** {_verdict(s)}  ",
         f"**Catalogue:** `docs/claims.md`, section {c.id}", "",
         f"**Statement.** {c.statement}", ""]
    for note in c.notes:
        L += [f"> **Note.** {note}", ""]
    if s.error:
        return L + ["**Error while running this claim:**", "", "```", s.error, "```", ""]
    L += ["#### Derivation (SymPy)", ""]
    for i, step in enumerate(c.derivation().steps, 1):
        L.append(f"{i}. {step.text}")
        if step.expr is not None:
            L += [""] + display_latex(step.expr, step.lhs) + [""]
    ev = s.evidence
    L += ["", "#### Evidence", "", f"**Compared:** {ev.compared}", "",
          _md_table(["measured error", "tolerance", "why this tolerance", "verdict"],
                    [[fmt(ev.error), fmt(ev.tolerance), ev.tolerance_reason,
                      "pass" if ev.passed else "FAIL"]]), ""]
    for t in ev.tables:
        L += [f"*{t.title}*", "", _md_table(t.headers, t.rows), ""]
    notes = _evidence_notes(s)
    L += [f"- {n}" for n in notes]
    if notes:
        L.append("")
    L += _md_seeds(s)
    L += _md_claim_negative(s)
    if s.figures:
        L += ["#### Figures", ""]
        reach = _profile_reach(s)
        if reach:
            L += [reach, ""]
        L += [f"![{cap}](figures/{name})\n\n*{cap}*\n" for name, cap in s.figures]
    return L


def _md_claim_negative(s: "ClaimSection") -> list[str]:
    """The negative control: the sub-check it targets, with that sub-check's numbers."""
    m = _neg_target(s)
    target = f"sub-check `{_code_text(m.name)}`: " if m.name else ""
    return ["#### Negative control", "", f"{s.claim.negative_control_description}: {target}"
            f"{m.comparison()}: **{_neg_verdict(s)}**.", ""]


def _evidence_notes(s: "ClaimSection") -> list[str]:
    """The evidence's notes without repeats and without those the claim already shows."""
    shown = set(s.claim.notes)
    return [n for n in dict.fromkeys(s.evidence.notes) if n not in shown]


def _code_text(name: str) -> str:
    """A sub-check name as a one-line code span (no backticks, no line breaks)."""
    return " ".join(str(name).replace("`", "'").split())


#: What the quick profile's figures reach, said beside them.
QUICK_REACH = ("*Quick profile:* these figures use reduced sizes and time horizons; "
               "`python -m verify report --profile full` runs the settings of the papers.")


def _profile_reach(s: "ClaimSection") -> str:
    return QUICK_REACH if getattr(s.evidence, "profile", "quick") == "quick" else ""


def _seed_rows(s: "ClaimSection") -> list[list[Any]]:
    evs = getattr(s, "seed_evidence", None) or []
    return [[getattr(e, "seed", "-"), fmt(e.error), fmt(e.tolerance), _margin(e),
             "pass" if e.passed else "FAIL"] for e in evs]


SEED_HEADERS = ["seed", "measured error", "tolerance", "error/tolerance", "verdict"]


def _md_seeds(s: "ClaimSection") -> list[str]:
    rows = _seed_rows(s)
    if not rows:
        return []
    return [f"*Seeds: {_seed_rate(s)} passed*", "", _md_table(SEED_HEADERS, rows), ""]


def _latex(expr: Any) -> str:
    return expression_latex(expr)


# ---------------------------------------------------------------------------- HTML
def _mathml_from_sympy(expr: Any, lhs: str | None = None) -> str:
    return display_mathml(expr, lhs)


def _text_html(text: str, where: str = "text") -> str:
    """Escape prose and turn $...$ / $$...$$ into MathML; **bold** and `code` kept."""
    _check_control(text, where)
    out, pos = [], 0
    for m in _MATH.finditer(text):
        out.append(_prose(text[pos:m.start()], where))
        out.append(_mathml_from_latex(m.group(1) or m.group(2), display=m.group(1) is not None,
                                      where=where))
        pos = m.end()
    out.append(_prose(text[pos:], where))
    return "".join(out)


def _prose(s: str, where: str = "text") -> str:
    _check_prose(re.sub(r"`[^`]*`", "", s), where)
    s = html.escape(s)
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<em>\1</em>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


def _html_table(headers: list[str], rows: list[list[Any]], caption: str | None = None,
                where: str = "table") -> str:
    cap = f"<caption>{_text_html(caption, where)}</caption>" if caption else ""
    head = "".join(f"<th>{_text_html(str(h), where)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell_html(c, where)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return (f'<div class="tablewrap"><table>{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _cell_html(c: Any, where: str = "table") -> str:
    s = c if isinstance(c, str) else fmt(c)
    m = re.fullmatch(r"\[(.+?)\]\(#(.+?)\)", s)
    if m:
        return f'<a href="#{html.escape(m.group(2))}">{html.escape(m.group(1))}</a>'
    return _text_html(s, where)


def _img(figdir: Path, name: str, cap: str) -> str:
    data = base64.b64encode((figdir / name).read_bytes()).decode()
    return (f'<figure><img alt="{html.escape(cap)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_text_html(cap, f'figure {name}')}</figcaption></figure>")


CSS = """body{font-family:system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#222}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}th,td{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}
.tablewrap{max-width:100%;overflow-x:auto}
th{background:#f3f3f3}caption{text-align:left;font-style:italic;padding:.2rem 0}
.pass{color:#116611;font-weight:bold}.fail{color:#b00;font-weight:bold}
figure{margin:1rem 0}figure img{max-width:100%}figcaption{font-style:italic;font-size:.9rem}
.note{border-left:4px solid #e0a000;padding:.3rem .8rem;background:#fff8e6}
section.claim{border-top:2px solid #ddd;margin-top:2rem}
math[display=block]{margin:.4rem 0;overflow-x:auto;overflow-y:hidden;padding:.2rem 0;max-width:100%}
mtable.cases>mtr>mtd,mtable.lines>mtr>mtd{text-align:left}mtable.lines>mtr>mtd:first-child{text-align:right}
math{font-family:"STIX Two Math","Latin Modern Math","Cambria Math","DejaVu Math TeX Gyre",math}
.longexpr{margin:.3rem 0}.where ul{margin:.2rem 0;list-style:none;padding-left:1.5rem}
.where li{margin:.3rem 0}
details{margin:.3rem 0}details summary{cursor:pointer;color:#555;font-size:.9rem}
details .full{overflow-x:auto;max-width:100%}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap}"""


def render_html(sections: list["ClaimSection"], meta: dict[str, Any],
                perf: tuple[str, list[tuple[str, str]]] | None, figdir: Path) -> str:
    headers, rows = _summary_columns(sections)
    H = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         f"<title>{html.escape(TITLE)}</title><style>{CSS}</style></head><body>",
         f"<h1>{html.escape(TITLE)}</h1>", f"<p>{_text_html(INTRO)}</p>",
         f"<p>Generated by <code>python -m verify report --profile {meta['profile']} "
         f"--seed {meta['seed']}</code> ({html.escape(_versions())}). Run times are in "
         "<code>evidence.json</code>.</p>", "<h2>Summary</h2>",
         _html_table(headers, rows, where="summary"), f"<p>{_text_html(SUMMARY_NOTE)}</p>"]
    paper = None
    for s in sections:
        if s.claim.id[0] != paper:
            paper = s.claim.id[0]
            H.append(f"<h2>{html.escape(PAPERS.get(paper, paper))}</h2>")
        H.append(_html_claim(s, figdir))
    if perf is not None:
        text, figs = perf
        H.append(f'<section class="perf">{_markdown_block_html(text)}</section>')
        H += [_img(figdir, name, cap) for name, cap in figs]
    H.append("</body></html>")
    out = "\n".join(H) + "\n"
    _check_control(out, "index.html")
    return out


def _markdown_block_html(text: str) -> str:
    """Minimal Markdown (headings, pipe tables, paragraphs) for externally supplied sections."""
    out, lines, i = [], text.strip().splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            out.append(f"<h{level}>{_text_html(line.lstrip('#').strip(), 'performance')}</h{level}>")
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            rows = [r for r in block[1:] if not all(set(c) <= set("-: ") for c in r)]
            out.append(_html_table(block[0], rows, where="performance"))
            continue
        elif line.strip():
            out.append(f"<p>{_text_html(line, 'performance')}</p>")
        i += 1
    return "\n".join(out)


def _html_claim(s: "ClaimSection", figdir: Path) -> str:
    c = s.claim
    v = _verdict(s)
    cls = "pass" if v in ("verified", "observed") else "fail"
    w = f"claim {c.id}"
    H = [f'<section class="claim" id="{c.id.lower()}">', f"<h3>{c.id}: {html.escape(c.title)}</h3>",
         f"<p><strong>Source:</strong> {_text_html(c.source, w + ' source')}<br><strong>Kind:</strong> {c.kind}"
         f'<br><strong>Verdict:</strong> <span class="{cls}">{v}</span>'
         f"<br><strong>Catalogue:</strong> <code>docs/claims.md</code>, section {c.id}</p>",
         f"<p><strong>Statement.</strong> {_text_html(c.statement, w + ' statement')}</p>"]
    H += [f'<p class="note"><strong>Note.</strong> {_text_html(n, w + " note")}</p>' for n in c.notes]
    if s.error:
        _check_control(s.error, w + " error")
        H += [f"<p class='fail'>Error while running this claim:</p><pre>{html.escape(s.error)}</pre></section>"]
        return "\n".join(H)
    H.append("<h4>Derivation (SymPy)</h4><ol>")
    for i, step in enumerate(c.derivation().steps, 1):
        H.append(f"<li>{_text_html(step.text, f'{w} step {i}')}"
                 + (display_mathml(step.expr, step.lhs) if step.expr is not None else "") + "</li>")
    H.append("</ol>")
    ev = s.evidence
    H += ["<h4>Evidence</h4>", f"<p><strong>Compared:</strong> {_text_html(ev.compared, w + ' compared')}</p>",
          _html_table(["measured error", "tolerance", "why this tolerance", "verdict"],
                      [[fmt(ev.error), fmt(ev.tolerance), ev.tolerance_reason,
                        "pass" if ev.passed else "FAIL"]], where=w + " evidence")]
    H += [_html_table(t.headers, t.rows, t.title, where=f"{w} table {t.title!r}") for t in ev.tables]
    notes = _evidence_notes(s)
    if notes:
        H.append("<ul>" + "".join(f"<li>{_text_html(n, w + ' evidence note')}</li>" for n in notes)
                 + "</ul>")
    seed_rows = _seed_rows(s)
    if seed_rows:
        H.append(_html_table(SEED_HEADERS, seed_rows, f"Seeds: {_seed_rate(s)} passed", where=w + " seeds"))
    m = _neg_target(s)
    _check_control(m.name or "", w + " negative control target")
    target = f"sub-check <code>{html.escape(_code_text(m.name))}</code>: " if m.name else ""
    H += ["<h4>Negative control</h4>",
          f"<p>{_text_html(c.negative_control_description, w + ' negative control')}: {target}"
          f"{html.escape(m.comparison())}: <strong>{_neg_verdict(s)}</strong>.</p>"]
    if s.figures:
        H.append("<h4>Figures</h4>")
        reach = _profile_reach(s)
        if reach:
            H.append(f"<p>{_text_html(reach, w + ' figures')}</p>")
        H += [_img(figdir, name, cap) for name, cap in s.figures]
    H.append("</section>")
    return "\n".join(H)
