"""Finite groups acting orthogonally on X, Y and Z (Maass Martinez & Fontbona 2024,
docs/conventions.md, section 3; claims M1a-M1e).

A :class:`GroupAction` stores, for every element g of a finite group G, three orthogonal
matrices: rho_g on X = R^dX, rho^_g on Y = R^dY and M_g on Z = R^D (parameters are flat
vectors; a matrix parameter z in R^{dY x dX} is flattened row-major).  The normalized
Haar measure of a finite group is the uniform measure, so every Haar average is a plain
mean over the |G| elements.

Objects provided (docs/conventions.md, section 3):
- ``P_{E^G} = (1/|G|) sum_g M_g`` (:meth:`GroupAction.projector`), an orthonormal basis of
  the fixed space ``E^G`` (:meth:`GroupAction.fixed_space_basis`);
- ``mu^G = (1/|G|) sum_g M_g # mu`` (:meth:`GroupAction.symmetrize_measure`) and
  ``mu^{E^G} = P_{E^G} # mu`` (:meth:`GroupAction.project_measure`) for weighted particle
  systems ``(particles (N, D), weights (N,))``;
- ``(Q_G f)(x) = (1/|G|) sum_g rho^_{g^-1} f(rho_g x)`` (:meth:`GroupAction.symmetrize_function`).

Constructors: :func:`matrix_action` (the action z -> rho^_g z rho_g^T on matrix
parameters, which makes every unit sigma(x, z) = s(z x) with elementwise s jointly
equivariant), :func:`c2_swap` (the reference experiment), :func:`cyclic_shifts`,
:func:`sign_flips`, :func:`cyclic_network_action` (a single-hidden-layer unit whose
hidden layer is permuted too: parameter sharing gives circulant weights).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from numerics.validation import (ArgumentTypeError, as_float_array, require_callable,
                                 require_choice, require_positive_int, require_size)

__all__ = ["GroupAction", "matrix_action", "c2_swap", "cyclic_shift_matrices",
           "sign_flip_matrices", "cyclic_shifts", "sign_flips", "cyclic_network_action",
           "uv_action", "c2_swap_uv", "generated_permutation_matrices",
           "dihedral_matrices", "symmetric_group_matrices", "permutation_action",
           "validate_measure", "ORTHOGONALITY_TOL", "MAX_SHIFT_MATRICES_N",
           "MAX_CYCLIC_SHIFTS_N", "MAX_NETWORK_ACTION_N", "MAX_GROUP_ORDER", "MAX_PERMUTATION_N",
           "MAX_CLOSURE_FLOPS", "rotation_rule", "MAX_ROTATION_RULE_N", "plane_rotation",
           "MAX_PLANE_ROTATION_DIM"]

#: entries of g^T g - I larger than this reject a representation as non-orthogonal
ORTHOGONALITY_TOL = 1e-10


#: the closure check of :class:`GroupAction` costs about |G|^2 (dX^3 + dY^3 + D^3 + 2000)
#: flops (products plus a per-pair lookup); larger actions are refused at once (the limit
#: is about 2 s on one core)
MAX_CLOSURE_FLOPS = 2 * 10 ** 9


def _closure_cost(order: int, *dims: int) -> int:
    return order * order * (sum(d ** 3 for d in dims) + 2000)


def _require_closure_cost(order: int, dims: tuple[int, ...], name: str) -> None:
    require_size(_closure_cost(order, *dims), name, limit=MAX_CLOSURE_FLOPS,
                 what="flops for the group-closure check (|G|^2 (dX^3 + dY^3 + D^3 + 2000))",
                 hint="use a smaller group or smaller representations")


def _as_rep(mats, name: str) -> np.ndarray:
    arr = as_float_array(mats, name, allow_empty=False)
    if arr.ndim != 3 or arr.shape[1] != arr.shape[2] or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a stack of square matrices of shape (|G|, d, d) "
                         f"with d >= 1; got shape {arr.shape}")
    eye = np.eye(arr.shape[1])
    dev = np.abs(np.einsum("gji,gjk->gik", arr, arr) - eye).max(axis=(1, 2))
    if np.any(dev > ORTHOGONALITY_TOL):
        g = int(np.argmax(dev))
        raise ValueError(f"{name} is not an orthogonal representation: element {g} has "
                         f"max |g^T g - I| = {dev[g]:.3g} > {ORTHOGONALITY_TOL:g}; the paper "
                         "assumes orthogonal actions (w.l.o.g. by compactness): orthogonalize "
                         "the representation (e.g. conjugate by the square root of the "
                         "averaged Gram matrix) before building the action")
    return arr


def _left_products(stack: np.ndarray, g: int) -> np.ndarray:
    """Rows ``(stack[g] @ stack[h]).ravel()`` for every h, by one GEMM (a broadcast
    ``stack[g] @ stack`` skips BLAS and is ~20x slower)."""
    n, d, _ = stack.shape
    wide = stack.transpose(1, 0, 2).reshape(d, n * d)      # [stack[0] | stack[1] | ...]
    return (stack[g] @ wide).reshape(d, n, d).transpose(1, 0, 2).reshape(n, d * d)


def _key(row: np.ndarray) -> bytes:
    return (np.round(row, 8) + 0.0).tobytes()


def _find(mats: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Indices k with mats[k] == target (to 1e-9)."""
    d = np.abs(mats - target[None]).reshape(len(mats), -1).max(axis=1)
    return np.flatnonzero(d <= 1e-9)


