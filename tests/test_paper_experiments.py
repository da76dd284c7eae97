"""The papers' own experiments at the papers' settings (quick profiles) and the unit
conventions that map the suite to the sources (numerics.paper_units,
docs/conventions-mapping.md)."""
from __future__ import annotations

import numpy as np
import pytest

from numerics import paper_units as pu


# ------------------------------------------------------------------ conventions
def test_hajjar_time_unit_factor_is_the_data_second_moment():
    assert pu.hajjar_data_second_moment(30, "paper") == 30.0
    assert pu.hajjar_data_second_moment(30, "suite") == 1.0
    assert pu.hajjar_step_to_suite(5e-3, 30, "paper") == pytest.approx(0.15, rel=1e-15)
    assert pu.hajjar_time_from_suite(3000.0, 30, "paper") == 100.0
    with pytest.raises(ValueError, match="time_unit"):
        pu.hajjar_data_second_moment(30, "authors")
    with pytest.raises(ValueError, match="step"):
        pu.hajjar_step_to_suite(-1.0, 30, "paper")


def test_authors_data_scale_is_time_rescaling_in_the_full_particle_system():
    """GD on x ~ N(0, I_d) (the authors' data) with step eta equals GD on x / sqrt(d)
    (the suite's data N(0, I_d / d)) with step d * eta: the predictor and the target
    |x_H| are 1-homogeneous, so the loss (and its gradient) scales by E|x|^2 = d.  This
    is an independent check of t_authors = t_suite / d: only the data are rescaled."""
    from numerics import twolayer as tl
    rng = np.random.default_rng(7)
    d, d_H, m, n, eta, steps = 6, 2, 40, 300, 2e-3, 60
    X = rng.standard_normal((n, d))
    Y = np.linalg.norm(X[:, :d_H], axis=1)
    B0 = rng.standard_normal((m, d))
    B0 /= np.linalg.norm(B0, axis=1, keepdims=True)
    a0 = rng.choice([-1.0, 1.0], size=m)
    ours = tl.gradient_descent(a0, B0, X / np.sqrt(d), Y / np.sqrt(d),
                               pu.hajjar_step_to_suite(eta, d, "paper"), steps)
    theirs = tl.gradient_descent(a0, B0, X, Y, eta, steps)
    # rounding: a few ulps per step, amplified at most by the (contracting) GD map over 60
    # steps: 1e-12 is far above 60 * 1e-15 and far below any O(eta) discrepancy
    assert np.max(np.abs(ours.a - theirs.a)) < 1e-12
    assert np.max(np.abs(ours.B - theirs.B)) < 1e-12
    # near miss: the same comparison without the factor d is off by O(1)
    wrong = tl.gradient_descent(a0, B0, X / np.sqrt(d), Y / np.sqrt(d), eta, steps)
    assert np.max(np.abs(wrong.a - theirs.a)) > 1e-3


def test_hajjar_fig3_time_units_are_one_switch_apart(tmp_path):
    from verify.experiments import run
    common = ["m=32", "steps=40", "n_theta=33", "n_phi=8"]
    paper = run("hajjar-fig3", common + ["time_unit=paper", "step=5e-3"], tmp_path / "p")["data"]
    suite = run("hajjar-fig3", common + ["time_unit=suite", "step=0.15"], tmp_path / "s")["data"]
    assert paper["data_second_moment"] == 30.0 and suite["data_second_moment"] == 1.0
    assert np.array_equal(paper["plus_mass"], suite["plus_mass"])
    assert np.array_equal(paper["minus_mass"], suite["minus_mass"])
    assert np.allclose(np.asarray(paper["times"]) * 30.0, suite["times"], rtol=1e-15, atol=0)
    assert paper["times"][-1] == pytest.approx(40 * 5e-3, rel=1e-14)


