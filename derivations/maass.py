"""Symbolic identities of Maass Martinez & Fontbona (2024) for finite groups acting by
permutations (MATH.md section M; claims M1a and M1b).

Everything is derived from the definitions with symbolic parameters:
- joint equivariance sigma_*(rho_g x, M_g z) = rho^_g sigma_*(x, z) of the reference unit
  sigma_*(x, z) = logistic(z x) under M_g z = g z g^T;
- M1a: (Q_G Phi_mu)(x) = Phi_{mu^G}(x) for a symbolic weighted two-particle measure;
- M1b: Phi_{mu^G} = Phi_{mu^{E^G}} for the linear unit z x, and the symbolic difference
  (and its small-parameter expansion) for the logistic unit.
A finite group is given as a list of (rho_g, rho^_g) SymPy matrices; the parameter action
M_g z = rho^_g z rho_g^T is built from them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

__all__ = ["logistic", "swap_group", "cyclic_group", "matrix_symbols", "vector_symbols",
           "logistic_unit", "linear_unit", "act_on_parameters", "haar_average",
           "fixed_space_projector", "feature_average", "symmetrized_model", "projected_model",
           "EquivarianceDerivation", "derive_joint_equivariance", "M1aDerivation",
           "derive_feature_averaging", "M1bDerivation", "derive_projection_vs_symmetrization",
           "eps"]

eps = sp.Symbol("epsilon", positive=True)


def logistic(t: sp.Expr) -> sp.Expr:
    """logistic(t) = 1 / (1 + exp(-t))."""
    return 1 / (1 + sp.exp(-t))


def _perm_matrix(perm: list[int]) -> sp.Matrix:
    n = len(perm)
    return sp.Matrix(n, n, lambda i, j: 1 if perm[i] == j else 0)


def swap_group() -> list[tuple[sp.Matrix, sp.Matrix]]:
    """C_2 = {I, P} on R^2 (P swaps the coordinates), rho = rho^ = g: the reference experiment."""
    P = _perm_matrix([1, 0])
    return [(sp.eye(2), sp.eye(2)), (P, P)]


def cyclic_group(n: int) -> list[tuple[sp.Matrix, sp.Matrix]]:
    """C_n by cyclic shifts S^k on R^n (rho = rho^ = S^k)."""
    S = _perm_matrix([(i - 1) % n for i in range(n)])
    return [(S**k, S**k) for k in range(n)]


def matrix_symbols(name: str, rows: int, cols: int) -> sp.Matrix:
    """A real symbolic matrix z_{ij} (i, j from 1)."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}{i + 1}{j + 1}", real=True))


def vector_symbols(name: str, n: int) -> sp.Matrix:
    return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"{name}{i + 1}", real=True))


def logistic_unit(x: sp.Matrix, z: sp.Matrix) -> sp.Matrix:
    """sigma_*(x, z) = logistic(z x) elementwise (the reference unit)."""
    return (z * x).applyfunc(logistic)


def linear_unit(x: sp.Matrix, z: sp.Matrix) -> sp.Matrix:
    """sigma_*(x, z) = z x."""
    return z * x


def act_on_parameters(g: tuple[sp.Matrix, sp.Matrix], z: sp.Matrix) -> sp.Matrix:
    """M_g z = rho^_g z rho_g^T."""
    rho, rho_hat = g
    return rho_hat * z * rho.T


def haar_average(values: list[sp.Matrix]) -> sp.Matrix:
    """(1/|G|) sum_g values_g: the normalized Haar integral of a finite group."""
    return sp.Rational(1, len(values)) * sum(values[1:], values[0])


def fixed_space_projector(group, z: sp.Matrix) -> sp.Matrix:
    """P_{E^G} z = int M_g z d lambda_G(g)."""
    return haar_average([act_on_parameters(g, z) for g in group])


Unit = Callable[[sp.Matrix, sp.Matrix], sp.Matrix]


def feature_average(group, unit: Unit, particles, weights, x: sp.Matrix) -> sp.Matrix:
    """(Q_G Phi_mu)(x) = int rho^_{g^-1} Phi_mu(rho_g x) d lambda_G, mu = sum_i w_i delta_{z_i}
    (rho^_{g^-1} = rho^_g^T for an orthogonal representation)."""
    def phi(xx):
        terms = [w * unit(xx, z) for w, z in zip(weights, particles)]
        return sum(terms[1:], terms[0])
    return haar_average([rho_hat.T * phi(rho * x) for rho, rho_hat in group])


def symmetrized_model(group, unit: Unit, particles, weights, x: sp.Matrix) -> sp.Matrix:
    """Phi_{mu^G}(x) = sum_i w_i int sigma_*(x, M_g z_i) d lambda_G(g)."""
    terms = [w * haar_average([unit(x, act_on_parameters(g, z)) for g in group])
             for w, z in zip(weights, particles)]
    return sum(terms[1:], terms[0])


def projected_model(group, unit: Unit, particles, weights, x: sp.Matrix) -> sp.Matrix:
    """Phi_{mu^{E^G}}(x) = sum_i w_i sigma_*(x, P_{E^G} z_i)."""
    terms = [w * unit(x, fixed_space_projector(group, z)) for w, z in zip(weights, particles)]
    return sum(terms[1:], terms[0])


def _simplify_vec(v: sp.Matrix) -> sp.Matrix:
    return v.applyfunc(lambda e: sp.simplify(sp.expand(e)))


# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EquivarianceDerivation:
    x: sp.Matrix
    z: sp.Matrix
    lhs: list[sp.Matrix]          # sigma(rho_g x, M_g z) for each g
    rhs: list[sp.Matrix]          # rho^_g sigma(x, z)
    residual: list[sp.Matrix]     # simplified lhs - rhs (zero)


def derive_joint_equivariance(group=None, unit: Unit = logistic_unit, dim: int = 2
                              ) -> EquivarianceDerivation:
    """sigma_*(rho_g x, M_g z) - rho^_g sigma_*(x, z), simplified, for every g (symbolic x, z)."""
    group = swap_group() if group is None else group
    x, z = vector_symbols("x", dim), matrix_symbols("z", dim, dim)
    lhs = [unit(rho * x, act_on_parameters((rho, rh), z)) for rho, rh in group]
    rhs = [rh * unit(x, z) for _, rh in group]
    res = [_simplify_vec(a - b) for a, b in zip(lhs, rhs)]
    return EquivarianceDerivation(x, z, lhs, rhs, res)


@dataclass(frozen=True)
class M1aDerivation:
    x: sp.Matrix
    z1: sp.Matrix
    z2: sp.Matrix
    w: sp.Symbol
    feature_averaged: sp.Matrix   # (Q_G Phi_mu)(x), mu = w delta_{z1} + (1 - w) delta_{z2}
    symmetrized: sp.Matrix        # Phi_{mu^G}(x)
    residual: sp.Matrix           # simplified difference (zero)
    single_particle: sp.Matrix    # Q_G sigma(., z)(x) = Phi_{phi_z}(x) for one particle z1
    equivariance: EquivarianceDerivation


def derive_feature_averaging(group=None, unit: Unit = logistic_unit, dim: int = 2) -> M1aDerivation:
    """M1a for a symbolic weighted two-particle measure (the identity is linear in mu, so
    two atoms with a free weight show the general finite case)."""
    group = swap_group() if group is None else group
    x = vector_symbols("x", dim)
    z1, z2 = matrix_symbols("a", dim, dim), matrix_symbols("b", dim, dim)
    w = sp.Symbol("w", real=True)
    fa = feature_average(group, unit, [z1, z2], [w, 1 - w], x)
    sym = symmetrized_model(group, unit, [z1, z2], [w, 1 - w], x)
    res = _simplify_vec(fa - sym)
    single = symmetrized_model(group, unit, [z1], [sp.Integer(1)], x)
    return M1aDerivation(x, z1, z2, w, fa, sym, res, single,
                         derive_joint_equivariance(group, unit, dim))


@dataclass(frozen=True)
class M1bDerivation:
    x: sp.Matrix
    z: sp.Matrix
    projector: sp.Matrix               # P_{E^G} z (symbolic)
    linear_residual: sp.Matrix         # Phi_{mu^G} - Phi_{mu^{E^G}} for the linear unit (zero)
    linear_residual_c3: sp.Matrix      # same for C_3 on 3 x 3 matrices (zero)
    logistic_difference: sp.Matrix     # Phi_{mu^G} - Phi_{mu^{E^G}} for logistic(z x), one atom
    u: sp.Symbol                       # u = (z x)_k, v = (M_P z x)_k
    v: sp.Symbol
    difference_uv: sp.Expr             # the k-th entry as a function of (u, v)
    leading_term: sp.Expr              # epsilon^3 coefficient of the (u, v) form at (eps u, eps v)
    low_order: list                    # epsilon^0, ^1, ^2 coefficients (all zero)


def derive_projection_vs_symmetrization() -> M1bDerivation:
    """M1b: symmetrized vs projected model, for one symbolic atom z (both sides are linear
    in mu, so one atom suffices)."""
    G = swap_group()
    x, z = vector_symbols("x", 2), matrix_symbols("z", 2, 2)
    proj = fixed_space_projector(G, z)
    lin = _simplify_vec(symmetrized_model(G, linear_unit, [z], [1], x)
                        - projected_model(G, linear_unit, [z], [1], x))
    G3 = cyclic_group(3)
    x3, z3 = vector_symbols("x", 3), matrix_symbols("z", 3, 3)
    lin3 = _simplify_vec(symmetrized_model(G3, linear_unit, [z3], [1], x3)
                         - projected_model(G3, linear_unit, [z3], [1], x3))
    logi = (symmetrized_model(G, logistic_unit, [z], [1], x)
            - projected_model(G, logistic_unit, [z], [1], x))
    # entrywise: (1/2)(s(u) + s(v)) - s((u + v)/2) with u = (z x)_k, v = (P z P x)_k
    u, v = sp.symbols("u v", real=True)
    du = sp.Rational(1, 2) * (logistic(u) + logistic(v)) - logistic((u + v) / 2)
    # check the entrywise reduction on entry 1 symbolically
    zx, pzpx = z * x, act_on_parameters(G[1], z) * x
    if sp.expand(logi[0] - du.subs({u: zx[0], v: pzpx[0]}, simultaneous=True)) != 0:
        raise ArithmeticError("entrywise reduction of the logistic difference failed")
    # Taylor coefficients in a common scale eps of (u, v): d^k/d eps^k at 0, divided by k!
    scaled = du.subs({u: eps * u, v: eps * v}, simultaneous=True)
    coeffs = [sp.factor(sp.simplify(sp.diff(scaled, eps, k).subs(eps, 0) / sp.factorial(k)))
              for k in range(4)]
    return M1bDerivation(x, z, proj, lin, lin3, logi, u, v, du, coeffs[3], coeffs[:3])