@dataclass(frozen=True)
class GroupAction:
    """A finite group G acting orthogonally on X (``rho``), Y (``rho_hat``) and Z (``M``).

    ``rho``, ``rho_hat``, ``M`` are arrays of shapes (|G|, dX, dX), (|G|, dY, dY),
    (|G|, D, D), indexed by the same group elements.  Validation (ValueError): each stack
    is orthogonal, the three stacks have the same number |G| >= 1 of elements, and the
    triples (rho_g, rho^_g, M_g) are closed under products (so they really are one group
    acting three ways); ``inverse[g]`` is the index of g^-1 and ``table[g, h]`` that of gh.
    """
    rho: np.ndarray
    rho_hat: np.ndarray
    M: np.ndarray
    name: str = "G"
    inverse: np.ndarray = field(init=False, repr=False)
    table: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ArgumentTypeError(f"name must be a text label; got {type(self.name).__name__}")
        rho = _as_rep(self.rho, f"{self.name}: rho (action on X)")
        rho_hat = _as_rep(self.rho_hat, f"{self.name}: rho_hat (action on Y)")
        M = _as_rep(self.M, f"{self.name}: M (action on Z)")
        if not (len(rho) == len(rho_hat) == len(M)):
            raise ValueError(f"{self.name}: rho, rho_hat and M must list the same group "
                             f"elements; got {len(rho)}, {len(rho_hat)} and {len(M)} matrices")
        n = len(rho)
        _require_closure_cost(n, (rho.shape[1], rho_hat.shape[1], M.shape[1]),
                              f"{self.name}: rho, rho_hat, M")
        stacked = [rho.reshape(n, -1), rho_hat.reshape(n, -1), M.reshape(n, -1)]
        flat = np.concatenate(stacked, axis=1)
        keys: dict[bytes, int] = {}
        for k, row in enumerate(flat):  # the first index of every distinct element
            keys.setdefault(_key(row), k)
        first = np.array([keys[_key(row)] for row in flat])
        counts = np.bincount(first, minlength=n)[np.unique(first)]
        if counts.min() != counts.max():
            raise ValueError(f"{self.name}: the list repeats some elements more often than "
                             f"others (multiplicities {sorted(set(counts.tolist()))}): a list "
                             "with repeats must be the image of a group, every element "
                             "repeated equally often, or Haar averages are biased")
        table = np.empty((n, n), dtype=np.int64)
        for g in range(n):
            prod = np.concatenate([_left_products(rho, g), _left_products(rho_hat, g),
                                   _left_products(M, g)], axis=1)
            for h in range(n):
                k = keys.get(_key(prod[h]))
                if k is None:
                    found = _find(flat, prod[h])
                    if found.size == 0:
                        raise ValueError(f"{self.name}: the matrices are not closed under "
                                         f"products (element {g} times element {h} is not in "
                                         "the list): pass every group element, not only "
                                         "generators, with rho, rho_hat and M in the same order")
                    k = int(found[0])
                table[g, h] = k
        ident = np.concatenate([np.eye(rho.shape[1]).ravel(), np.eye(rho_hat.shape[1]).ravel(),
                                np.eye(M.shape[1]).ravel()])
        if _find(flat, ident).size == 0:
            raise ValueError(f"{self.name}: the identity element is missing")
        e = int(first[int(_find(flat, ident)[0])])
        inverse = np.array([int(np.flatnonzero(first[table[g]] == e)[0]) for g in range(n)])
        for attr, val in (("rho", rho), ("rho_hat", rho_hat), ("M", M),
                          ("inverse", inverse), ("table", table)):
            val.setflags(write=False)
            object.__setattr__(self, attr, val)

    # -- sizes ------------------------------------------------------------------------
    @property
    def order(self) -> int:
        """|G|."""
        return len(self.M)

    @property
    def dim_x(self) -> int:
        return self.rho.shape[1]

    @property
    def dim_y(self) -> int:
        return self.rho_hat.shape[1]

    @property
    def dim_z(self) -> int:
        return self.M.shape[1]

    # -- Haar averages and the fixed space -------------------------------------------------
    def haar_average(self, values: np.ndarray) -> np.ndarray:
        """(1/|G|) sum_g values[g] (the normalized Haar integral of a finite group)."""
        values = as_float_array(values, "values (one value per group element)")
        if values.ndim == 0 or values.shape[0] != self.order:
            raise ValueError(f"values must hold one value per group element (leading axis "
                             f"{self.order}); got shape {values.shape}")
        return values.mean(axis=0)

    def projector(self) -> np.ndarray:
        """P_{E^G} = int M_g d lambda_G(g), the orthogonal projection onto E^G (D x D)."""
        return self.haar_average(self.M)

    def fixed_space_basis(self) -> np.ndarray:
        """An orthonormal basis of E^G = {z : M_g z = z for all g}, as columns (D, dim E^G).

        Eigenvectors of the symmetric idempotent P_{E^G} with eigenvalue 1 (sign-fixed so
        that the largest-magnitude entry of each column is positive: deterministic)."""
        P = self.projector()
        w, V = np.linalg.eigh((P + P.T) / 2)
        B = V[:, w > 0.5]
        idx = np.argmax(np.abs(B), axis=0)
        return B * np.sign(B[idx, np.arange(B.shape[1])])

    def project(self, z: np.ndarray) -> np.ndarray:
        """P_{E^G} z for z of shape (..., D)."""
        z = self._check_z(z)
        return z @ self.projector().T

    def distance_to_fixed_space(self, z: np.ndarray) -> np.ndarray:
        """|z - P_{E^G} z| for z of shape (..., D)."""
        z = self._check_z(z)
        return np.linalg.norm(z - z @ self.projector().T, axis=-1)

    def act(self, z: np.ndarray) -> np.ndarray:
        """All images M_g z: shape (|G|, ..., D)."""
        z = self._check_z(z)
        require_size(self.order * z.size, "z (the images hold |G| x z.size values)",
                     hint="act on fewer parameter vectors at a time")
        return np.einsum("gij,...j->g...i", self.M, z)

    # -- measures -----------------------------------------------------------------------
    def symmetrize_measure(self, particles: np.ndarray, weights: np.ndarray | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
        """mu^G = (1/|G|) sum_g M_g # mu for mu = sum_i w_i delta_{z_i}.

        Returns ``(|G| N particles, weights w_i / |G|)``, ordered g-major (all images of
        the particles under element 0, then element 1, ...)."""
        z, w = validate_measure(particles, weights, self.dim_z)
        require_size(self.order * z.size, "particles (mu^G holds |G| N D values)",
                     hint="use fewer particles")
        images = np.einsum("gij,nj->gni", self.M, z).reshape(-1, self.dim_z)
        return images, np.tile(w, self.order) / self.order

    def project_measure(self, particles: np.ndarray, weights: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """mu^{E^G} = P_{E^G} # mu: particles P z_i with the same weights."""
        z, w = validate_measure(particles, weights, self.dim_z)
        return z @ self.projector().T, w

    def is_weakly_invariant(self, particles: np.ndarray, weights: np.ndarray | None = None,
                            tol: float = 1e-12) -> bool:
        """True when M_g # mu = mu for every g (each image particle set equals the set, with
        the same weights, up to ``tol``).  Pairwise comparison: O(N^2) memory, meant for
        small particle systems (tests, N <= a few thousand)."""
        z, w = validate_measure(particles, weights, self.dim_z)
        tol = float(as_float_array(tol, "tol (matching tolerance)", ndim=0))
        if not tol >= 0:
            raise ValueError(f"tol (matching tolerance) must be >= 0; got {tol!r}")
        require_size(z.shape[0] * z.size, "particles (the pairwise comparison holds N^2 D "
                     "values)", hint="use at most a few thousand particles")
        for g in range(self.order):
            img = z @ self.M[g].T
            d = np.linalg.norm(img[:, None, :] - z[None, :, :], axis=-1)
            match = d <= tol * max(1.0, float(np.abs(z).max()))
            # each image must match a particle of equal weight
            ok = (match & (np.abs(w[:, None] - w[None, :]) <= 1e-12)).any(axis=1)
            if not ok.all():
                return False
        return True

    # -- functions ------------------------------------------------------------------------
    def symmetrize_function(self, f: Callable[[np.ndarray], np.ndarray]
                            ) -> Callable[[np.ndarray], np.ndarray]:
        """Q_G f: x -> (1/|G|) sum_g rho^_{g^-1} f(rho_g x), for f mapping (B, dX) -> (B, dY)."""
        require_callable(f, "f", "mapping inputs (B, dX) to outputs (B, dY)")

        def Qf(x: np.ndarray) -> np.ndarray:
            x = as_float_array(x, "x (inputs)")
            if x.ndim != 2 or x.shape[1] != self.dim_x:
                raise ValueError(f"x must have shape (B, {self.dim_x}); got {x.shape}")
            acc = np.zeros((x.shape[0], self.dim_y))
            for g in range(self.order):
                fx = as_float_array(f(x @ self.rho[g].T), "f(x) (the function's output)")
                if fx.shape != (x.shape[0], self.dim_y):
                    raise ValueError(f"f must map (B, {self.dim_x}) to (B, {self.dim_y}); "
                                     f"got {fx.shape}")
                acc += fx @ self.rho_hat[self.inverse[g]].T
            return acc / self.order
        return Qf

    def _check_z(self, z) -> np.ndarray:
        z = as_float_array(z, "z (parameters)")
        if z.ndim == 0 or z.shape[-1] != self.dim_z:
            raise ValueError(f"z (parameters of {self.name}) must have last axis D = "
                             f"{self.dim_z}; got shape {z.shape}")
        return z


def validate_measure(particles, weights, dim: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """A weighted particle system ``(z (N, D), w (N,))``: non-empty, finite, weights >= 0
    summing to 1 (to 1e-12); ``weights=None`` means uniform 1/N."""
    z = as_float_array(particles, "particles")
    if z.ndim != 2:
        raise ValueError(f"particles must have shape (N, D); got {z.shape}")
    if z.shape[0] == 0:
        raise ValueError("the particle measure is empty (N = 0): a probability measure needs "
                         "at least one particle")
    if dim is not None:
        dim = require_positive_int(dim, "dim (dimension of Z)")
    if dim is not None and z.shape[1] != dim:
        raise ValueError(f"particles have dimension {z.shape[1]} but the group acts on "
                         f"Z = R^{dim}: mismatched dimensions")
    if weights is None:
        return z, np.full(z.shape[0], 1.0 / z.shape[0])
    w = as_float_array(weights, "weights", ndim=1)
    if w.shape[0] != z.shape[0]:
        raise ValueError(f"weights must have one entry per particle ({z.shape[0]}); got {w.shape[0]}")
    if np.any(w < 0) or abs(w.sum() - 1.0) > 1e-12:
        raise ValueError(f"weights must be >= 0 and sum to 1; got sum {w.sum():.17g}, "
                         f"min {w.min():.3g}")
    return z, w


# ----------------------------------------------------------------------------------------
# constructors
# ----------------------------------------------------------------------------------------
#: largest n of :func:`cyclic_shift_matrices` (n^3 entries: 16 MB at n = 128)
MAX_SHIFT_MATRICES_N = 128
#: largest n of :func:`cyclic_shifts`: M has n^5 entries and the closure check of
#: :class:`GroupAction` costs ~n^8 flops (seconds at n = 12)
MAX_CYCLIC_SHIFTS_N = 12
#: largest n of :func:`cyclic_network_action` (D = 2 n^2 + n; ~1 s at n = 10 on one core)
MAX_NETWORK_ACTION_N = 10


def cyclic_shift_matrices(n: int) -> np.ndarray:
    """The n permutation matrices S^k (k = 0..n-1), (S x)_i = x_{i-1 mod n}: C_n on R^n
    (n <= :data:`MAX_SHIFT_MATRICES_N`: the stack has n^3 entries)."""
    n = require_positive_int(n, "n (size of the cyclic group)", maximum=MAX_SHIFT_MATRICES_N)
    S = np.roll(np.eye(n), 1, axis=0)
    out = [np.eye(n)]
    for _ in range(n - 1):
        out.append(S @ out[-1])
    return np.array(out)


def sign_flip_matrices(n: int, *, all_coordinates: bool = True) -> np.ndarray:
    """Sign flips on R^n: all 2^n diagonal +-1 matrices ({+-1}^n), or only {I, -I} when
    ``all_coordinates`` is False."""
    n = require_positive_int(n, "n (dimension)", maximum=MAX_SHIFT_MATRICES_N)
    if not isinstance(all_coordinates, (bool, np.bool_)):
        raise ArgumentTypeError(f"all_coordinates must be True or False; got {all_coordinates!r:.40}")
    if not all_coordinates:
        return np.array([np.eye(n), -np.eye(n)])
    if n > 6:
        raise ValueError(f"{{+-1}}^n has 2^n elements; n = {n} is too large (use n <= 6 or "
                         "all_coordinates=False)")
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * n, indexing="ij")).reshape(n, -1).T
    return np.array([np.diag(s) for s in signs])


def _rep_pair(rho, rho_hat, name: Any) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"name must be a text label; got {type(name).__name__}")
    rho = _as_rep(rho, f"{name}: rho (action on X)")
    rho_hat = _as_rep(rho_hat, f"{name}: rho_hat (action on Y)")
    if len(rho) != len(rho_hat):
        raise ValueError(f"{name}: rho and rho_hat must list the same group elements; got "
                         f"{len(rho)} and {len(rho_hat)} matrices")
    return rho, rho_hat