def test_reproduction_loss_convention_maps_to_the_suite_sgd():
    """200 noisy SGD steps written in the reproduction's convention (loss |y - y'|^2,
    step alpha_R / N on the mean loss, penalty tau_R |z|^2, noise sqrt(2 beta_R alpha_R / N))
    agree with numerics.equivariant.train at (2 alpha_R, tau_R / 2, beta_R / 2)."""
    from numerics.equivariant import (LogisticUnit, SGDConfig, X_STD, init_particles,
                                      model_output, train)
    from numerics.groups import c2_swap
    G, u = c2_swap(), LogisticUnit(2, 2)
    aR, tR, bR, N, batch, steps = 50.0, 1e-4, 1e-6, 10, 20, 200
    a, t, b = pu.reproduction_sgd_to_suite(aR, tR, bR)
    assert (a, t, b) == (100.0, 5e-5, 5e-7)
    assert pu.suite_sgd_to_reproduction(a, t, b) == (aR, tR, bR)
    teacher = np.random.default_rng(1).standard_normal((5, 4))
    th0 = init_particles("iid", N, u, G, np.random.default_rng(2))
    th_suite, _ = train(u, G, th0, teacher, "vanilla",
                        SGDConfig(alpha=a, tau=t, beta=b, batch=batch, steps=steps),
                        np.random.default_rng(3), np.random.default_rng(4))
    rd, rn = np.random.default_rng(3), np.random.default_rng(4)
    th = th0.copy()
    for _ in range(steps):
        x = X_STD * rd.standard_normal((1, batch, 2))[0]
        y = model_output(u, x, teacher)
        resid = model_output(u, x, th) - y
        # gradient of mean_b |Phi(x_b) - y_b|^2 + tau_R mean_i |theta_i|^2 w.r.t. theta_i
        grad = (2.0 * u.vjp(x, th, resid) + 2.0 * tR * th) / N
        th = th - aR * grad + np.sqrt(2 * bR * aR / N) * rn.standard_normal((1, N, 4))[0]
    assert np.max(np.abs(th - th_suite)) < 1e-12
    with pytest.raises(ValueError, match="alpha"):
        pu.reproduction_sgd_to_suite(0.0, 1e-4, 1e-6)
    with pytest.raises(ValueError, match="loss convention"):
        pu.reproduction_sgd_to_suite(50.0, 1e-4, 1e-6, "half")


# ------------------------------------------------------------------ Hajjar & Chizat
def test_hajjar_fig3_quick_reports_paper_time_and_t_star(tmp_path):
    from verify.experiments import run
    data = run("hajjar-fig3", [], tmp_path)["data"]
    assert data["time_unit"] == "paper"
    assert data["times"][-1] == pytest.approx(10.0)           # 2000 steps of 5e-3
    # t* (first time the tau+ mass exceeds alpha = 16/3) lies inside the run: ~3.4
    assert 1.0 < data["t_star"] < 10.0
    post = data["post_t_star"]
    assert post["plus_mass_end"] > data["alpha"]
    assert post["minus_mass_end"] > post["minus_mass_min"]   # tau- mass drifts back up
    assert "authors_comparison" not in data                    # horizon 10 < 100


def test_alpha_table_ratios_decrease_toward_one(tmp_path):
    from verify.experiments import run
    data = run("hajjar-alpha-table", [], tmp_path)["data"]
    r = np.asarray(data["ratios"])
    assert data["d_Hs"] == [2, 10, 35]
    assert data["ratios_decreasing"] and np.all(np.diff(r) < 0)
    assert np.all(r > 1.0) and r[-1] - 1 < 0.01 < r[0] - 1
    # the authors' published ratios at the same d_H decrease as well
    assert np.all(np.diff(data["authors_ratios"]) < 0)
    # their printed lists are at t = 10 (2000 steps): the tau- masses, the sensitive part,
    # agree within a few percent already at m = 128 (measured 3.5 %, 0.7 %, 1.1 %); at
    # t = 100 they would be 1.5-3 times larger
    assert data["t_end"] == pytest.approx(10.0)
    for row in data["rows"]:
        assert abs(row["relative_difference_minus"]) < 0.06
        assert abs(row["relative_difference_plus"]) < 0.01


