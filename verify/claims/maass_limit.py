"""Claim M1f: Maass Martinez & Fontbona (2024), main theorem, checked by its rate: width-N
noisy SGD at step alpha/N converges to the mean-field (Wasserstein gradient) flow as
N -> infinity, at the fluctuation rate N^-1/2: in the noiseless case beta = 0 (penalty
tau > 0), where the limit is deterministic transport of the initial law, and at beta > 0
for the linear unit, where the McKean-Vlasov law is Gaussian with a derived closed form
(mean f(t) M*, covariance c(t) I), and for the non-linear unit tanh(z x), whose law solves a
1-D nonlinear Fokker-Planck equation (``verify/claims/_maass_noisy.py``, reference
``numerics.mckean_vlasov``); t -> infinity: the Gibbs minimiser of the entropic risk.

The derivation (derivations/maass_limit.py) gives the flow time per SGD step, alpha/N,
from the step's mean (drift) and, identically, from its variance (noise).  The system
under test is ``numerics.equivariant.train`` (vanilla scheme, minibatches of fresh data);
the limit reference is ``numerics.equivariant_limit``: Gauss-Hermite quadratures of the
initial law and of the data law moved by the population velocity (RK4), which never
samples.  At beta > 0 the linear unit's SGD runs by ``numerics.equivariant_linear``
(the particles' mean by the SGD recursion, the deviations exactly in law: O(steps + N) per
run, pathwise equal to ``train`` given its noise, a sub-check), which takes that study to
N = 2^20 in the full profile; the logistic and tanh studies cost O(N^2) per run (N/alpha
steps per unit of flow time, O(N) each) and stop at 16384 and 8192.  The near miss
``LATE_LIMIT`` reads the limit at 1.2 T (the time per step off by 20%): the distances
then plateau."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy import stats

from numerics import equivariant as eq
from numerics import equivariant_limit as el
from numerics.equivariant_linear import train_linear
from numerics.groups import c2_swap
from numerics.validation import long_runs
from verify.claims._maass_noisy import (gibbs_limit_check, nonlinear_study, stationary_study,
                                        time_per_step)
from verify.kit import (Claim, Evidence, Outcome, RunContext, SubCheck, Table, combine,
                        compare, derived_generation, fmt, lambdified, rate_study)

#: the verified run reads the limit at the time T itself ...
EXACT = 1.0
#: ... the near miss at 1.2 T: the derived time per step alpha/N off by 20% (the limit's
#: predictor moves by ~5e-3 over 0.2 T, above the fluctuations ~0.1 N^-1/2 from N ~ 500 on;
#: a 10% error shifts it by ~2.7e-3, which the quick widths up to 2048 do not resolve)
LATE_LIMIT = 1.20
_STUDY = ("||Phi_N(T) - Phi_inf(T)||_L2(pi_X) vs width N: noisy SGD (beta = 0) vs the "
          "quadrature of the mean-field flow")
#: the reference may contribute at most this fraction of the smallest mean distance
_BIAS_FRACTION = 0.05
#: the unit, group and teacher of the study (the paper's reference experiment's unit and
#: group; C_2 plays no role for the vanilla scheme)
_TEACHER_SEED = 0
#: the linear unit's parameter dimension (2 x 2)
D_Z = 4


def _setting(linear: bool = False):
    """(unit, group, teacher) of the beta = 0 study (logistic unit) or, ``linear``, of the
    beta > 0 study (linear unit, whose McKean-Vlasov law is Gaussian)."""
    unit = eq.LinearUnit(2, 2) if linear else eq.LogisticUnit(2, 2)
    group = c2_swap()
    from numerics.rng import make_rng
    tag = "M1f linear teacher" if linear else "M1f teacher"
    teacher = eq.make_teacher("arbitrary", unit, group, make_rng(_TEACHER_SEED, tag))
    return unit, group, teacher


def _eval_rule(sz: dict) -> tuple[np.ndarray, np.ndarray]:
    return el.gauss_hermite_product(2, sz["n_eval"], sz["x_std"])


def _distance(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> float:
    """||a - b||_L2(pi_X) by the evaluation rule (weights), a and b (B, dY)."""
    return float(np.sqrt(weights @ np.sum((a - b) ** 2, axis=1)))


@lru_cache(maxsize=4)
def _limit(T: float, x_std: float, tau: float, nq: int, nx: int, rk4: int, n_eval: int) -> np.ndarray:
    """Phi_inf(T) at the evaluation nodes: the Gauss-Hermite rule of mu_0 (nq nodes per
    coordinate) moved by the population flow (data rule nx^2, ``rk4`` RK4 steps)."""
    unit, _, teacher = _setting()
    xg, xw = el.gauss_hermite_product(2, nx, x_std)
    yg = el.weighted_output(unit, xg, teacher, np.full(teacher.shape[0], 1.0 / teacher.shape[0]))
    th0, w0 = el.gauss_hermite_product(unit.dim_z, nq, eq.STUDENT_STD)
    th = el.meanfield_flow(unit, th0, w0, xg, xw, yg, tau=tau, t_end=T, steps=rk4)
    return el.weighted_output(unit, el.gauss_hermite_product(2, n_eval, x_std)[0], th, w0)


@lru_cache(maxsize=2)
def _width_runs(run: RunContext, widths: tuple, seeds: int, alpha: float, T: float,
                x_std: float, tau: float, batch: int, n_eval: int, generation: int):
    """Phi_N(T) at the evaluation nodes for every width and seed, SGD steps T / (derived time
    per step); cached (the check and its near miss share the runs; a mutated time per step
    is a new key through the derived generation)."""
    del generation
    unit, group, teacher = _setting()
    xe = el.gauss_hermite_product(2, n_eval, x_std)[0]
    F = np.empty((len(widths), seeds, xe.shape[0], unit.dim_y))
    steps = []
    for i, N in enumerate(widths):
        n_steps = int(round(T / time_per_step(N, alpha)))
        steps.append(n_steps)
        cfg = eq.SGDConfig(alpha=alpha, tau=tau, beta=0.0, batch=batch, steps=n_steps, x_std=x_std)
        for k in range(seeds):
            th0 = eq.init_particles("iid", N, unit, group, run.rng("init", N, k))
            with long_runs():
                th, _ = eq.train(unit, group, th0, teacher, "vanilla", cfg, run.rng("data", N, k),
                                 run.rng("noise", N, k))
            F[i, k] = el.weighted_output(unit, xe, th, np.full(N, 1.0 / N))
    return F, tuple(steps)


_STUDY_BETA = ("distance of the width-N particles' mean and covariance to the Gaussian "
               "McKean-Vlasov law N(f(T) M*, c(T) I) vs width N: noisy SGD at beta > 0, linear unit")


@lru_cache(maxsize=2)
def _linear_runs(run: RunContext, widths: tuple, seeds: int, alpha: float, T: float,
                 x_std: float, tau: float, beta: float, batch: int, generation: int):
    """(mean, covariance) of the particles after T / (derived time per step) steps of noisy
    SGD (vanilla, beta > 0) for the linear unit, every width and seed, by the exact-in-law
    decomposition numerics.equivariant_linear (O(steps + N) per run; :func:`_linear_engine_check`
    ties it to numerics.equivariant.train pathwise); cached like :func:`_width_runs`."""
    del generation
    unit, group, teacher = _setting(linear=True)
    means = np.empty((len(widths), seeds, unit.dim_z))
    covs = np.empty((len(widths), seeds, unit.dim_z, unit.dim_z))
    for i, N in enumerate(widths):
        cfg = eq.SGDConfig(alpha=alpha, tau=tau, beta=beta, batch=batch,
                           steps=int(round(T / time_per_step(N, alpha))), x_std=x_std)
        for k in range(seeds):
            th0 = eq.init_particles("iid", N, unit, group, run.rng("linear init", N, k))
            th = train_linear(unit, th0, teacher, cfg, run.rng("linear data", N, k),
                              run.rng("linear noise", N, k))
            means[i, k], covs[i, k] = th.mean(axis=0), np.cov(th.T, bias=True)
    return means, covs


def _linear_engine_check(ctx: RunContext, sz: dict) -> SubCheck:
    """The engine of the beta > 0 study (numerics.equivariant_linear) against
    numerics.equivariant.train pathwise: same particles, data stream and the standard normals
    train draws for its noise, at the study's (alpha, tau, beta, batch), N = 1024 over 600
    steps (two of train's pre-drawn chunks)."""
    unit, group, teacher = _setting(linear=True)
    N, K = 1024, 600
    cfg = eq.SGDConfig(alpha=sz["alpha"], tau=sz["tau"], beta=sz["beta"], batch=sz["batch"],
                       steps=K, x_std=sz["x_std"])
    th0 = eq.init_particles("iid", N, unit, group, ctx.rng("linear engine", "init"))
    ref, _ = eq.train(unit, group, th0, teacher, "vanilla", cfg, ctx.rng("linear engine", "data"),
                      ctx.rng("linear engine", "noise"))
    xi = ctx.rng("linear engine", "noise").standard_normal((K, N, unit.dim_z))
    out = train_linear(unit, th0, teacher, cfg, ctx.rng("linear engine", "data"),
                       ctx.rng("linear engine", "noise"), xi=xi)
    scale = float(np.abs(ref).max())
    return compare(f"the beta > 0 study's engine (mean recursion composed as affine maps, "
                   f"deviations a^K delta_0 + sqrt(2 beta s) (W - Wbar)) = numerics.equivariant."
                   f"train pathwise, N = {N}, {K} steps", out / scale, ref / scale, rtol=0.0,
                   atol=1e-12,
                   reason="the same sums in another order: K = 600 steps of contractions "
                          "(|A| < 1) each rounding at ~1e-16 of the particles' scale, <= ~1e-13", unit="relative")


def _gaussian_limit(t: float, x_std: float, tau: float, beta: float) -> tuple[np.ndarray, float]:
    """The derived McKean-Vlasov law of the linear unit at time t: (mean f(t) M*, variance c(t))."""
    from derivations.maass_limit import closure_symbols
    ts, taus, betas, sxs, s0s = closure_symbols()
    args = (ts, taus, betas, sxs, s0s)
    vals = (t, tau, beta, x_std, eq.STUDENT_STD)
    f = float(lambdified("M1f", "mean_factor", args, modules="numpy")(*vals))
    c = float(lambdified("M1f", "variance", args, modules="numpy")(*vals))
    return f * _setting(linear=True)[2].mean(axis=0), c


def _beta_study(ctx: RunContext, sz: dict, time_factor: float):
    """The beta > 0 width study: distance of the particles' (mean, covariance) to the derived
    Gaussian law read at time_factor * T."""
    widths = tuple(sz["beta_widths"])
    means, covs = _linear_runs(ctx.shared(), widths, sz["beta_seeds"], sz["alpha"], sz["T"],
                               sz["x_std"], sz["tau"], sz["beta"], sz["batch"], derived_generation())
    m_inf, c_inf = _gaussian_limit(sz["T"] * time_factor, sz["x_std"], sz["tau"], sz["beta"])
    eye = np.eye(means.shape[-1])
    D = np.sqrt(np.sum((means - m_inf) ** 2, axis=-1)
                + np.sum((covs - c_inf * eye) ** 2, axis=(-2, -1)))
    return rate_study(_STUDY_BETA, widths, D, predicted=-0.5, level=0.999), c_inf


def _moment_ode(x_std: float, tau: float, beta: float, m0: np.ndarray, c0: float, t_end: float):
    """The Ito moment ODEs of the numerics' drift for the linear unit, integrated by DOP853 from
    mean m0 and covariance c0 I: dm/dt = v(m; m) with v(z; m) the population velocity of
    numerics.equivariant_limit at z under a law of mean m (the linear unit's model depends on
    the law through its mean only; E v = v(m; m) as v is affine in z), dC/dt = J C + C J^T +
    2 beta I with J the Jacobian of v in z at fixed law (central differences, exact for an
    affine v).  Returns (dense solution, dimension D, M*)."""
    from scipy.integrate import solve_ivp
    unit, _, teacher = _setting(linear=True)
    x, xw = el.gauss_hermite_product(2, 4, x_std)      # exact for these quadratics
    y = el.weighted_output(unit, x, teacher, np.full(teacher.shape[0], 1.0 / teacher.shape[0]))

    def v(z: np.ndarray, m: np.ndarray) -> np.ndarray:   # the drift at z of the law with mean m
        return el.population_velocity(unit, np.stack([m, z]), np.array([1.0, 0.0]), x, xw, y, tau)[1]
    D = unit.dim_z
    zero = np.zeros(D)
    J = np.column_stack([(v(np.eye(D)[k], zero) - v(-np.eye(D)[k], zero)) / 2 for k in range(D)])

    def rhs(_: float, u: np.ndarray) -> np.ndarray:
        C = u[D:].reshape(D, D)
        return np.concatenate([v(u[:D], u[:D]), (J @ C + C @ J.T + 2 * beta * np.eye(D)).ravel()])
    u0 = np.concatenate([m0, (c0 * np.eye(D)).ravel()])
    sol = solve_ivp(rhs, (0.0, t_end), u0, method="DOP853", rtol=1e-12, atol=1e-14, dense_output=True)
    return sol.sol, D, teacher.mean(axis=0)


def _closure_check(sz: dict) -> SubCheck:
    """The derived Gaussian law (mean f(t) M*, variance c(t)) against the Ito moment ODEs of
    the numerics' drift (:func:`_moment_ode`) from the students' law, at t = T/4, T/2, T."""
    tau, beta, T = sz["tau"], sz["beta"], sz["T"]
    sol, D, _ = _moment_ode(sz["x_std"], tau, beta, np.zeros(4), eq.STUDENT_STD ** 2, T)
    vals, refs = [], []
    for t in (T / 4, T / 2, T):   # each block in its unit: max(1, |m|) for the mean, c for C
        m_d, c_d = _gaussian_limit(t, sz["x_std"], tau, beta)
        u, s_m = sol(t), max(1.0, float(np.abs(m_d).max()))
        vals += [u[:D] / s_m, u[D:] / c_d]
        refs += [m_d / s_m, np.eye(D).ravel()]
    return compare("derived Gaussian law (f(t) M*, c(t) I) vs the Ito moment ODEs of the numerics' "
                   "drift (population velocity and its Jacobian), integrated by DOP853, t = T/4, "
                   "T/2, T", np.concatenate(vals), np.concatenate(refs), rtol=0.0, atol=1e-10,
                   reason="DOP853 at rtol 1e-12 over a smooth linear ODE: global error <= ~1e-11 "
                          "relative; the 4-node Gauss-Hermite rule is exact for the quadratic data "
                          "moments", unit="relative")


def _stationary(name: str, sz: dict, s: float = 0.0, N: float = float("inf")) -> float:
    """A derived stationary quantity of M1f at the stationarity sub-checks' (x_std, tau, beta)
    (the scheme's deviation variance also at step s and width N)."""
    from derivations.maass_limit import closure_symbols, scheme_symbols
    ts, taus, betas, sxs, s0s = closure_symbols()
    if name == "scheme_deviation_variance":
        ss, Ns = scheme_symbols()
        return float(lambdified("M1f", name, (taus, betas, ss, Ns), modules="numpy")(
            sz["stat_tau"], sz["stat_beta"], s, N))
    args = (ts, taus, betas, sxs, s0s)
    return float(lambdified("M1f", name, args, modules="numpy")(
        0.0, sz["stat_tau"], sz["stat_beta"], sz["x_std"], eq.STUDENT_STD))


#: the starts of the stationarity sub-checks: (name, mean of every coordinate, variance,
#: sampler of N x D particles); neither is the closure's N(0, s_0^2) law
_STARTS = (("uniform, offset +2", 2.0, 1.0 / 3.0,
            lambda rng, n, d: 2.0 + rng.uniform(-1.0, 1.0, (n, d))),
           ("two clusters at -1.5 +- 0.5 (Rademacher)", -1.5, 0.25,
            lambda rng, n, d: -1.5 + 0.5 * rng.choice([-1.0, 1.0], (n, d))))


def _limit_in_time_check(sz: dict) -> SubCheck:
    """t -> infinity along the limit flow: from both non-Gaussian starts the moment ODEs of the
    numerics' drift relax at the derived rates to the derived stationary law (f_inf M*,
    c_inf I), the Gibbs fixed point (the derivation shows they are equal)."""
    r_m, r_c = _stationary("mean_rate", sz), _stationary("variance_rate", sz)
    f_inf, c_inf = _stationary("stationary_mean_factor", sz), _stationary("stationary_variance", sz)
    t1 = 2.0 / min(r_m, r_c)
    t_end = 40.0 / min(r_m, r_c)
    vals, refs = [], []
    for _, mu, var, _ in _STARTS:
        sol, D, M_star = _moment_ode(sz["x_std"], sz["stat_tau"], sz["stat_beta"],
                                     np.full(D_Z, mu), var, t_end)
        target = np.concatenate([f_inf * M_star, c_inf * np.eye(D).ravel()])
        d1, d2, d_end = sol(t1) - target, sol(2 * t1) - target, sol(t_end) - target
        rates = np.concatenate([np.full(D, r_m), np.full(D * D, r_c)])
        # relaxation: d(2 t1) = exp(-r t1) d(t1) per block (mean at r_m, covariance at r_C),
        # in units of the block's transient at t1; the end state in units of the target
        for blk in (slice(0, D), slice(D, None)):
            unit = float(np.max(np.abs(d1[blk])))
            vals.append(d2[blk] / unit)
            refs.append(np.exp(-rates[blk] * t1) * d1[blk] / unit)
        vals += [d_end[:D] / float(np.max(np.abs(target[:D]))), d_end[D:] / c_inf]
        refs += [np.zeros(D), np.zeros(D * D)]
    return compare(f"t -> infinity: the moment ODEs from two non-Gaussian starts relax at the derived "
                   f"rates (r_m = {fmt(r_m)}, r_C = {fmt(r_c)}) to the derived stationary law = the "
                   f"Gibbs fixed point (f_inf = {fmt(f_inf)}, c_inf = {fmt(c_inf)}; tau = "
                   f"{sz['stat_tau']:g}, beta = {sz['stat_beta']:g})", np.concatenate(vals),
                   np.concatenate(refs), rtol=0.0, atol=1e-9,
                   reason="DOP853 at rtol 1e-12, atol 1e-14 on a linear ODE: the relaxation ratios "
                          "are read where the transients are >= exp(-4) ~ 2e-2 of their start, so "
                          "rounding and the integrator error stay below ~1e-10 of them; at 40 "
                          "relaxation times the transient is exp(-40) ~ 4e-18", unit="relative")


@lru_cache(maxsize=2)
def _stationary_runs(run: RunContext, N: int, seeds: int, step: float, T: float, x_std: float,
                     tau: float, beta: float, batch: int) -> tuple:
    """Final particles of noisy SGD (linear unit, flow time per step ``step``, horizon T) from
    each start of :data:`_STARTS`, ``seeds`` runs each: arrays (starts, seeds, N, D)."""
    unit, group, teacher = _setting(linear=True)
    alpha = step * N
    steps = int(round(T / step))
    cfg = eq.SGDConfig(alpha=alpha, tau=tau, beta=beta, batch=batch, steps=steps, x_std=x_std)
    out = np.empty((len(_STARTS), seeds, N, unit.dim_z))
    for i, (name, _, _, sample) in enumerate(_STARTS):
        for k in range(seeds):
            th0 = sample(run.rng("stationary init", name, k), N, unit.dim_z)
            with long_runs():
                out[i, k], _ = eq.train(unit, group, th0, teacher, "vanilla", cfg,
                                        run.rng("stationary data", name, k),
                                        run.rng("stationary noise", name, k))
    return out, steps


def _scheme_variance_check(ctx: RunContext, sz: dict) -> SubCheck:
    """The derived v(s, N) against the discrete Lyapunov equation of the numerics' own step:
    the deviation map A (one noiseless step of numerics.equivariant.train, particle i moved by
    +e_k and particle j by -e_k, the mean fixed; exact differences, the step being affine)
    and the noise of the scheme's definition, i.i.d. N(0, 2 beta s) per particle, whose
    deviation from the particles' mean has covariance 2 beta s (1 - 1/N) I; V = A V A^T + Q
    by scipy.linalg.solve_discrete_lyapunov."""
    from scipy.linalg import solve_discrete_lyapunov
    unit, group, teacher = _setting(linear=True)
    N, step = sz["stat_N"], sz["stat_step"]
    n = 7
    cfg = eq.SGDConfig(alpha=step * n, tau=sz["stat_tau"], beta=0.0, batch=sz["batch"], steps=1,
                       x_std=sz["x_std"])
    th0 = ctx.rng("scheme variance").standard_normal((n, unit.dim_z))

    def one_step(th: np.ndarray) -> np.ndarray:
        return eq.train(unit, group, th, teacher, "vanilla", cfg, ctx.rng("scheme variance", "data"),
                        ctx.rng("scheme variance", "noise"))[0]
    base = one_step(th0)
    A = np.empty((unit.dim_z, unit.dim_z))
    for k in range(unit.dim_z):
        th = th0.copy()
        th[0, k] += 1.0
        th[1, k] -= 1.0
        A[:, k] = one_step(th)[0] - base[0]
    V = solve_discrete_lyapunov(A, 2.0 * sz["stat_beta"] * step * (1.0 - 1.0 / N) * np.eye(unit.dim_z))
    v = _stationary("scheme_deviation_variance", sz, step, N)
    return compare(f"the SGD scheme's derived stationary deviation variance v(s, N) = {fmt(v)} vs the "
                   "discrete Lyapunov equation of the numerics' one-step deviation map (s = "
                   f"{step:g}, N = {N})", V, v * np.eye(unit.dim_z), rtol=1e-12, atol=1e-12 * v,
                   reason="the step is affine, so the differences are exact up to rounding of O(1) "
                          "values (~1e-16); the Lyapunov solve of a well-conditioned 4 x 4 system "
                          "(A ~ (1 - 2 tau s) I) amplifies it by 1/(1 - |A|^2) ~ 1/(4 tau s) = 64")


def _stationary_particles_check(ctx: RunContext, sz: dict) -> list[SubCheck]:
    """Noisy SGD run to stationarity from the two non-Gaussian starts: the particles' mean over
    seeds against f_inf M* (Student-t), their deviation variance against the scheme's derived
    stationary variance v(s, N) (normal approximation of the pooled sample variance), and the
    deviations' excess kurtosis against 0 (Gaussian: the unique minimiser is the Gibbs law)."""
    N, seeds, step, T = sz["stat_N"], sz["stat_seeds"], sz["stat_step"], sz["stat_T"]
    th, steps = _stationary_runs(ctx.shared(), N, seeds, step, T, sz["x_std"], sz["stat_tau"],
                                 sz["stat_beta"], sz["batch"])
    f_inf = _stationary("stationary_mean_factor", sz)
    v = _stationary("scheme_deviation_variance", sz, step, N)
    r_min = min(_stationary("mean_rate", sz), _stationary("variance_rate", sz))
    M_star = _setting(linear=True)[2].mean(axis=0)
    transient = float(np.exp(-r_min * T)) * 4.0   # |start - stationary| <= 4 in mean and variance
    z_q = float(stats.norm.ppf(1 - 0.001 / (2 * 3 * len(_STARTS))))
    hw = float(stats.t.ppf(1 - 0.001 / (2 * 3 * len(_STARTS) * D_Z), seeds - 1))
    e_mean = e_var = e_kurt = 0.0
    t_mean = 0.0
    for i in range(len(_STARTS)):
        means = th[i].mean(axis=1)                                     # (seeds, D)
        dev = th[i] - means[:, None, :]
        se = means.std(axis=0, ddof=1) / np.sqrt(seeds)
        e_mean = max(e_mean, float(np.max(np.abs(means.mean(axis=0) - f_inf * M_star)
                                          / (hw * se + transient))))
        pooled = float(np.mean(dev ** 2))
        n = dev.size
        e_var = max(e_var, abs(pooled / v - 1.0) / (z_q * np.sqrt(2.0 / n) + transient / v))
        zs = dev / np.sqrt(pooled)
        e_kurt = max(e_kurt, abs(float(np.mean(zs ** 4)) - 3.0) / (z_q * np.sqrt(24.0 / n)))
        t_mean = max(t_mean, float(se.max()))
    why = (f"{seeds} seeds x width {N} per start, {steps} steps of flow time {step:g} to T = {T:g} "
           f"(the derived transient <= 4 exp(-{fmt(r_min)} T) = {fmt(transient)} is added to the "
           f"tolerance); 99.9% in all (Bonferroni over 2 starts x 3 statistics")
    return [SubCheck("stationarity from non-Gaussian starts: mean of the particles over seeds vs "
                     "f_inf M* (error / (Student-t half-width + transient))", e_mean, 1.0,
                     why + f", x 4 coordinates); standard error {fmt(t_mean)}", unit="tolerances"),
            SubCheck("stationarity: the particles' deviation variance vs the SGD scheme's derived "
                     "stationary variance v(s, N) (error / (normal half-width of the pooled "
                     "variance + transient))", e_var, 1.0,
                     why + f"); v = {fmt(v)}, the flow's c_inf (1 - 1/N) / (1 - tau s)",
                     unit="tolerances"),
            SubCheck("stationarity: excess kurtosis of the deviations = 0 (the stationary law is "
                     "the Gaussian Gibbs law from any start; error / normal half-width "
                     "sqrt(24/n))", e_kurt, 1.0, why + ")", unit="tolerances")]


def _time_change_check(ctx: RunContext, alpha: float, tau: float) -> SubCheck:
    """One SGD direction (numerics' scheme_gradient plus the penalty) times the step alpha/N,
    divided by the derived flow time per step, against the population velocity of the
    batch's empirical law (numerics.equivariant_limit)."""
    unit, group, teacher = _setting()
    rng = ctx.rng("time change")
    N, B = 9, 13
    theta = eq.STUDENT_STD * rng.standard_normal((N, unit.dim_z))
    x = rng.standard_normal((B, unit.dim_x))
    y = el.weighted_output(unit, x, teacher, np.full(teacher.shape[0], 1.0 / teacher.shape[0]))
    step = -(alpha / N) * (eq.scheme_gradient("vanilla", unit, group, theta, x, y) + 2.0 * tau * theta)
    v = el.population_velocity(unit, theta, np.full(N, 1.0 / N), x, np.full(B, 1.0 / B), y, tau)
    return compare("one SGD step / derived flow time per step vs the population velocity of "
                   "the batch law (numerics.equivariant_limit)", step / time_per_step(N, alpha), v,
                   rtol=1e-12, atol=1e-12 * float(np.abs(v).max()),
                   reason="a step is linear in s = alpha/N: the ratio is exact up to rounding of "
                          "two float64 evaluations of the same batch sums, ~1e-15 relative")


def _noise_check(ctx: RunContext, alpha: float, tau: float, x_std: float) -> SubCheck:
    """The noise of one SGD step: train twice from the same particles and data draw, beta > 0
    and beta = 0; the difference is the noise, whose variance per coordinate must be
    2 beta dt with the derived dt (chi-square interval, 99.9%)."""
    unit, group, teacher = _setting()
    N, beta = 4096, 1e-3
    theta0 = eq.init_particles("iid", N, unit, group, ctx.rng("noise check", "init"))
    outs = []
    for b in (beta, 0.0):
        cfg = eq.SGDConfig(alpha=alpha, tau=tau, beta=b, batch=20, steps=1, x_std=x_std)
        outs.append(eq.train(unit, group, theta0, teacher, "vanilla", cfg, ctx.rng("noise check", "data"),
                             ctx.rng("noise check", "noise"))[0])
    xi = (outs[0] - outs[1]).ravel()
    dof = xi.size
    var = 2.0 * beta * time_per_step(N, alpha)
    stat = float(np.sum(xi ** 2) / var)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], dof)
    err = abs(stat / dof - 1.0)
    tol = max(1.0 - lo / dof, hi / dof - 1.0)
    return SubCheck("the SGD noise per step has variance 2 beta dt per coordinate with the "
                    "derived dt (chi-square of the beta > 0 minus beta = 0 difference)", err, tol,
                    f"99.9% chi-square interval with {dof} degrees of freedom: the relative "
                    f"deviation of the sample variance stays within {fmt(tol)}", unit="relative")


