"""Jointly equivariant units of Maass Martinez & Fontbona (2024) and the models built
from them (docs/conventions.md, section 3; claims M1a-M1e): sigma_*(x, theta) for the
matrix units logistic(z x), tanh(z x), z x, (z x) g(|z x|^2), the hidden-layer unit W tanh(A^T x + B) and
the paper's (u, v) unit v s(u . x / 2); Phi_mu = sum_i w_i sigma_*(., theta_i) and its
feature average Q_G Phi_mu.

Units map inputs x (B, dX) and particles theta (N, D) to sigma_*(x_b, theta_i), shape
(B, N, dY), and provide the vector-Jacobian product
``vjp(x, theta, c)[i] = (1/B) sum_b grad_z sigma_*(x_b, theta_i)^T c_b``, which is all the
SGD step (:mod:`numerics.equivariant_sgd`) needs for the quadratic loss.  The public
names are re-exported by :mod:`numerics.equivariant`, the module to import from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from numerics.groups import GroupAction
from numerics.validation import (ArgumentTypeError, as_float_array, as_float_scalar,
                                 require_choice, require_finite_result, require_positive_int,
                                 require_size)

__all__ = ["Unit", "LogisticUnit", "TanhUnit", "LinearUnit", "HiddenLayerUnit", "UVUnit",
           "NormGatedUnit", "UV_ACTIVATIONS", "NORM_GATES", "model_output", "symmetrized_output"]

#: largest dimension of X, Y (matrix units) or hidden width (HiddenLayerUnit)
_MAX_DIM = 4096


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
                                f"HiddenLayerUnit, UVUnit, NormGatedUnit; got {type(unit).__name__} {unit!r:.40}")
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


#: gates of :class:`NormGatedUnit`: sigma_*(x, z) = (z x) g(|z x|^2)
NORM_GATES = ("cubic", "tanh")


@dataclass(frozen=True)
class NormGatedUnit(_MatrixUnit):
    """sigma_*(x, z) = (z x) g(|z x|^2), z in R^{dY x dX} flattened row-major, with the gate
    g(r) = r (``gate="cubic"``: the unit (z x)|z x|^2) or g(r) = tanh(r).  Jointly
    equivariant for :func:`numerics.groups.matrix_action` with ANY orthogonal rho, rho^
    (|rho^ z x| = |z x|), in particular for rotations (SO(2), claims M1a and M1g), where the
    elementwise units are not."""
    gate: str = "cubic"

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice(self.gate, "NormGatedUnit.gate", NORM_GATES)

    def _gates(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """g(|u|^2) and g'(|u|^2) for pre-activations u of shape (B, N, dY)."""
        r = np.einsum("bnk,bnk->bn", u, u)
        if self.gate == "cubic":
            return r, np.ones_like(r)
        t = np.tanh(r)
        return t, 1.0 - t * t

    def _value(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        u = self._pre(x, theta)
        return u * self._gates(u)[0][:, :, None]

    def _vjp(self, x: np.ndarray, theta: np.ndarray, cot: np.ndarray,
             value: np.ndarray | None = None) -> np.ndarray:
        # d/dz <c, u g(|u|^2)> = (g c + 2 g' <c, u> u) x^T with u = z x
        u = self._pre(x, theta)
        g, dg = self._gates(u)
        cu = np.einsum("bk,bnk->bn", cot, u)
        t = g[:, :, None] * cot[:, None, :] + (2.0 * dg * cu)[:, :, None] * u
        return self._pullback(x, theta, t)


_UNIT_TYPES = (LogisticUnit, TanhUnit, LinearUnit, HiddenLayerUnit, UVUnit, NormGatedUnit)


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
