"""The report: files written atomically, deterministic, offline HTML with MathML."""
from __future__ import annotations

from verify.report import build_report


def test_report_files_and_determinism(fake_registry, tmp_path) -> None:
    out = tmp_path / "r"
    s1 = build_report(out, only=["T0a"], progress=None)
    md1 = (out / "report.md").read_bytes()
    png1 = (out / "figures" / "T0a_line.png").read_bytes()
    html = (out / "index.html").read_text()
    assert s1["verified"] == 1 and "T0a_line.png" in s1["figures"]
    assert "<math" in html and "data:image/png;base64," in html and "http" not in html.replace(
        "http://www.w3.org/1998/Math/MathML", "")
    build_report(out, only=["T0a"], progress=None)
    assert (out / "report.md").read_bytes() == md1
    assert (out / "figures" / "T0a_line.png").read_bytes() == png1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "staging dir left behind"


def test_report_records_broken_claim(fake_registry, tmp_path) -> None:
    s = build_report(tmp_path / "r", progress=None)
    md = (tmp_path / "r" / "report.md").read_text()
    assert s["verified"] == 1 and "RuntimeError: boom" in md and "| ERROR |" in md


def test_failed_build_keeps_previous_report(fake_registry, tmp_path, monkeypatch) -> None:
    out = tmp_path / "r"
    build_report(out, only=["T0a"], progress=None)
    before = (out / "report.md").read_bytes()
    import verify.report as rep

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(rep, "render_html", boom)
    try:
        build_report(out, only=["T0a"], progress=None)
    except OSError:
        pass
    assert (out / "report.md").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------------------- clean rendering
import re  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import pytest  # noqa: E402
import sympy as sp  # noqa: E402

from verify.report import mathml, render  # noqa: E402

_x, _y = sp.symbols("x y")


def _outside_math(html_text: str) -> str:
    s = re.sub(r"<(math|code|pre|style|script)\b.*?</\1>", " ", html_text, flags=re.S)
    return re.sub(r"<[^>]+>", " ", s)


def test_piecewise_renders_as_cases() -> None:
    pw = sp.Piecewise((_x**2, _x < 0), (_x, True))
    out = mathml.display_mathml(pw, "g(x)")
    assert "piecewise" not in out.lower() and "<mtable" in out and "otherwise" in out
    assert "&lt;" in out and "<mo><</mo>" not in out  # x < 0 escaped
    assert "\\begin{cases}" in "\n".join(mathml.display_latex(pw, "g(x)"))


def test_long_expression_gets_readable_form_and_collapsible_full_form() -> None:
    long = sum(sp.sin(k * _x) * sp.cos(_y) ** k / (k + 1) for k in range(1, 30))
    out = mathml.display_mathml(sp.Eq(sp.Symbol("F"), long))
    assert out.count("<details>") == 1 and "full expression" in out
    readable = out.split("<details>")[0]
    assert "<mtable" in readable  # the sum is broken over several lines
    widths = [mathml._mathml_width(m) for m in re.findall(r"<mtr>.*?</mtr>", readable)]
    assert max(widths) <= mathml.LINE_BUDGET + 25
    md = "\n".join(mathml.display_latex(sp.Eq(sp.Symbol("F"), long)))
    assert "\\begin{aligned}" in md and "<details>" in md


def test_wide_product_names_its_parts() -> None:
    wide = sp.Piecewise((sum(_x**k / (k + 2) for k in range(16)), _x < 1), (1, True)) * sp.exp(
        sum(_y**k / (k + 3) for k in range(24)))
    assert mathml._width(wide) > mathml.LINE_BUDGET + 40
    out = mathml.display_mathml(wide, "K")
    assert "where" in out and "&#926;" in out  # Xi_1, Xi_2, ... defined under the formula


def test_short_expression_is_one_math_element() -> None:
    out = mathml.display_mathml(sp.sqrt(_x**2 + 1), "r")
    assert out.count("<math") == 1 and "<details>" not in out


