"""numerics.population (the width-m system of claim H1i) and the H1i study helpers of
verify.studies.hajjar."""
import numpy as np
import pytest

from numerics import gaussian_relu as gr
from numerics import population as pop
from verify.studies import hajjar as sh


def _particles(m=40, d=7, seed=0):
    rng = np.random.default_rng(seed)
    a, B = sh.init_particles(rng, m, d)
    return a * rng.uniform(0.5, 2.0, m), B * rng.uniform(0.5, 1.5, (m, 1))


def test_gradient_matches_the_loss_gradient_of_gaussian_relu():
    a, B = _particles()
    r, w = sh.target_rule(3)
    ga, gB = pop.population_gradient(a, B, 3, 1 / 7, r, w)
    _, (ga2, gB2) = gr.population_loss_and_grad_norm_target(a, B, 3, 1 / 7, r, w)
    assert np.abs(ga - ga2).max() <= 1e-14 * np.abs(ga2).max()
    assert np.abs(gB - gB2).max() <= 1e-14 * np.abs(gB2).max()


def test_gradient_is_the_derivative_of_the_population_loss():
    a, B = _particles(m=6, d=5, seed=1)
    r, w = sh.target_rule(2)
    ga, gB = pop.population_gradient(a, B, 2, 0.2, r, w)
    loss = lambda a_, B_: gr.population_loss_and_grad_norm_target(a_, B_, 2, 0.2, r, w)[0]  # noqa: E731
    h = 1e-6
    e = np.zeros_like(B)
    e[2, 3] = h
    fd = (loss(a, B + e) - loss(a, B - e)) / (2 * h)
    assert abs(fd - gB[2, 3]) <= 1e-8


def test_rk4_decreases_the_loss_and_refuses_large_runs():
    a, B = _particles(m=20, d=6, seed=2)
    r, w = sh.target_rule(2)
    loss = lambda a_, B_: gr.population_loss_and_grad_norm_target(a_, B_, 2, 1 / 6, r, w)[0]  # noqa: E731
    a1, B1 = pop.rk4_gradient_flow(a, B, 2, 1 / 6, r, w, 20.0, 5)
    assert loss(a1, B1) < loss(a, B)
    with pytest.raises(ValueError, match="work of the run"):
        pop.rk4_gradient_flow(a, B, 2, 1 / 6, r, w, 1.0, 10 ** 12)


@pytest.mark.parametrize("bad, match", [
    (dict(B=np.zeros((3, 4))), "non-zero"),
    (dict(a=np.ones(2)), "both must be m"),
    (dict(d_H=4), "d_H"),
    (dict(s2=-1.0), "s2"),
    (dict(r_nodes=np.array([2.0]), r_weights=np.array([1.0])), "r_nodes"),
])
def test_population_gradient_names_bad_arguments(bad, match):
    rng = np.random.default_rng(0)
    args = dict(a=np.ones(3), B=rng.standard_normal((3, 4)), d_H=2, s2=0.25,
                r_nodes=np.array([-0.5, 0.5]), r_weights=np.array([1.0, 1.0]))
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        pop.population_gradient(**args)


def test_limit_initial_state_is_a_quadrature_of_the_initial_law():
    st = sh.limit_initial_state(10, 3, 12)
    n = 12
    # total mass per sign = 1/2 of the unit mass (c = 1), in the (1/M) sum c_j form
    assert abs(st.c[:n].sum() / (2 * n) - 0.5) < 1e-14
    # E cos^2 theta = d_H / d (Beta(d_H/2, (d-d_H)/2) mean), exact for the rule
    assert abs(st.c[:n] @ np.cos(st.theta[:n]) ** 2 / n - 0.3) < 1e-13


def test_parameter_step_inverts_the_time_change():
    assert abs(sh.parameter_step(lambda e, m: e / m, 64, 0.5) - 32.0) < 1e-12
    with pytest.raises(ValueError, match="no positive learning rate"):
        sh.parameter_step(lambda e, m: e / m + 1.0, 64, 0.5)