def matrix_action(rho, rho_hat, name: str = "G") -> GroupAction:
    """The action on matrix parameters z in R^{dY x dX} (flattened row-major, D = dY dX):
    M_g z = rho^_g z rho_g^T, i.e. M_g = rho^_g (kron) rho_g.

    With it every unit sigma(x, z) = s(z x), s elementwise and permutation/sign-compatible
    with rho^ (e.g. the identity for linear units), is jointly equivariant."""
    rho, rho_hat = _rep_pair(rho, rho_hat, name)
    D = rho_hat.shape[1] * rho.shape[1]
    _require_closure_cost(len(rho), (rho.shape[1], rho_hat.shape[1], D), f"{name}: rho, rho_hat")
    M = np.einsum("gab,gij->gaibj", rho_hat, rho).reshape(
        len(rho), rho_hat.shape[1] * rho.shape[1], rho_hat.shape[1] * rho.shape[1])
    return GroupAction(rho, rho_hat, M, name=name)


#: largest n of :func:`rotation_rule` (the closure check costs ~ n^2)
MAX_ROTATION_RULE_N = 256


def rotation_rule(n: int) -> GroupAction:
    """The n-point rule of the Haar integral of SO(2): the rotations R(2 pi k / n),
    k = 0..n-1 (the group C_n), acting on X = Y = R^2 by R and on Z = R^{2x2} by
    M_g z = R z R^T (:func:`matrix_action`).  Its Haar average equals the SO(2) integral
    (1/2 pi) int_0^{2 pi} d phi exactly for trigonometric polynomials of degree < n in phi
    (the trapezoidal rule on the circle), and to within a geometrically small error for
    analytic integrands.  n <= :data:`MAX_ROTATION_RULE_N`."""
    n = require_positive_int(n, "n (points of the SO(2) rule)", maximum=MAX_ROTATION_RULE_N)
    t = 2.0 * np.pi * np.arange(n) / n
    c, s = np.cos(t), np.sin(t)
    R = np.stack([np.stack([c, -s], axis=1), np.stack([s, c], axis=1)], axis=1)
    return matrix_action(R, R, name=f"SO(2), {n}-point rule")