@pytest.mark.parametrize("text", [r"$a^b^c$ is a double superscript",
                                  r"an unknown macro $\foo x$"])
def test_latex_conversion_failure_fails_the_build(text: str) -> None:
    with pytest.raises(render.ReportRenderError, match="LaTeX to MathML"):
        render._text_html(text)


@pytest.mark.parametrize("text,problem", [
    ("angle $\\theta$ and \tilde", "U+0009"),       # an unescaped \t in a Python string
    ("a \x07 bell", "U+0007"),
    (r"raw \alpha outside math", "LaTeX command"),
])
def test_prose_problems_fail_the_build(text: str, problem: str) -> None:
    with pytest.raises(render.ReportRenderError, match=re.escape(problem)):
        render._text_html(text, "claim X statement")


def test_code_spans_may_hold_backslashes() -> None:
    assert "<code>" in render._text_html(r"run `grep -n '\alpha' file`")


def _section(seed_evidence=None, sensitivity=None) -> SimpleNamespace:
    ev = SimpleNamespace(passed=True, error=1e-10, tolerance=1e-8, seed=0)
    neg = SimpleNamespace(passed=False, error=3e-8, tolerance=1e-8)
    claim = SimpleNamespace(id="T0a", title="t", kind="theorem")
    sec = SimpleNamespace(claim=claim, evidence=ev, negative=neg, error=None)
    if seed_evidence is not None:
        sec.seed_evidence = seed_evidence
    if sensitivity is not None:
        sec.sensitivity = sensitivity
    return sec


def test_summary_columns_margin_sensitivity_and_seed_rate(monkeypatch) -> None:
    from verify import sensitivity
    monkeypatch.setattr(sensitivity, "describe", lambda cid: "1e-09" if cid == "T0a" else "-")
    evs = [SimpleNamespace(passed=p, error=e, tolerance=1.0, seed=i)
           for i, (p, e) in enumerate([(True, 0.5), (True, 0.7), (False, 1.3)])]
    other = _section()
    other.claim.id = "T0b"
    headers, rows = render._summary_columns([_section(evs), other])
    assert "sensitivity" in headers and headers[-1] == "seeds passed"
    assert rows[0][6] == "fails (x3)" and rows[0][7] == "1e-09" and rows[0][9] == "2/3"
    assert rows[1][7] == "-" and rows[1][9] == "-" and rows[0][8] == "-"  # no certified data
    headers, _ = render._summary_columns([_section()])
    assert "seeds passed" not in headers


def test_summary_row_shows_the_failing_subcheck_with_unit_and_bound() -> None:
    """A mutated H1g showed its headline 1.62e-32 / 1e-9; the row must show the
    failing sub-check's own numbers, its unit and its bound."""
    sec = _section()
    sec.evidence = SimpleNamespace(passed=False, error=1.62e-32, tolerance=1e-9, seed=0,
                                   compared="c", tolerance_reason="r", details={"subchecks": [
        {"name": "exact identity", "error": 1.62e-32, "tolerance": 1e-9, "passed": True,
         "reason": "30-digit arithmetic"},
        {"name": "reduced field vs full field", "error": 1.0e-3, "tolerance": 1e-8,
         "passed": False, "reason": "relative error of two float64 evaluations"},
        {"name": "Haar average", "error": 2.9, "tolerance": 5.5, "passed": True,
         "reason": "max |err|/SE over 6 inputs"}]})
    headers, rows = render._summary_columns([sec])
    i = headers.index("worst sub-check")
    assert rows[0][i] == "reduced field vs full field"
    assert rows[0][i + 1] == "0.001 / 1.00e-08 (relative, at most)"


@pytest.mark.parametrize("reason, name, unit", [
    ("slope -0.501, 99.9% interval [-0.55, -0.45] from 8 seeds at 4 widths 64..512; "
     "predicted -0.500 (CLT); passes iff the interval contains it and excludes 0", "rate",
     "|slope - predicted|"),
    ("CLT per input; 5.5 SE over 6 inputs", "haar", "SE"),
    ("a 5 sigma band", "mean", "SE"),
    ("float64 sums", "derived residual vs sigma(Px, PzP) - P sigma(x, z)", "-"),
    ("float64 rounding, relative", "x", "relative"),
    ("quadrature error bound", "absolute error of the sum", "absolute"),
    ("at most 32 ulps of the value", "float64 vs balls", "ulps"),
    ("why", "x", "-")])