#: the size keys of M1f's profiles
_SIZE_KEYS = ("widths", "seeds", "alpha", "T", "tau", "x_std", "batch", "nq", "nx", "rk4", "n_eval",
              "beta", "beta_widths", "beta_seeds", "stat_tau", "stat_beta", "stat_N", "stat_seeds",
              "stat_step", "stat_T", "mv_widths", "mv_seeds", "mv_cells", "mv_nx", "gibbs_cells",
              "gibbs_T", "gibbs_nx", "gibbs_ref_cells", "stat_mv_widths", "stat_mv_seeds",
              "stat_mv_T")


def check(ctx: RunContext, time_factor: float) -> Outcome:
    """M1f: the width study against the limit read at time_factor * T (1 for the claim)."""
    sz = {k: ctx.size(k) for k in _SIZE_KEYS}
    widths, T = tuple(sz["widths"]), sz["T"]
    F, steps = _width_runs(ctx.shared(), widths, sz["seeds"], sz["alpha"], T, sz["x_std"],
                           sz["tau"], sz["batch"], sz["n_eval"], derived_generation())
    lim = dict(x_std=sz["x_std"], tau=sz["tau"], n_eval=sz["n_eval"])
    f_inf = _limit(T * time_factor, nq=sz["nq"], nx=sz["nx"], rk4=sz["rk4"], **lim)
    coarse = _limit(T * time_factor, nq=sz["nq"] - 1, nx=sz["nx"] - 4, rk4=sz["rk4"] // 2, **lim)
    ew = _eval_rule(sz)[1]
    D = np.array([[_distance(F[i, k], f_inf, ew) for k in range(sz["seeds"])]
                  for i in range(len(widths))])
    ref_err = _distance(coarse, f_inf, ew)
    f0 = _limit(0.0, nq=sz["nq"], nx=sz["nx"], rk4=1, **lim)
    move = _distance(f_inf, f0, ew)
    study = rate_study(_STUDY, widths, D, predicted=-0.5, level=0.999)
    beta_study, c_T = _beta_study(ctx, sz, time_factor)
    mv_study, mv_ref_err, mv_move = nonlinear_study(ctx, sz, time_factor, derived_generation())
    subs = [study.subcheck("fluctuations of the empirical measure around the mean-field flow "
                           "(initial draw and minibatches, law of large numbers with CLT "
                           "scaling): 99.9% Student-t interval of the per-seed slopes"),
            beta_study.subcheck("fluctuations of the empirical mean and covariance (initial draw, "
                                "minibatches, the particles' independent noise) around the exact "
                                "Gaussian law of the McKean-Vlasov flow: 99.9% Student-t interval "
                                "of the per-seed slopes"),
            mv_study.subcheck("fluctuations of the empirical measure around the McKean-Vlasov "
                              "law (initial draw, minibatches, noise): W1 of an N-sample to a "
                              "smooth law in 1-D is O(N^-1/2); 99.9% Student-t interval of the "
                              "per-seed slopes"),
            mv_study.bias_subcheck("Fokker-Planck reference error, non-linear unit (bounded by "
                                   "W1 to the coarser grid: half the cells, nx - 8 data nodes)",
                                   mv_ref_err,
                                   f"second-order finite volumes (the error falls 4x per "
                                   f"halving, so the coarser grid's distance bounds the finer "
                                   f"one's error) at {sz['mv_cells']} cells, {sz['mv_nx']} "
                                   f"Gauss-Hermite data nodes", _BIAS_FRACTION),
            _linear_engine_check(ctx, sz),
            _closure_check(sz),
            _limit_in_time_check(sz),
            gibbs_limit_check(sz),
            *stationary_study(ctx, sz, derived_generation()),
            _scheme_variance_check(ctx, sz),
            *_stationary_particles_check(ctx, sz),
            _time_change_check(ctx, sz["alpha"], sz["tau"]),
            _noise_check(ctx, sz["alpha"], sz["tau"], sz["x_std"]),
            study.bias_subcheck("limit reference error (bounded by the coarser rule: nq - 1 nodes, "
                                "nx - 4 data nodes, half the RK4 steps)", ref_err,
                                f"|reference - coarser reference| (spectral convergence: the "
                                f"finer rule is the more accurate) at nq = {sz['nq']}, nx = "
                                f"{sz['nx']}, {sz['rk4']} RK4 steps", _BIAS_FRACTION)]
    rows = [[N, steps[i], fmt(time_per_step(N, sz["alpha"])), fmt(float(D[i].mean())),
             fmt(float(D[i].std(ddof=1)))] for i, N in enumerate(widths)]
    return combine(f"M1f: logistic unit 2 x 2, teacher of 5 N(0, 1) particles, X ~ N(0, "
                   f"{sz['x_std']:g}^2 I), tau = {sz['tau']:g}, beta = 0, alpha = {sz['alpha']:g}, "
                   f"batch {sz['batch']}, flow time T = {T:g}; {sz['seeds']} seeds; limit read at "
                   f"{time_factor:g} T (it moved the predictor by {fmt(move)}); and beta = "
                   f"{sz['beta']:g} with the linear unit against its Gaussian law (variance "
                   f"c = {fmt(c_T)} at the time read), and with tanh(z x) against its "
                   f"Fokker-Planck law (W1(rho_T, rho_0) = {fmt(mv_move)})", subs,
                   details={"slope": study.slope, "interval": list(study.interval),
                            "reference_error": ref_err, "limit_move": move,
                            "beta_slope": beta_study.slope, "beta_interval": list(beta_study.interval),
                            "tanh_slope": mv_study.slope, "tanh_interval": list(mv_study.interval),
                            "tanh_reference_error": mv_ref_err, "tanh_limit_move": mv_move},
                   tables=[Table("Distance to the limit per width",
                                 ["N", "SGD steps", "flow time per step", "mean distance",
                                  "sd over seeds"], rows)],
                   artifacts={"study": study.to_json(), "beta_study": beta_study.to_json(),
                              "tanh_study": mv_study.to_json()})


def figures(ev: Evidence, outdir: Path) -> list[tuple[str, str]]:
    from verify.kit import new_figure, rate_study_panel, save_figure
    if "study" not in ev.artifacts:
        return []
    studies = [k for k in ("study", "beta_study", "tanh_study") if k in ev.artifacts]
    fig, axes = new_figure(len(studies))
    axes = np.atleast_1d(axes)
    labels = {"study": r"$\|\Phi_N(T) - \Phi_\infty(T)\|_{L^2(\pi_X)}$, $\beta = 0$",
              "beta_study": r"$|m_N - m(T)| + \|C_N - c(T) I\|$, $\beta > 0$ (linear)",
              "tanh_study": r"$W_1(\mu^N_T, \rho_T)$, $\beta > 0$, $\tanh(zx)$"}
    for ax, key in zip(axes, studies):
        rate_study_panel(ax, ev.artifacts[key], labels[key], xlabel="width N")
    save_figure(fig, outdir / "M1f_width_study.png")
    return [("M1f_width_study.png", "Distance of the width-N noisy SGD to the mean-field limit at "
                                    "flow time T: beta = 0 (predictor in L2); beta > 0 for the "
                                    "linear unit (mean and covariance against the Gaussian law); "
                                    "beta > 0 for tanh(z x) (W1 of the particles to the "
                                    "Fokker-Planck law); seeds (dots), mean, fitted slope with its "
                                    "99.9% interval, and the predicted -1/2.")]


CLAIMS = [Claim(
    id="M1f", title="Noisy SGD -> the mean-field flow at rate N^-1/2 (beta = 0; beta > 0, linear "
                    "and non-linear units; t -> infinity: the Gibbs minimiser)",
    source="Maass Martinez & Fontbona (NeurIPS 2024), arXiv 2405.19995, main theorem "
           "(mean-field limit of noisy SGD), Section 2",
    statement=r"Noisy SGD with step $\varepsilon_N = \alpha/N$, penalty $\tau|z|^2$ and "
              r"temperature $\beta$ converges, in flow time $k\alpha/N$ after $k$ steps, to "
              r"the McKean-Vlasov flow; at $\beta = 0$ the limit transports $\mu_0$ and "
              r"$\|\Phi_{\mu^N_T} - \Phi_{\mu_T}\|_{L^2(\pi_X)} = O(N^{-1/2})$; at "
              r"$\beta > 0$, for linear units, the limit law is Gaussian and the particles' "
              r"mean and covariance approach it at $O(N^{-1/2})$; for a non-linear unit "
              r"($\tanh(zx)$) the limit law solves the nonlinear Fokker-Planck equation, "
              r"$W_1(\mu^N_T, \rho_T) = O(N^{-1/2})$, and as $t\to\infty$ $\rho_t$ tends to the "
              r"Gibbs fixed point $\rho^* \propto e^{-(\delta R/\delta\mu + \tau z^2)/\beta}$, "
              r"the unique minimiser of the entropic risk.",
    check=check, exact=EXACT, near_miss=LATE_LIMIT,
    sizes={"quick": {"widths": (64, 128, 256, 512, 1024, 2048, 4096), "seeds": 8, "alpha": 16.0,
                     "T": 4.0, "tau": 1e-2, "x_std": 1.0, "batch": 20, "nq": 6, "nx": 16,
                     "rk4": 24, "n_eval": 32, "beta": 0.05,
                     "beta_widths": (64, 128, 256, 512, 1024, 2048, 4096), "beta_seeds": 8,
                     "stat_tau": 0.25, "stat_beta": 0.05, "stat_N": 1024, "stat_seeds": 16,
                     "stat_step": 1 / 64, "stat_T": 12.0,
                     "mv_widths": (64, 128, 256, 512, 1024, 2048, 4096), "mv_seeds": 12,
                     "mv_cells": 1024, "mv_nx": 40, "gibbs_cells": 128, "gibbs_T": 30.0,
                     "gibbs_nx": 24, "gibbs_ref_cells": 1024,
                     "stat_mv_widths": (64, 128, 256, 512, 1024, 2048), "stat_mv_seeds": 8,
                     "stat_mv_T": 12.0},
           "full": {"widths": (256, 512, 1024, 2048, 4096, 8192, 16384), "seeds": 8,
                    "alpha": 16.0, "T": 4.0, "tau": 1e-2, "x_std": 1.0, "batch": 20, "nq": 7,
                    "nx": 20, "rk4": 32, "n_eval": 32, "beta": 0.05,
                    # the linear unit's runs cost O(steps + N) (numerics.equivariant_linear):
                    # ~1 s per run at N = 2^20 (262144 SGD steps)
                    "beta_widths": (256, 1024, 4096, 16384, 65536, 262144, 1048576),
                    "beta_seeds": 16,
                    "stat_tau": 0.25, "stat_beta": 0.05, "stat_N": 4096, "stat_seeds": 32,
                    "stat_step": 1 / 128, "stat_T": 12.0,
                    "mv_widths": (128, 256, 512, 1024, 2048, 4096, 8192), "mv_seeds": 16,
                    "mv_cells": 2048, "mv_nx": 48, "gibbs_cells": 160, "gibbs_T": 30.0,
                    "gibbs_nx": 32, "gibbs_ref_cells": 2048,
                    "stat_mv_widths": (128, 256, 512, 1024, 2048, 4096, 8192),
                    "stat_mv_seeds": 8, "stat_mv_T": 12.0}},
    negative_control_description="the limit read at time 1.2 T (the derived time per step "
                                 "alpha/N off by 20%)",
    negative_target=_STUDY, figures=figures, kind="theorem")]
