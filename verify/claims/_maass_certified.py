"""Certified (Arb) sub-checks of M1c, M1d and M1e (Maass Martinez & Fontbona, NeurIPS 2024,
Sections 4-5): each derived closed form against its definition in ball arithmetic
(python-flint, ``numerics.arb_units``) at drawn points; disjoint balls disprove it."""
from __future__ import annotations

from typing import Any

import numpy as np

from derivations import maass as dm
from numerics.arb_units import integer_matvec
from verify.kit import RunContext, SubCheck
from verify.studies.maass import group_action

_WHY = ("Arb balls at 128 bits (floats enter exactly; the group matrices are integer "
        "permutations, hence exact): the closed form by the Arb translation of the derived "
        "expression (verify.certify.arb_function), the reference from the definition")


def _half_sq(v: list) -> Any:
    return sum(e * e for e in v) / 2


def certified_risk_gap(ctx: RunContext) -> list[SubCheck]:
    """M1c: the derived orbit variances (C_2, C_3) and risk gap (C_2) at drawn model outputs
    a_g = Phi_mu(rho_g x) and labels y vs R^DA - R^FA from their definitions in Arb:
    (1/|G|) sum_g |a_g - rho^_g y|^2 / 2 - |q - y|^2 / 2, q = (1/|G|) sum_g rho^_g^T a_g."""
    from verify import certify
    res = ctx.derivation().results
    rng = ctx.rng("certified", "M1c")
    inst: list = []
    with certify.working_precision(128):
        for key, order, gap_key in (("C2", 2, "risk_gap_c2"), ("C3", 3, None)):
            RH = group_action(key).rho_hat.astype(np.int64)
            a_sym, y_sym = dm.m1c_symbols(order, RH.shape[1])
            flat = [s for row in a_sym for s in row]
            var = certify.arb_function(res[f"orbit_variance_c{order}"], flat)
            gap = certify.arb_function(res[gap_key], flat + y_sym) if gap_key else None
            for _ in range(ctx.size("certified")):
                a = (2 * rng.standard_normal((order, RH.shape[1]))).tolist()
                y = rng.standard_normal(RH.shape[1]).tolist()
                ab = [[certify.ball(e) for e in row] for row in a]
                yb = [certify.ball(e) for e in y]
                da = sum(_half_sq([ai - yi for ai, yi in
                                   zip(ab[g], integer_matvec(RH[g], yb))])
                         for g in range(order)) / order
                q = [sum(col) / order
                     for col in zip(*(integer_matvec(RH[g].T, ab[g]) for g in range(order)))]
                fa = _half_sq([qi - yi for qi, yi in zip(q, yb)])
                flat_a = [e for row in a for e in row]
                lab = f"{key}: a = {a}, y = {y}"
                inst.append(certify.CertifiedInstance(f"{lab} (orbit variance)", var(*flat_a),
                                                      da - fa, scale=da + fa))
                if gap is not None:
                    inst.append(certify.CertifiedInstance(f"{lab} (risk gap)", gap(*flat_a, *y),
                                                          da - fa, scale=da + fa))
    return [certify.certified_compare(
        f"certified: derived orbit variance (C2, C3) and risk gap (C2) vs R^DA - R^FA from "
        f"their definitions in Arb, {len(inst)} instances (at the scale R^DA + R^FA)", inst,
        reason=_WHY)]


def _pullback(x: list, z: list, c: list) -> list:
    """grad_z sigma_*(x, z)^T c for sigma_* = logistic(z x) (2 x 2, row-major), each entry
    the first Taylor coefficient of t -> c . sigma_*(x, z + t e_j) in Arb."""
    from numerics import arb_units as AU

    def along(j: int):
        def f(t):
            zt = [zk + t if k == j else zk + 0 * t for k, zk in enumerate(z)]
            return sum(AU.logistic(zt[2 * i] * x[0] + zt[2 * i + 1] * x[1]) * c[i]
                       for i in range(2))
        return f
    return [AU.taylor_coefficients(along(j), 0, 1)[1] for j in range(4)]