def test_unit_is_inferred_from_the_reason(reason, name, unit) -> None:
    from verify.report.worst import unit_of
    assert unit_of(reason, name) == unit


def test_stated_unit_wins_over_the_reason() -> None:
    """A sub-check's own unit (SubCheck.unit, in details["subchecks"]) is shown, whatever
    its prose says; the prose is read only when no unit is stated."""
    from verify.report.worst import unit_of, worst_subcheck
    assert unit_of("relative error, 5 SE", "x", "ulps") == "ulps"
    ev = SimpleNamespace(passed=False, error=1.0, tolerance=0.5, compared="c",
                         tolerance_reason="r", details={"subchecks": [
                             {"name": "balls", "error": 1.0, "tolerance": 0.5, "passed": False,
                              "reason": "why", "unit": "relative"}]})
    w = worst_subcheck(ev)
    assert (w.name, w.unit) == ("balls", "relative")
    assert w.cell().endswith("(relative, at most)")


def test_kit_subchecks_state_their_unit() -> None:
    """compare, rate studies, drawn instances and certified comparisons state the unit of
    their figure, and combine() carries it into the evidence's details."""
    import numpy as np
    from verify import certify
    from verify.kit import combine, compare
    rel = compare("r", 1.0, 1.0, rtol=1e-12, reason="float64")
    ab = compare("a", 1.0, 1.0, rtol=0.0, atol=1e-12, reason="float64")
    assert (rel.unit, ab.unit) == ("relative", "absolute")
    scaled = compare("s", 1.0, 1.0, rtol=0.0, atol=1e-12, reason="x / scale", unit="relative")
    assert scaled.unit == "relative" and scaled.tolerance == 1e-12
    import pytest
    with pytest.raises(ValueError, match="unit must be one of"):
        compare("s", 1.0, 1.0, rtol=0.0, atol=1e-12, reason="r", unit="relativ")
    out = combine("c", [rel, ab])
    assert [d.get("unit") for d in out.details["subchecks"]] == ["relative", "absolute"]
    import flint
    one = [certify.CertifiedInstance("x = 1", flint.arb(1), flint.arb(1))]
    assert certify.certified_compare("c", one, reason="exact").unit == "relative"
    assert certify.certified_compare("c", one, relative=False, reason="exact").unit == "absolute"
    assert np.isfinite(rel.error)


def test_unit_vocabulary() -> None:
    """The units a claim may state (SubCheck.unit): the vocabulary, or "mixed (...)"
    naming its components' units; the kit's constructors state units of it."""
    from verify.report.worst import UNITS, is_unit
    assert {"relative", "absolute", "|slope - predicted|", "tolerances", "count"} <= set(UNITS)
    assert all(is_unit(u) for u in UNITS)
    assert is_unit("mixed (c relative, theta radians)")
    for bad in ("", "-", "relativ", "mixed ()", "mixed (x", None, 1.0):
        assert not is_unit(bad)  # type: ignore[arg-type]
    from verify.report.worst import unit_of
    mixed = "mixed (c relative, theta radians)"
    assert unit_of("a reason that names no unit", "x", mixed) == mixed


def test_certified_column_reads_details() -> None:
    sec = _section()
    sec.evidence.details = {"certified": {"instances": 12, "worst_radius": 3e-15,
                                          "disproved": False}}
    headers, rows = render._summary_columns([sec])
    assert rows[0][headers.index("certified")] == "12, radius <= 3.00e-15"
    sec.evidence.details["certified"]["disproved"] = True
    assert render._summary_columns([sec])[1][0][headers.index("certified")].endswith("DISPROVED")


