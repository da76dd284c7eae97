"""SymPy and LaTeX to MathML / LaTeX display math for the report.

- every derived expression goes through SymPy's MathML printer, with ``Piecewise`` shown as
  cases (a brace and one row per piece) instead of SymPy's ``piecewise((...), True)`` text;
- an expression too wide for the page is shown in a readable form: sums are broken over
  several lines and wide sub-expressions are named (``Xi_1, Xi_2, ...``, defined below it);
- hand-written LaTeX is converted with latex2mathml; a conversion failure raises
  :class:`ReportRenderError` instead of leaking LaTeX source into the page.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from typing import Any, Iterable

import sympy as sp
from sympy.printing.mathml import MathMLPresentationPrinter

__all__ = ["ReportRenderError", "expression_mathml", "expression_latex", "display_mathml",
           "display_latex", "symbol_tex", "SYMBOL_TEX", "LINE_BUDGET", "MATHML_NS"]

_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+|\\[{}|,;!]")
MATHML_NS = "http://www.w3.org/1998/Math/MathML"

# Width budget for one displayed line, in the estimate of :func:`_width` (about one unit per
# glyph): the page is 62rem wide, i.e. ~110 glyphs of math; keep a margin for the lhs.
LINE_BUDGET = 72.0


class ReportRenderError(ValueError):
    """The report cannot be rendered cleanly (a LaTeX-to-MathML conversion failed, or text
    outside math holds a control character or a raw LaTeX command)."""


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
