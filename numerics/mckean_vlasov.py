"""The McKean-Vlasov limit of noisy SGD at temperature beta > 0 for units with ONE scalar
parameter z (Maass Martinez & Fontbona 2024, main theorem; claim M1f), computed on a grid.

Width-N noisy SGD with step alpha/N (``numerics.equivariant.train``) tends, in flow time
k alpha / N, to the law rho_t of the McKean-Vlasov SDE
dz = v_rho(z) dt + sqrt(2 beta) dW, v_rho(z) = -(E_x[d_z sigma(x, z)^T (Phi_rho(x) - y(x))]
+ 2 tau z), Phi_rho(x) = int sigma(x, z) rho(z) dz, i.e. to the solution of the nonlinear
Fokker-Planck equation d_t rho = -d_z(rho v_rho) + beta d_zz rho.  For tau, beta > 0 its
unique stationary state is the Gibbs fixed point rho* ~ exp(-(u_rho*(z) + tau z^2)/beta),
u_rho(z) = E_x[sigma(x, z)^T (Phi_rho(x) - y(x))] the first variation of the risk.

This module never samples: :func:`mckean_vlasov_flow` is a conservative finite-volume
scheme (cell averages on a uniform grid of [-L, L], central fluxes, zero flux at the ends:
second order in the cell width h; classical RK4 in time at a step inside its stability
region), :func:`gibbs_fixed_point` solves the fixed-point equation by entropic mirror
descent (damped iteration of the log-density).  The data expectation is a quadrature rule
of pi_X given by the caller (e.g. ``numerics.equivariant_limit.gauss_hermite_product``).
Their accuracy is measured by halving h (``docs/claims.md``, M1f)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.special import erf

from numerics.equivariant_units import Unit, _require_unit
from numerics.validation import (DivergenceError, RunProgress, as_float_array,
                                 as_float_scalar, require_callable, require_positive_int,
                                 require_size, require_work)

__all__ = ["CellDensity", "gaussian_cells", "cells_from_density", "mckean_vlasov_flow",
           "gibbs_fixed_point", "free_energy", "wasserstein1_to_sample", "MAX_CELLS"]

#: the most cells of a grid (a 2^16-cell grid steps in ~1 ms; its stable step is ~h^2/beta)
MAX_CELLS = 2 ** 16
#: RK4 is stable for the diffusion's eigenvalues >= -4 beta / h^2 when dt <= this h^2 / beta
_RK4_DIFFUSION_CFL = 0.5
#: a density above this fraction of its peak in a boundary cell means the grid is too short
_EDGE_FRACTION = 1e-9


@dataclass(frozen=True)
class CellDensity:
    """A probability density on [-L, L] as averages ``rho`` over ``n`` equal cells; the
    model's quadrature is the midpoint rule (spectrally accurate for smooth densities that
    vanish at the ends)."""
    L: float
    rho: np.ndarray

    def __post_init__(self) -> None:
        rho = as_float_array(self.rho, "rho (cell averages)", ndim=1, allow_empty=False)
        L, _ = _require_grid(self.L, rho.size)
        if np.any(rho < 0):
            raise ValueError("rho (cell averages) must be >= 0")
        mass = float(np.sum(rho)) * 2.0 * L / rho.size
        if not abs(mass - 1.0) <= 1e-9:
            raise ValueError(f"rho must have mass 1 on [-L, L] (sum rho h = {mass:.6g}): build it "
                             "with cells_from_density, which normalises")
        rho = rho.copy()
        rho.flags.writeable = False
        object.__setattr__(self, "L", L)
        object.__setattr__(self, "rho", rho)

    @property
    def n(self) -> int:
        return int(self.rho.size)

    @property
    def h(self) -> float:
        return 2.0 * self.L / self.n

    @property
    def centers(self) -> np.ndarray:
        return -self.L + self.h * (np.arange(self.n) + 0.5)

    @property
    def edges(self) -> np.ndarray:
        return -self.L + self.h * np.arange(self.n + 1)

    @property
    def masses(self) -> np.ndarray:
        return self.h * self.rho

    def mean(self) -> float:
        return float(self.masses @ self.centers)

    def variance(self) -> float:
        """Of the piecewise-constant density (the midpoint second moment plus h^2/12)."""
        m = self.mean()
        return float(self.masses @ (self.centers - m) ** 2) + self.h ** 2 / 12.0

    def cdf(self, z: Any) -> np.ndarray:
        """The distribution function of the piecewise-constant density (linear in a cell)."""
        z = as_float_array(z, "z", allow_empty=True)
        F = np.concatenate([[0.0], np.cumsum(self.masses)])
        return np.interp(z, self.edges, F)

    def output(self, unit: Unit, x: Any) -> np.ndarray:
        """Phi_rho(x_b) = int sigma_*(x_b, z) rho(z) dz (midpoint rule): shape (B, dY)."""
        _require_scalar_unit(unit)
        x = as_float_array(x, "x (B, dX)", ndim=2, allow_empty=False)
        if x.shape[1] != unit.dim_x:
            raise ValueError(f"x must have shape (B, {unit.dim_x}); got {x.shape}")
        require_size(x.shape[0] * self.n * unit.dim_y, "x rows x cells x dY",
                     hint="use fewer data points or cells")
        return np.einsum("bkd,k->bd", unit.value(x, self.centers[:, None]), self.masses)


def _require_grid(L: Any, n: Any) -> tuple[float, int]:
    L = as_float_scalar(L, "L (half-width of the grid [-L, L])", lo=0.0)
    if L == 0.0:
        raise ValueError("L (half-width of the grid [-L, L]) must be > 0; got 0.0")
    n = require_positive_int(n, "n (number of cells)", minimum=4, maximum=MAX_CELLS)
    return L, n


def _require_density(density: Any, name: str = "density") -> CellDensity:
    if not isinstance(density, CellDensity):
        raise TypeError(f"{name} must be a numerics.mckean_vlasov.CellDensity (e.g. from "
                        f"gaussian_cells); got {type(density).__name__}")
    return density


def cells_from_density(rho: Any, L: Any) -> CellDensity:
    """A :class:`CellDensity` from cell averages ``rho`` (n,) >= 0 on [-L, L], normalised
    to mass 1."""
    rho = as_float_array(rho, "rho (cell averages)", ndim=1, allow_empty=False)
    L, n = _require_grid(L, rho.size)
    if np.any(rho < 0):
        raise ValueError("rho (cell averages) must be >= 0")
    mass = float(np.sum(rho)) * 2.0 * L / n
    if not mass > 0:
        raise ValueError("rho (cell averages) must have positive mass")
    return CellDensity(L, rho / mass)  # mass is exactly 1 to rounding


def gaussian_cells(L: Any, n: Any, mean: Any, std: Any) -> CellDensity:
    """The exact cell averages of N(mean, std^2) on [-L, L] (differences of erf),
    renormalised to mass 1 (the mass outside [-L, L] must be below 1e-12)."""
    L, n = _require_grid(L, n)
    mean = as_float_scalar(mean, "mean")
    std = as_float_scalar(std, "std", lo=0.0)
    if std == 0.0:
        raise ValueError("std must be > 0 (a point mass has no density)")
    edges = -L + (2.0 * L / n) * np.arange(n + 1)
    cdf = 0.5 * erf((edges - mean) / (np.sqrt(2.0) * std))
    rho = np.diff(cdf) / (2.0 * L / n)
    if 1.0 - (cdf[-1] - cdf[0]) > 1e-12:
        raise ValueError(f"N({mean:g}, {std:g}^2) puts {1.0 - (cdf[-1] - cdf[0]):.2e} of its mass "
                         f"outside [-{L:g}, {L:g}]: use a larger L")
    return cells_from_density(rho, L)


def _require_scalar_unit(unit: Any) -> None:
    _require_unit(unit)
    if unit.dim_z != 1:
        raise ValueError(f"unit must have one scalar parameter (dim_z = 1) for the 1-D "
                         f"Fokker-Planck equation; got dim_z = {unit.dim_z}")


def _data(unit: Unit, x: Any, x_weights: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _require_scalar_unit(unit)
    x = as_float_array(x, "x (B, dX)", ndim=2, allow_empty=False)
    if x.shape[1] != unit.dim_x:
        raise ValueError(f"x must have shape (B, {unit.dim_x}); got {x.shape}")
    xw = as_float_array(x_weights, "x_weights (B,)", ndim=1, allow_empty=False)
    if xw.size != x.shape[0] or np.any(xw < 0):
        raise ValueError(f"x_weights must be {x.shape[0]} non-negative quadrature weights")
    y = as_float_array(y, "y (B, dY)", ndim=2, allow_empty=False)
    if y.shape != (x.shape[0], unit.dim_y):
        raise ValueError(f"y must have shape {(x.shape[0], unit.dim_y)}; got {y.shape}")
    return x, xw, y


def _slopes(unit: Unit, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """d_z sigma_*(x_b, z_i)_k as an array (B, n, dY), from the unit's own pullback."""
    B = x.shape[0]
    out = np.empty((B, z.size, unit.dim_y))
    for b in range(B):
        for k in range(unit.dim_y):
            cot = np.zeros((B, unit.dim_y))
            cot[b, k] = B
            out[b, :, k] = unit.vjp(x, z[:, None], cot)[:, 0]
    return out