def test_outside_claim_points_to_its_package_and_self_test_is_named() -> None:
    sec = _section()
    sec.claim.id = "mine.R2"
    sec.claim.check = test_certified_column_reads_details
    assert "docs/claims.md, section" not in render._catalogue(sec.claim)
    sec.error = "derivation self-test failed (derivations/sphere.py:12): AssertionError: x"
    assert render._verdict(sec) == "FAILED (derivation self-test)"
    assert "self-test failed" in render._error_heading(sec)


def test_derivation_self_test_failure_is_classified() -> None:
    from derivations.base import DerivationSelfTestError
    from verify.runner import describe_exception
    try:
        raise DerivationSelfTestError("40-digit test: 1.0001 != 1")
    except DerivationSelfTestError as exc:
        assert describe_exception(exc).startswith("derivation self-test failed")
    try:
        raise TypeError("plain")
    except TypeError as exc:
        assert describe_exception(exc) == "TypeError: plain"
    from derivations import sphere
    try:  # an exception raised inside a derivation module (as H1e's TypeError was)
        sphere.positive_part_mean(None)
    except Exception as exc:  # noqa: BLE001 - whatever the derivation raised
        assert describe_exception(exc).startswith(
            "derivation self-test failed (derivations/sphere.py:")


def test_report_html_is_clean(fake_registry, tmp_path) -> None:
    build_report(tmp_path / "r", only=["T0a"], progress=None)
    page = (tmp_path / "r" / "index.html").read_text()
    assert "<merror" not in page and "MATH.md" not in page and "../shared" not in page
    assert not render.raw_text_problems(_outside_math(page).replace("\n", " "))
    assert "docs/claims.md" in page and "sensitivity" in page


def test_every_claim_renders_cleanly() -> None:
    """Statements, notes and every derivation step of every registered claim render
    without LaTeX errors, control characters, raw LaTeX or Piecewise text (no checks run)."""
    from verify.claims import all_claims
    problems = []
    for c in all_claims():
        parts = [("statement", c.statement), ("source", c.source),
                 ("negative control", c.negative_control_description)]
        parts += [("note", n) for n in c.notes]
        html_parts = []
        try:
            html_parts += [render._text_html(t, f"{c.id} {w}") for w, t in parts]
            for i, step in enumerate(c.derivation().steps, 1):
                html_parts.append(render._text_html(step.text, f"{c.id} step {i}"))
                if step.expr is not None:
                    html_parts.append(mathml.display_mathml(step.expr, step.lhs))
                    mathml.display_latex(step.expr, step.lhs)
        except render.ReportRenderError as exc:
            problems.append(str(exc))
            continue
        text = _outside_math("".join(html_parts))
        if "piecewise(" in text.lower():
            problems.append(f"{c.id}: Piecewise as text")
        if "<merror" in "".join(html_parts):
            problems.append(f"{c.id}: merror")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_quick_report_of_all_claims_is_clean(tmp_path) -> None:
    """The whole quick report (~2 min on 2 cores): no control characters, raw LaTeX,
    Piecewise text or merror anywhere, no file outside the repository cited."""
    s = build_report(tmp_path / "r", progress=None)
    page = (tmp_path / "r" / "index.html").read_text()
    md = (tmp_path / "r" / "report.md").read_text()
    assert s["claims"] >= 27
    assert "<merror" not in page
    text = _outside_math(page)
    assert not render.raw_text_problems(text.replace("\n", " "))
    assert "piecewise(" not in text.lower() and "Piecewise" not in text
    for doc in (page, md):
        assert "../shared" not in doc and "MATH.md" not in doc and "DESIGN.md" not in doc
        assert not re.search(r"\b[Ii]ssue #?\d", doc), "the report cites an issue number"


def test_wide_exact_numbers_shown_rounded_with_exact_form_collapsible() -> None:
    row = sp.Matrix([[sp.Rational(10716432000 + k, 981997) for k in range(10)]])  # mutable
    out = mathml.display_mathml(row, r"\alpha^T")
    readable, full = out.split("<details>")
    assert "&#x2248;" in readable and "10912." in readable and "981997" in full
    assert any("\\approx" in line for line in mathml.display_latex(row, r"\alpha^T"))


