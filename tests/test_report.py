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