#: largest dimension of :func:`plane_rotation` (a dense d x d matrix)
MAX_PLANE_ROTATION_DIM = 4096


def plane_rotation(angle: Any, d: int = 2) -> np.ndarray:
    """The d x d float64 rotation by ``angle`` (radians) in the plane of the first two
    coordinates, the identity on the others: [[cos, -sin], [sin, cos]] in the top-left block.
    d in 2..:data:`MAX_PLANE_ROTATION_DIM`."""
    angle = float(as_float_array(angle, "angle (radians)", ndim=0))
    d = require_positive_int(d, "d (dimension of the rotation)", minimum=2,
                             maximum=MAX_PLANE_ROTATION_DIM)
    R = np.eye(d)
    c, s = np.cos(angle), np.sin(angle)
    R[:2, :2] = [[c, -s], [s, c]]
    return R


def c2_swap() -> GroupAction:
    """The reference experiment: G = C_2 = {I, P}, P swaps the two coordinates of R^2,
    rho = rho^ = g and M_g z = g z g^T on Z = R^{2x2} (flattened row-major: z11, z12, z21,
    z22).  E^G = {[[p, q], [q, p]]}, P_{E^G} z = (z + P z P) / 2."""
    return matrix_action(cyclic_shift_matrices(2), cyclic_shift_matrices(2), name="C2 swap")


