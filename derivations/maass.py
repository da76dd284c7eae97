"""Symbolic identities of Maass Martinez & Fontbona (2024) for finite groups acting by
permutations (docs/conventions.md, section 3; claims M1a-M1e).  ``DERIVATIONS`` maps each claim id to
the function building its :class:`~derivations.base.Derivation` (report steps and the
named results its check evaluates).

Everything is derived from the definitions with symbolic parameters:
- joint equivariance sigma_*(rho_g x, M_g z) = rho^_g sigma_*(x, z) of the reference unit
  sigma_*(x, z) = logistic(z x) under M_g z = g z g^T;
- M1a: (Q_G Phi_mu)(x) = Phi_{mu^G}(x) for a symbolic weighted two-particle measure;
- M1b: Phi_{mu^G} = Phi_{mu^{E^G}} for the linear unit z x, and the symbolic difference
  (and its small-parameter expansion) for the logistic unit;
- M1c: R^DA(mu) - R^FA(mu) = (1/2) int |rho^_g^T Phi_mu(rho_g x) - Q_G Phi_mu(x)|^2 d lambda_G
  pointwise in (x, y) (a square that vanishes at weakly invariant laws), and the exact
  RMD of a measure and its translate (Brenier: a translation is optimal);
- M1d: the FA field at a particle z in E^G is P_{E^G} of the vanilla field (it lies in
  E^G, for any residual);
- M1e: E^G as the joint fixed space (null space of the stacked M_g - I).
A finite group is given as a list of (rho_g, rho^_g) SymPy matrices; the parameter action
M_g z = rho^_g z rho_g^T is built from them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

from derivations._symbols import matrix_symbols, vector_symbols
from derivations.base import Derivation, Step

__all__ = ["logistic", "swap_group", "cyclic_group", "matrix_symbols", "vector_symbols",
           "logistic_unit", "linear_unit", "act_on_parameters", "haar_average",
           "fixed_space_projector", "feature_average", "symmetrized_model", "projected_model",
           "EquivarianceDerivation", "derive_joint_equivariance", "M1aDerivation",
           "derive_feature_averaging", "M1bDerivation", "derive_projection_vs_symmetrization",
           "eps", "DERIVATIONS", "PINNED_Z", "PINNED_X", "m1a_symbols", "m1c_symbols",
           "m1d_symbols", "fixed_space_basis", "derive_risk_gap", "derive_projected_drift",
           "uv_group_matrices", "matrix_action_matrices", "rmd_definition", "rmd_symbols",
           "translate_symbols",
           "TranslateDerivation", "derive_translate_moments", "TRANSLATE_N", "TRANSLATE_D"]

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


def _Eq(lhs, rhs) -> sp.Eq:
    """An unevaluated equation for the report."""
    return sp.Eq(lhs, rhs, evaluate=False)


# ----------------------------------------------------------------------------------------
# M1a
# ----------------------------------------------------------------------------------------
def m1a_symbols(dim: int = 2) -> tuple[list, list, list, sp.Symbol]:
    """The argument symbols of the M1a results: x, the atoms a and b (row-major), w."""
    return (list(vector_symbols("x", dim)), list(matrix_symbols("a", dim, dim)),
            list(matrix_symbols("b", dim, dim)), sp.Symbol("w", real=True))


def derive_m1a() -> Derivation:
    """M1a for C_2 (reference) and C_3: Q_G Phi_mu - Phi_{mu^G} for a symbolic weighted
    two-atom measure, the single-atom closed form Phi_{phi_z}(x), joint equivariance."""
    d = derive_feature_averaging()
    d3 = derive_feature_averaging(cyclic_group(3), dim=3)
    P = swap_group()[1][0]
    steps = [
        Step("Reference action: $G = C_2 = \\{I, P\\}$, $\\rho = \\hat\\rho = g$, "
             "$M_g z = g z g^T$; the unit $\\sigma_*(x, z) = \\mathrm{logistic}(z x)$.",
             _Eq(sp.Symbol("P"), P)),
        Step("Joint equivariance, $\\sigma_*(Px, PzP) - P\\sigma_*(x, z)$ for symbolic "
             "$x, z$, simplifies to", _Eq(sp.Symbol("r_P"), d.equivariance.residual[1])),
        Step("Feature average of $\\mu = w\\delta_a + (1-w)\\delta_b$, "
             "$(Q_G\\Phi_\\mu)(x) = \\frac12\\sum_g \\hat\\rho_g^T \\Phi_\\mu(\\rho_g x)$, "
             "first entry $F_1$:", _Eq(sp.Symbol("F_1"), d.feature_averaged[0])),
        Step("Symmetrized measure $\\mu^G = \\frac12\\sum_g M_g\\#\\mu$: "
             "$\\Phi_{\\mu^G}(x)$, first entry $S_1$:",
             _Eq(sp.Symbol("S_1"), d.symmetrized[0])),
        Step("Their difference $\\Delta = Q_G\\Phi_\\mu - \\Phi_{\\mu^G}$ simplifies to "
             "zero (M1a):", _Eq(sp.Symbol("Delta"), d.residual)),
        Step("Same computation for $C_3$ (cyclic shifts of $\\mathbb{R}^3$, "
             "$M_g z = S z S^T$) with symbolic $3\\times 3$ parameters:",
             _Eq(sp.Symbol("Delta_C3"), d3.residual)),
        Step("Single atom: $\\Phi_{\\varphi_z}(x)$ for the orbit measure "
             "$\\varphi_z = \\frac12(\\delta_z + \\delta_{PzP})$ (what ``symmetrize`` "
             "serves):", _Eq(sp.Symbol("Phi_phi_z"), d.single_particle)),
        Step("Why (general $G$): $\\sigma_*(\\rho_g x, z) = \\hat\\rho_g \\sigma_*(x, "
             "M_{g^{-1}} z)$, so $Q_G\\Phi_\\mu(x) = \\int\\int \\sigma_*(x, M_{g^{-1}}z)\\,"
             "d\\lambda_G\\, d\\mu = \\Phi_{\\mu^G}(x)$ by inversion invariance of Haar measure."),
    ]
    from derivations.maass_projection import derive_so2_feature_averaging
    so2 = derive_so2_feature_averaging()
    steps += [
        Step("A compact infinite group: SO(2) rotating $X = Y = \\mathbb R^2$, $M_g z = R z R^T$, "
             "Haar integral $\\frac1{2\\pi}\\int_0^{2\\pi}d\\varphi$ (by ``sp.integrate``), "
             "with the cubic norm-gated unit $\\sigma_*(x, z) = (zx)|zx|^2$ (rotation "
             "equivariant; the elementwise logistic unit is not).  Joint equivariance "
             "$\\sigma_*(Rx, RzR^T) - R\\sigma_*(x, z)$, reduced modulo $\\cos^2 + \\sin^2 = 1$:",
             _Eq(sp.Symbol("r_R"), so2.equivariance_residual)),
        Step("$Q_G\\Phi_\\mu - \\Phi_{\\mu^G}$ for $\\mu = w\\delta_a + (1-w)\\delta_b$, both "
             "Haar integrals done symbolically:", _Eq(sp.Symbol("Delta_SO2"), so2.residual)),
        Step("Single atom under SO(2): $\\Phi_{\\varphi_z}(x) = \\int\\sigma_*(x, RzR^T)\\,"
             "d\\lambda$, first entry (a cubic in $x$ and in $z$):",
             _Eq(sp.Symbol("Phi_phi_z_1"), so2.single_particle[0])),
    ]
    # residuals are the simplified differences (zero); the check compares them with the
    # float64 difference of the two sides
    return Derivation(steps, {"single_particle": d.single_particle, "residual": d.residual,
                              "residual_c3": d3.residual,
                              "equivariance_residual": d.equivariance.residual[1],
                              "so2_single_particle": so2.single_particle,
                              "so2_residual": so2.residual,
                              "so2_equivariance_residual": so2.equivariance_residual})


# ----------------------------------------------------------------------------------------
# M1b
# ----------------------------------------------------------------------------------------
#: pinned counterexample for the logistic unit (found by Hypothesis): one particle z,
#: one input x, small integers
PINNED_Z = ((0, 0), (0, 1))
PINNED_X = (0, 2)


def derive_m1b() -> Derivation:
    d = derive_projection_vs_symmetrization()
    pinned = sp.simplify(d.logistic_difference.subs(
        {**dict(zip(d.z, [c for r in PINNED_Z for c in r])), **dict(zip(d.x, PINNED_X))}))
    steps = [
        Step("Projection onto $E^G$ as the Haar average $P_{E^G} z = \\frac12(z + PzP)$ "
             "(shown as a 2 x 2 matrix):",
             _Eq(sp.MatMul(sp.MatrixSymbol("P_E", 4, 4), sp.MatrixSymbol("z", 4, 1)), d.projector)),
        Step("Linear unit $\\sigma_*(x, z) = z x$: $\\Delta_{lin} = \\Phi_{\\mu^G} - "
             "\\Phi_{\\mu^{E^G}}$ for one symbolic atom (both sides are linear in $\\mu$):",
             _Eq(sp.Symbol("Delta_lin"), d.linear_residual)),
        Step("The same for $C_3$ acting on $3\\times 3$ parameters:",
             _Eq(sp.Symbol("Delta_C3"), d.linear_residual_c3)),
        Step("Logistic unit: entrywise the difference is $\\frac12(s(u) + s(v)) - "
             "s(\\frac{u+v}2)$ with $u = (zx)_k$, $v = (PzPx)_k$ (checked symbolically):",
             _Eq(sp.Function("D")(d.u, d.v), d.difference_uv)),
        Step("Expanding $D(\\varepsilon u, \\varepsilon v)$: the orders "
             "$\\varepsilon^0, \\varepsilon^1, \\varepsilon^2$ vanish "
             f"({[str(c) for c in d.low_order]}); the leading coefficient $c_3$ "
             "(of $\\varepsilon^3$) is", _Eq(sp.Symbol("c_3"), d.leading_term)),
        Step("So the models differ for generic $(u, v)$ (a logistic Jensen gap whose leading "
             "term vanishes only on $u = v$ and $u = -v$): the projected model is not the "
             "feature-averaged one.  Pinned counterexample "
             f"(found by Hypothesis): $z = {sp.latex(sp.Matrix(PINNED_Z))}$, "
             f"$x = {sp.latex(sp.Matrix(PINNED_X))}$:", _Eq(sp.Symbol("D_pinned"), pinned)),
    ]
    return Derivation(steps, {"difference_uv": d.difference_uv, "leading": d.leading_term,
                              "low_order": list(d.low_order),
                              "logistic_difference": d.logistic_difference,
                              "linear_residual": d.linear_residual,
                              "linear_residual_c3": d.linear_residual_c3,
                              "projector": d.projector})


# ----------------------------------------------------------------------------------------
# M1c: R^DA - R^FA is a square vanishing at WI laws; RMD of a translate
# ----------------------------------------------------------------------------------------
def m1c_symbols(order: int, dim: int) -> tuple[list[list[sp.Symbol]], list[sp.Symbol]]:
    """The argument symbols of the risk-gap results: a[g][k] = Phi_mu(rho_g x)_k and y_k."""
    a = [[sp.Symbol(f"a_{g}_{k}", real=True) for k in range(dim)] for g in range(order)]
    return a, [sp.Symbol(f"y_{k}", real=True) for k in range(dim)]


def derive_risk_gap(group) -> tuple[sp.Expr, sp.Expr, sp.Expr, sp.Expr]:
    """Pointwise in (x, y), with a_g = Phi_mu(rho_g x) symbolic (quadratic loss):
    R^DA integrand (1/|G|) sum_g |a_g - rho^_g y|^2 / 2, R^FA integrand |q - y|^2 / 2 with
    q = (1/|G|) sum_g rho^_g^T a_g, and the orbit variance
    V = (1/(2|G|)) sum_g |rho^_g^T a_g - q|^2.  Returns (gap = DA - FA, V, gap - V
    expanded (zero), V at an equivariant model a_g = rho^_g a (zero))."""
    n, dim = len(group), group[0][1].shape[0]
    a, y = m1c_symbols(n, dim)
    A = [sp.Matrix(ag) for ag in a]
    Y = sp.Matrix(y)
    da = sp.Rational(1, 2 * n) * sum(((A[g] - rh * Y).T * (A[g] - rh * Y))[0]
                                     for g, (_, rh) in enumerate(group))
    q = sp.Rational(1, n) * sum((rh.T * A[g] for g, (_, rh) in enumerate(group)), sp.zeros(dim, 1))
    fa = sp.Rational(1, 2) * ((q - Y).T * (q - Y))[0]
    var = sp.Rational(1, 2 * n) * sum(((rh.T * A[g] - q).T * (rh.T * A[g] - q))[0]
                                      for g, (_, rh) in enumerate(group))
    gap = sp.expand(da - fa)
    ident = sp.expand(gap - var)
    base = sp.Matrix(a[0])
    wi = sp.expand(var.subs({s: v for g, (_, rh) in enumerate(group)
                             for s, v in zip(a[g], rh * base)}, simultaneous=True))
    return gap, sp.expand(var), ident, wi


def derive_m1c() -> Derivation:
    G2, G3 = swap_group(), cyclic_group(3)
    gap2, var2, id2, wi2 = derive_risk_gap(G2)
    gap3, var3, id3, wi3 = derive_risk_gap(G3)
    rmd_def = rmd_definition()
    tr = derive_translate_moments()
    rmd_sq = tr.rmd_sq
    steps = [
        Step("Quadratic loss $\\ell(y, \\hat y) = \\frac12|y - \\hat y|^2$, orthogonal "
             "$\\hat\\rho$.  Pointwise in $(x, y)$ write $a_g = \\Phi_\\mu(\\rho_g x)$ and "
             "$q = \\frac1{|G|}\\sum_g \\hat\\rho_g^T a_g = Q_G\\Phi_\\mu(x)$.  The DA "
             "integrand $\\frac1{|G|}\\sum_g \\frac12|a_g - \\hat\\rho_g y|^2$ minus the FA "
             "integrand $\\frac12|q - y|^2$, for $C_2$ (expanded):",
             gap2, lhs=r"R^{DA} - R^{FA}"),
        Step("equals the orbit variance $V = \\frac1{2|G|}\\sum_g |\\hat\\rho_g^T a_g - q|^2$ "
             "(a square, independent of $y$): $R^{DA} - R^{FA} - V$ expands to",
             _Eq(sp.Symbol("Delta_C2"), id2)),
        Step("and for $C_3$ (cyclic shifts of $\\mathbb{R}^3$) to",
             _Eq(sp.Symbol("Delta_C3"), id3)),
        Step("At a weakly invariant law $\\Phi_\\mu$ is equivariant, $a_g = \\hat\\rho_g a$: "
             "$V$ becomes (C_2, C_3)", _Eq(sp.Symbol("V_WI"), sp.Tuple(wi2, wi3))),
        Step("So $R^{DA} - R^{FA} = E_\\pi V \\ge 0$ vanishes on WI laws together with its "
             "first variation (a square at its zero): DA and FA have the same Wasserstein "
             "gradient flow from WI initializations for ANY data; vanilla joins them when "
             "the data are symmetric (its risk equals $R^{DA}$ then).  At finite $N$, "
             "differentiating joint equivariance, $\\nabla_z\\sigma_*(\\rho_g x, M_g z)^T = "
             "M_g\\nabla_z\\sigma_*(x, z)^T\\hat\\rho_g^T$: a union-of-orbits particle set "
             "stays one under full-orbit DA and FA (with orbit-coupled noise), and their "
             "steps coincide exactly.  Otherwise the schemes differ by finite-$N$ "
             "fluctuations, expected $O(N^{-1/2})$ in RMD."),
        Step("RMD used to compare schemes: $W_2(\\mu, (\\cdot + c)\\#\\mu) = |c|$ (a "
             "translation is the gradient of the convex $\\frac12|z|^2 + c\\cdot z$, optimal "
             "by Brenier), $m_2$ of the translate is $m_2 + 2\\bar z\\cdot c + |c|^2$; with "
             "$c_2 = |c|^2$, $m_c = \\bar z\\cdot c$:",
             _Eq(sp.Symbol("RMD^2"), rmd_sq)),
        Step("These moments are computed, not typed: for a symbolic measure of "
             f"{TRANSLATE_N} atoms $z_i \\in \\mathbb{{R}}^{TRANSLATE_D}$ and a symbolic "
             "$c$, the cost of the coupling $z_i \\mapsto z_i + c$ minus $|c|^2$, and "
             "$m_2$ of the translate minus $(m_2 + 2 m_c + c_2)$, expand to",
             _Eq(sp.Symbol("Delta"), sp.Tuple(tr.cost_residual, tr.moment_residual))),
        Step("and $\\mathrm{RMD}^2$ of the translate is the definition at "
             "$W_2^2 = c_2$, $m_2(\\mu) = m_2$, $m_2(\\nu) = m_2 + 2 m_c + c_2$."),
    ]
    steps.insert(0, Step("Distance between particle measures (docs/conventions.md, section 3): "
                         "$\\mathrm{RMD} = \\sqrt{W_2^2 / (2(m_2(\\mu) + m_2(\\nu)))}$ "
                         "$\\in [0, 1]$ (since $|a - b|^2 \\le 2|a|^2 + 2|b|^2$):",
                         _Eq(sp.Symbol("RMD"), rmd_def)))
    return Derivation(steps, {"orbit_variance_c2": var2, "orbit_variance_c3": var3,
                              "risk_gap_c2": gap2, "rmd_sq_translate": rmd_sq,
                              "rmd": rmd_def})


#: size of the symbolic measure on which the moments of a translate are computed
TRANSLATE_N, TRANSLATE_D = 3, 2


@dataclass(frozen=True)
class TranslateDerivation:
    """RMD of a measure and its translate, from the definitions: ``cost_residual`` (the
    translation coupling's cost minus |c|^2) and ``moment_residual`` (m_2 of the
    translate minus (m_2 + 2 m_c + c_2)) expand to zero; ``rmd_sq`` is the RMD definition
    squared at those moments, in the :func:`translate_symbols`."""
    cost_residual: sp.Expr
    moment_residual: sp.Expr
    rmd_sq: sp.Expr


def derive_translate_moments(n: int = TRANSLATE_N, dim: int = TRANSLATE_D
                             ) -> TranslateDerivation:
    """W_2^2(mu, (. + c)#mu) through the translation coupling and m_2((. + c)#mu) for the
    uniform measure on n symbolic atoms in R^dim, as functions of c_2 = |c|^2,
    m_2 = m_2(mu) and m_c = mean(z) . c; then RMD^2 from its definition."""
    z = [vector_symbols(f"z{i}", dim) for i in range(n)]
    c = vector_symbols("c", dim)
    mean = sum(z, sp.zeros(dim, 1)) / n
    m2_mu = sum(((zi.T * zi)[0] for zi in z), sp.Integer(0)) / n
    cost = sum((((zi + c - zi).T * (zi + c - zi))[0] for zi in z), sp.Integer(0)) / n
    m2_nu = sum((((zi + c).T * (zi + c))[0] for zi in z), sp.Integer(0)) / n
    c2_val, mc_val = (c.T * c)[0], (mean.T * c)[0]
    c2, m2, mc = translate_symbols()
    cost_residual = sp.expand(cost - c2_val)
    moment_residual = sp.expand(m2_nu - (m2_mu + 2 * mc_val + c2_val))
    if cost_residual != 0 or moment_residual != 0:
        raise ArithmeticError("the moments of a translate did not reduce to c_2, m_2, m_c")
    # W2^2 = |c|^2 (cost of the translation map, optimal by Brenier); m_2(nu) as above
    w2sq, ma, mb = rmd_symbols()
    rmd_def_sq = rmd_definition() ** 2
    rmd_sq = sp.simplify(rmd_def_sq.subs({w2sq: c2, ma: m2, mb: m2 + 2 * mc + c2},
                                         simultaneous=True))
    return TranslateDerivation(cost_residual, moment_residual, rmd_sq)


def rmd_definition() -> sp.Expr:
    """The RMD convention, its one definition: sqrt(W_2^2 / (2 (m_2(mu) + m_2(nu)))) in the
    symbols of :func:`rmd_symbols` (docs/conventions.md section 3; the M1c result ``rmd``
    that ``verify.formulas.rmd`` evaluates)."""
    w2sq, ma, mb = rmd_symbols()
    return sp.sqrt(w2sq / (2 * (ma + mb)))


def rmd_symbols() -> tuple[sp.Symbol, sp.Symbol, sp.Symbol]:
    """Arguments of the RMD definition: W_2^2, m_2(mu), m_2(nu)."""
    return sp.symbols("W2sq m2mu m2nu", nonnegative=True)


def translate_symbols() -> tuple[sp.Symbol, sp.Symbol, sp.Symbol]:
    """Arguments of the translate RMD: |c|^2, m_2(mu), mean . c."""
    return (sp.Symbol("c2", nonnegative=True), sp.Symbol("m2", nonnegative=True),
            sp.Symbol("mc", real=True))


# ----------------------------------------------------------------------------------------
# M1d: the FA drift at z in E^G is P_{E^G} of the vanilla drift
# ----------------------------------------------------------------------------------------
def m1d_symbols() -> tuple[list[sp.Symbol], list[sp.Symbol], list[sp.Symbol]]:
    """Arguments of the M1d results: (p, q) (z = [[p, q], [q, p]] in E^G), x, r."""
    return (list(sp.symbols("p q", real=True)), list(vector_symbols("x", 2)),
            list(vector_symbols("r", 2)))


def _logistic_pullback(x: sp.Matrix, z: sp.Matrix, c: sp.Matrix) -> sp.Matrix:
    """grad_z sigma_*(x, z)^T c for sigma_* = logistic(z x), as a row-major vector."""
    t = z * x
    s = t.applyfunc(logistic)
    g = sp.Matrix(z.rows, z.cols, lambda i, j: s[i] * (1 - s[i]) * c[i] * x[j])
    return g.reshape(z.rows * z.cols, 1)


def derive_projected_drift() -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """FA data field of one sample at z in E^G (reference C_2, logistic(z x)):
    V = (1/|G|) sum_h grad_z sigma_*(rho_h x, z)^T rho^_h r for a free residual r; returns
    (V, (I - P) V simplified, V - P grad_z sigma_*(x, z)^T r simplified)."""
    G = swap_group()
    (p, q), x, r = m1d_symbols()
    z = sp.Matrix([[p, q], [q, p]])
    X, R = sp.Matrix(x), sp.Matrix(r)
    V = haar_average([_logistic_pullback(rho * X, z, rh * R) for rho, rh in G])
    Mp = sp.kronecker_product(G[1][1], G[1][0])
    P = (sp.eye(4) + Mp) / 2
    trans = (sp.eye(4) - P) * V
    trans = trans.applyfunc(lambda e: sp.simplify(e))
    vanilla = _logistic_pullback(X, z, R)
    diff = (V - P * vanilla).applyfunc(lambda e: sp.simplify(e))
    return V, trans, diff


def derive_m1d() -> Derivation:
    V, trans, diff = derive_projected_drift()
    steps = [
        Step("For $z \\in E^G$ ($M_g z = z$) differentiate joint equivariance "
             "$\\sigma_*(\\rho_h x, M_h z') = \\hat\\rho_h\\sigma_*(x, z')$ at $z' = z$: "
             "$\\nabla_z\\sigma_*(\\rho_h x, z)^T\\hat\\rho_h = M_h\\nabla_z\\sigma_*(x, z)^T$.  "
             "Hence the FA field of one sample with residual $r = Q_G\\Phi(x) - y$, "
             "$V = \\frac1{|G|}\\sum_h \\nabla_z\\sigma_*(\\rho_h x, z)^T\\hat\\rho_h r$, is "
             "$P_{E^G}\\nabla_z\\sigma_*(x, z)^T r$: the projected drift, in $E^G$ for every "
             "batch and every residual."),
        Step("Reference $C_2$, $z = [[p, q], [q, p]]$, symbolic $x$ and $r$: the FA drift "
             "(row-major)", _Eq(sp.Symbol("V"), V)),
        Step("its component orthogonal to $E^G$, $(I - P_{E^G})V$, simplifies to",
             _Eq(sp.Symbol("V_perp"), trans)),
        Step("and $V - P_{E^G}\\nabla_z\\sigma_*(x, z)^T r$ to",
             diff, lhs=r"V - P_{E^G}\nabla_z\sigma_*(x, z)^T r"),
        Step("The penalty $\\tau\\nabla r(z) = 2\\tau z$ lies in $E^G$ too.  Full-orbit DA "
             "has the same field when $\\Phi$ is equivariant (SI/WI particles).  So noiseless "
             "FA and full-orbit DA keep particles in $E^G$ exactly in exact arithmetic; "
             "isotropic noise ($\\beta > 0$) leaves $E^G$ by about $\\sqrt{2\\beta\\alpha T}$.  "
             "Vanilla: one sample's transversal drift $(I - P)\\nabla_z\\sigma_*^T r$ is not "
             "zero, only its orbit average is (symmetric data): a finite-$N$ fluctuation "
             "(expected to shrink with $N$); a non-symmetric teacher gives a nonzero "
             "population transversal drift.  Caveat: $E^G$ is invariant, not necessarily "
             "transversally stable; at small $N$ a perturbation off $E^G$ can grow (rounding "
             "stays at ~1e-16 only because the transversal component starts at exactly 0)."),
    ]
    return Derivation(steps, {"projected_drift": V, "transversal_drift": trans,
                              "drift_minus_projected_vanilla": diff})


# ----------------------------------------------------------------------------------------
# M1e: E^G as the joint fixed space
# ----------------------------------------------------------------------------------------
def matrix_action_matrices(group) -> list[sp.Matrix]:
    """M_g = rho^_g (kron) rho_g (the action z -> rho^_g z rho_g^T, row-major)."""
    return [sp.kronecker_product(rh, rho) for rho, rh in group]


def uv_group_matrices(group) -> list[sp.Matrix]:
    """M_g = blockdiag(rho_g, rho^_g) (the (u, v) unit's action)."""
    return [sp.diag(rho, rh) for rho, rh in group]


def fixed_space_basis(Ms: list[sp.Matrix]) -> sp.Matrix:
    """An orthonormal basis (columns) of E^G = {z : M_g z = z for all g}: the null space
    of the stacked M_g - I, Gram-Schmidt orthonormalized (exact)."""
    D = Ms[0].shape[0]
    stacked = sp.Matrix.vstack(*[M - sp.eye(D) for M in Ms])
    ns = stacked.nullspace()
    ortho = sp.GramSchmidt(ns, orthonormal=True)
    return sp.Matrix.hstack(*ortho)


def derive_m1e() -> Derivation:
    b2 = fixed_space_basis(matrix_action_matrices(swap_group()))
    b3 = fixed_space_basis(matrix_action_matrices(cyclic_group(3)))
    buv = fixed_space_basis(uv_group_matrices(swap_group()))
    P2 = haar_average(matrix_action_matrices(swap_group()))
    steps = [
        Step("$E^G = \\{z : M_g z = z\\ \\forall g\\}$ is the null space of the stacked "
             "$M_g - I$; for the reference $C_2$ action $M_P = P \\otimes P$ an orthonormal "
             "basis (columns, $z$ row-major) is", _Eq(sp.Symbol("B_C2"), b2)),
        Step("and $B B^T$ equals the Haar average $P_{E^G} = \\frac12(I + M_P)$:",
             sp.simplify(b2 * b2.T - P2), lhs=r"B B^T - P_{E^G}"),
        Step("$C_3$ on $3\\times 3$ parameters ($M_S = S\\otimes S$): the circulants,",
             _Eq(sp.Symbol("B_C3"), b3)),
        Step("The paper's $(u, v)$ unit under $C_2$ ($M_P = \\mathrm{diag}(P, P)$):",
             _Eq(sp.Symbol("B_uv"), buv)),
        Step("Heuristic (claim M1e): $E_0 = \\{0\\}$; initialize SI on $E_j$, train freely, "
             "measure $\\mathrm{RMD}(\\nu_T, P_{E_j}\\#\\nu_T)$; if it exceeds a threshold, "
             "enlarge $E_j$ by the escape directions.  It never uses $M_g$; with symmetric "
             "data the drift at $E_j \\subseteq E^G$ lies in $E^G$ (M1d), so only fluctuations "
             "(vanilla) or instabilities can take it outside."),
    ]
    return Derivation(steps, {"basis_c2": b2, "basis_c3": b3, "basis_uv": buv})


DERIVATIONS = {"M1a": derive_m1a, "M1b": derive_m1b, "M1c": derive_m1c, "M1d": derive_m1d,
               "M1e": derive_m1e}
