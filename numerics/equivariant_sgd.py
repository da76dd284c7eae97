"""Noisy SGD for the four training schemes of Maass Martinez & Fontbona (2024): vanilla,
data augmentation (DA), feature averaging (FA) and equivariant architectures (EA), the
teachers and initial particles of the reference experiment, and the data-driven
discovery of E^G (docs/conventions.md, section 3; claims M1c-M1e).

Noisy SGD (s = alpha / N, r(z) = |z|^2):
    theta_i <- theta_i - s (vjp_i + tau grad r(theta_i)) + sqrt(2 beta s) xi_i
Schemes:
- ``vanilla``: the batch (X_b, Y_b) as drawn;
- ``da_random``: each sample replaced by (rho_g X_b, rho^_g Y_b), g ~ uniform on G;
- ``da_orbit``: the loss averaged over the whole orbit {(rho_g X_b, rho^_g Y_b)}_g;
- ``fa``: the model Q_G Phi (gradient through the feature average);
- ``ea``: particles start at P_{E^G} theta and move by the projected gradient and the
  projected noise P_{E^G} xi (they never leave E^G).
Noise modes: ``iid`` (independent xi_i), ``orbit`` (the particle set is a union of orbits
stored g-major, and the noise of M_g theta_i is M_g xi_i, which keeps that structure),
``projected`` (P_{E^G} xi_i).  The public names are re-exported by
:mod:`numerics.equivariant`, the module to import from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from numerics.equivariant_units import (LogisticUnit, TanhUnit, Unit, _average,
                                        _require_bool, _require_group,
                                        _require_positive_finite, _require_representable,
                                        _require_unit, _uniform, _unit_inputs)
from numerics.groups import GroupAction
from numerics.validation import (MAX_ELEMENTS, ArgumentTypeError, DivergenceError, as_float_array,
                                 as_float_scalar, as_int_array, require_choice,
                                 require_finite_result, require_generator, require_positive_int,
                                 require_size)

__all__ = ["SCHEMES", "PRECISIONS", "NOISE_MODES", "TEACHERS", "X_STD", "STUDENT_STD",
           "SGDConfig", "make_teacher", "init_particles", "scheme_gradient", "train",
           "train_schemes", "HeuristicIterate", "discover_fixed_space"]

SCHEMES = ("vanilla", "da_random", "da_orbit", "fa", "ea")
PRECISIONS = ("float64", "float32")
NOISE_MODES = ("iid", "orbit", "projected")
TEACHERS = ("arbitrary", "WI", "SI")
#: reference experiment: X ~ N(0, 16 I), student entries N(0, 1/16)
X_STD = 4.0
STUDENT_STD = 0.25
#: largest work of one train / discover_fixed_space call, steps x batch x N x D
#: multiply-adds (~1 h of one core): beyond it the call is refused at once
_MAX_WORK = 2 ** 46


# ----------------------------------------------------------------------------------------
# teachers and initial particles
# ----------------------------------------------------------------------------------------
def make_teacher(kind: str, unit: Unit, group: GroupAction, rng: np.random.Generator,
                 n_particles: int = 5, scale: float = 1.0) -> np.ndarray:
    """Teacher particles (uniform weights): ``arbitrary`` = ``n_particles`` i.i.d.
    N(0, scale^2 I); ``WI`` = those plus all their images M_g theta (a union of orbits,
    |G| n_particles particles); ``SI`` = the arbitrary ones projected onto E^G."""
    require_choice(kind, "kind (teacher kind)", TEACHERS)
    _require_unit(unit)
    _require_group(group, unit)
    rng = require_generator(rng)
    n_particles = require_positive_int(n_particles, "n_particles (teacher width)")
    require_size(n_particles * group.order * unit.dim_z, "the teacher (n_particles x |G| x D)")
    scale = _require_positive_finite(scale, "scale (teacher entries' standard deviation)")
    with np.errstate(over="ignore"):
        base = _require_representable(scale * rng.standard_normal((n_particles, unit.dim_z)),
                                      "the teacher", "scale", scale)
        if kind == "arbitrary":
            return base
        out = group.act(base).reshape(-1, unit.dim_z) if kind == "WI" else group.project(base)
    return _require_representable(out, "the teacher", "scale", scale)


def init_particles(kind: str, n: int, unit: Unit, group: GroupAction,
                   rng: np.random.Generator, std: float = STUDENT_STD) -> np.ndarray:
    """Initial students: ``iid`` entries N(0, std^2) (a WI law: the Gaussian is invariant
    under orthogonal M_g); ``orbit`` = n / |G| i.i.d. draws and all their images, stored
    g-major (a union of orbits: the empirical measure itself is WI; n must be a multiple of
    |G|); ``SI`` = i.i.d. draws projected onto E^G."""
    require_choice(kind, "kind (initialization)", ("iid", "orbit", "SI"))
    _require_unit(unit)
    _require_group(group, unit)
    rng = require_generator(rng)
    n = require_positive_int(n, "n (number of particles)")
    require_size(n * unit.dim_z, "n (the particles, n x D)")
    std = _require_positive_finite(std, "std (initial entries' standard deviation)")
    if kind == "orbit" and n % group.order:
        raise ValueError(f"an orbit initialization needs n divisible by |G| = "
                         f"{group.order}; got n = {n}")
    with np.errstate(over="ignore"):
        z = _require_representable(
            std * rng.standard_normal((n // group.order if kind == "orbit" else n, unit.dim_z)),
            "the initial particles", "std", std)
        if kind == "iid":
            return z
        out = group.act(z).reshape(-1, unit.dim_z) if kind == "orbit" else group.project(z)
    return _require_representable(out, "the initial particles", "std", std)


# ----------------------------------------------------------------------------------------
# noisy SGD
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SGDConfig:
    """Noisy SGD hyper-parameters (reference experiment defaults): step alpha / N,
    L2 penalty tau |z|^2, noise temperature beta, batch size, number of steps, and the
    precision of the unit evaluations: ``float64`` (default; every exactness statement)
    or ``float32`` (the matrix units only, for long statistical runs; see
    :func:`_gradient_f32` for its rounding bound).  Parameters, data and noise are
    float64 in both."""
    alpha: float = 50.0
    tau: float = 1e-4
    beta: float = 1e-6
    batch: int = 20
    steps: int = 100
    x_std: float = X_STD
    precision: str = "float64"

    def __post_init__(self) -> None:
        require_choice(self.precision, "SGDConfig.precision", PRECISIONS)
        for name in ("alpha", "tau", "beta", "x_std"):
            positive = name in ("alpha", "x_std")
            object.__setattr__(self, name, as_float_scalar(getattr(self, name), f"SGDConfig.{name}",
                                                           lo=0.0, lo_open=positive))
        require_positive_int(self.batch, "SGDConfig.batch", maximum=MAX_ELEMENTS)
        require_positive_int(self.steps, "SGDConfig.steps", minimum=0)


def _stack_orbit(group: GroupAction, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (rho_g x_b, rho^_g y_b), g-major: shapes (|G| B, dX), (|G| B, dY)."""
    xs = np.einsum("gij,bj->gbi", group.rho, x).reshape(-1, x.shape[1])
    ys = np.einsum("gij,bj->gbi", group.rho_hat, y).reshape(-1, y.shape[1])
    return xs, ys