def cyclic_shifts(n: int) -> GroupAction:
    """C_n acting by cyclic shifts on X = Y = R^n and by z -> S z S^T on Z = R^{n x n}
    (E^G = circulant matrices, dim n); n <= :data:`MAX_CYCLIC_SHIFTS_N` (the action on
    Z has n^5 entries)."""
    n = require_positive_int(n, "n (size of the cyclic group)", maximum=MAX_CYCLIC_SHIFTS_N)
    S = cyclic_shift_matrices(n)
    return matrix_action(S, S, name=f"C{n} shifts")


def sign_flips(n: int, *, all_coordinates: bool = True) -> GroupAction:
    """Sign flips g on X = Y = R^n with M_g z = g z g^T on Z = R^{n x n} (E^G = diagonal
    matrices for {+-1}^n; all of Z for {I, -I}, which acts trivially on Z)."""
    F = sign_flip_matrices(n, all_coordinates=all_coordinates)
    return matrix_action(F, F, name=f"sign flips on R^{len(F[0])}")


def cyclic_network_action(n: int) -> GroupAction:
    """C_n on the single-hidden-layer unit sigma(x, (W, A, B)) = W s(A^T x + B) with
    X = Y = R^n and hidden width n: M_g (W, A, B) = (S W S^T, S A S^T, S B).

    Parameters are flattened as [W (n x n, row-major), A (n x n, row-major), B (n)],
    D = 2 n^2 + n.  E^G = circulant W and A, constant B (dim 2 n + 1): parameter sharing,
    i.e. a cyclic convolution layer.  n <= :data:`MAX_NETWORK_ACTION_N` (M has
    n (2 n^2 + n)^2 entries and the closure check costs ~ n^2 (2 n^2)^3 flops)."""
    n = require_positive_int(n, "n (size of the cyclic group)", maximum=MAX_NETWORK_ACTION_N)
    S = cyclic_shift_matrices(n)
    K = np.einsum("gab,gij->gaibj", S, S).reshape(n, n * n, n * n)
    D = 2 * n * n + n
    M = np.zeros((n, D, D))
    M[:, :n * n, :n * n] = K
    M[:, n * n:2 * n * n, n * n:2 * n * n] = K
    M[:, 2 * n * n:, 2 * n * n:] = S
    return GroupAction(S, S, M, name=f"C{n} on a hidden layer")


