"""Markdown and HTML renderers for the report (pure functions of the collected data).

Rendering rules (checked by ``tests/test_report.py`` and the headless-browser test):

- every derived expression is typeset by :mod:`verify.report.mathml` (SymPy's MathML
  printer, ``Piecewise`` as cases, wide expressions broken into a readable form); the
  full expression follows in a collapsible ``<details>`` element;
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sympy as sp

import verify
from verify.kit import Margin, control_margin, fmt
from verify.report.worst import worst_subcheck
from verify.report.mathml import (_LATEX_COMMAND, SYMBOL_TEX, ReportRenderError, _mathml_from_latex,
                                  display_latex, display_mathml, expression_latex,
                                  expression_mathml, symbol_tex)

if TYPE_CHECKING:
    from verify.report import ClaimSection

__all__ = ["ReportRenderError", "render_html", "render_markdown", "expression_mathml",
           "expression_latex", "raw_text_problems", "symbol_tex", "SYMBOL_TEX"]

_MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)

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


# ---------------------------------------------------------------------------- summary
def _versions() -> str:
    import matplotlib
    import mpmath
    import numpy
    import scipy
    return (f"meanfield-verify {verify.__version__}; Python {platform.python_version()}, "
            f"SymPy {sp.__version__}, mpmath {mpmath.__version__}, NumPy {numpy.__version__}, "
            f"SciPy {scipy.__version__}, Matplotlib {matplotlib.__version__}")


SELF_TEST = "derivation self-test failed"


def _verdict(sec: "ClaimSection") -> str:
    if sec.error:
        return "FAILED (derivation self-test)" if sec.error.startswith(SELF_TEST) else "ERROR"
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


def _certified(ev: Any) -> str:
    """``n, r <= 1e-12`` from ``details["certified"]`` (certified instances and the worst
    certified radius; ``disproved`` when a certificate refuted the claim); ``-`` when absent."""
    cert = (getattr(ev, "details", None) or {}).get("certified") if ev is not None else None
    if not isinstance(cert, dict):
        return "-"
    n, r = cert.get("instances"), cert.get("worst_radius")
    text = f"{n if n is not None else '?'}, radius <= {fmt(r) if r is not None else '?'}"
    return text + (", DISPROVED" if cert.get("disproved") else "")


def _worst_cells(ev: Any) -> list[str]:
    """The worst sub-check's name and ``error / tolerance (unit, kind)``."""
    if ev is None:
        return ["-", "-"]
    w = worst_subcheck(ev)
    return [_code_text(w.name), w.cell()]


def _summary_columns(sections: list["ClaimSection"],
                     sensitivity: dict[str, str] | None = None,
                     ) -> tuple[list[str], list[list[str]]]:
    seeds = any(getattr(s, "seed_evidence", None) for s in sections)
    headers = ["id", "claim", "kind", "verdict", "worst sub-check",
               "error / tolerance (unit, bound)", "negative control (margin)", "sensitivity",
               "certified"] + (["seeds passed"] if seeds else [])
    rows = []
    for s in sections:
        ev = s.evidence
        sens = (sensitivity or {}).get(s.claim.id) or _sensitivity(s)
        row = [f"[{s.claim.id}](#{s.claim.id.lower()})", s.claim.title, s.claim.kind,
               _verdict(s), *_worst_cells(ev), _neg_verdict(s), sens, _certified(ev)]
        rows.append(row + ([_seed_rate(s)] if seeds else []))
    return headers, rows


SUMMARY_NOTE = ("*worst sub-check*: the failing sub-check when the claim fails, else the one "
                "nearest its bound; its error and tolerance are in the unit shown (relative, "
                "absolute, SE = standard errors of a Monte Carlo mean, |slope - predicted| "
                "for a fitted rate against its interval) and the bound is \"at most\", "
                "\"at least\", a condition or a rate. "
                "*negative control*: the same check on a deliberately wrong variant must fail; "
                "the margin is how far the sub-check it targets lies beyond its bound: "
                "error/tolerance (tolerance/error for an \"at least\" bound), above 1 fails; "
                "for a bound on a signed quantity (a fitted rate) the excess over the bound, "
                "above 0 fails. *sensitivity*: "
                "the smallest relative perturbation e -> e(1+eps)+eps of a derived result that the check detects "
                "(`python -m verify mutate`). It is not the error: a perturbed result is caught when SOME "
                "sub-check reading it breaks its bound, and the claim's sensitivity is the "
                "worst over its derived results, so a result read only by a sub-check with a "
                "loose tolerance (a Monte Carlo or quadrature bound of 1e-4, say) sets it, "
                "whatever the headline error (an exact identity at 1e-32). "
                "*certified*: instances proved by interval arithmetic and the worst certified "
                "radius.")


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


def sizes_text(sizes: dict[str, dict[str, Any]]) -> str:
    """A claim's declared sizes per profile, e.g. ``quick: m = 64, seeds = 8; full: ...``."""
    return "; ".join(f"{prof}: " + ", ".join(f"{k} = {fmt(v) if not isinstance(v, tuple) else v}"
                                             for k, v in table.items())
                     for prof, table in sizes.items())


def _md_claim(s: "ClaimSection") -> list[str]:
    c = s.claim
    L = [f'<a id="{c.id.lower()}"></a>', f"### {c.id}: {c.title}", "",
         f"**Source:** {c.source}  ", f"**Kind:** {c.kind}  ", f"**Verdict:** {_verdict(s)}  ",
         f"**Catalogue:** {_catalogue(c)}", ""]
    if getattr(c, "sizes", None):
        L[-1:-1] = [f"**Sizes:** {sizes_text(c.sizes)}  "]
    L += [f"**Statement.** {c.statement}", ""]
    for note in c.notes:
        L += [f"> **Note.** {note}", ""]
    if s.error:
        return L + [f"**{_error_heading(s)}**", "", "```", s.error, "```", ""]
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


def _error_heading(s: "ClaimSection") -> str:
    if s.error and s.error.startswith(SELF_TEST):
        return ("The derivation's own self-test failed (a wrong derivation, caught before "
                "the check ran):")
    return "Error while running this claim:"


def _catalogue(c: Any) -> str:
    """Where the claim is catalogued: our ``docs/claims.md``, or for an installed package's
    claim (``<namespace>.<id>``) that package's own documentation."""
    if "." in c.id:
        module = getattr(getattr(c, "check", None), "__module__", None) or c.id.split(".")[0]
        return f"the documentation of its package (`{module.split('.')[0]}`), not docs/claims.md"
    return f"`docs/claims.md`, section {c.id}"


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
         f"<br><strong>Catalogue:</strong> {_text_html(_catalogue(c), w + ' catalogue')}"
         + (f"<br><strong>Sizes:</strong> {html.escape(sizes_text(c.sizes))}"
            if getattr(c, "sizes", None) else "") + "</p>",
         f"<p><strong>Statement.</strong> {_text_html(c.statement, w + ' statement')}</p>"]
    H += [f'<p class="note"><strong>Note.</strong> {_text_html(n, w + " note")}</p>' for n in c.notes]
    if s.error:
        _check_control(s.error, w + " error")
        H += [f"<p class='fail'>{html.escape(_error_heading(s))}</p><pre>{html.escape(s.error)}</pre></section>"]
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