def _check_edges(rho: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(rho)) or float(rho.min()) < -_EDGE_FRACTION * float(rho.max()):
        raise DivergenceError(f"{what}: the density became negative or non-finite: the drift is "
                              "too strong for the grid (cell Peclet number |v| h / (2 beta) "
                              "above 1): use more cells, or smaller labels or temperature ratio")
    if max(rho[0], rho[-1]) > _EDGE_FRACTION * float(rho.max()):
        raise ValueError(f"{what}: the density reaches the ends of [-L, L] (boundary cell "
                         f"{max(rho[0], rho[-1]) / rho.max():.1e} of the peak): use a larger L")


def mckean_vlasov_flow(unit: Unit, density0: CellDensity, x: Any, x_weights: Any, y: Any, *,
                       tau: Any, beta: Any, t_end: Any, times: Any = None,
                       long_run: Any = None) -> list[CellDensity]:
    """rho at ``times`` (default: only ``t_end``) of d_t rho = -d_z(rho v_rho) + beta d_zz rho
    from ``density0`` (see the module doc), the data expectation by the rule (x, x_weights)
    with labels y.  Finite volumes with central fluxes (second order in h), RK4 at
    dt <= h^2 / (2 beta).  Raises ValueError when the density reaches the grid's ends."""
    dens = _require_density(density0, "density0")
    x, xw, y = _data(unit, x, x_weights, y)
    tau = as_float_scalar(tau, "tau", lo=0.0)
    beta = as_float_scalar(beta, "beta", lo=0.0)
    if beta == 0.0:
        raise ValueError("beta must be > 0 (at beta = 0 the flow is transport: use "
                         "numerics.equivariant_limit.meanfield_flow)")
    t_end = as_float_scalar(t_end, "t_end", lo=0.0)
    ts = np.array([t_end]) if times is None else as_float_array(times, "times", ndim=1)
    if ts.size == 0 or np.any(np.diff(ts) < 0) or ts[0] < 0 or ts[-1] > t_end:
        raise ValueError("times must be non-decreasing in [0, t_end]")
    h, zc = dens.h, dens.centers
    zf = dens.edges[1:-1]
    dt_max = _RK4_DIFFUSION_CFL * h * h / beta
    steps = int(np.ceil(t_end / dt_max)) if t_end > 0 else 0
    long = require_work(4 * steps * dens.n * (x.shape[0] * unit.dim_y + 4), "t_end",
                        long_run=long_run, what="work units (4 x steps x cells x data nodes)",
                        hint="use fewer cells or a shorter t_end")
    S = unit.value(x, zc[:, None]) * h          # (B, n, dY): masses' weights
    Dv = _slopes(unit, x, zf) * xw[:, None, None]   # (B, n-1, dY)
    pen = 2.0 * tau * zf

    def rhs(rho: np.ndarray) -> np.ndarray:
        R = np.einsum("bkd,k->bd", S, rho) - y
        v = -(np.einsum("bfd,bd->f", Dv, R) + pen)
        J = v * 0.5 * (rho[1:] + rho[:-1]) - beta * (rho[1:] - rho[:-1]) / h
        d = np.zeros_like(rho)
        d[:-1] -= J
        d[1:] += J
        return d / h

    dt = t_end / steps if steps else 0.0
    at = np.rint(ts / dt).astype(int) if steps else np.zeros(ts.size, dtype=int)
    out: list[CellDensity] = []
    rho = dens.rho.copy()
    with RunProgress(steps, "mckean_vlasov_flow steps", enabled=long) as prog:
        for i in range(steps + 1):
            if np.any(at == i):
                _check_edges(rho, "mckean_vlasov_flow")
                snap = cells_from_density(np.maximum(rho, 0.0), dens.L)
                out.extend(snap for _ in range(int(np.sum(at == i))))
            if i == steps:
                break
            k1 = rhs(rho)
            k2 = rhs(rho + 0.5 * dt * k1)
            k3 = rhs(rho + 0.5 * dt * k2)
            k4 = rhs(rho + dt * k3)
            rho = rho + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            if i % 256 == 255:
                _check_edges(rho, "mckean_vlasov_flow")
            prog.update(i + 1)
    _check_edges(rho, "mckean_vlasov_flow")
    return out


