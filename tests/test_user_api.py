"""What a user of the suite gets in their own tests: the pytest plugin, the strategies,
``assert_agrees``, and formulas with real signatures (docs/testing.md)."""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

from verify import formulas, strategies
from verify.testing import assert_agrees

ROOT = Path(__file__).resolve().parents[1]


def _example_blocks(doc: Path) -> dict[str, str]:
    """``<!-- example: NAME -->`` followed by a fenced python block."""
    text = doc.read_text()
    return dict(re.findall(r"<!-- example: (\S+) -->\s*```python\n(.*?)```", text, re.S))


def _pytest(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS",)}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_docs_example_passes_in_an_empty_directory(tmp_path: Path) -> None:
    blocks = _example_blocks(ROOT / "docs" / "testing.md")
    assert "test_my_model.py" in blocks
    (tmp_path / "test_my_model.py").write_text(blocks["test_my_model.py"])
    r = _pytest([], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"\b5 passed\b", r.stdout), r.stdout


def test_plugin_runs_claims_as_items_anywhere(tmp_path: Path) -> None:
    r = _pytest(["--claims", "H1f,W2e"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"\b4 passed\b", r.stdout), r.stdout


def test_plugin_unknown_id_is_one_line_usage_error(tmp_path: Path) -> None:
    r = _pytest(["--claims", "H1fz"], tmp_path, timeout=300)
    assert r.returncode == 4
    err = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert len(err) == 1 and "H1f" in err[0] and "Traceback" not in r.stderr, err


def test_plugin_node_ids_select_on_the_command_line(tmp_path: Path) -> None:
    """``pytest --claims H1f`` lists node ids that select: given back, one runs alone; the
    collected count agrees with the list; ``-m claim`` keeps them."""
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    r = _pytest(["--claims", "H1f", "--collect-only"], tmp_path, timeout=300)
    listed = [ln for ln in r.stdout.splitlines() if ln.startswith("verify::")]
    assert listed == ["verify::H1f::check", "verify::H1f::negative-control"], r.stdout
    assert re.search(r"\b3 tests collected\b", r.stdout), r.stdout
    r = _pytest(["--claims", "H1f", "-m", "claim", "--collect-only"], tmp_path, timeout=300)
    assert re.search(r"\b2/3 tests collected \(1 deselected\)", r.stdout), r.stdout
    r = _pytest(["--claims", "H1f", "-rA", listed[0]], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"\b1 passed\b", r.stdout) and "PASSED verify::H1f::check" in r.stdout, r.stdout
    r = _pytest(["verify::H9z"], tmp_path, timeout=300)
    assert r.returncode == 4 and "closest" in r.stdout + r.stderr


def test_assert_agrees_hides_its_own_frames(tmp_path: Path) -> None:
    """A failing ``assert_agrees`` shows the user's line and the message, not the
    source of verify/testing.py."""
    (tmp_path / "test_bad.py").write_text(
        "from verify import formulas\nfrom verify.testing import assert_agrees\n\n"
        "def test_bad():\n    assert_agrees(3.14, formulas.alpha_constant, 2)\n")
    r = _pytest([], tmp_path, timeout=300)
    assert r.returncode == 1
    assert "alpha_constant disagrees at 1 of 1 points" in r.stdout, r.stdout
    assert "def assert_agrees" not in r.stdout and "_condition_floor" not in r.stdout, r.stdout
    assert "verify/testing.py" not in r.stdout, r.stdout


def test_formulas_dir_lists_only_formulas() -> None:
    names = [n for n in dir(formulas) if not n.startswith("__")]
    assert names == sorted(formulas.__all__)
    for n in names:
        obj = getattr(formulas, n)
        assert n in ("VerifiedFormula", "KernelInterpolant") or hasattr(obj, "claim"), n
    for helper in ("annotations", "importlib", "pkgutil", "_base", "kernels"):
        assert helper not in dir(formulas)


def test_plugin_is_silent_without_claims(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    r = _pytest(["-p", "no:randomly"], tmp_path, timeout=300)
    assert r.returncode == 0 and re.search(r"\b1 passed\b", r.stdout), r.stdout


@given(strategies.datasets_1d(min_points=1, max_points=12, min_gap=0.02))
def test_datasets_1d_domain(data) -> None:
    x, y = data
    assert x.dtype == y.dtype == np.float64 and x.shape == y.shape and 1 <= x.size <= 12
    assert np.isfinite(x).all() and np.isfinite(y).all()
    assert (np.diff(x) >= 0.02 * (1 - 1e-9)).all()
    assert x.min() >= -2 and x.max() <= 2


@given(strategies.relu1d_networks(min_width=2, max_width=9, init="uniform"))
def test_relu1d_networks_domain(net) -> None:
    a, b, c = net
    assert a.shape == b.shape == c.shape and 2 <= a.size <= 9
    assert (np.abs(np.stack([a, b, c])) <= 1).all() and (np.hypot(a, b) >= 1e-3).all()


@given(strategies.twolayer_networks(d=4, min_width=1, max_width=6))
def test_twolayer_networks_domain(net) -> None:
    a, B = net
    assert B.shape == (a.size, 4) and (np.linalg.norm(B, axis=1) >= 1e-3).all()


@given(strategies.finite_groups())
def test_finite_groups_are_orthogonal_groups(group) -> None:
    P = group.projector()
    assert np.allclose(P @ P, P, atol=1e-12) and np.allclose(P, P.T, atol=1e-12)
    assert group.order >= 2


@given(strategies.particle_measures(dim=3, max_particles=10))
def test_particle_measures_domain(m) -> None:
    pts, w = m
    assert pts.shape == (w.size, 3) and (w > 0).all() and abs(w.sum() - 1) < 1e-12


@pytest.mark.parametrize("bad", [dict(min_points=0), dict(min_points=5, max_points=2),
                                 dict(min_gap=-1.0), dict(max_points=1000, min_gap=0.5)])
def test_strategy_arguments_are_validated(bad) -> None:
    with pytest.raises(ValueError):
        strategies.datasets_1d(**bad)


def test_assert_agrees_passes_and_fails() -> None:
    assert_agrees(np.pi, formulas.alpha_constant, 2)
    assert_agrees(formulas.alpha_constant(np.arange(1, 50)), formulas.alpha_constant,
                  np.arange(1, 50), rtol=1e-14)
    with pytest.raises(AssertionError, match="alpha_constant disagrees"):
        assert_agrees(3.14, formulas.alpha_constant, 2)
    with pytest.raises(AssertionError):  # a 1e-8 relative error at rtol 1e-10
        assert_agrees(np.pi * (1 + 1e-8), formulas.alpha_constant, 2)
    with pytest.raises(ValueError, match="rtol"):
        assert_agrees(np.pi, formulas.alpha_constant, 2, rtol=float("nan"))


def test_assert_agrees_on_an_interpolant() -> None:
    x = np.array([-0.5, 0.1, 0.7])
    y = np.array([1.0, -0.2, 0.4])
    pts = np.linspace(-1, 1, 7)
    f = formulas.kernel_interpolant(x, y)
    assert_agrees(f, formulas.kernel_interpolant, x, y, at=pts, rtol=1e-9)
    with pytest.raises(AssertionError):
        assert_agrees(lambda t: f(t) * (1 + 1e-6), formulas.kernel_interpolant, x, y, at=pts,
                      rtol=1e-9)


@pytest.mark.parametrize("name", [n for n in formulas.__all__
                                  if callable(getattr(formulas, n))])
def test_formula_signatures_name_their_parameters(name: str) -> None:
    sig = inspect.signature(getattr(formulas, name))
    kinds = {p.kind for p in sig.parameters.values()}
    assert sig.parameters and inspect.Parameter.VAR_POSITIONAL not in kinds, f"{name}{sig}"


def test_kit_compare_refuses_a_huge_broadcast_view_at_once() -> None:
    """A 10^8-row zero-copy view made kit.compare build 1.6 GB temporaries and run > 5 s of
    CPU (found by an outside fuzz); above COMPARE_MAX_ENTRIES it is refused before any work,
    naming value and reference."""
    import time

    from verify import kit
    from verify._subchecks import COMPARE_MAX_ENTRIES
    view = np.broadcast_to(np.float64(0.5), (10 ** 8, 2))
    t0 = time.process_time()
    with pytest.raises(ValueError, match="value and reference broadcast to 2e\\+08 entries"):
        kit.compare("x", view, 1.0, rtol=1e-9, reason="r")
    assert time.process_time() - t0 < 0.5
    assert COMPARE_MAX_ENTRIES >= 2 ** 24


def test_kit_compare_chunks_find_the_worst_point_anywhere() -> None:
    """Chunked evaluation gives the unchunked worst error and its index, in a later chunk,
    for contiguous, strided and broadcast inputs alike."""
    from verify import kit
    from verify._subchecks import _COMPARE_CHUNK
    n = 3 * _COMPARE_CHUNK + 7
    ref = np.linspace(1.0, 2.0, n)
    val = ref.copy()
    val[n - 3] *= 1 + 1e-6
    sc = kit.compare("x", val, ref, rtol=1e-9, reason="r")
    assert sc.error == abs(val[n - 3] - ref[n - 3]) / ref[n - 3]
    assert sc.counterexample["index"] == [n - 3]
    grid = np.stack([val, ref], axis=1)[:, :1]   # non-contiguous (n, 1), stride 2 entries
    assert not grid.flags.c_contiguous
    sc2 = kit.compare("x", grid, ref[:, None], rtol=1e-9, reason="r")
    assert sc2.error == sc.error and sc2.counterexample["index"] == [n - 3, 0]
    flat = kit.compare("x", np.broadcast_to(1.5, (n,)), 1.5, rtol=1e-9, reason="r")
    assert flat.error == 0.0 and flat.counterexample is None
    with pytest.raises(ValueError, match="non-finite"):
        kit.compare("x", val, np.where(np.arange(n) == n - 1, np.inf, ref), rtol=1e-9, reason="r")


def test_kit_compare_and_compare_derivative_refuse_bad_inputs_by_name() -> None:
    """The project's surface fuzz (thorough profile) found: a None entry compared as nan
    (error inf), a 10^9-entry int64 view copied to float64 (7.45 GiB), rtol = 2**64 an
    unnamed numpy TypeError; compare_derivative copied a 10^9 view of points and blamed
    'the reference' for an overflowing f."""
    from verify import kit
    with pytest.raises(TypeError, match="compare: value must be real numbers"):
        kit.compare("x", [1.0, None], 1.0, rtol=1e-9, reason="r")
    with pytest.raises(ValueError, match="above the limit"):
        kit.compare("x", np.broadcast_to(np.int64(1), (10 ** 9,)), 1.0, rtol=1e-9, reason="r")
    with pytest.raises(ValueError, match="rtol must be a finite number"):
        kit.compare("x", 1.0, 1.0, rtol=10 ** 400, reason="r")
    big = kit.compare("x", 2 ** 70, 2.0 ** 70, rtol=2 ** 64, reason="r")
    assert big.error == 0.0 and big.tolerance == 2.0 ** 64
    assert kit.compare("x", np.arange(3), [0.0, 1.0, 2.0], rtol=1e-9, reason="r").error == 0.0
    with pytest.raises(ValueError, match="points has 1e\\+09 entries"):
        kit.compare_derivative("d", np.sin, np.cos, np.broadcast_to(0.5, (10 ** 9,)),
                               step=1e-3, rtol=1e-6, reason="r")
    with pytest.raises(ValueError, match="finite difference of f is not finite at points"):
        kit.compare_derivative("d", np.exp, np.exp, [1e300], step=1e-3, rtol=1e-6, reason="r")
    with pytest.raises(TypeError, match="points must be real numbers"):
        kit.compare_derivative("d", np.sin, np.cos, [[1.0, 2.0], [3.0]], step=1e-3,
                               rtol=1e-6, reason="r")


def test_claim_run_refuses_a_non_boolean_negative_control() -> None:
    """An array as negative_control raised numpy's 'truth value is ambiguous'."""
    from verify.claims import get
    with pytest.raises(TypeError, match="negative_control must be True or False"):
        get("H1f").run("quick", 0, negative_control=np.ones(3))


def test_kit_fits_and_instances_refuse_bad_inputs_by_name() -> None:
    """Thorough surface fuzz: loglog_slope/rate_study copied 10^9-entry views (7.45 GiB)
    and met floor = 2**64 with an unnamed numpy TypeError; for_all_instances returned an
    infinite error for strategy = 0 and raised Hypothesis's InvalidArgument for quick = 0."""
    from hypothesis import strategies as st

    from verify import kit
    from verify.claims import get
    view = np.broadcast_to(np.int64(1), (10 ** 9,))
    with pytest.raises(ValueError, match="x has 1e\\+09 entries"):
        kit.loglog_slope(view, view)
    with pytest.raises(ValueError, match="distances has 1e\\+09 entries"):
        kit.rate_study("s", [1.0, 2.0, 4.0], view, predicted=-0.5)
    with pytest.raises(ValueError, match="floor must be a positive number"):
        kit.loglog_slope([1, 2, 4], [1.0, 0.5, 0.25], floor=10 ** 400)
    assert kit.loglog_slope([1, 2, 4], [1.0, 0.5, 0.0], floor=2 ** 64) == 0.0  # all floored
    ctx = get("H1f").context("quick", 0)
    ok = lambda i: kit.SubCheck("m", 0.0, 1.0, "r")  # noqa: E731
    with pytest.raises(TypeError, match="strategy must be a Hypothesis strategy"):
        kit.for_all_instances(ctx, "n", 0, ok)
    with pytest.raises(TypeError, match="name must be a non-empty string"):
        kit.for_all_instances(ctx, -1, st.integers(0, 3), ok)
    with pytest.raises(ValueError, match="quick must be an integer in 1..100000"):
        kit.for_all_instances(ctx, "n", st.integers(0, 3), ok, quick=0)
    assert kit.for_all_instances(ctx, "n", st.integers(0, 3), ok, quick=3).error == 0.0


def test_lambdified_and_datasets_refuse_bad_names_by_name() -> None:
    """An unknown module name and a non-pair range are ValueErrors that say what to give
    (were SymPy's NameError and a KeyError)."""
    import pytest
    from derivations.maass_limit import alpha_sgd, n_width
    from verify import derived, strategies
    with pytest.raises(ValueError, match="unknown module name 'text'"):
        derived.lambdified("M1f", "time_per_step", (n_width, alpha_sgd), modules="text")
    with pytest.raises(ValueError, match="y_range must be a pair"):
        strategies.datasets_1d(y_range={})


_NAN = float("nan")
#: (class, field, bad value, error type): one refusal per kind of bad value of each field
_KIT_REFUSALS = [
    ("SubCheck", "name", 3, TypeError),
    ("SubCheck", "error", "abc", TypeError),
    ("SubCheck", "error", None, TypeError),
    ("SubCheck", "error", 1j, TypeError),
    ("SubCheck", "error", True, TypeError),
    ("SubCheck", "error", np.array([0.1]), TypeError),
    ("SubCheck", "tolerance", "1", TypeError),
    ("SubCheck", "tolerance", _NAN, ValueError),
    ("SubCheck", "tolerance", float("inf"), ValueError),
    ("SubCheck", "reason", 3, TypeError),
    ("SubCheck", "reason", " ", ValueError),
    ("SubCheck", "passed", "yes", TypeError),
    ("SubCheck", "passed", 1, TypeError),
    ("SubCheck", "instances", -1, ValueError),
    ("SubCheck", "instances", 1.5, TypeError),
    ("SubCheck", "counterexample", [1.0], TypeError),
    ("SubCheck", "unit", "meters", ValueError),
    ("SubCheck", "unit", 3, TypeError),
    ("Outcome", "compared", "", ValueError),
    ("Outcome", "compared", None, TypeError),
    ("Outcome", "error", None, TypeError),
    ("Outcome", "tolerance", _NAN, ValueError),
    ("Outcome", "tolerance_reason", 3, TypeError),
    ("Outcome", "details", [], TypeError),
    ("Outcome", "tables", [1], TypeError),
    ("Outcome", "notes", "a note", TypeError),
    ("Outcome", "notes", [3], TypeError),
    ("Outcome", "passed", "no", TypeError),
    ("Outcome", "artifacts", None, TypeError),
    ("RunContext", "claim_id", "", ValueError),
    ("RunContext", "profile", "slow", ValueError),
    ("RunContext", "profile", 1, ValueError),
    ("RunContext", "seed", -1, ValueError),
    ("RunContext", "seed", 1.0, TypeError),
    ("RunContext", "seed", True, TypeError),
    ("RunContext", "negative_control", 1, TypeError),
    ("RunContext", "examples", 0, ValueError),
    ("RunContext", "examples", 2.0, TypeError),
    ("RunContext", "size_items", [("n", 3)], TypeError),
    ("RunContext", "size_items", (("n",),), ValueError),
    ("RunContext", "size_items", (("", 3),), ValueError),
    ("RunContext", "size_items", (("n", [1]),), TypeError),
    ("RunContext", "size_items", (("n", 1), ("n", 2)), ValueError),
    ("Margin", "name", 3, TypeError),
    ("Margin", "error", "x", TypeError),
    ("Margin", "tolerance", _NAN, ValueError),
    ("Margin", "passed", None, TypeError),
    ("Margin", "sense", "below", ValueError),
    ("Margin", "factor", -1.0, ValueError),
    ("Margin", "factor", "x", TypeError),
    ("Margin", "excess", 0.5, ValueError),   # beside a factor: one reading of the bound
    ("Margin", "excess", 1j, TypeError),
    ("Derivation", "steps", "x", TypeError),
    ("Derivation", "steps", [1], TypeError),
    ("Derivation", "results", [], TypeError),
    ("Derivation", "results", {1: 2}, TypeError),
    ("Derivation", "results", {"": 2}, ValueError),
    ("Step", "text", 3, TypeError),
    ("Step", "text", "", ValueError),
    ("Step", "lhs", "", ValueError),
    ("Step", "lhs", 3, TypeError),
]


def _kit_base(cls: str) -> dict:
    """Valid keyword arguments of one of the kit's classes."""
    from verify import kit
    return {"SubCheck": dict(name="n", error=0.1, tolerance=1.0, reason="r"),
            "Outcome": dict(compared="c", error=0.1, tolerance=1.0, tolerance_reason="r"),
            "RunContext": dict(claim_id="H1a", profile="quick", seed=0),
            "Margin": dict(name="n", error=0.1, tolerance=1.0, passed=True, sense="at most",
                           factor=0.1),
            "Derivation": dict(steps=[kit.Step("s")], results={"I": 1}),
            "Step": dict(text="s")}[cls]


@pytest.mark.parametrize("cls, field, bad, error", _KIT_REFUSALS,
                         ids=[f"{c}.{f}={b!r:.12}" for c, f, b, _ in _KIT_REFUSALS])
def test_kit_classes_refuse_bad_fields_by_name(cls, field, bad, error) -> None:
    """A kit class refuses a bad field at construction, naming the class and the field
    (they constructed and failed much later, or never): a wrong kind of value is a
    TypeError, a wrong value of the right kind a ValueError only."""
    from verify import kit
    getattr(kit, cls)(**_kit_base(cls))
    with pytest.raises(error, match=rf"^{cls}: .*{field}") as refused:
        getattr(kit, cls)(**{**_kit_base(cls), field: bad})
    assert isinstance(refused.value, TypeError) == (error is TypeError)


def test_kit_classes_accept_failed_measurements_and_numpy_values() -> None:
    """A nan or inf error is a failed measurement (kept, fails); a signed tolerance is a
    bound on a rate; numpy scalars are numbers and verdicts; an unnamed SubCheck is one
    instance's measurement (for_all_instances names it), which combine refuses."""
    from verify import kit
    assert not kit.SubCheck("n", _NAN, 1.0, "r").ok()
    assert not kit.Outcome("c", float("inf"), 1.0, "r").verdict()
    assert kit.SubCheck("rate", np.float32(-0.5), -0.25, "must be <= -1/4", unit="slope").ok()
    assert not kit.SubCheck("n", 0.0, 1, "r", passed=np.bool_(False), instances=np.int64(3)).ok()
    ctx = kit.RunContext("H1a", "quick", np.int64(3), np.bool_(True), np.int32(5), (("n", 3),))
    assert (ctx.seed, ctx.negative_control, ctx.examples) == (3, True, 5)
    assert type(ctx.seed) is int and ctx.shared() == kit.RunContext("H1a", "quick", 3, False, 5,
                                                                    (("n", 3),))
    assert kit.margin(_NAN, 1.0, False).severity() == float("inf")
    assert kit.Step("", expr=1, lhs="I").text == ""
    with pytest.raises(ValueError, match=r"^combine: subchecks \[0\] have an empty name"):
        kit.combine("c", [kit.SubCheck("", 0.0, 1.0, "r")])