def test_no_typed_text_as_sympy_symbols() -> None:
    """Derivation steps use real SymPy objects, not text typed into a Symbol name
    (``Symbol("|x~|")`` or ``Symbol("R_DA - R_FA")`` render as italic garbage): use
    Function/Derivative/Abs, or put the words in the step's prose or its ``lhs``."""
    from verify.claims import all_claims
    suspicious = re.compile(r"[/()|~=\[\];<>,]|\s")
    found = []
    for c in all_claims():
        for i, step in enumerate(c.derivation().steps, 1):
            if step.expr is None or isinstance(step.expr, str) or not hasattr(step.expr, "atoms"):
                continue
            names = sorted(s.name for s in step.expr.atoms(sp.Symbol) if suspicious.search(s.name))
            if names:
                found.append(f"{c.id} step {i}: {names}")
    assert not found, "\n".join(found)


def test_primes_before_a_superscript_convert() -> None:
    out = render._text_html(r"norm $\int f''^2/\omega\,dx + \tfrac4{\sigma^2}$")
    assert "<merror" not in out and "<math" in out


def test_negative_control_margin_is_the_targeted_subcheck() -> None:
    sec = _section()
    sec.claim.negative_target = "rate"
    sec.negative.details = {"subchecks": [
        {"name": "closed form", "error": 1e-20, "tolerance": 1e-12, "passed": True},
        {"name": "rate vs N", "error": 0.5, "tolerance": 0.25, "passed": False}]}
    assert render._neg_verdict(sec) == "fails (x2)"


def test_sensitivity_column_falls_back_without_the_module(monkeypatch) -> None:
    import sys
    monkeypatch.setitem(sys.modules, "verify.sensitivity", None)  # import fails
    assert render._sensitivity(_section()) == "-"


def _w2b_like() -> SimpleNamespace:
    """A control whose headline sub-check passed and whose targeted one failed (as W2b)."""
    sec = _section()
    sec.claim.negative_target = "delta drift"
    sec.claim.negative_control_description = "weights off by 1e-8"
    sec.negative = SimpleNamespace(passed=False, error=8.53e-11, tolerance=1e-7, details={
        "subchecks": [
            {"name": "field vs finite differences", "error": 8.53e-11, "tolerance": 1e-7,
             "passed": True},
            {"name": "delta drift along the flow", "error": 7.98e-9, "tolerance": 1e-9,
             "passed": False}]})
    return sec


def test_negative_control_line_shows_the_targeted_subcheck_numbers() -> None:
    sec = _w2b_like()
    m = render._neg_target(sec)
    assert (m.name, m.error, m.tolerance) == ("delta drift along the flow", 7.98e-9, 1e-9)
    assert render._neg_verdict(sec) == "fails (x7.98)"
    line = "measured error 7.98e-09 vs tolerance 1.00e-09: **fails (x7.98)**"
    assert line in "\n".join(render._md_claim_negative(sec))
    assert "8.53e-11" not in "\n".join(render._md_claim_negative(sec))


@pytest.mark.parametrize("error,tolerance,passed,text", [
    (7.98e-9, 1e-9, False, "x7.98"),          # at most, broken
    (0.5e-9, 1e-9, True, "x0.5"),             # at most, kept
    (0.02, 1.0, False, "x50"),                # at least 1, broken: tolerance/error
    (3.0, 1.0, True, "x0.333"),               # at least 1, kept
    (-0.005, -0.25, False, "excess +0.245"),  # a rate that must be <= -1/4, broken
    (-0.47, -0.25, True, "excess -0.22"),     # ... kept
    (0.024, -0.25, False, "excess +0.274"),
])
def test_margin_direction_matches_the_legend(error, tolerance, passed, text) -> None:
    """Above 1 (a factor) or above 0 (an excess) exactly when the bound is broken: no
    "fails (x0.02)" for an "at least" or a signed bound."""
    from verify.kit import margin
    m = margin(error, tolerance, passed)
    assert m.factor_text() == text
    assert (m.severity() > 1) == (not passed)