def gibbs_fixed_point(unit: Unit, L: Any, n: Any, x: Any, x_weights: Any, y: Any,
                      exponent: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                      step: Any = 0.2, tol: Any = 1e-13, max_iter: Any = 20000) -> CellDensity:
    """The fixed point rho ~ exp(exponent(u_rho(z), z)) on n cells of [-L, L], u_rho the
    first variation E_x[sigma_*(x, z)^T (Phi_rho(x) - y(x))], ``exponent(u, z)`` vectorised (for the
    entropic risk, -(u + tau z^2)/beta: the claim passes its derived expression).  Entropic
    mirror descent: log rho <- (1 - step) log rho + step exponent(u_rho, z) + const, until the
    fixed-point residual max |exponent(u_rho, z) - log rho| (both normalised) is below ``tol``
    times the exponent's range (at least 1);
    raises DivergenceError if the iteration budget runs out first."""
    L, n = _require_grid(L, n)
    x, xw, y = _data(unit, x, x_weights, y)
    exponent = require_callable(exponent, "exponent", "(u, z)")
    step = as_float_scalar(step, "step", lo=0.0, hi=1.0)
    if step == 0.0:
        raise ValueError("step must be in (0, 1]")
    tol = as_float_scalar(tol, "tol", lo=0.0)
    max_iter = require_positive_int(max_iter, "max_iter", maximum=10 ** 6)
    require_size(max_iter * n * x.shape[0] * unit.dim_y, "max_iter x cells x data nodes",
                 limit=2 ** 34, hint="use fewer cells or iterations")
    z = -L + (2.0 * L / n) * (np.arange(n) + 0.5)
    S = unit.value(x, z[:, None])
    h = 2.0 * L / n
    logr = np.asarray(exponent(np.zeros(n), z), dtype=float)
    for it in range(max_iter):
        w = np.exp(logr - logr.max())
        w /= w.sum() * h
        R = np.einsum("bkd,k->bd", S, h * w) - y
        target = np.asarray(exponent(np.einsum("bkd,bd->k", S, xw[:, None] * R), z), dtype=float)
        if target.shape != (n,) or not np.all(np.isfinite(target)):
            raise DivergenceError("gibbs_fixed_point: exponent(u, z) must return n finite values")
        target -= target.max()
        residual = float(np.max(np.abs(target - (logr - logr.max()))))
        logr = (1.0 - step) * logr + step * target
        logr -= logr.max()
        if residual <= tol * max(1.0, -float(target.min())):   # rounding of the exponent's range
            rho = np.exp(target)
            _check_edges(rho, "gibbs_fixed_point")
            return cells_from_density(rho, L)
    raise DivergenceError(f"gibbs_fixed_point: the iteration budget of {max_iter} is exhausted "
                          f"before the fixed point settled (residual {residual:.2e} of the "
                          f"log-density, tol {tol:.1e}): use a larger step (<= 1) or more "
                          "iterations")


