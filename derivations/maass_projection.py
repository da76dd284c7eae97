"""The compact group SO(2) and the L2 geometry of symmetrization (Maass Martinez & Fontbona
2024, Sec. 2.3-3; docs/conventions.md, section 3; claims M1a (SO(2) part) and M1g).

SO(2) acts on X = Y = R^2 by the rotation R(phi) and on Z = R^{2x2} by M_g z = R z R^T.
Its normalized Haar integral is (1/2 pi) int_0^{2 pi} d phi, computed here by
``sp.integrate`` (no finite group stands in for it).  The unit

    sigma_*(x, z) = (z x) |z x|^2                      (the "cubic norm-gated" unit)

is jointly equivariant for every orthogonal action M_g z = rho^_g z rho_g^T (|.| is
rotation invariant), polynomial, so every Haar integral of it is exact in SymPy.  Derived:

- M1a for SO(2): Q_G Phi_mu - Phi_{mu^G} for a symbolic weighted two-atom measure, the
  single-atom orbit model Phi_{phi_z}(x), and the joint-equivariance residual;
- M1g: P_{E^G} z = int R z R^T d lambda (E^G = span{I, J}, the rotation-scalings); every
  atom of E^G is fixed by every rotation (so P(E^G) is inside P^G: strong invariance implies
  weak invariance); the projected model's difference Phi_{phi_z} - sigma(., P_{E^G} z)
  (non-zero: EA is not FA for SO(2) either); and the cross term
  C = E_{pi_X} <f - Q_G f, Q_G f - h> for f = sigma(., z), h = sigma(., p I + q J) and
  pi_X = N(0, diag(s1^2, s2^2)), from the Gaussian moments: zero when s1 = s2 (pi_X
  invariant: Q_G is the orthogonal projection, Pythagoras), a non-zero polynomial otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from derivations.base import Derivation, Step
from derivations._symbols import matrix_symbols, vector_symbols

__all__ = ["phi", "rotation", "J", "so2_haar", "trig_reduce", "cubic_norm_unit", "so2_feature_average",
           "so2_symmetrized_model", "so2_projector", "SO2FeatureAveraging",
           "derive_so2_feature_averaging", "cross_term_symbols", "gaussian_moment", "gaussian_expectation",
           "derive_m1g", "DERIVATIONS"]

phi = sp.Symbol("varphi", real=True)
J = sp.Matrix([[0, -1], [1, 0]])


def rotation(angle: sp.Expr = phi) -> sp.Matrix:
    """R(angle), the rotation of R^2."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


_c, _s = sp.symbols("c s", real=True)


@lru_cache(maxsize=None)
def _monomial_mean(i: int, j: int) -> sp.Expr:
    """(1/2 pi) int_0^{2 pi} cos^i sin^j d phi."""
    return sp.integrate(sp.cos(phi)**i * sp.sin(phi)**j, (phi, 0, 2 * sp.pi)) / (2 * sp.pi)


def so2_haar(expr: sp.Expr) -> sp.Expr:
    """(1/2 pi) int_0^{2 pi} expr d phi: the normalized Haar integral of SO(2), for ``expr``
    a polynomial in cos(phi), sin(phi) (term by term: the integral is linear)."""
    poly = sp.Poly(sp.expand(expr).subs({sp.cos(phi): _c, sp.sin(phi): _s}), _c, _s)
    return sp.expand(sum((coef * _monomial_mean(i, j) for (i, j), coef in poly.terms()),
                         sp.Integer(0)))


def trig_reduce(expr: sp.Expr) -> sp.Expr:
    """``expr`` (a polynomial in cos(phi), sin(phi)) reduced modulo cos^2 + sin^2 = 1: the
    normal form, zero iff ``expr`` vanishes for every phi."""
    e = sp.expand(expr).subs({sp.cos(phi): _c, sp.sin(phi): _s})
    rem = sp.reduced(e, [_s**2 + _c**2 - 1], _s, _c)[1]
    return sp.expand(rem.subs({_c: sp.cos(phi), _s: sp.sin(phi)}))


def cubic_norm_unit(x: sp.Matrix, z: sp.Matrix) -> sp.Matrix:
    """sigma_*(x, z) = (z x) |z x|^2."""
    u = z * x
    return u * (u.T * u)[0]