def _gradient(scheme: str, unit: Unit, group: GroupAction, theta: np.ndarray,
              x: np.ndarray, y: np.ndarray, gidx: np.ndarray | None,
              precision: str = "float64") -> np.ndarray:
    """The data term of the SGD direction for one batch (before the penalty)."""
    if scheme == "da_random":
        x = np.einsum("bij,bj->bi", group.rho[gidx], x)
        y = np.einsum("bij,bj->bi", group.rho_hat[gidx], y)
    if precision == "float32":
        return _gradient_f32(scheme, unit, group, theta, x, y)
    if isinstance(unit, (LogisticUnit, TanhUnit)):
        return _gradient_t(scheme, unit, group, theta, x, y)
    if scheme in ("da_orbit", "fa"):
        xs, ys = _stack_orbit(group, x, y)
        v = unit._value(xs, theta)
        if scheme == "da_orbit":
            return unit._vjp(xs, theta, _average(v, None) - ys, v)
        return unit._vjp(xs, theta, _fa_cotangent(group, _average(v, None), y), v)
    v = unit._value(x, theta)
    return unit._vjp(x, theta, _average(v, None) - y, v)


def _fa_cotangent(group: GroupAction, model: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cotangent of the FA loss at the orbit-stacked inputs: with ``model`` (|G| B, dY) the
    outputs Phi(rho_g x_b) (g-major), Q_G Phi(x_b) = (1/|G|) sum_g rho^_g^T Phi(rho_g x_b)
    and the cotangent at rho_g x_b is rho^_g (Q_G Phi(x_b) - y_b)."""
    nb = y.shape[0]
    out = model.reshape(group.order, nb, -1)
    q = np.einsum("gji,gbj->bi", group.rho_hat, out) / group.order
    return np.einsum("gij,bj->gbi", group.rho_hat, q - y).reshape(group.order * nb, -1)


def _gradient_t(scheme: str, unit, group: GroupAction, theta: np.ndarray, x: np.ndarray,
                y: np.ndarray) -> np.ndarray:
    """:func:`_gradient` for the matrix units in their (dY, B, N) layout (same sums)."""
    if scheme in ("da_orbit", "fa"):
        xs, ys = _stack_orbit(group, x, y)
    else:
        xs, ys = x, y
    s = unit._value_t(xs, theta)
    model = (s @ _uniform(theta.shape[0])).T                     # (B', dY)
    cot = _fa_cotangent(group, model, y) if scheme == "fa" else model - ys
    return unit._vjp_t(xs, theta, cot, s)


#: float32 unit round-off, 2^-24
_U32 = 2.0 ** -24


def _gradient_f32(scheme: str, unit, group: GroupAction, theta: np.ndarray, x: np.ndarray,
                  y: np.ndarray) -> np.ndarray:
    """:func:`_gradient_t` with the unit evaluated in float32 (``SGDConfig.precision``):
    one product for the logits, one vectorized tanh, a pairwise sum for the model and one
    product for the pullback; returns float64.

    The logistic unit is evaluated as logistic(a) = (1 + tanh(a/2)) / 2 (the halving rides
    exactly on x) with slope (1 - t^2) / 4, t = tanh(a/2); the tanh unit as t = tanh(a),
    slope 1 - t^2.  The slope's 1 is folded into the pullback: sum_kb (1 - t^2) W =
    colsum(W) - sum_kb t^2 W, with W the block-diagonal (dY B', D) cotangent matrix.

    Rounding (u = 2^-24, dX-term logits, N particles, K = dY B' terms in the pullback):
    |delta a| <= (dX + 2) u sum_j |z_j x_j| (the casts and the dot product); |delta t| <=
    2 u + |delta a| (float32 tanh within 2 ulp, |tanh'| <= 1); the model, a pairwise sum
    over N, within (log2 N + 16) u max|t|; the pullback within (K + 2) u sum_kb |W_kb|.
    Relative to the size of the data term, sum_kb |W_kb| ~ |c| |x|, the step's error is a
    few 1e-5 at the reference sizes (|a| <= ~30, N <= 5000, K = 80): in a noisy SGD run
    it is a perturbation four to five decades below the step's own batch fluctuation.
    Exactness statements (identities to 1e-12) must use float64."""
    logistic = isinstance(unit, LogisticUnit)
    if scheme in ("da_orbit", "fa"):
        xs, ys = _stack_orbit(group, x, y)
    else:
        xs, ys = x, y
    N, nb, dy, dx = theta.shape[0], xs.shape[0], unit.dim_y, unit.dim_x
    x32 = (0.5 * xs if logistic else xs).astype(np.float32)
    z32 = theta.astype(np.float32).reshape(N, dy, dx).transpose(1, 2, 0)
    t = np.matmul(x32, z32)                                      # (dY, B', N) logits
    np.tanh(t, out=t)
    tbar = t.sum(axis=2, dtype=np.float32).T.astype(np.float64) / N      # (B', dY)
    model = 0.5 + 0.5 * tbar if logistic else tbar
    cot = _fa_cotangent(group, model, y) if scheme == "fa" else model - ys
    W = np.zeros((dy * nb, dy * dx))
    xs_w = xs * ((0.25 if logistic else 1.0) / nb)
    for k in range(dy):
        W[k * nb:(k + 1) * nb, k * dx:(k + 1) * dx] = cot[:, k, None] * xs_w
    np.square(t, out=t)
    g = W.T.astype(np.float32) @ t.reshape(dy * nb, N)           # (D, N) float32
    return W.sum(axis=0) - g.T


def scheme_gradient(scheme: str, unit: Unit, group: GroupAction, theta: np.ndarray,
                    x: np.ndarray, y: np.ndarray, gidx: np.ndarray | None = None) -> np.ndarray:
    """The data term of one SGD direction of ``scheme`` (``vanilla``, ``da_random`` with
    the group indices ``gidx`` per sample, ``da_orbit`` or ``fa``) for the batch (x, y),
    before the penalty: (1/B) sum_b grad_z sigma_*(x_b, theta_i)^T (model - y_b) per
    particle, with the scheme's model and data (docs/conventions.md, section 3)."""
    require_choice(scheme, "scheme", ("vanilla", "da_random", "da_orbit", "fa"))
    _require_unit(unit)
    _require_group(group, unit)
    x, theta = _unit_inputs(unit, x, theta)
    y = as_float_array(y, "y (labels)", ndim=2)
    if y.shape != (x.shape[0], unit.dim_y):
        raise ValueError(f"shapes do not fit the unit: y must have shape {(x.shape[0], unit.dim_y)} (one label of dimension "
                         f"dY per sample); got {y.shape}")
    require_size(group.order * x.shape[0] * theta.shape[0] * max(unit.dim_y, unit.dim_z),
                 "the orbit values (|G| x B x N x max(dY, D) entries)")
    if scheme == "da_random":
        if gidx is None:
            raise ValueError("scheme 'da_random' needs gidx (one group index per sample)")
        gidx = as_int_array(gidx, "gidx (group index per sample)", minimum=0)
        if gidx.shape != (x.shape[0],) or np.any(gidx >= group.order):
            raise ValueError(f"gidx must hold one index in [0, {group.order}) per sample "
                             f"({x.shape[0]}); got shape {gidx.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = _gradient(scheme, unit, group, theta, x, y, gidx)
    return require_finite_result(out, "scheme_gradient", "x, y or theta too large")


def train(unit: Unit, group: GroupAction, theta0: np.ndarray, teacher: np.ndarray,
          scheme: str, config: SGDConfig, rng_data: np.random.Generator,
          rng_noise: np.random.Generator, rng_group: np.random.Generator | None = None, *,
          noise: str = "iid", orbit_closed_data: bool = False,
          record_every: int = 0) -> tuple[np.ndarray, list[tuple[int, np.ndarray]]]:
    """Run ``config.steps`` noisy SGD steps of ``scheme`` from ``theta0`` (N, D).

    Data: X ~ N(0, x_std^2 I_dX), Y = Phi_teacher(X).  With ``orbit_closed_data`` each
    batch is batch/|G| draws together with their orbits (the empirical data law is then
    itself G-invariant).  The three generators give common random numbers across schemes:
    the same seeds give the same data and noise to every scheme (:func:`train_schemes`
    runs several schemes on one draw).  ``record_every > 0`` keeps snapshots
    ``(step, theta)``.  Returns ``(theta_final, snapshots)``; raises
    :class:`DivergenceError` naming the step size when parameters become non-finite."""
    require_choice(scheme, "scheme", SCHEMES)
    record_every = require_positive_int(record_every, "record_every", minimum=0)
    run = _prepare(unit, group, theta0, teacher, (scheme,), config, rng_data, rng_noise,
                   rng_group, noise, orbit_closed_data)
    if record_every:
        N, D = run["thetas"][0].shape
        require_size((config.steps // record_every + 1) * N * D, "the snapshots")
    with np.errstate(over="ignore", invalid="ignore"):
        thetas, snaps = _sgd_loop(run, record_every)
    return thetas[0], snaps


def train_schemes(unit: Unit, group: GroupAction, theta0: np.ndarray, teacher: np.ndarray,
                  schemes, config: SGDConfig, rng_data: np.random.Generator,
                  rng_noise: np.random.Generator, rng_group: np.random.Generator | None = None,
                  *, noise: str = "iid", orbit_closed_data: bool = False) -> dict[str, np.ndarray]:
    """Several ``schemes`` from the same ``theta0`` on ONE draw of data, noise and group
    elements per step (common random numbers, claim M1c): equal bit for bit to
    ``{sc: train(..., sc, ...)[0]}`` with generators in the same state, at the cost of one
    draw instead of one per scheme.  Returns ``{scheme: theta_final}``."""
    if isinstance(schemes, str) or not isinstance(schemes, (tuple, list)) or not schemes:
        raise ArgumentTypeError(f"schemes must be a non-empty tuple of scheme names from "
                                f"{SCHEMES}; got {schemes!r:.60}")
    schemes = tuple(require_choice(sc, "schemes entry", SCHEMES) for sc in schemes)
    if len(set(schemes)) != len(schemes):
        raise ValueError(f"schemes must be distinct; got {schemes}")
    run = _prepare(unit, group, theta0, teacher, schemes, config, rng_data, rng_noise,
                   rng_group, noise, orbit_closed_data)
    with np.errstate(over="ignore", invalid="ignore"):
        thetas, _ = _sgd_loop(run, 0)
    return dict(zip(schemes, thetas))


def _prepare(unit, group, theta0, teacher, schemes, config, rng_data, rng_noise, rng_group,
             noise, orbit_closed_data) -> dict:
    """Validated inputs and the derived constants of a run of :func:`train` /
    :func:`train_schemes`."""
    require_choice(noise, "noise", NOISE_MODES)
    _require_unit(unit)
    _require_group(group, unit)
    if not isinstance(config, SGDConfig):
        raise ArgumentTypeError(f"config must be an SGDConfig; got {type(config).__name__}")
    rng_data = require_generator(rng_data, "rng_data")
    rng_noise = require_generator(rng_noise, "rng_noise")
    if rng_group is not None or "da_random" in schemes:
        if rng_group is None:
            raise ValueError("scheme 'da_random' needs rng_group (the stream of random g)")
        rng_group = require_generator(rng_group, "rng_group")
    orbit_closed_data = _require_bool(orbit_closed_data, "orbit_closed_data")
    theta = as_float_array(theta0, "theta0 (initial particles)").copy()
    if theta.ndim != 2 or theta.shape[0] == 0:
        raise ValueError(f"theta0 must have shape (N, D) with N >= 1; got {theta.shape}")
    if theta.shape[1] != unit.dim_z:
        raise ValueError(f"dimension mismatch: particles D = {theta.shape[1]}, unit D = "
                         f"{unit.dim_z}")
    teacher = as_float_array(teacher, f"teacher (particles, shape (K, {unit.dim_z}))", ndim=2,
                             allow_empty=False)
    if teacher.shape[1] != unit.dim_z:
        raise ValueError(f"teacher must have {unit.dim_z} columns (D of the unit); got "
                         f"{teacher.shape}")
    N, D = theta.shape
    width = group.order * config.batch * (N + teacher.shape[0]) * max(D, unit.dim_y)
    require_size(len(schemes) * config.steps * width, "the work schemes x steps x |G| batch x "
                 "N x D", limit=_MAX_WORK, what="multiply-adds",
                 hint="use fewer steps, particles or a smaller batch")
    require_size(width, "one step's values (|G| batch x N x D)")
    if config.precision == "float32" and not isinstance(unit, (LogisticUnit, TanhUnit)):
        raise ValueError(f"SGDConfig.precision 'float32' is implemented for LogisticUnit and "
                         f"TanhUnit only; use 'float64' with {type(unit).__name__}")
    if noise == "orbit" and N % group.order:
        raise ValueError(f"noise='orbit' needs N divisible by |G| = {group.order}; got {N}")
    if orbit_closed_data and config.batch % group.order:
        raise ValueError(f"orbit_closed_data needs batch divisible by |G| = {group.order}")
    P = group.projector()
    # EA starts on E^G and moves by projected gradients and projected noise
    noises = tuple("projected" if sc == "ea" else noise for sc in schemes)
    n_noise = {N // group.order if nz == "orbit" else N for nz in noises}
    if len(n_noise) > 1:
        raise ValueError(f"the schemes {schemes} draw different amounts of noise (noise = "
                         f"'orbit' with 'ea'); run them with train() one at a time")
    n_noise = n_noise.pop()
    n_draw = config.batch // group.order if orbit_closed_data else config.batch
    s = config.alpha / N
    return {"unit": unit, "group": group, "teacher": teacher, "config": config,
            "schemes": schemes, "noises": noises,
            "thetas": [theta @ P.T if sc == "ea" else theta.copy() for sc in schemes],
            "rng_data": rng_data, "rng_noise": rng_noise, "rng_group": rng_group,
            "orbit_closed_data": orbit_closed_data, "P": P, "s": s,
            "amp": np.sqrt(2.0 * config.beta * s), "n_draw": n_draw, "n_noise": n_noise,
            "chunk": int(max(1, min(config.steps,
                                    2_000_000 // max(1, n_noise * D + n_draw * unit.dim_x))))}


def _sgd_loop(run: dict, record_every: int) -> tuple[list[np.ndarray], list[tuple[int, np.ndarray]]]:
    """The step loop of :func:`train` / :func:`train_schemes` (chunks of pre-drawn data,
    noise and group elements, shared by the schemes); snapshots of the first scheme."""
    unit, group, config, P, s, amp = (run[k] for k in ("unit", "group", "config", "P", "s", "amp"))
    thetas, schemes, noises = run["thetas"], run["schemes"], run["noises"]
    N, D = thetas[0].shape
    snaps: list[tuple[int, np.ndarray]] = [(0, thetas[0].copy())] if record_every else []
    da_random = "da_random" in schemes
    k = 0
    while k < config.steps:
        m = min(run["chunk"], config.steps - k)
        Xc = config.x_std * run["rng_data"].standard_normal((m, run["n_draw"], unit.dim_x))
        Ec = (run["rng_noise"].standard_normal((m, run["n_noise"], D)) if config.beta > 0
              else None)
        Gc = (run["rng_group"].integers(0, group.order, size=(m, config.batch))
              if da_random else None)
        # teacher labels for the whole chunk in one product (the student's are per step)
        Yc = _average(unit._value(Xc.reshape(-1, unit.dim_x), run["teacher"]),
                      None).reshape(m, run["n_draw"], -1)
        for j in range(m):
            x = Xc[j]
            y = Yc[j]
            if run["orbit_closed_data"]:
                x, y = _stack_orbit(group, x, y)
            for scheme, nz, theta in zip(schemes, noises, thetas):
                grad = _gradient(scheme, unit, group, theta, x, y,
                                 Gc[j] if scheme == "da_random" else None, config.precision)
                grad += 2.0 * config.tau * theta
                if scheme == "ea":
                    grad = grad @ P.T
                theta -= s * grad
                if Ec is not None:
                    xi = Ec[j]
                    if nz == "orbit":
                        xi = np.einsum("gij,nj->gni", group.M, xi).reshape(N, D)
                    elif nz == "projected":
                        xi = xi @ P.T
                    theta += amp * xi
            k += 1
            if record_every and k % record_every == 0:
                snaps.append((k, thetas[0].copy()))
            if k % 64 == 0 and not all(np.isfinite(th).all() for th in thetas):
                break
        for scheme, theta in zip(schemes, thetas):
            if not np.all(np.isfinite(theta)):
                raise DivergenceError(f"noisy SGD ({scheme}) diverged before step {k}: step "
                                      f"size s = alpha/N = {s:.4g} is too large; reduce alpha")
    return thetas, snaps


# ----------------------------------------------------------------------------------------
# the E^G discovery heuristic (claim M1e)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HeuristicIterate:
    """One iteration j of :func:`discover_fixed_space`: the subspace E_j (orthonormal
    columns) the particles started in, RMD(nu_T, P_{E_j} # nu_T) after free training, the
    eigenvalues of the escape covariance (descending, relative to m_2(nu_T)) and the
    number of directions added."""
    basis: np.ndarray
    rmd_escape: float
    escape_spectrum: np.ndarray
    added: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "basis", as_float_array(self.basis, "HeuristicIterate.basis",
                                                         ndim=2))
        object.__setattr__(self, "rmd_escape", as_float_scalar(
            self.rmd_escape, "HeuristicIterate.rmd_escape", lo=0.0))
        object.__setattr__(self, "escape_spectrum", as_float_array(
            self.escape_spectrum, "HeuristicIterate.escape_spectrum", ndim=1))
        object.__setattr__(self, "added", require_positive_int(
            self.added, "HeuristicIterate.added", minimum=0, maximum=self.basis.shape[0]))


def discover_fixed_space(unit: Unit, group: GroupAction, teacher: np.ndarray,
                         config: SGDConfig, n_particles: int, rng: np.random.Generator, *,
                         rmd_threshold: float = 0.05, eigen_threshold: float = 0.01,
                         max_iter: int = 8, std: float = STUDENT_STD,
                         scheme: str = "vanilla",
                         distance: Callable[[np.ndarray, np.ndarray], float] | None = None
                         ) -> tuple[np.ndarray, list[HeuristicIterate], bool]:
    """Data-driven discovery of E^G (claim M1e): E_0 = {0}; initialize N particles SI on
    E_j (i.i.d. N(0, std^2) coordinates in an orthonormal basis of E_j), train freely
    (vanilla noisy SGD on the data, which must be G-symmetric for E^G to be the answer),
    and measure the escape RMD(nu_T, P_{E_j} # nu_T).  If it exceeds ``rmd_threshold``,
    enlarge E_j by the eigenvectors of the escape second-moment matrix
    (1/N) sum_i r_i r_i^T, r_i = (I - P_{E_j}) theta_i, whose eigenvalues exceed
    ``eigen_threshold`` m_2(nu_T): E_{j+1} is the span of the top dim E_j + k principal
    directions of the trained cloud (uncentered second moment; this re-fit corrects a tilt
    of E_j).  Stop when the particles stay (escape RMD <= ``rmd_threshold``: converged) or
    when no escape direction is significant although the escape exceeds the threshold (a
    diffuse fluctuation or a slow drift: stalled, ``converged`` is False).

    ``scheme`` is the free training scheme: ``vanilla`` (i.i.d. batches of the symmetric
    data law) or ``da_orbit`` (every batch completed by its orbit: uses the action of G on
    the DATA only).  ``group`` is used only for its dimensions and, with ``da_orbit``, its
    data actions rho, rho^; the heuristic never looks at M_g.
    ``distance(a, b)`` is the escape distance between particle clouds: the RMD convention
    (``verify.formulas.rmd``, derived in claim M1c; required: numerics holds no copy of it).
    Returns ``(basis of the final E_j, iterates, converged)``."""
    if not callable(distance):
        raise ArgumentTypeError("distance must be a callable (a, b) -> float: the escape RMD, "
                                "e.g. verify.formulas.rmd")
    _require_unit(unit)
    _require_group(group, unit)
    rng = require_generator(rng)
    if not isinstance(config, SGDConfig):
        raise ArgumentTypeError(f"config must be an SGDConfig; got {type(config).__name__}")
    n_particles = require_positive_int(n_particles, "n_particles")
    require_size(n_particles * unit.dim_z, "n_particles (the particles, n_particles x D)")
    max_iter = require_positive_int(max_iter, "max_iter", maximum=64)
    std = _require_positive_finite(std, "std")
    rmd_threshold = as_float_scalar(rmd_threshold, "rmd_threshold", lo=0.0)
    eigen_threshold = as_float_scalar(eigen_threshold, "eigen_threshold", lo=0.0)
    require_choice(scheme, "scheme", ("vanilla", "da_orbit"))
    require_size(max_iter * config.steps * group.order * config.batch * n_particles * unit.dim_z,
                 "the work max_iter x steps x |G| batch x N x D", limit=_MAX_WORK,
                 what="multiply-adds", hint="use fewer steps, particles or iterations")
    D = unit.dim_z
    basis = np.zeros((D, 0))
    iterates: list[HeuristicIterate] = []
    data_rng, noise_rng = rng.spawn(2)
    for _ in range(max_iter):
        coords = std * rng.standard_normal((n_particles, basis.shape[1]))
        theta0 = coords @ basis.T if basis.shape[1] else np.zeros((n_particles, D))
        theta, _ = train(unit, group, theta0, teacher, scheme, config, data_rng, noise_rng)
        Pj = basis @ basis.T
        proj = theta @ Pj
        resid = theta - proj
        r = float(distance(theta, proj))
        m2 = float(np.mean(np.sum(theta * theta, axis=1)))
        w, V = np.linalg.eigh(resid.T @ resid / n_particles)
        order = np.argsort(w)[::-1]
        w, V = w[order], V[:, order]
        rel = w / m2 if m2 > 0 else w
        k_new = int(np.count_nonzero(rel > eigen_threshold))
        if r <= rmd_threshold or k_new == 0:
            # the particles stay (converged), or their escape is diffuse: no direction
            # carries a fraction eigen_threshold of the second moment, so nothing can be
            # added although the escape exceeds the threshold (stalled, not converged)
            iterates.append(HeuristicIterate(basis.copy(), r, rel, 0))
            return basis, iterates, bool(r <= rmd_threshold)
        iterates.append(HeuristicIterate(basis.copy(), r, rel, k_new))
        k = min(D, basis.shape[1] + k_new)
        # re-fit: the top-k principal directions of the whole trained cloud (uncentered
        # second moment), which corrects a tilt of E_j inherited from earlier fluctuations
        w2, V2 = np.linalg.eigh(theta.T @ theta / n_particles)
        basis = V2[:, np.argsort(w2)[::-1][:k]]
        if basis.shape[1] == D:
            break
    return basis, iterates, False