def free_energy(unit: Unit, density: CellDensity, x: Any, x_weights: Any, y: Any, *,
                tau: Any, beta: Any) -> float:
    """F(rho) = 1/2 E_x|Phi_rho(x) - y(x)|^2 + tau int z^2 rho + beta int rho log rho, the
    entropic risk the flow decreases (midpoint rule; a cell's z^2 average adds h^2/12)."""
    dens = _require_density(density)
    x, xw, y = _data(unit, x, x_weights, y)
    tau = as_float_scalar(tau, "tau", lo=0.0)
    beta = as_float_scalar(beta, "beta", lo=0.0)
    R = dens.output(unit, x) - y
    rho = dens.rho
    ent = float(np.sum(dens.masses[rho > 0] * np.log(rho[rho > 0])))
    return (0.5 * float(xw @ np.sum(R * R, axis=1))
            + tau * (float(dens.masses @ dens.centers ** 2) + dens.h ** 2 / 12.0) + beta * ent)


def wasserstein1_to_sample(density: CellDensity, sample: Any) -> float:
    """W1 between the density and the empirical measure of ``sample`` (N,): the integral of
    |F_N - F| over the line, exact (F is linear in each cell, F_N constant between points)."""
    dens = _require_density(density)
    s = np.sort(as_float_array(sample, "sample (N,)", ndim=1, allow_empty=False))
    if s[0] < -dens.L or s[-1] > dens.L:
        raise ValueError(f"sample must lie in the grid [-{dens.L:g}, {dens.L:g}]")
    knots = np.union1d(dens.edges, s)
    Fr = dens.cdf(knots)
    Fn = np.searchsorted(s, knots, side="right") / s.size
    # on [k_j, k_j+1]: F_N = Fn[j] constant, F linear from Fr[j] to Fr[j+1]
    a, b = Fr[:-1] - Fn[:-1], Fr[1:] - Fn[:-1]
    w = np.diff(knots)
    same = a * b >= 0
    area = np.where(same, 0.5 * np.abs(a + b) * w, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cross = 0.5 * w * (a * a + b * b) / (np.abs(a) + np.abs(b))
    area = np.where(same, area, cross)
    return float(np.sum(area))