def _act(z: sp.Matrix) -> sp.Matrix:
    R = rotation()
    return R * z * R.T


def so2_feature_average(particles, weights, x: sp.Matrix) -> sp.Matrix:
    """(Q_G Phi_mu)(x) = int R^T Phi_mu(R x) d lambda, mu = sum_i w_i delta_{z_i}."""
    R = rotation()
    phi_rx = sum((w * cubic_norm_unit(R * x, z) for w, z in zip(weights, particles)),
                 sp.zeros(2, 1))
    return (R.T * phi_rx).applyfunc(so2_haar)


def so2_symmetrized_model(particles, weights, x: sp.Matrix) -> sp.Matrix:
    """Phi_{mu^G}(x) = sum_i w_i int sigma_*(x, R z_i R^T) d lambda."""
    return sum((w * cubic_norm_unit(x, _act(z)).applyfunc(so2_haar)
                for w, z in zip(weights, particles)), sp.zeros(2, 1))


def so2_projector(z: sp.Matrix) -> sp.Matrix:
    """P_{E^G} z = int R z R^T d lambda."""
    return _act(z).applyfunc(so2_haar)


@dataclass(frozen=True)
class SO2FeatureAveraging:
    """M1a for SO(2): symbols and results (row-major z; ``single_particle`` for atom a)."""
    x: sp.Matrix
    a: sp.Matrix
    b: sp.Matrix
    w: sp.Symbol
    feature_averaged: sp.Matrix
    symmetrized: sp.Matrix
    residual: sp.Matrix
    single_particle: sp.Matrix
    equivariance_residual: sp.Matrix


@lru_cache(maxsize=None)
def derive_so2_feature_averaging() -> SO2FeatureAveraging:
    """Q_G Phi_mu vs Phi_{mu^G} for the cubic norm-gated unit under SO(2), by Haar
    integrals in phi, for mu = w delta_a + (1 - w) delta_b (both sides are linear in mu)."""
    x = vector_symbols("x", 2)
    a, b = matrix_symbols("a", 2, 2), matrix_symbols("b", 2, 2)
    w = sp.Symbol("w", real=True)
    fa = so2_feature_average([a, b], [w, 1 - w], x)
    sym = so2_symmetrized_model([a, b], [w, 1 - w], x)
    res = (fa - sym).applyfunc(lambda e: sp.expand(e))
    single = so2_symmetrized_model([a], [sp.Integer(1)], x).applyfunc(sp.expand)
    R = rotation()
    equi = (cubic_norm_unit(R * x, _act(a)) - R * cubic_norm_unit(x, a)).applyfunc(trig_reduce)
    return SO2FeatureAveraging(x, a, b, w, fa, sym, res, single, equi)


def cross_term_symbols() -> tuple[list[sp.Symbol], list[sp.Symbol], sp.Symbol, sp.Symbol,
                                  sp.Symbol, sp.Symbol]:
    """The arguments of M1g's cross term: z (row-major), (p, q), the standard deviations
    s1, s2 of pi_X = N(0, diag(s1^2, s2^2))."""
    z = list(matrix_symbols("z", 2, 2))
    p, q = sp.symbols("p q", real=True)
    s1, s2 = sp.symbols("s1 s2", positive=True)
    return z, [p, q], p, q, s1, s2


def gaussian_moment(k: int, s: sp.Expr) -> sp.Expr:
    """E[X^k] for X ~ N(0, s^2): s^k (k - 1)!! for even k, 0 for odd k."""
    return sp.Integer(0) if k % 2 else s**k * sp.factorial2(k - 1)


def gaussian_expectation(poly_in_x: sp.Expr, x, stds) -> sp.Expr:
    """E over x ~ N(0, diag(stds^2)) of a polynomial in the symbols ``x`` (independent
    coordinates: each monomial prod_k x_k^(i_k) has mean prod_k m_(i_k)(std_k))."""
    poly = sp.Poly(sp.expand(poly_in_x), *x)
    return sp.expand(sum((c * sp.Mul(*(gaussian_moment(i, sd) for i, sd in zip(mono, stds)))
                          for mono, c in poly.terms()), sp.Integer(0)))


