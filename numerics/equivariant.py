"""Jointly equivariant units and noisy SGD for the four training schemes of Maass Martinez
& Fontbona (2024): vanilla, data augmentation (DA), feature averaging (FA) and equivariant
architectures (EA) (docs/conventions.md, section 3; claims M1a-M1e).

Units map inputs x (B, dX) and particles theta (N, D) to sigma_*(x_b, theta_i), shape
(B, N, dY), and provide the vector-Jacobian product
``vjp(x, theta, c)[i] = (1/B) sum_b grad_z sigma_*(x_b, theta_i)^T c_b``, which is all the
SGD step (1) of the paper needs for the quadratic loss l(y, y') = |y - y'|^2 / 2.

Noisy SGD (docs/conventions.md, section 3, s = alpha / N, r(z) = |z|^2):
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
``projected`` (P_{E^G} xi_i).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from numerics.groups import GroupAction
from numerics.validation import (MAX_ELEMENTS, ArgumentTypeError, DivergenceError, as_float_array,
                                 as_float_scalar, as_int_array, require_choice,
                                 require_finite_result, require_generator, require_positive_int,
                                 require_size)

__all__ = ["Unit", "LogisticUnit", "TanhUnit", "LinearUnit", "HiddenLayerUnit", "UVUnit",
           "UV_ACTIVATIONS", "SGDConfig",
           "SCHEMES", "NOISE_MODES", "PRECISIONS", "TEACHERS", "model_output", "symmetrized_output",
           "make_teacher", "init_particles", "train", "train_schemes", "DivergenceError", "X_STD",
           "STUDENT_STD", "HeuristicIterate", "discover_fixed_space", "scheme_gradient"]

SCHEMES = ("vanilla", "da_random", "da_orbit", "fa", "ea")
PRECISIONS = ("float64", "float32")
NOISE_MODES = ("iid", "orbit", "projected")
TEACHERS = ("arbitrary", "WI", "SI")
#: reference experiment: X ~ N(0, 16 I), student entries N(0, 1/16)
X_STD = 4.0
STUDENT_STD = 0.25


#: largest dimension of X, Y (matrix units) or hidden width (HiddenLayerUnit)
_MAX_DIM = 4096
#: largest work of one train / discover_fixed_space call, steps x batch x N x D
#: multiply-adds (~1 h of one core): beyond it the call is refused at once
_MAX_WORK = 2 ** 46




def _logistic(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """logistic(a) = 1 / (1 + exp(-a)) through NumPy's vectorized float64 exp (about 4x
    faster than ``scipy.special.expit``, whose scalar exp made the SGD step exp-bound).
    Rounding: exp(-a) within a few ulp, then one addition and one reciprocal, each
    correctly rounded: a relative error of a few ulp wherever the result is a normal
    float (measured <= 2 ulp against 40-digit mpmath over |a| <= 745, like expit); for
    a < -708.4 exp(-a) overflows to inf and the result is 0, within 1.6e-308 of the
    true value.  ``out`` may be ``a`` itself (in place)."""
    with np.errstate(over="ignore"):
        t = np.negative(a, out=out)
        np.exp(t, out=t)
        t += 1.0
        return np.reciprocal(t, out=t)


class Unit(Protocol):
    """What the SGD needs of a unit: dimensions and the unchecked ``_value``/``_vjp``
    (the public ``value``/``vjp`` validate and call them)."""
    dim_x: int
    dim_y: int
    dim_z: int

    def value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray: ...

    def vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
            value: np.ndarray | None = None) -> np.ndarray: ...


_UNIT_TYPES: tuple[type, ...] = ()       # filled below the unit classes


def _require_unit(unit, name: str = "unit"):
    if not isinstance(unit, _UNIT_TYPES):
        raise ArgumentTypeError(f"{name} must be one of LogisticUnit, TanhUnit, LinearUnit, "
                                f"HiddenLayerUnit, UVUnit; got {type(unit).__name__} {unit!r:.40}")
    return unit


def _require_group(group, unit=None, name: str = "group") -> GroupAction:
    if not isinstance(group, GroupAction):
        raise ArgumentTypeError(f"{name} must be a numerics.groups.GroupAction; got "
                                f"{type(group).__name__} {group!r:.40}")
    if unit is not None and (group.dim_x, group.dim_y, group.dim_z) != (unit.dim_x, unit.dim_y,
                                                                         unit.dim_z):
        raise ValueError(f"dimension mismatch: the unit maps R^{unit.dim_x} -> R^{unit.dim_y} "
                         f"with D = {unit.dim_z}; {name} acts on X = R^{group.dim_x}, "
                         f"Y = R^{group.dim_y}, Z = R^{group.dim_z}")
    return group


def _unit_inputs(unit, x, theta) -> tuple[np.ndarray, np.ndarray]:
    """x (B, dX) and theta (N, D) as finite float64 arrays fitting ``unit``."""
    x = as_float_array(x, f"x (inputs, shape (B, {unit.dim_x}))", ndim=2, allow_empty=False)
    theta = as_float_array(theta, f"theta (particles, shape (N, {unit.dim_z}))", ndim=2,
                           allow_empty=False)
    if x.shape[1] != unit.dim_x:
        raise ValueError(f"shapes do not fit the unit: x must have {unit.dim_x} columns (dX "
                         f"of the unit); got {x.shape}")
    if theta.shape[1] != unit.dim_z:
        raise ValueError(f"shapes do not fit the unit: theta must have {unit.dim_z} columns "
                         f"(D of the unit); got {theta.shape}")
    require_size(x.shape[0] * theta.shape[0] * max(unit.dim_y, unit.dim_z),
                 "the unit values (B x N x max(dY, D) entries)")
    return x, theta


class _ValidatedUnit:
    """Public ``value``/``vjp`` of every unit: validated, finite results or a named
    ValueError; they call the unchecked ``_value``/``_vjp`` that the SGD loop uses."""

    def value(self, x, theta) -> np.ndarray:
        """sigma_*(x_b, theta_i): shape (B, N, dY)."""
        _require_unit(self, "self")
        x, theta = _unit_inputs(self, x, theta)
        with np.errstate(over="ignore", invalid="ignore"):
            out = self._value(x, theta)
        return require_finite_result(out, f"{type(self).__name__}.value", "x or theta too large")

    def vjp(self, x, theta, cot, value=None) -> np.ndarray:
        """(1/B) sum_b grad_z sigma_*(x_b, theta_i)^T cot_b per particle: shape (N, D);
        ``value`` (optional) is the unit's value at (x, theta)."""
        _require_unit(self, "self")
        x, theta = _unit_inputs(self, x, theta)
        cot = as_float_array(cot, f"cot (cotangents, shape (B, {self.dim_y}))", ndim=2)
        if cot.shape != (x.shape[0], self.dim_y):
            raise ValueError(f"cot must have shape {(x.shape[0], self.dim_y)}; got {cot.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            v = self._value(x, theta)
            if value is not None:
                value = as_float_array(value, "value (the unit's value at (x, theta))")
                if value.shape != v.shape or not np.allclose(value, v, rtol=1e-12, atol=1e-300):
                    raise ValueError(f"value must be the unit's value at (x, theta), shape "
                                     f"{v.shape}; pass None to compute it")
            out = self._vjp(x, theta, cot, v)
        return require_finite_result(out, f"{type(self).__name__}.vjp", "x, theta or cot too large")


def _require_dim(v, name: str) -> int:
    return require_positive_int(v, name, maximum=_MAX_DIM)


def _require_bool(v, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False; got {type(v).__name__} {v!r:.40}")
    return bool(v)


@dataclass(frozen=True)
class _MatrixUnit(_ValidatedUnit):
    """Shared part of the units sigma_*(x, z) = s(z x), z in R^{dY x dX} flattened row-major."""
    dim_x: int = 2
    dim_y: int = 2

    def __post_init__(self) -> None:
        _require_dim(self.dim_x, f"{type(self).__name__}.dim_x")
        _require_dim(self.dim_y, f"{type(self).__name__}.dim_y")

    @property
    def dim_z(self) -> int:
        return self.dim_x * self.dim_y

    def _pre(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        # (B, dX) @ (dX, N dY): one BLAS product, rows of z are the (N dY) output units
        return (x @ theta.reshape(-1, self.dim_x).T).reshape(x.shape[0], -1, self.dim_y)

    @staticmethod
    def _pullback(x: np.ndarray, theta: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(1/B) sum_b t_b x_b^T per particle, for t = s'(z x) * cotangent of shape (B, N, dY)."""
        return (t.reshape(x.shape[0], -1).T @ x).reshape(theta.shape[0], -1) / x.shape[0]

    # Output-major layout for the SGD loop: (dY, B, N) keeps N innermost and contiguous, so
    # the activation, the cotangent product and both BLAS products run on contiguous rows
    # (the (B, N, dY) layout broadcasts over a last axis of length dY: about 2x slower).
    def _pre_t(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """(z_i x_b)_k in the layout (dY, B, N)."""
        z = theta.reshape(theta.shape[0], self.dim_y, self.dim_x)
        return np.matmul(x, z.transpose(1, 2, 0))

    def _value_t(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """sigma_*(x_b, theta_i)_k in the layout (dY, B, N)."""
        return self._activation(self._pre_t(x, theta))

    def _vjp_t(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
               value_t: np.ndarray) -> np.ndarray:
        """:meth:`vjp` from the activations ``value_t`` (dY, B, N) of :meth:`_value_t`:
        one GEMM of the slopes s' (as a (dY B, N) matrix) with the block-diagonal
        (dY B, dY dX) matrix whose block k is c_k x / B (the cotangent folded into the
        small factor); the (N, D) result is already in the particles' layout."""
        t = self._slope_from_value(value_t)
        dy, nb = t.shape[0], t.shape[1]
        dx = self.dim_x
        W = np.zeros((dy * nb, dy * dx))
        xs = x / nb
        for k in range(dy):
            W[k * nb:(k + 1) * nb, k * dx:(k + 1) * dx] = cot[:, k, None] * xs
        return t.reshape(dy * nb, -1).T @ W


@dataclass(frozen=True)
class LogisticUnit(_MatrixUnit):
    """sigma_*(x, z) = logistic(z x) elementwise, z in R^{dY x dX} flattened row-major
    (the reference unit of the paper's experiment, dX = dY = 2).  Jointly equivariant for
    :func:`numerics.groups.matrix_action` with permutation representations on Y."""

    def _value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return self._activation(self._pre(x, theta))

    def _vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
             value: np.ndarray | None = None) -> np.ndarray:
        s = self._value(x, theta) if value is None else value
        return self._pullback(x, theta, s * (1.0 - s) * cot[:, None, :])

    @staticmethod
    def _activation(a: np.ndarray) -> np.ndarray:
        """logistic(a), in place (a is a fresh pre-activation array)."""
        return _logistic(a, out=a)

    def _value_t(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """logistic(z_i x_b)_k in the layout (dY, B, N), from -(z_i x_b) = z_i (-x_b)
        (the negation rides on the small (B, dX) factor: one pass fewer)."""
        t = self._pre_t(-x, theta)
        with np.errstate(over="ignore"):
            np.exp(t, out=t)
        t += 1.0
        return np.reciprocal(t, out=t)

    @staticmethod
    def _slope_from_value(s: np.ndarray) -> np.ndarray:
        """logistic'(a) = s (1 - s) from s = logistic(a)."""
        t = 1.0 - s
        t *= s
        return t


@dataclass(frozen=True)
class TanhUnit(_MatrixUnit):
    """sigma_*(x, z) = tanh(z x) elementwise, z in R^{dY x dX} flattened row-major.  The odd
    activation makes it jointly equivariant also for signed permutations (sign flips)."""

    def _value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return np.tanh(self._pre(x, theta))

    def _vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
             value: np.ndarray | None = None) -> np.ndarray:
        a = self._value(x, theta) if value is None else value
        return self._pullback(x, theta, (1.0 - a * a) * cot[:, None, :])

    @staticmethod
    def _activation(a: np.ndarray) -> np.ndarray:
        """tanh(a), in place (a is a fresh pre-activation array)."""
        return np.tanh(a, out=a)

    @staticmethod
    def _slope_from_value(s: np.ndarray) -> np.ndarray:
        """tanh'(a) = 1 - s^2 from s = tanh(a)."""
        t = s * s
        np.subtract(1.0, t, out=t)
        return t


@dataclass(frozen=True)
class LinearUnit(_MatrixUnit):
    """sigma_*(x, z) = z x, z in R^{dY x dX} flattened row-major (linear in z: the case
    where projected and symmetrized models agree, claim M1b)."""

    def _value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        return self._pre(x, theta)

    def _vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
             value: np.ndarray | None = None) -> np.ndarray:
        g = np.einsum("bk,bj->kj", cot, x).ravel() / x.shape[0]
        return np.broadcast_to(g, theta.shape).copy()


@dataclass(frozen=True)
class HiddenLayerUnit(_ValidatedUnit):
    """sigma_*(x, (W, A, B)) = W tanh(A^T x + B), X = Y = R^n, hidden width n (a single-
    hidden-layer network as ONE unit).  Parameters [W, A (row-major), B], D = 2 n^2 + n;
    jointly equivariant for :func:`numerics.groups.cyclic_network_action` (C_n permutes
    inputs, hidden neurons and outputs; E^G = circulant W, A and constant B)."""
    n: int = 3

    def __post_init__(self) -> None:
        _require_dim(self.n, "HiddenLayerUnit.n (hidden width)")

    @property
    def dim_x(self) -> int:
        return self.n

    @property
    def dim_y(self) -> int:
        return self.n

    @property
    def dim_z(self) -> int:
        return 2 * self.n * self.n + self.n

    def _split(self, theta: np.ndarray):
        n = self.n
        W = theta[:, :n * n].reshape(-1, n, n)
        A = theta[:, n * n:2 * n * n].reshape(-1, n, n)
        return W, A, theta[:, 2 * n * n:]

    def _hidden(self, x: np.ndarray, theta: np.ndarray):
        W, A, B = self._split(theta)
        return W, np.tanh(np.einsum("bj,njk->bnk", x, A) + B[None])

    def _value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        W, a = self._hidden(x, theta)
        return np.einsum("nik,bnk->bni", W, a)

    def _vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
             value: np.ndarray | None = None) -> np.ndarray:
        W, a = self._hidden(x, theta)
        nb = x.shape[0]
        dW = np.einsum("bi,bnk->nik", cot, a) / nb
        dh = np.einsum("bi,nik->bnk", cot, W) * (1.0 - a * a)
        dA = np.einsum("bj,bnk->njk", x, dh) / nb
        dB = dh.sum(axis=0) / nb
        m = theta.shape[0]
        return np.concatenate([dW.reshape(m, -1), dA.reshape(m, -1), dB], axis=1)


#: activations of :class:`UVUnit`: name -> (s, s' expressed through s)
UV_ACTIVATIONS = ("logistic", "tanh")


@dataclass(frozen=True)
class UVUnit(_ValidatedUnit):
    """The paper's (u, v) unit (Maass Martinez & Fontbona 2024, experiments appendix):
    sigma_*(x, (u, v)) = v * s(u . x / 2), u in X = R^dX, v in Y = R^dY, s the logistic
    function (``activation="logistic"``, default) or tanh.

    Parameters are flattened as z = [u (dX entries), v (dY entries)], D = dX + dY.  The
    unit is jointly equivariant for :func:`numerics.groups.uv_action` (M_g (u, v) =
    (rho_g u, rho^_g v)) for ANY orthogonal rho, rho^: s(rho_g u . rho_g x / 2) =
    s(u . x / 2).  For the C_2 swap (:func:`numerics.groups.c2_swap_uv`) E^G = {u = (a, a),
    v = (b, b)}, dim 2.  One scalar feature per particle, so Q_G of a single unit is a
    genuine |G|-term average (unlike the matrix units, whose rows decouple)."""
    dim_x: int = 2
    dim_y: int = 2
    activation: str = "logistic"

    def __post_init__(self) -> None:
        _require_dim(self.dim_x, "UVUnit.dim_x")
        _require_dim(self.dim_y, "UVUnit.dim_y")
        require_choice(self.activation, "UVUnit.activation", UV_ACTIVATIONS)

    @property
    def dim_z(self) -> int:
        return self.dim_x + self.dim_y

    def _gate(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """s(u_i . x_b / 2): shape (B, N)."""
        a = 0.5 * (x @ theta[:, :self.dim_x].T)
        return _logistic(a, out=a) if self.activation == "logistic" else np.tanh(a, out=a)

    def _value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        s = self._gate(x, theta)
        return s[:, :, None] * theta[None, :, self.dim_x:]

    def _vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
             value: np.ndarray | None = None) -> np.ndarray:
        s = self._gate(x, theta)
        ds = s * (1.0 - s) if self.activation == "logistic" else 1.0 - s * s
        nb = x.shape[0]
        dv = s.T @ cot / nb                                   # (N, dY)
        vc = cot @ theta[:, self.dim_x:].T                     # (B, N): v_i . c_b
        du = (ds * vc).T @ x / (2.0 * nb)                      # (N, dX)
        return np.concatenate([du, dv], axis=1)


_UNIT_TYPES = (LogisticUnit, TanhUnit, LinearUnit, HiddenLayerUnit, UVUnit)


def _require_positive_finite(v, name: str) -> float:
    return as_float_scalar(v, name, lo=0.0, lo_open=True)


def _require_representable(out: np.ndarray, what: str, name: str, value: float) -> np.ndarray:
    """``out`` (Gaussian draws times ``name`` = ``value``, possibly rotated by M_g) if
    every entry is finite; else a ValueError naming ``name`` (too large for float64)."""
    return require_finite_result(out, what, f"{name} = {value:g} is too large: "
                                 f"use a smaller {name}")


def _model_args(unit, x, theta, weights):
    _require_unit(unit)
    x, theta = _unit_inputs(unit, x, theta)
    if weights is not None:
        weights = as_float_array(weights, "weights (one per particle)", ndim=1)
        if weights.shape[0] != theta.shape[0]:
            raise ValueError(f"weights must have one entry per particle ({theta.shape[0]}); "
                             f"got {weights.shape[0]}")
    return x, theta, weights


def model_output(unit: Unit, x: np.ndarray, theta: np.ndarray,
                 weights: np.ndarray | None = None) -> np.ndarray:
    """Phi_mu(x) = sum_i w_i sigma_*(x, theta_i) (uniform weights by default): (B, dY)
    (claims M1a-M1e); a ValueError naming the argument for bad input or an overflow."""
    x, theta, weights = _model_args(unit, x, theta, weights)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _average(unit._value(x, theta), weights)
    return require_finite_result(out, "model_output", "x, theta or weights too large")


def _average(v: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """sum_i w_i v[:, i, :] via one batched BLAS product (much faster than .mean(axis=1))."""
    if weights is None:
        weights = _uniform(v.shape[1])
    return np.matmul(weights, v)


_UNIFORM: dict[int, np.ndarray] = {}


def _uniform(n: int) -> np.ndarray:
    """The uniform weights 1/n (cached: the SGD loop needs them every step)."""
    w = _UNIFORM.get(n)
    if w is None:
        if len(_UNIFORM) > 64:
            _UNIFORM.clear()
        w = _UNIFORM[n] = np.full(n, 1.0 / n)
        w.setflags(write=False)
    return w


def symmetrized_output(unit: Unit, group: GroupAction, x: np.ndarray, theta: np.ndarray,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """(Q_G Phi_mu)(x) = (1/|G|) sum_g rho^_{g^-1} Phi_mu(rho_g x) (feature averaging,
    claim M1a)."""
    x, theta, weights = _model_args(unit, x, theta, weights)
    _require_group(group, unit)
    require_size(group.order * x.shape[0] * theta.shape[0] * unit.dim_y,
                 "the orbit values (|G| x B x N x dY entries)")
    with np.errstate(over="ignore", invalid="ignore"):
        out = group.symmetrize_function(
            lambda xx: _average(unit._value(xx, theta), weights))(x)
    return require_finite_result(out, "symmetrized_output", "x, theta or weights too large")


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
                         scheme: str = "vanilla"
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
    Returns ``(basis of the final E_j, iterates, converged)``."""
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
    from numerics.transport import rmd as _rmd     # after validation (imports scipy)
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
        r = _rmd(theta, proj)
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