def uv_action(rho, rho_hat, name: str = "G") -> GroupAction:
    """The action on (u, v) parameters z = [u (dX), v (dY)] of the paper's unit
    v * s(u . x / 2) (:class:`numerics.equivariant.UVUnit`): M_g = blockdiag(rho_g, rho^_g)."""
    rho, rho_hat = _rep_pair(rho, rho_hat, name)
    dx, dy = rho.shape[1], rho_hat.shape[1]
    _require_closure_cost(len(rho), (dx, dy, dx + dy), f"{name}: rho, rho_hat")
    M = np.zeros((len(rho), dx + dy, dx + dy))
    M[:, :dx, :dx] = rho
    M[:, dx:, dx:] = rho_hat
    return GroupAction(rho, rho_hat, M, name=name)


def c2_swap_uv() -> GroupAction:
    """The paper's experiment with the (u, v) unit: G = C_2 = {I, P} swapping the two
    coordinates of X = Y = R^2, M_g (u, v) = (g u, g v) on Z = R^4 (z = [u1, u2, v1, v2]);
    E^G = {u1 = u2, v1 = v2}, P_{E^G} z = (z + M_P z) / 2."""
    S = cyclic_shift_matrices(2)
    return uv_action(S, S, name="C2 swap on (u, v)")


