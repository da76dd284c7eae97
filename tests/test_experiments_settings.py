"""Experiment settings: declared types and ranges, one-line errors naming the setting and
the allowed values, memory estimates, describe_settings, output validation up front."""
from __future__ import annotations

import pytest

from verify import experiments as E
from verify.experiments import Experiment, Setting

BAD = [  # (experiment, --set item, setting named in the message)
    ("williams-fig1", "m=-5", "m"),
    ("williams-fig1", "s=0", "s"),
    ("williams-fig1", "T=-1", "T"),
    ("williams-fig1", "delta=nan", "delta"),
    ("williams-fig1", "m=1e30", "m"),
    ("williams-fig1", "m=2.5", "m"),
    ("williams-fig1", "T=inf", "T"),
    ("odd-target", "d=0", "d"),
    ("odd-target", "steps=-1", "steps"),
    ("odd-target", "eta=1e9", "eta"),
    ("odd-target", "eta=nan", "eta"),
    ("odd-target", "eta=abc", "eta"),
    ("hajjar-fig3", "steps=-5", "steps"),
    ("hajjar-fig3", "d_H=30", "d_H"),
    ("maass-rmd", "T=nan", "T"),
    ("maass-rmd", "Ns=5,,10", "Ns"),
    ("maass-rmd", "Ns=5,0", "Ns"),
    ("williams-fig2", "deltas=", "deltas"),
]


def _msg(exc: BaseException) -> str:
    msg = str(exc)
    assert msg and "\n" not in msg
    assert msg[0] not in "'\"" and msg[-1] not in "'\"", msg  # no stray quotes
    return msg


@pytest.mark.parametrize("name,item,key", BAD)
def test_bad_values_name_setting_and_range(name, item, key):
    exp = E.get(name)
    with pytest.raises(ValueError) as ei:
        E.parse_settings(exp, [item], "quick")
    msg = _msg(ei.value)
    assert key in msg
    if key != "d_H":  # d_H=30 breaks the relation d_H < d, not its own range
        assert E.setting_spec(exp, key).range_text() in msg


@pytest.mark.parametrize("item", ["m", "", "=5", "mm=3"])
def test_malformed_and_unknown(item):
    with pytest.raises(ValueError) as ei:
        E.parse_settings(E.get("williams-fig1"), [item], "quick")
    msg = _msg(ei.value)
    assert "KEY=VALUE" in msg or "no setting" in msg
    if item == "mm=3":
        assert "did you mean m" in msg


def test_unknown_experiment_message_has_no_quotes():
    with pytest.raises(KeyError) as ei:
        E.get("willams-fig1")
    assert "williams-fig1" in _msg(ei.value)


@pytest.mark.parametrize("exp", E.all_experiments(), ids=lambda e: e.name)
def test_every_default_and_profile_is_valid_and_described(exp):
    for profile in ("quick", "full"):
        params = E.parse_settings(exp, [], profile)
        assert set(params) == set(exp.defaults)
    lines = E.describe_settings(exp)
    assert len(lines) == len(exp.defaults)
    for key in exp.defaults:
        line = next(ln for ln in lines if ln.startswith(f"{key}="))
        spec = E.setting_spec(exp, key)
        assert spec.kind in line and spec.range_text() in line


def test_values_parse_to_declared_types():
    p = E.parse_settings(E.get("williams-fig1"), ["m=1e3", "T=7", "delta=-3"], "quick")
    assert p["m"] == 1000 and isinstance(p["m"], int)
    assert p["T"] == 7.0 and isinstance(p["T"], float)
    p = E.parse_settings(E.get("maass-rmd"), ["Ns=5, 20", "teachers=WI"], "quick")
    assert p["Ns"] == [5, 20] and p["teachers"] == ["WI"]


def _toy(**kw) -> Experiment:
    return Experiment("toy", "toy", lambda p, prof, seed: ({}, None),
                      {"m": 10, "rate": 0.5, "mode": "a", "flag": False, "n": 100}, **kw)


def test_explicit_spec_overrides_inference():
    exp = _toy(settings={"rate": Setting("float", 0.5, 0.0, 1.0, lo_open=True, doc="a rate"),
                         "mode": Setting("str", "a", choices=("a", "b"))})
    assert E.parse_settings(exp, ["rate=1", "mode=b", "flag=yes"], "quick")["flag"] is True
    with pytest.raises(ValueError, match=r"rate must be a number in \(0, 1\]"):
        E.parse_settings(exp, ["rate=1.5"], "quick")
    with pytest.raises(ValueError, match="one of a, b"):
        E.parse_settings(exp, ["mode=c"], "quick")
    with pytest.raises(ValueError, match="true or false"):
        E.parse_settings(exp, ["flag=maybe"], "quick")
    assert any("a rate" in ln for ln in E.describe_settings(exp))