def derive_m1g() -> Derivation:
    """M1g: SO(2)'s fixed-space projector and P(E^G) in P^G; the projected model's
    difference; the L2(pi_X) cross term of Q_G (zero iff pi_X is rotation invariant, among
    the anisotropic Gaussians)."""
    x = vector_symbols("x", 2)
    zs, _, p, q, s1, s2 = cross_term_symbols()
    z = sp.Matrix(2, 2, zs)
    P = so2_projector(z)
    scaling = p * sp.eye(2) + q * J
    fixed = (_act(scaling) - scaling).applyfunc(trig_reduce)
    single = so2_symmetrized_model([z], [sp.Integer(1)], x)
    projected = (single - cubic_norm_unit(x, P)).applyfunc(sp.expand)
    f, h = cubic_norm_unit(x, z), cubic_norm_unit(x, scaling)
    cross = gaussian_expectation(((f - single).T * (single - h))[0], list(x), (s1, s2))
    isotropic = sp.expand(cross.subs(s2, s1))
    steps = [
        Step("SO(2) acts on $X = Y = \\mathbb R^2$ by $R(\\varphi)$ and on $Z = \\mathbb "
             "R^{2\\times2}$ by $M_g z = R z R^T$; its normalized Haar integral is "
             "$\\frac1{2\\pi}\\int_0^{2\\pi}d\\varphi$.  The projection onto the fixed space "
             "$P_{E^G}z = \\int R z R^T d\\lambda$ (entries of $z$ row-major):",
             sp.Eq(sp.MatrixSymbol("P_E_z", 2, 2), P, evaluate=False)),
        Step("$E^G = \\{pI + qJ\\}$ (rotation-scalings, $J$ the quarter turn): every such "
             "atom is fixed by every rotation, $R(pI+qJ)R^T - (pI+qJ)$ simplifies to zero, so a "
             "law on $E^G$ is invariant: $\\mathcal P(E^G) \\subseteq \\mathcal P^G$ (SI "
             "implies WI).", sp.Eq(sp.Symbol("r_E"), fixed, evaluate=False)),
        Step("Cubic norm-gated unit $\\sigma_*(x, z) = (zx)|zx|^2$ (jointly equivariant for "
             "every orthogonal action): the symmetrized model of one atom, first entry:",
             sp.Eq(sp.Symbol("Phi_phi_z_1"), single[0], evaluate=False)),
        Step("Minus the projected model $\\sigma_*(x, P_{E^G}z)$, first entry (not zero: the "
             "equivariant architecture is not feature averaging for SO(2) either); "
             f"{sp.count_ops(projected[0])} operations:", None),
        Step("For $f = \\sigma_*(\\cdot, z)$ and the equivariant $h = \\sigma_*(\\cdot, pI+qJ)$, "
             "the cross term $C = E_{\\pi_X}\\langle f - Q_Gf, Q_Gf - h\\rangle$ over $\\pi_X = "
             "N(0, \\mathrm{diag}(s_1^2, s_2^2))$ by Gaussian moments "
             f"({len(sp.Add.make_args(cross))} terms); at $s_1 = s_2$ it simplifies to",
             sp.Eq(sp.Symbol("C_iso"), isotropic, evaluate=False)),
        Step("Why: for invariant $\\pi_X$, $Q_G$ is self-adjoint in $L^2(\\pi_X)$ (change "
             "variables $x \\to \\rho_g x$, $\\hat\\rho$ orthogonal) and idempotent, hence the "
             "orthogonal projection onto the equivariant functions; so $\\|f - h\\|^2 = "
             "\\|f - Q_Gf\\|^2 + \\|Q_Gf - h\\|^2$ for every equivariant $h$ and "
             "$\\Phi_{\\mu^G} = Q_G\\Phi_\\mu$ (M1a) is the closest equivariant model.  For "
             "$s_1 \\neq s_2$ the cross term is a non-zero polynomial (the negative control's "
             "reference)."),
    ]
    return Derivation(steps, {"so2_projector": P, "fixed_space_residual": fixed,
                              "projected_difference": projected, "cross_term": cross})


DERIVATIONS = {"M1g": derive_m1g}