#: refuse to enumerate permutation groups larger than this (|S_6| = 720)
MAX_GROUP_ORDER = 720
#: largest dimension n of a permutation representation built here (|G| n^2 <= 720 * 2^16)
MAX_PERMUTATION_N = 256


def generated_permutation_matrices(generators, n: int) -> np.ndarray:
    """All elements of the group generated by the permutations ``generators`` (each a
    sequence p of length n, (P x)_i = x_{p[i]}) as n x n permutation matrices, identity
    first, in breadth-first order (deterministic)."""
    n = require_positive_int(n, "n (dimension)", maximum=MAX_PERMUTATION_N)
    if isinstance(generators, (str, bytes)) or not hasattr(generators, "__iter__"):
        raise ArgumentTypeError("generators must be a list of permutations (sequences of "
                                f"0..n-1); got {type(generators).__name__}")
    gens = []
    for k, p in enumerate(generators):
        if k >= MAX_GROUP_ORDER:
            raise ValueError(f"generators: more than {MAX_GROUP_ORDER} generators; pass fewer")
        perm = as_float_array(p, f"generators[{k}] (a permutation of 0..{n - 1})", ndim=1)
        if perm.size != n or sorted(perm.tolist()) != list(range(n)):
            raise ValueError(f"generators[{k}] must be a permutation of 0..{n - 1}; got "
                             f"{perm.tolist()[:12]}")
        gens.append(tuple(int(i) for i in perm))
    ident = tuple(range(n))
    seen, order = {ident}, [ident]
    frontier = [ident]
    while frontier:
        nxt = []
        for g in frontier:
            for h in gens:
                gh = tuple(g[h[i]] for i in range(n))
                if gh not in seen:
                    if len(seen) >= MAX_GROUP_ORDER:
                        raise ValueError(f"the generated group has more than {MAX_GROUP_ORDER} "
                                         "elements: use fewer or smaller generators")
                    seen.add(gh)
                    order.append(gh)
                    nxt.append(gh)
        frontier = nxt
    eye = np.eye(n)
    return np.array([eye[list(p)] for p in order])


def dihedral_matrices(n: int) -> np.ndarray:
    """D_n (order 2n, n >= 3) acting on R^n by the symmetries of the n-gon: generated by
    the cyclic shift and the reflection i -> -i mod n."""
    n = require_positive_int(n, "n (number of vertices)", minimum=3, maximum=MAX_PERMUTATION_N)
    return generated_permutation_matrices([[(i - 1) % n for i in range(n)],
                                           [(-i) % n for i in range(n)]], n)


def symmetric_group_matrices(n: int) -> np.ndarray:
    """S_n (order n!, 2 <= n <= 6) acting on R^n by all coordinate permutations."""
    n = require_positive_int(n, "n (dimension)", minimum=2)
    if n > 6:
        raise ValueError(f"S_n has n! elements; n = {n} is too large (use n <= 6)")
    gens = [[1, 0] + list(range(2, n)), [(i + 1) % n for i in range(n)]]
    return generated_permutation_matrices(gens, n)


def permutation_action(kind: str, n: int) -> GroupAction:
    """A permutation group on X = Y = R^n acting on matrix parameters by z -> g z g^T:
    ``kind`` is "cyclic" (C_n), "dihedral" (D_n) or "symmetric" (S_n)."""
    makers = {"cyclic": cyclic_shift_matrices, "dihedral": dihedral_matrices,
              "symmetric": symmetric_group_matrices}
    require_choice(kind, "kind", tuple(sorted(makers)))
    S = makers[kind](n)
    return matrix_action(S, S, name=f"{kind} group on R^{n} ({len(S)} elements)")