# ------------------------------------------------------------------ Maass & Fontbona
def test_maass_rmd_quick_physics(tmp_path):
    from verify.experiments import run
    data = run("maass-rmd", [], tmp_path)["data"]
    r = data["rmd2_to_EG"]
    assert set(r) == {"arbitrary", "WI", "SI"}
    for tk in r:
        for init in ("SI", "WI"):
            assert max(r[tk][init]["EA"]) < 1e-28           # EA never leaves E^G
        for sc in ("DA", "FA"):                             # exact at any N from SI
            assert max(r[tk]["SI"][sc]) < 1e-24
    # vanilla leaves E^G with the arbitrary teacher; from WI the particles are off E^G
    assert min(r["arbitrary"]["SI"]["vanilla"]) > 1e-2
    assert min(r["WI"]["WI"]["vanilla"]) > 1e-2


def test_maass_fixed_teachers_are_invariant_as_stated():
    from verify.experiments.maass import fixed_teacher, setup
    for unit in ("matrix", "uv"):
        G, _ = setup(unit)
        si = fixed_teacher("SI", unit, G)
        assert np.max(np.abs(G.project(si) - si)) < 1e-15
        wi = fixed_teacher("WI", unit, G)
        assert wi.shape == (10, 4)
        images = G.act(wi).reshape(-1, 4)
        assert {tuple(np.round(z, 12)) for z in images} == {tuple(np.round(z, 12)) for z in wi}
        arb = fixed_teacher("arbitrary", unit, G)
        assert np.max(np.abs(G.project(arb) - arb)) > 0.1


def test_maass_instability_grows(tmp_path):
    from verify.experiments import run
    data = run("maass-instability", [], tmp_path)["data"]
    rows = {(r["teacher"], r["scheme"]): r for r in data["runs"]}
    for sc in ("FA", "DA"):
        row = rows[("arbitrary", sc)]
        assert row["amplification"] > 1e4                   # measured 1.5e8 (FA), 2.9e7 (DA)
        assert row["rmd2_final_unperturbed"] < 1e-20         # rounding level
    assert data["summary"]["max_rmd2_unperturbed"] < 1e-20


def test_authors_monte_carlo_field_is_unbiased():
    """numerics.reduced_mc (the authors' estimator) averages to the quadrature field of
    numerics.reduced: |mean - G| <= 5 standard errors for each of 2 x 32 components
    (two-sided normal tail 5.7e-7 each: false alarm <= 4e-5 per run, union bound)."""
    from numerics import reduced as rd
    from numerics import reduced_mc as mc
    d, d_H, K = 30, 5, 200
    rng = np.random.default_rng(11)
    st = rd.initial_state(np.random.default_rng(1), np.random.default_rng(2), 32, d, d_H)
    st.c = st.c * rng.uniform(0.5, 2.0, size=32)          # a generic (non-initial) state
    from verify.formulas.hajjar import phi_kernel
    _, G, dG, _ = rd.reduced_loss_and_field(st, rd.PhiTable(d, d_H, 129, 48, kernel=phi_kernel()))
    est = np.array([mc.field_estimate(st, mc.sample_nodes(rng, 500, d, d_H))[1:]
                    for _ in range(K)])                     # (K, 2, 32)
    se = est.std(axis=0, ddof=1) / np.sqrt(K)
    z = np.abs(est.mean(axis=0) - np.array([G, dG])) / se
    assert z.max() < 5.0
    # near miss: a field 5% too large is detected (sensitivity of the test)
    z_wrong = np.abs(est.mean(axis=0) - 1.05 * np.array([G, dG])) / se
    assert z_wrong.max() > 5.0