def certified_projected_drift(ctx: RunContext) -> list[SubCheck]:
    """M1d: at drawn z = [[p, q], [q, p]] in E^G, x and r, the derived FA drift V, its
    transversal part (I - P)V and V - P grad_z sigma_*(x, z)^T r vs the definition
    V = (1/|G|) sum_h grad_z sigma_*(rho_h x, z)^T rho^_h r (C_2 swap, logistic(z x)),
    every gradient an Arb power-series derivative of the unit, P the Haar average."""
    from numerics import arb_units as AU
    from verify import certify
    res = ctx.derivation().results
    (ps, qs), xs, rs = dm.m1d_symbols()
    args = [ps, qs, *xs, *rs]
    fns = {k: [certify.arb_function(e, args) for e in res[k]]
           for k in ("projected_drift", "transversal_drift", "drift_minus_projected_vanilla")}
    G = group_action("C2")
    R, RH = G.rho.astype(np.int64), G.rho_hat.astype(np.int64)
    rng = ctx.rng("certified", "M1d")
    inst: dict[str, list] = {k: [] for k in fns}
    with certify.working_precision(128):
        for _ in range(ctx.size("certified")):
            p, q = (1.5 * rng.standard_normal(2)).tolist()
            x, r = (4 * rng.standard_normal(2)).tolist(), rng.standard_normal(2).tolist()
            xb, rb = [certify.ball(e) for e in x], [certify.ball(e) for e in r]
            zb = [certify.ball(e) for e in (p, q, q, p)]
            terms = [_pullback(integer_matvec(R[h], xb), zb, integer_matvec(RH[h], rb))
                     for h in range(len(R))]
            V = [sum(col) / len(R) for col in zip(*terms)]
            PV = AU.fixed_space_projection(G.M, V)
            Pvan = AU.fixed_space_projection(G.M, _pullback(xb, zb, rb))
            scale = sum(abs(v) for v in V) + 1
            refs = {"projected_drift": V,
                    "transversal_drift": [v - w for v, w in zip(V, PV)],
                    "drift_minus_projected_vanilla": [v - w for v, w in zip(V, Pvan)]}
            for k, fs in fns.items():
                for j, fn in enumerate(fs):
                    inst[k].append(certify.CertifiedInstance(
                        f"p, q = {p}, {q}; x = {x}; r = {r}; entry {j + 1}",
                        fn(p, q, *x, *r), refs[k][j], scale=scale))
    names = {"projected_drift": "derived FA drift V",
             "transversal_drift": "derived transversal drift (I - P)V",
             "drift_minus_projected_vanilla": "derived V - P grad_z sigma^T r"}
    return [certify.certified_compare(
        f"certified: {names[k]} vs its definition (Haar average of Arb power-series "
        f"gradients of logistic(z x)), {len(v)} entries (at the scale 1 + |V|_1)", v,
        reason=_WHY) for k, v in inst.items()]


def certified_fixed_space_bases(ctx: RunContext) -> list[SubCheck]:
    """M1e: the derived orthonormal bases B of E^G (C_2, C_3, the (u, v) unit's C_2):
    B B^T vs the Haar average (1/|G|) sum_g M_g in Arb, entry by entry (exact integers)."""
    from numerics import arb_units as AU
    from verify import certify
    res = ctx.derivation().results
    inst = []
    with certify.working_precision(128):
        for key, group in (("basis_c2", "C2"), ("basis_c3", "C3"), ("basis_uv", "C2 uv")):
            B = res[key]
            Bb = [[certify.ball(B[i, j]) for j in range(B.cols)] for i in range(B.rows)]
            M = group_action(group).M
            D = M.shape[1]
            for j in range(D):
                e_j = [1 if k == j else 0 for k in range(D)]
                col = AU.fixed_space_projection(M, e_j)
                for i in range(D):
                    bbt = sum((Bb[i][k] * Bb[j][k] for k in range(B.cols)), 0 * Bb[0][0])
                    inst.append(certify.CertifiedInstance(f"{key}: entry ({i + 1}, {j + 1})",
                                                          bbt, col[i], scale=1))
    return [certify.certified_compare(
        f"certified: derived E^G bases (C2, C3, (u, v) unit) B B^T vs the Haar average "
        f"(1/|G|) sum_g M_g in Arb, {len(inst)} entries", inst, reason=_WHY)]