def test_memory_estimate_refuses_absurd_sizes(monkeypatch):
    exp = _toy(memory_bytes=lambda p: 8.0 * p["m"] * p["n"])
    E.parse_settings(exp, ["m=1000"], "quick")
    with pytest.raises(ValueError, match="GiB of memory"):
        E.parse_settings(exp, ["m=1000000", "n=1000000"], "quick")
    # the generic estimate (m x n activations) applies without a declared one
    with pytest.raises(ValueError, match="GiB of memory"):
        E.parse_settings(E.get("odd-target"), ["m=1000000", "n=1000000"], "quick")
    monkeypatch.setenv("MEANFIELD_VERIFY_MEMORY_LIMIT", "1000")
    with pytest.raises(ValueError, match="memory"):
        E.parse_settings(exp, ["m=1000"], "quick")


def test_constraints_hook():
    def need_even(p):
        if p["m"] % 2:
            raise ValueError("setting m of toy must be even")
    exp = _toy(constraints=need_even)
    with pytest.raises(ValueError, match="even"):
        E.parse_settings(exp, ["m=3"], "quick")


def test_prepare_validates_output_before_running(tmp_path):
    called = []
    exp = Experiment("toy", "toy", lambda p, prof, seed: called.append(1) or ({}, None), {"m": 1})
    E._load()["toy"] = exp
    try:
        (tmp_path / "f").write_text("x")
        with pytest.raises(ValueError, match="is a file"):
            E.run("toy", [], tmp_path / "f")
        (tmp_path / "o" / "toy.json").mkdir(parents=True)
        with pytest.raises(ValueError, match="is a directory|holding files the experiments did not write"):
            E.run("toy", [], tmp_path / "o")
        assert not called
        E.run("toy", ["m=2"], tmp_path / "new")
        assert called and (tmp_path / "new" / "toy.json").is_file()
    finally:
        del E._load()["toy"]


@pytest.mark.parametrize("item", ["m=-5", "m", "delta=nan", "m=1e30"])
def test_cli_one_line_exit_2(item, capsys):
    from verify.cli import main
    assert main(["experiment", "williams-fig1", "--set", item]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not err.endswith(("'", '"'))


def test_declared_choices_refuse_a_typo_and_are_listed(capsys):
    """``Experiment.choices`` declares the values of a text setting: a typo is a one-line
    exit 2 before any work, and ``--list`` shows the choices."""
    from verify.cli import main
    ran = []
    toy = Experiment("toy-choices", "toy", lambda p, prof, seed: ran.append(1) or ({}, None),
                     defaults={"init": "uniform", "m": 3},
                     choices={"init": ("uniform", "gaussian")})
    E._load()["toy-choices"] = toy
    try:
        assert E.setting_spec(toy, "init").choices == ("uniform", "gaussian")
        assert E.parse_settings(toy, ["init=gaussian"], "quick")["init"] == "gaussian"
        assert main(["experiment", "toy-choices", "--set", "init=unifrom"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert "init" in err and "uniform, gaussian" in err
        assert main(["experiment", "--list"]) == 0
        assert "init=uniform (str, one of uniform, gaussian)" in capsys.readouterr().out
        assert ran == []
    finally:
        del E._load()["toy-choices"]


def test_choices_must_name_settings():
    with pytest.raises(ValueError, match="not a setting"):
        Experiment("x", "x", lambda *a: ({}, None), defaults={"m": 1}, choices={"init": ("a",)})
    with pytest.raises(ValueError, match="non-empty"):
        Experiment("x", "x", lambda *a: ({}, None), defaults={"init": "a"}, choices={"init": ()})


# Text settings whose experiment module does not declare its choices yet; each entry is a
# finding (a typo reaches the run and ends in a traceback).  Remove an entry when its
# module declares ``choices``; a new undeclared text setting fails the test.
_UNDECLARED_TEXT_SETTINGS: set[tuple[str, str]] = set()


def test_every_text_setting_declares_its_choices():
    undeclared = {(exp.name, key) for exp in E.all_experiments() for key in exp.defaults
                  if E.setting_spec(exp, key).scalar_kind == "str"
                  and not E.setting_spec(exp, key).choices}
    assert undeclared <= _UNDECLARED_TEXT_SETTINGS, sorted(undeclared - _UNDECLARED_TEXT_SETTINGS)
