"""Maass Martinez & Fontbona (2024), main theorem (claim M1f): the time scale of noisy SGD
against its mean-field limit.

One step of the noisy SGD of docs/conventions.md section 3 moves a particle by
Delta theta = -s (V(theta) + tau grad r(theta)) + sqrt(2 beta s) xi, s = alpha / N, where
V is the (minibatch) mean-field velocity grad_z sigma_*^T grad l and xi ~ N(0, I).  The
Euler-Maruyama step of the McKean-Vlasov SDE
d theta = -(V_mu(theta) + tau grad r(theta)) dt + sqrt(2 beta) dW over a time dt has mean
-(V + tau grad r) dt and covariance 2 beta dt I; matching the SGD step's mean (the
minibatch gradient is unbiased) and covariance gives one and the same dt: the flow time
per step is s = alpha / N, for the drift and for the noise.

For the linear unit sigma_*(x, z) = z x (2 x 2), a linear teacher y = M* x, data
x ~ N(0, s_x^2 I) and i.i.d. N(0, s_0^2) students, the McKean-Vlasov flow at beta > 0 has a
closed form (:func:`derive_gaussian_closure`): the drift is affine in z, so a Gaussian law
stays Gaussian, with mean f(t) M* and covariance c(t) I from the moment ODEs (Ito), solved
by ``sp.dsolve``; as t -> infinity it tends to N(m_inf, beta/(2 tau) I), which is also the
Gibbs fixed point mu ~ exp(-(dR/dmu + tau |z|^2)/beta) of the entropic risk: the (unique)
minimiser for tau, beta > 0.

For ANY unit (:func:`derive_gibbs_exponent`) the stationary points of the entropic risk
F = R + tau int |z|^2 + beta int mu log mu are the Gibbs fixed points
rho* ~ exp(-(u(z) + tau |z|^2)/beta), u the risk's first variation, whose z-gradient is
minus the McKean-Vlasov drift (the flow is F's Wasserstein gradient flow): derived on a
3-cell measure with an undefined sigma."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import sympy as sp

from derivations.base import Derivation, Step

__all__ = ["DERIVATIONS", "derive_m1f", "n_width", "alpha_sgd", "GaussianClosure",
           "derive_gaussian_closure", "closure_symbols", "scheme_symbols",
           "derive_scheme_deviation_variance", "gibbs_symbols", "derive_gibbs_exponent"]

n_width = sp.Symbol("N", positive=True)
alpha_sgd = sp.Symbol("alpha", positive=True)


def closure_symbols() -> tuple[sp.Symbol, ...]:
    """(t, tau, beta, s_x, s_0): flow time, penalty, temperature, data and student std."""
    return sp.symbols("t tau beta s_x s_0", positive=True)


@dataclass(frozen=True)
class GaussianClosure:
    """The McKean-Vlasov law of the linear unit: N(f(t) M*, c(t) I) (see the module doc)."""
    drift: sp.Matrix            # the particle velocity b(z; M), 4 entries (z row-major)
    mean_factor: sp.Expr        # f(t): E_mu_t[z] = f(t) M*
    variance: sp.Expr           # c(t): Cov_mu_t = c(t) I
    stationary_mean_factor: sp.Expr
    stationary_variance: sp.Expr
    mean_rate: sp.Expr          # m(t) - m_inf decays as exp(-mean_rate t) from any start
    variance_rate: sp.Expr      # C(t) - C_inf decays as exp(-variance_rate t) from any start


@lru_cache(maxsize=None)
def derive_gaussian_closure() -> GaussianClosure:
    """The drift from the definitions (model M x of the mean M, loss 1/2 |M x - M* x|^2,
    first variation E_x[<Phi(x) - y, z x>], Gaussian moments of x), its Jacobian, the moment
    ODEs dm/dt = b(m; m), dC/dt = J C + C J^T + 2 beta I, their solutions, the t -> infinity
    limit and the Gibbs fixed point (equal to that limit, or ArithmeticError)."""
    from derivations.maass_projection import gaussian_expectation
    t, tau, beta, sx, s0 = closure_symbols()
    x = sp.Matrix(sp.symbols("x1 x2", real=True))
    z = sp.Matrix(2, 2, sp.symbols("z11 z12 z21 z22", real=True))
    M = sp.Matrix(2, 2, sp.symbols("m11 m12 m21 m22", real=True))
    Ms = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    first_variation = gaussian_expectation(((M * x - Ms * x).T * (z * x))[0], list(x), (sx, sx))
    zv, mv, msv = list(z), list(M), list(Ms)
    drift = sp.Matrix([-sp.diff(first_variation, zi) - 2 * tau * zi for zi in zv])
    J = drift.jacobian(zv)
    if J != -2 * tau * sp.eye(4):
        raise ArithmeticError(f"M1f closure: drift Jacobian {J} is not -2 tau I")
    mean_drift = drift.subs(dict(zip(zv, mv)))
    m, c, ms = sp.Function("m"), sp.Function("c"), sp.Symbol("mu_star", real=True)
    for k in range(4):   # each entry follows the same scalar ODE in (m_k, M*_k)
        others = {v: 0 for i, v in enumerate(mv + msv) if i not in (k, k + 4)}
        e = sp.expand(mean_drift[k].subs(others) - (-(mv[k] - msv[k]) * sx**2 - 2 * tau * mv[k]))
        if e != 0:
            raise ArithmeticError(f"M1f closure: mean drift entry {k} is not scalar: {e}")
    mean_ode = sp.Eq(m(t).diff(t), -(m(t) - ms) * sx**2 - 2 * tau * m(t))
    mean = sp.dsolve(mean_ode, m(t), ics={m(0): 0}).rhs
    var_ode = sp.Eq(c(t).diff(t), 2 * J[0, 0] * c(t) + 2 * beta)
    var = sp.dsolve(var_ode, c(t), ics={c(0): s0**2}).rhs
    factor = sp.simplify(mean / ms)
    m_inf, c_inf = sp.limit(factor, t, sp.oo), sp.limit(var, t, sp.oo)
    # the moment ODEs are linear, so from ANY start m - m_inf and C - C_inf decay at the
    # rates -d^2 f/dt^2 / (df/dt) and -d^2 c/dt^2 / (dc/dt) (each a single exponential)
    mean_rate = sp.simplify(-sp.diff(factor, t, 2) / sp.diff(factor, t))
    variance_rate = sp.simplify(-sp.diff(var, t, 2) / sp.diff(var, t))
    if t in mean_rate.free_symbols or t in variance_rate.free_symbols:
        raise ArithmeticError(f"M1f closure: the decay rates {mean_rate}, {variance_rate} "
                              "depend on t (not single exponentials)")
    # Gibbs fixed point: exponent -(E_x<(M - M*) x, z x> + tau |z|^2) / beta, a Gaussian of
    # variance beta / (2 tau) and mean -grad_z(E_x<...>) / (2 tau); self-consistent M
    gibbs_mean = [-sp.diff(first_variation, zi) / (2 * tau) for zi in zv]
    fixed = sp.solve([sp.Eq(mv[k], gibbs_mean[k]) for k in range(4)], mv, dict=True)[0]
    exponent = sp.expand(first_variation + tau * sum(zi**2 for zi in zv))
    gibbs_var = beta / sp.diff(exponent, zv[0], 2)       # exp(-E/beta), E'' = 2 tau
    if sp.simplify(fixed[mv[0]] - m_inf * msv[0]) != 0 or sp.simplify(gibbs_var - c_inf) != 0:
        raise ArithmeticError("M1f closure: the Gibbs fixed point is not the flow's limit")
    return GaussianClosure(drift, sp.simplify(factor), sp.simplify(var), sp.simplify(m_inf),
                           sp.simplify(c_inf), mean_rate, variance_rate)


def scheme_symbols() -> tuple[sp.Symbol, ...]:
    """(s, N): the SGD step (flow time per step alpha / N) and the width."""
    return sp.symbols("s N", positive=True)


@lru_cache(maxsize=None)
def derive_scheme_deviation_variance() -> sp.Expr:
    """The stationary variance per coordinate of a particle's deviation d_i = z_i - mean_j z_j
    under the SGD scheme itself (Euler-Maruyama, step s, width N) for the linear unit: the
    drift's law-dependent part and the minibatch term are common to all particles and cancel
    in d_i, leaving d' = (1 + s J) d + sqrt(2 beta s) (xi_i - mean_j xi_j), J = -2 tau
    (the closure's drift Jacobian); the fixed point v of v = (1 + s J)^2 v + 2 beta s (1 - 1/N).
    It tends to the flow's c_inf as s -> 0, N -> infinity (else ArithmeticError)."""
    t, tau, beta, sx, s0 = closure_symbols()
    s, N = scheme_symbols()
    closure = derive_gaussian_closure()
    jac = closure.drift.jacobian(sp.symbols("z11 z12 z21 z22", real=True))[0, 0]
    v = sp.Symbol("v", positive=True)
    sol = sp.solve(sp.Eq(v, (1 + s * jac) ** 2 * v + 2 * beta * s * (1 - 1 / N)), v)
    if len(sol) != 1:
        raise ArithmeticError(f"M1f scheme: no unique stationary variance: {sol}")
    dev = sp.simplify(sol[0])
    if sp.simplify(sp.limit(sp.limit(dev, s, 0), N, sp.oo) - closure.stationary_variance) != 0:
        raise ArithmeticError("M1f scheme: the stationary variance does not tend to c_inf")
    return dev


def gibbs_symbols() -> tuple[sp.Symbol, ...]:
    """(u, z, tau, beta): the risk's first variation at z, the scalar parameter, penalty,
    temperature."""
    u, z = sp.symbols("u z", real=True)
    tau, beta = sp.symbols("tau beta", positive=True)
    return u, z, tau, beta


@lru_cache(maxsize=None)
def derive_gibbs_exponent() -> sp.Expr:
    """log rho* (up to a constant) of the stationary points of the entropic risk
    F(mu) = 1/2 E_x (Phi_mu(x) - y(x))^2 + tau int z^2 dmu + beta int mu log mu for ANY unit
    sigma (an undefined function): on a measure of K = 3 cells (masses w_k at z_k, width h)
    and a data rule of 2 nodes (weights p_b), d/dw_k (F - lambda sum w) = 0 is solved for w_k
    with the first variation u_k = sum_b p_b sigma(x_b, z_k)(Phi(x_b) - y_b) (checked to be
    d R / d w_k) held as a symbol.  Also checked: d/dz_k (u_k + tau z_k^2) is minus the
    McKean-Vlasov drift (E_x[d_z sigma (Phi - y)] + 2 tau z) and d F/d z_k = w_k times it
    (the flow is the Wasserstein gradient flow of F), else ArithmeticError."""
    u, z, tau, beta = gibbs_symbols()
    h, lam = sp.symbols("h lambda", positive=True)
    sigma = sp.Function("sigma")
    K, B = 3, 2
    w = sp.symbols(f"w1:{K + 1}", positive=True)
    zs = sp.symbols(f"z1:{K + 1}", real=True)
    xs, ys = sp.symbols(f"x1:{B + 1}", real=True), sp.symbols(f"y1:{B + 1}", real=True)
    p = sp.symbols(f"p1:{B + 1}", positive=True)
    phi = [sum(w[k] * sigma(xs[b], zs[k]) for k in range(K)) for b in range(B)]
    risk = sum(p[b] * (phi[b] - ys[b]) ** 2 for b in range(B)) / 2
    F = risk + tau * sum(w[k] * zs[k] ** 2 for k in range(K)) \
        + beta * sum(w[k] * sp.log(w[k] / h) for k in range(K))
    exponents = []
    for k in range(K):
        u_k = sum(p[b] * sigma(xs[b], zs[k]) * (phi[b] - ys[b]) for b in range(B))
        if sp.expand(sp.diff(risk, w[k]) - u_k) != 0:
            raise ArithmeticError("M1f Gibbs: dR/dw_k is not the first variation u_k")
        stationarity = sp.diff(F - lam * sum(w), w[k]).subs(sp.diff(risk, w[k]), u)
        sol = sp.solve(stationarity, w[k])
        if len(sol) != 1:
            raise ArithmeticError(f"M1f Gibbs: no unique stationary mass: {sol}")
        exponents.append(sp.expand(sp.expand_log(sp.log(sol[0] / h), force=True)
                                   - (lam / beta - 1)).subs(zs[k], z))
        drift = -(sum(p[b] * sp.diff(sigma(xs[b], zs[k]), zs[k]) * (phi[b] - ys[b])
                      for b in range(B)) + 2 * tau * zs[k])
        grad = sp.diff(u_k.subs({phi[b]: sp.Symbol(f"Phi{b}") for b in range(B)})
                       + tau * zs[k] ** 2, zs[k]).subs({sp.Symbol(f"Phi{b}"): phi[b] for b in range(B)})
        if sp.simplify(grad + drift) != 0 or sp.simplify(sp.diff(F, zs[k]) + w[k] * drift) != 0:
            raise ArithmeticError("M1f Gibbs: the drift is not -grad_z of the first variation")
    if any(sp.simplify(e - exponents[0]) != 0 for e in exponents):
        raise ArithmeticError(f"M1f Gibbs: the cells' exponents differ: {exponents}")
    return sp.simplify(exponents[0])


def derive_m1f() -> Derivation:
    V, tau, beta, dt, g = sp.symbols("V tau beta dt g_r", positive=True)
    s = alpha_sgd / n_width
    sgd_mean, sgd_var = -s * (V + tau * g), 2 * beta * s      # one SGD step, per coordinate
    sde_mean, sde_var = -(V + tau * g) * dt, 2 * beta * dt     # Euler-Maruyama over dt
    dt_drift = sp.solve(sp.Eq(sgd_mean, sde_mean), dt)
    dt_noise = sp.solve(sp.Eq(sgd_var, sde_var), dt)
    if len(dt_drift) != 1 or dt_drift != dt_noise:
        raise ArithmeticError(f"M1f: drift and noise give different times {dt_drift}, {dt_noise}")
    per_step = sp.simplify(dt_drift[0])
    closure = derive_gaussian_closure()
    return Derivation(steps=[
        Step("One SGD step at $s = \\alpha/N$: mean and variance per coordinate",
             sp.Tuple(sgd_mean, sgd_var)),
        Step("The Euler-Maruyama step of $d\\theta = -(V_\\mu + \\tau\\nabla r)dt + "
             "\\sqrt{2\\beta}\\,dW$ over $dt$:", sp.Tuple(sde_mean, sde_var)),
        Step("Matching the means and the variances gives the same flow time per step:",
             per_step, lhs="dt"),
        Step("so the width-$N$ SGD after $k$ steps is the limit flow at time $k\\alpha/N$; "
             "the fluctuations of the empirical measure (initial draw, minibatches, noise) "
             "are $O(N^{-1/2})$.  At $\\beta = 0$ the limit is the push-forward of $\\mu_0$ "
             "by the flow of $-(V_\\mu + \\tau\\nabla r)$ (deterministic transport)."),
        Step("beta > 0, the linear unit $\\sigma_*(x, z) = zx$ with a linear teacher $y = M^*x$, "
             "$x \\sim N(0, s_x^2 I)$, students i.i.d. $N(0, s_0^2)$: the particle drift "
             "$b(z) = -\\nabla_z E_x\\langle Mx - M^*x, zx\\rangle - 2\\tau z$ (Gaussian moments) is "
             "affine in $z$ with Jacobian $-2\\tau I$, so the McKean-Vlasov law stays Gaussian "
             "(Ito moment equations, solved by dsolve): $E[z] = f(t) M^*$ with",
             closure.mean_factor, lhs="f(t)"),
        Step("and $\\mathrm{Cov}(z) = c(t) I$ with", closure.variance, lhs="c(t)"),
        Step("As $t\\to\\infty$: $f \\to$", closure.stationary_mean_factor, lhs="f_\\infty"),
        Step("and $c \\to$", closure.stationary_variance, lhs="c_\\infty"),
        Step("which is also the Gibbs fixed point $\\mu \\propto \\exp(-(\\delta R/\\delta\\mu + "
             "\\tau|z|^2)/\\beta)$ (checked symbolically): the flow tends to the minimiser of the "
             "entropic risk, unique for $\\tau, \\beta > 0$."),
        Step("From any start the moment ODEs relax to this law at the rates",
             sp.Tuple(closure.mean_rate, closure.variance_rate), lhs="(r_m, r_C)"),
        Step("The SGD scheme itself (step $s$, width $N$): a particle's deviation from the "
             "particles' mean is an Euler-Maruyama OU process (the law-dependent drift and the "
             "minibatch term are common and cancel) whose stationary variance per coordinate is",
             derive_scheme_deviation_variance(), lhs="v(s, N)"),
        Step("beta > 0, any unit $\\sigma_*(x, z)$: the stationary points of the entropic risk "
             "$F(\\mu) = \\tfrac12 E_x(\\Phi_\\mu - y)^2 + \\tau\\int|z|^2 d\\mu + \\beta\\int\\mu"
             "\\log\\mu$ (its first variation $u(z) = E_x[\\sigma_*(x, z)(\\Phi_\\mu(x) - y(x))]$, "
             "whose $z$-gradient is minus the McKean-Vlasov drift: the flow is $F$'s Wasserstein "
             "gradient flow) are the Gibbs fixed points $\\rho^* \\propto e^{g}$ with",
             derive_gibbs_exponent(), lhs="g(u, z)"),
    ], results={"time_per_step": per_step, "mean_factor": closure.mean_factor,
                "variance": closure.variance,
                "stationary_mean_factor": closure.stationary_mean_factor,
                "stationary_variance": closure.stationary_variance,
                "mean_rate": closure.mean_rate, "variance_rate": closure.variance_rate,
                "scheme_deviation_variance": derive_scheme_deviation_variance(),
                "gibbs_exponent": derive_gibbs_exponent()})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"M1f": derive_m1f}
