"""Verified formulas for Maass Martinez & Fontbona (2024) (claims M1a-M1e): the symmetrized
measure mu^G, the projected measure mu^{E^G} and the relative measure distance RMD.

Group objects: pass a :class:`numerics.groups.GroupAction` (built with
``numerics.groups.c2_swap()``, ``cyclic_shifts(n)``, ``sign_flips(n)``,
``cyclic_network_action(n)``, ``matrix_action(rho, rho_hat)`` or
``GroupAction(rho, rho_hat, M)``), or simply the stack of parameter matrices ``M`` of shape
(|G|, D, D) listing every group element (orthogonality and closure are checked).

>>> import numpy as np
>>> from verify import formulas
>>> from numerics.groups import c2_swap
>>> z = np.array([[1.0, 2.0, 3.0, 4.0]])          # z = [[1, 2], [3, 4]], row-major
>>> formulas.project_to_fixed_space(z, c2_swap())[0]
array([[2.5, 2.5, 2.5, 2.5]])
>>> formulas.symmetrize(z, c2_swap())[0]           # z and P z P
array([[1., 2., 3., 4.],
       [4., 3., 2., 1.]])
>>> float(formulas.rmd(z, z))
0.0
"""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from numerics import transport
from numerics.groups import GroupAction
from numerics.validation import as_float_array
from verify.formulas._base import DerivedFunction

__all__ = ["symmetrize", "project_to_fixed_space", "rmd"]


def _as_group(group: Any) -> GroupAction:
    if isinstance(group, GroupAction):
        return group
    M = as_float_array(group, "group (a GroupAction or the matrices M_g, shape (|G|, D, D))")
    if M.ndim != 3:
        raise ValueError("group must be a numerics.groups.GroupAction or an array of the "
                         f"parameter matrices M_g with shape (|G|, D, D); got shape {M.shape}")
    one = np.ones((M.shape[0], 1, 1))
    return GroupAction(one, one, M, name="G (given by M_g)")


def _derived(cid: str, key: str) -> sp.Expr:
    from verify.claims import get
    return get(cid).derivation().results[key]


def _symmetrize(particles, group, weights=None) -> tuple[np.ndarray, np.ndarray]:
    return _as_group(group).symmetrize_measure(particles, weights)


def _project(particles, group, weights=None) -> tuple[np.ndarray, np.ndarray]:
    return _as_group(group).project_measure(particles, weights)


def _rmd_expr() -> sp.Expr:
    W, ma, mb = sp.symbols("W_2 m_2(mu) m_2(nu)", nonnegative=True)
    return sp.sqrt(W**2 / (2 * (ma + mb)))


symmetrize = DerivedFunction(
    "symmetrize", "M1a", expr_fn=lambda: _derived("M1a", "single_particle"),
    impl=_symmetrize,
    doc="""symmetrize(particles, group, weights=None) -> (particles_G, weights_G)

The symmetrized measure mu^G = (1/|G|) sum_g M_g # mu of mu = sum_i w_i delta_{z_i}
(particles (N, D), weights (N,) summing to 1, default uniform): |G| N particles M_g z_i
(g-major) with weights w_i / |G|.  By claim M1a, Phi_{mu^G} = Q_G Phi_mu (the feature
average); ``.expr`` is the derived Phi_{phi_z}(x) of the reference unit.
Raises ValueError for non-orthogonal or non-closed group matrices, particles whose
dimension differs from the group's D, and empty measures.""")

project_to_fixed_space = DerivedFunction(
    "project_to_fixed_space", "M1b", expr_fn=lambda: _derived("M1b", "projector"),
    impl=_project,
    doc="""project_to_fixed_space(particles, group, weights=None) -> (P z_i, w_i)

The projected measure mu^{E^G} = P_{E^G} # mu, with P_{E^G} = (1/|G|) sum_g M_g the
orthogonal projection onto the fixed space E^G.  Equal to ``symmetrize`` at the level of
models only for linear units (claim M1b); ``.expr`` is the derived P_{E^G} z of the
reference action.  Same validation as ``symmetrize``.""")

rmd = DerivedFunction(
    "rmd", "M1c", expr_fn=_rmd_expr,
    impl=lambda a, b: np.float64(transport.rmd(a, b)),
    doc="""rmd(a, b) -> float in [0, 1]

RMD(mu, nu) = sqrt(W_2^2(mu, nu) / (2 (m_2(mu) + m_2(nu)))) between the uniform measures
on the rows of ``a`` (N, D) and ``b`` (M, D); W_2 is exact (assignment problem, sizes
equalized to lcm(N, M)).  0 for two copies of delta_0.  ValueError for empty measures or
different dimensions D.""")