def test_no_failing_control_shows_a_factor_below_one() -> None:
    from verify.kit import margin
    for e, t in [(0.02, 1.0), (1e-16, 1e-12), (-0.005, -0.25), (0.0, 0.0), (5.0, 0.0)]:
        for passed in (False,):
            text = margin(e, t, passed).factor_text()
            if text.startswith("x"):
                assert float(text[1:]) > 1 or text == "xinf", (e, t, text)


@pytest.mark.parametrize("name,needle,tex", [
    ("nu'", "&#8242;", "\\nu'"), ("W2sq", "<msubsup>", "W_2^2"), ("m2mu", "&#956;", "m_2(\\mu)"),
    ("m2nu", "&#957;", "m_2(\\nu)"), ("k_perp", "&#10178;", "k_{\\perp}")])
def test_symbol_names_render_as_mathematics(name: str, needle: str, tex: str) -> None:
    out = render.expression_mathml(sp.Symbol(name) ** 2 + sp.Symbol("x"))
    assert needle in out and f">{name}<" not in out and "sq<" not in out
    assert render.expression_latex(sp.Symbol(name)) == tex


def test_no_sympy_identifier_as_text_in_any_derivation() -> None:
    """Every symbol of every derivation step prints as mathematics: its base identifier is
    one letter (Greek or Latin, with sub/superscripts) or a listed acronym, no primes as
    text."""
    from verify.claims import all_claims
    allowed = {"RMD"}
    found = set()
    for c in all_claims():
        for i, step in enumerate(c.derivation().steps, 1):
            if step.expr is None or isinstance(step.expr, str) or not hasattr(step.expr, "atoms"):
                continue
            for s in step.expr.atoms(sp.Symbol):
                out = render.expression_mathml(s)
                base = re.search(r"<mi[^>]*>([^<]*)</mi>", out)
                text = base.group(1) if base else ""
                if "'" in out or (len(text) > 1 and not text.startswith("&")
                                  and not text.isdigit() and text not in allowed):
                    found.add(f"{c.id} step {i}: {s.name} -> {text}")
    assert not found, "\n".join(sorted(found))


def test_evidence_notes_are_not_repeated() -> None:
    sec = _section()
    sec.claim.notes = ("Source discrepancy: the sign.",)
    sec.evidence.notes = ["Source discrepancy: the sign.", "other", "other"]
    assert render._evidence_notes(sec) == ["other"]


def test_quick_figures_state_their_reach() -> None:
    sec = _section()
    sec.evidence.profile = "quick"
    assert "Quick profile" in render._profile_reach(sec)
    sec.evidence.profile = "full"
    assert render._profile_reach(sec) == ""


def test_outside_claim_sensitivity_is_read_from_its_package(tmp_path, monkeypatch) -> None:
    """An installed package's claim reads its sensitivity from ``sensitivity.json`` beside
    the package's ``__init__.py`` (written by ``mutate --json-sensitivity``)."""
    import json
    import sys
    from verify import claims, sensitivity
    pkg = tmp_path / "mypkg_mfv"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def check(ctx, v):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    mod = importlib.import_module("mypkg_mfv")
    monkeypatch.setattr(claims, "get", lambda cid: SimpleNamespace(id=cid, check=mod.check))
    monkeypatch.setattr(sensitivity, "results_hash", lambda cid: "h")
    assert sensitivity.package_file("mine.R2") == pkg / "sensitivity.json"
    assert sensitivity.describe("mine.R2") == "-"
    (pkg / "sensitivity.json").write_text(json.dumps({"format": 1, "claims": {
        "mine.R2": {"hash": "h", "eps": 1e-6, "limited_by": "MC mean"}}}))
    assert sensitivity.describe("mine.R2") == "1e-06, limited by MC mean"
    sys.modules.pop("mypkg_mfv", None)
