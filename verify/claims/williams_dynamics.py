"""Claims W2a-W2c: the canonical parametrization of shallow univariate ReLU networks, the
conserved invariant delta and the reduced flow under the metric G(r, delta) (Williams,
Trager, Silva, Panozzo, Zorin, Bruna, NeurIPS 2019, Section 3: canonical parameters,
invariants, reduced dynamics).

Derivations: ``derivations.williams_dynamics.DERIVATIONS`` (read here only through
``verify.kit.lambdified`` and the formulas, which read the same objects).  Numerics:
``numerics.relu1d`` (dense gradients, event-driven DOP853 gradient flow with Filippov
sliding, reduced canonical flow).  Every check compares a derived result with something
computed independently of it: the network function, finite differences of the loss, the
integrated flow.  All flows use alpha(m) = m (the canonical normalization).  The velocity
field (W2d-W2f, W2h) is in :mod:`verify.claims.williams_dynamics_field`, the residual ODE
(W2g) in :mod:`verify.claims.williams_dynamics_residual`.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from derivations import williams_dynamics as D
from numerics import arb_units as AU
from numerics import relu1d as N
from verify.certify import certified_details
from verify.claims._williams_dynamics import (NUMPY, SIGN_NOTE, U, certified_draws, draw_data,
                                              draw_neurons, neuron_gradient, williams_claim,
                                              wrap_angle)
from verify.formulas.williams_dynamics import canonical_from_full, full_from_canonical
from verify.kit import (Evidence, Outcome, RunContext, SubCheck, Table, combine, compare, fmt,
                        for_all_instances, lambdified)
from verify.strategies import datasets_1d, relu1d_networks

#: tolerance of the W2b reference flow (DOP853)
RTOL = 1e-12

# ====================================================================== W2a
#: near miss of W2a: the canonical angle off by this many radians
W2A_ANGLE_OFFSET = 2e-13


def _w2a(ctx: RunContext, angle_offset: float) -> Outcome:
    """f_z vs f~ at the derived pi(z) (canonical angles shifted by ``angle_offset``: 0 in
    the check); fibres; float64 evaluators vs mpmath."""
    xs = np.linspace(-3, 3, 401)

    def measure(z) -> SubCheck:
        a, b, c = z
        m = a.size
        f_full = N.forward_dense(a, b, c, xs, "m")
        r, th, dl = canonical_from_full(a, b, c)
        r, th, dl = np.atleast_1d(r), np.atleast_1d(th), np.atleast_1d(dl)
        if angle_offset:
            th = th + angle_offset
        f_can = N.canonical_forward(r, th, xs)
        scale = np.sum(np.abs(c) * np.hypot(a, b)) * np.hypot(3.0, 1.0) / m
        return compare("f_z vs f~_pi(z)", f_full / scale, f_can / scale, rtol=0.0,
                       atol=4 * (m + 2) * U, reason="sums of m terms in float64: (m + 2) "
                       "roundings of the summed magnitudes (relative to that scale)", unit="relative")

    def measure_fibre(z) -> SubCheck:
        a, b, c = z
        m = a.size
        r, th, dl = (np.atleast_1d(v) for v in canonical_from_full(a, b, c))
        k = 10.0 ** np.linspace(-1, 1, m)
        r2, th2, dl2 = (np.atleast_1d(v) for v in canonical_from_full(k * a, k * b, c / k))
        a3, b3, c3 = full_from_canonical(r, th, dl)
        zscale = np.maximum(np.abs(c), np.hypot(a, b))
        f_full = N.forward_dense(a, b, c, xs, "m")
        a4, b4, c4 = full_from_canonical(r, th, dl + 1.0)
        fscale = np.sum(np.abs(c) * np.hypot(a, b)) * np.hypot(3.0, 1.0) / m * (m + 2)
        # orbit (r relative, angle mod 2 pi), inverse (per neuron, in units of max(|c|, |(a, b)|)),
        # fibre point (f in units of (m + 2) times the summed magnitudes)
        value = np.concatenate([r2 / np.abs(r), wrap_angle(th2 - th),
                                (np.stack([a3, b3, c3]) / zscale).ravel(),
                                N.forward_dense(a4, b4, c4, xs, "m") / fscale])
        reference = np.concatenate([r / np.abs(r), np.zeros(m),
                                    (np.stack([a, b, c]) / zscale).ravel(), f_full / fscale])
        return compare("fibres", value, reference, rtol=0.0, atol=64 * U,
                       reason="a few roundings in sqrt/atan2/division "
                       "(|c|/|(a,b)| up to 1e3: conditioning of the fibre point <= 16 u)", unit="mixed (r relative, theta radians)")

    # output weights |c| >= 1e-3 (r = 0 has no angle to compare)
    nets = relu1d_networks(1, 24, min_norm=1e-3).map(
        lambda z: (z[0], z[1], np.where(np.abs(z[2]) < 1e-3, 1.0, z[2])))
    s_f = for_all_instances(ctx, "f_z vs f~_pi(z) (dense numerics vs canonical numerics with "
                            "the derived pi)", nets, measure, count=ctx.size("instances"))
    s_fib = for_all_instances(ctx, "fibres: pi(ka, kb, c/k) = pi(a, b, c); full_from_canonical o "
                              "pi = id; the point with delta + 1 represents the same f",
                              nets, measure_fibre, count=ctx.size("instances"))
    got_all, ref_all, cf_args, fc_args = _evaluator_grid()
    s_mp = compare("float64 evaluators (hypot, scaled homogeneous form) vs mpmath of the "
                   "derived expressions, |args| in 1e-150..1e200", got_all, ref_all, rtol=8 * U,
                   reason="a few roundings (hypot, sqrt, products); the 40-digit reference "
                          "rounded to float64 adds <= u/2")
    subs = [s_f, s_fib, s_mp] + _certified_w2a(ctx, angle_offset) + _certified_w2a_float64(ctx, cf_args, fc_args)
    return combine("f_z (dense numerics) vs f~_{pi(z)} (canonical numerics with the derived pi); "
                   "rescaling orbits vs pi; full_from_canonical o pi = id; certified (Arb) at "
                   "drawn neurons", subs, notes=[SIGN_NOTE],
                   details={"certified": certified_details(subs)})


def _evaluator_grid() -> tuple[list[float], list[float], list[tuple], list[tuple]]:
    """The float64 evaluators vs mpmath (40 digits) of the same derived expressions over
    magnitudes 1e-150..1e200: (float64 outputs, references, the canonical_from_full
    arguments, the full_from_canonical arguments); inputs whose result overflows are
    skipped (the documented error)."""
    got_all: list[float] = []
    ref_all: list[float] = []
    cf_args: list[tuple[float, float, float]] = []
    fc_args: list[tuple[float, float, float]] = []
    mags = [1e-150, 1e-3, 1.0, 7e2, 1e150]
    for av in mags:
        for bv in (-1e-3, 2.0, -1e140):
            for cv in (3e-2, -1e100):
                try:
                    got = canonical_from_full(av, bv, cv)
                except ValueError:
                    continue  # delta overflows: the documented error
                got_all += [float(g) for g in got]
                ref_all += [float(q) for q in canonical_from_full.mpmath(av, bv, cv, dps=40)]
                cf_args.append((av, bv, cv))
    for rv in (1e-100, -0.3, 1.0, 1e200):
        for dv in (-1e200, -1.0, 0.0, 2.0, 1e200):
            try:
                got = full_from_canonical(rv, 0.7, dv)
            except ValueError:
                continue
            got_all += [float(g) for g in got]
            ref_all += [float(q) for q in full_from_canonical.mpmath(rv, 0.7, dv, dps=40)]
            fc_args.append((rv, 0.7, dv))
    return got_all, ref_all, cf_args, fc_args


def _certified_w2a(ctx: RunContext, angle_offset: float) -> list[SubCheck]:
    """Proofs at drawn (a, b, c, x): the derived pi(z) in Arb gives the neuron's value
    (definition c (ax - b)_+ vs r <x~, d(theta)>_+, both in Arb), and the derived |(a,b)|^2
    of (r, delta) (and its rationalized form where delta > 0) is a^2 + b^2."""
    from verify import certify
    res = ctx.derivation().results
    r_fn = certify.arb_function(res["r"], (D.a, D.b, D.c))
    th_fn = certify.arb_function(res["theta"], (D.a, D.b))
    dl_fn = certify.arb_function(res["delta"], (D.a, D.b, D.c))
    nu2 = {k: certify.arb_function(res[k], (D.r, D.delta)) for k in ("nu2", "nu2_rationalized")}
    neuron, fibre, rational = [], [], []
    with certify.working_precision(128):
        off = certify.ball(angle_offset)
        for a, b, c, x in certified_draws(ctx, "W2a", 4).tolist():
            lab = f"(a, b, c, x) = ({a!r}, {b!r}, {c!r}, {x!r})"
            ab2 = certify.ball(a) ** 2 + certify.ball(b) ** 2
            scale = abs(certify.ball(c)) * ab2.sqrt() * (1 + certify.ball(x) ** 2).sqrt()
            val = AU.canonical_neuron(r_fn(a, b, c), th_fn(a, b) + off, x)
            neuron.append(certify.CertifiedInstance(lab, val, AU.full_neuron(a, b, c, x), scale=scale))
            fibre.append(certify.CertifiedInstance(
                lab, certify.enclose_to(lambda: nu2["nu2"](r_fn(a, b, c), dl_fn(a, b, c))), ab2))
            if dl_fn(a, b, c) > 0:
                rational.append(certify.CertifiedInstance(
                    lab, certify.enclose_to(lambda: nu2["nu2_rationalized"](r_fn(a, b, c), dl_fn(a, b, c))),
                    ab2))
    why = ("Arb balls at 128+ bits (floats enter exactly): the closed form from the derived "
           "expressions, the reference from the definitions of f_z and |(a, b)|^2")
    out = [certify.certified_compare(f"certified: c (ax - b)_+ vs r <x~, d(theta)>_+ at the derived "
                                     f"pi(z), {len(neuron)} neurons (at the scale |c| |(a,b)| |x~|)",
                                     neuron, reason=why),
           certify.certified_compare(f"certified: derived |(a,b)|^2 = nu2(r, delta) at the derived "
                                     f"(r, delta) vs a^2 + b^2, {len(fibre)} neurons", fibre, reason=why)]
    if rational:
        out.append(certify.certified_compare(
            f"certified: rationalized nu2 (delta > 0) vs a^2 + b^2, {len(rational)} neurons",
            rational, reason=why))
    return out


def _certified_w2a_float64(ctx: RunContext, cf_args: list, fc_args: list) -> list[SubCheck]:
    """The float64 evaluators canonical_from_full and full_from_canonical within their stated
    ulp bounds (``.ulp_bound``, of each output's value) of Arb balls of the DEFINITIONS
    (``numerics.arb_units.canonical_map``, ``fibre_point``), at the magnitude grid (|args|
    1e-150..1e200) and the drawn neurons (and their images under pi); a float64 output off
    by more is disproved."""
    from verify import certify
    draws = certified_draws(ctx, "W2a float64", 3)
    cf_args = cf_args + [tuple(v) for v in draws.tolist()]
    fc_args = fc_args + [tuple(float(q) for q in canonical_from_full(*v)) for v in draws.tolist()]
    out = []
    for fn, ref_fn, args, names, what in (
            (canonical_from_full, AU.canonical_map, cf_args, "(a, b, c)", "(c |(a, b)|, atan2(b, a), "
             "c^2 - a^2 - b^2)"),
            (full_from_canonical, AU.fibre_point, fc_args, "(r, theta, delta)", "the fibre point: "
             "|(a, b)|^2 the positive root of y^2 + delta y - r^2, enclosed by a decided sign change")):
        bound = fn.ulp_bound.ulps * 2.0 ** -52
        inst = []
        with certify.working_precision(128):
            for arg in args:
                for k, (got, ref) in enumerate(zip(fn(*arg), ref_fn(*arg))):
                    inst.append(certify.CertifiedInstance(f"{names} = {arg!r}, output {k}", float(got), ref, bound))
        out.append(certify.certified_compare(
            f"certified: {fn.name} (float64) within its stated {fn.ulp_bound.ulps:g} ulps of each "
            f"output's value, {len(args)} points", inst, bound=bound,
            reason=f"{fn.ulp_bound.why}; the reference: Arb balls (128 bits) of the definition, "
                   f"{what}; the float64 output as an exact ball"))
    return out


# ====================================================================== W2b
def _sum_over_samples(fn, a, b, c, x, rho, s, alpha):
    """sum_j fn(a_i, b_i, c_i, x_j, rho_j, s_ij, alpha) for every neuron i."""
    A = lambda v: np.asarray(v)[:, None]  # noqa: E731
    vals = fn(A(a), A(b), A(c), x[None, :], rho[None, :], s.astype(float), alpha)
    return np.broadcast_to(vals, s.shape).sum(axis=1)


def _field(a, b, c, x, y):
    """The derived flow field (sum over samples of the per-sample term), alpha = m."""
    args = (D.a, D.b, D.c, D.x, D.rho, D.s_j, D.alpha)
    m = a.size
    rho = N.forward_dense(a, b, c, x, "m") - y
    s = (np.multiply.outer(a, x) - b[:, None]) > 0
    return [_sum_over_samples(lambdified("W2b", k, args, modules=NUMPY), a, b, c, x, rho, s, float(m))
            for k in ("field_a", "field_b", "field_c")]


def _fd_loss_grad(a, b, c, x, y, h):
    """Central finite differences of L (numerics' loss only), per parameter."""
    z = np.concatenate([a, b, c])
    m = a.size
    g = np.empty_like(z)
    for k in range(z.size):
        zp, zm = z.copy(), z.copy()
        zp[k] += h
        zm[k] -= h
        lp = N.loss_and_grad_dense(zp[:m], zp[m:2 * m], zp[2 * m:], x, y, "m")[0]
        lm = N.loss_and_grad_dense(zm[:m], zm[m:2 * m], zm[2 * m:], x, y, "m")[0]
        g[k] = (lp - lm) / (2 * h)
    return g


@lru_cache(maxsize=4)
def _w2b_flow(run: RunContext):
    """The reference gradient flow of the run (``ctx.shared()``: shared by the check and
    its control), drawn from ``run.rng("flow")``."""
    rng = run.rng("flow")
    m, s, T = run.size("flow_neurons"), run.size("flow_samples"), run.size("flow_time")
    a, b, c = draw_neurons(rng, m, 2.0)
    x, y = draw_data(rng, s)
    res = N.gradient_flow(a, b, c, x, y, "m", np.linspace(0, T, 41), rtol=RTOL, atol=1e-14)
    return (a, b, c, x, y), res


#: near miss of W2b: the invariant c^2 - w (a^2 + b^2) with this weight w (exact: 1)
W2B_WEIGHT = 1 + 1e-8


def _w2b(ctx: RunContext, weight: float) -> Outcome:
    """The derived field vs finite differences of L; c^2 - weight (a^2 + b^2) along the flow
    vs the derived d(delta)/dt; GD steps vs the derived change."""
    h = 1e-6

    def measure_field(inst) -> SubCheck:
        (a, b, c), (x, y) = inst
        fa, fb, fc = _field(a, b, c, x, y)
        u = np.abs(np.multiply.outer(a, x) - b[:, None])
        # only neurons whose pattern cannot change within +-h (L is smooth there)
        ok = np.min(u, axis=1) > 4 * h * (1 + np.max(np.abs(x)))
        fd = -_fd_loss_grad(a, b, c, x, y, h)
        loss = N.loss_and_grad_dense(a, b, c, x, y, "m")[0]
        derived_field = np.concatenate([fa, fb, fc])
        mask = np.concatenate([ok, ok, ok])
        scale = max(1.0, loss) + np.max(np.abs(fd))
        if not mask.any():
            return SubCheck("derived field vs finite differences of L", 0.0, 1e-7,
                            "no neuron away from every sample line: nothing to compare", unit="relative")
        return compare("derived field vs finite differences of L", derived_field[mask] / scale,
                       fd[mask] / scale, rtol=0.0, atol=1e-7,
                       reason="L is quadratic in each parameter inside a region (central "
                              "difference exact), roundoff ~ 2 u L / h = 2e-10 (h = 1e-6)", unit="relative")

    inst = st.tuples(relu1d_networks(2, 12, min_norm=0.05),
                     datasets_1d(3, 7, 0.05, x_range=(-1.0, 1.0)))
    s_field = for_all_instances(ctx, "derived field vs finite differences of L (per sample "
                                "term -grad ell summed over the active samples)", inst,
                                measure_field, count=ctx.size("instances"))

    (a, b, c, x, y), res = _w2b_flow(ctx.shared())
    A, B, C = res.state[:, 0], res.state[:, 1], res.state[:, 2]
    inv = C**2 - weight * (A**2 + B**2)
    # derived d(delta)/dt along the flow, integrated (trapezoid) over the output times
    args = (D.a, D.b, D.c, D.x, D.rho, D.s_j, D.alpha)
    ddt = lambdified("W2b", "ddelta_dt", args, modules=NUMPY)
    m = a.size
    rates = []
    for k in range(res.t.size):
        rho = N.forward_dense(A[k], B[k], C[k], x, "m") - y
        s_ = (np.multiply.outer(A[k], x) - B[k][:, None]) > 0
        rates.append(_sum_over_samples(ddt, A[k], B[k], C[k], x, rho, s_, float(m)))
    rates = np.array(rates)
    pred = np.concatenate([[np.zeros(m)], np.cumsum(0.5 * (rates[1:] + rates[:-1])
                                                    * np.diff(res.t)[:, None], axis=0)])
    inv_scale = float(np.max(np.abs(inv[0])))
    drift_sc = compare(f"delta_i(t) - delta_i(0) along the flow vs the integral of the derived "
                       f"d(delta)/dt (T = {res.t[-1]:g}, {res.n_steps} steps, {len(res.events)} "
                       "events), relative to max |delta(0)|", (inv - inv[0]) / inv_scale,
                       pred / inv_scale, rtol=0.0, atol=1e-9,
                       reason="rtol = 1e-12 per step, accumulated over <= 1e3 steps", unit="relative")
    # GD: per-step change of delta vs the derived eta^2 (g_c^2 - g_a^2 - g_b^2) + eta d(delta)/dt
    gd_fn = lambdified("W2b", "gd_change", (D.eta, D.g_a, D.g_b, D.g_c), modules=NUMPY)
    steps_n, pred_n, rows = [], [], []
    for eta in (0.2, 0.05):
        gd = N.gradient_descent(a, b, c, x, y, "m", eta=eta, steps=30)
        d = gd.c**2 - gd.a**2 - gd.b**2
        step = np.diff(d, axis=0)
        pr = np.array([gd_fn(eta, *N.loss_and_grad_dense(gd.a[k], gd.b[k], gd.c[k], x, y, "m")[1])
                       for k in range(gd.a.shape[0] - 1)])
        scale = np.max(np.abs(d))
        denom = eta**2 * np.max(np.abs(pr)) + 64 * U * scale
        steps_n.append((step / denom).ravel())
        pred_n.append((pr / denom).ravel())
        rows.append([eta, fmt(float(np.max(np.abs(step)))), fmt(float(np.max(np.abs(step))) / eta**2)])
    s_gd = compare("GD per-step change of delta vs the derived eta^2 (g_c^2 - g_a^2 - g_b^2) "
                   "(relative to the eta^2 term, plus 64 u |delta|)", np.concatenate(steps_n),
                   np.concatenate(pred_n), rtol=0.0, atol=1e-6, reason="cancellation in the "
                   "difference of O(1) invariants: u |delta| per step, absorbed in the denominator; "
                   "the rest is rounding of the gradient", unit="relative")
    subs = [s_field, drift_sc, s_gd] + _certified_w2b(ctx, weight)
    return combine("derived field (from L) vs finite differences of L; delta_i along the "
                   "integrated flow vs the derived d(delta)/dt; GD steps vs the derived change; "
                   "certified (Arb) at drawn neurons", subs,
                   details={"certified": certified_details(subs), "flow_drift": drift_sc.error,
                            "events": len(res.events), "sliding_events": res.n_slides},
                   tables=[Table("GD: max per-step change of delta", ["eta", "max |Delta delta| per step",
                                                                         "/ eta^2"], rows)],
                   artifacts={"t": res.t, "inv": inv})


def _certified_w2b(ctx: RunContext, weight: float) -> list[SubCheck]:
    """Proofs at drawn (a, b, c, x, rho, eta, alpha): the derived per-sample field equals
    -(rho / alpha) grad c (a x - b)_+ (= -grad of (f - y)^2 / 2 at residual rho); the derived
    d(delta)/dt (with the variant's weight: c^2 - weight (a^2 + b^2)) equals the contraction
    of that field; the derived GD change equals delta(z - eta g) - delta(z) at the field's
    gradient g."""
    from verify import certify
    res = ctx.derivation().results
    args = (D.a, D.b, D.c, D.x, D.rho, D.s_j, D.alpha)
    field = [certify.arb_function(res[k], args) for k in ("field_a", "field_b", "field_c")]
    ddt = certify.arb_function(res["ddelta_dt"], args)
    gd = certify.arb_function(res["gd_change"], (D.eta, D.g_a, D.g_b, D.g_c))
    fld, rate, step = [], [], []
    # 512 bits: delta(z - eta g) - delta(z) cancels terms up to ~2^200 times its size at the draws
    with certify.working_precision(512):
        w = certify.ball(weight)
        for a, b, c, x, rho, eta, alpha in certified_draws(ctx, "W2b", 7).tolist():
            A, B, C, X, R, E, M = (certify.ball(v) for v in (a, b, c, x, rho, eta, abs(alpha)))
            if (A * X - B).is_zero():
                continue   # on the sample line: no gradient
            s = certify.ball(1 if A * X - B > 0 else 0)
            lab = f"(a, b, c, x, rho, eta, alpha) = {(a, b, c, x, rho, eta, abs(alpha))!r}"
            grad = neuron_gradient(a, b, c, x)
            ref = [-(R / M) * g_ for g_ in grad]
            got = [fn(A, B, C, X, R, s, M) for fn in field]
            scale = sum((abs(v) for v in ref), certify.ball(0)) + abs(R / M) * abs(C) * (1 + abs(X))
            fld += [certify.CertifiedInstance(f"{lab}, component {k}", got[k], ref[k], scale=scale)
                    for k in range(3)]
            contraction = 2 * C * ref[2] - 2 * w * (A * ref[0] + B * ref[1])
            size = 2 * (abs(C * ref[2]) + abs(A * ref[0]) + abs(B * ref[1])) + abs(R / M) * abs(C)
            rate.append(certify.CertifiedInstance(lab, ddt(A, B, C, X, R, s, M), contraction, scale=size))
            g = [-v for v in ref]
            after = (C - E * g[2]) ** 2 - (A - E * g[0]) ** 2 - (B - E * g[1]) ** 2
            change = after - (C * C - A * A - B * B)
            size = E * E * (g[0] ** 2 + g[1] ** 2 + g[2] ** 2) + abs(E) * size
            step.append(certify.CertifiedInstance(lab, gd(E, *g), change, scale=size))
    why = ("Arb balls at 512 bits (floats enter exactly): the closed form from the derived "
           "expressions; the reference from the definition, the neuron's gradient by Arb power "
           "series; compared at the scale of the terms (the references can vanish)")
    return [certify.certified_compare(f"certified: derived per-sample field vs -(rho/alpha) grad c (ax-b)_+, "
                                      f"{len(rate)} draws", fld, reason=why),
            certify.certified_compare(f"certified: derived d(delta)/dt vs 2c c' - 2a a' - 2b b' of that "
                                      f"field, {len(rate)} draws", rate, reason=why),
            certify.certified_compare(f"certified: derived GD change vs delta(z - eta g) - delta(z), "
                                      f"{len(rate)} draws", step, reason=why)]


def _fig_w2b(ev: Evidence, outdir: Path):
    from verify.kit import new_figure, save_figure
    if "inv" not in ev.artifacts:
        return []
    t, inv = ev.artifacts["t"], ev.artifacts["inv"]
    fig, ax = new_figure(1, 1, width=4.6)
    drift = np.max(np.abs(inv - inv[0]), axis=1) / np.max(np.abs(inv[0]))
    ax.semilogy(t[1:], drift[1:] + 1e-18, "o-", ms=3, label="gradient flow (DOP853, rtol 1e-12)")
    ax.set_xlabel("t"), ax.set_ylabel(r"max$_i|\delta_i(t) - \delta_i(0)|$ / max$|\delta(0)|$")
    ax.legend(fontsize=7)
    name = "W2b_delta_drift.png"
    save_figure(fig, outdir / name)
    return [(name, "Relative drift of the invariants delta_i along the integrated flow (with "
                   "located knot/sample crossings and sliding): rounding level.")]


# ====================================================================== W2c
#: near miss of W2c: the angular entry of the inverse metric times this factor (exact: 1)
W2C_THTH_FACTOR = 1 + 3e-7


def _metric(thth_factor: float):
    """The derived inverse metric (G^-1_rr, G^-1_thth), the angular entry times
    ``thth_factor``, as ``numerics.relu1d.reduced_flow`` takes it."""
    args = (D.r, D.delta)
    g_rr = lambdified("W2c", "g_rr", args, modules=NUMPY)
    g_a = lambdified("W2c", "g_thth", args, modules=NUMPY)
    g_b = lambdified("W2c", "g_thth_rationalized", args, modules=NUMPY)

    def ginv(r, dl):
        with np.errstate(divide="ignore", invalid="ignore"):
            g_t = np.where(dl > 0, g_b(r, dl), g_a(r, dl))
        if thth_factor != 1:
            g_t = g_t * thth_factor
        return g_rr(r, dl) * np.ones_like(r), g_t
    return ginv


def _match_events(e1, e2) -> tuple[bool, float]:
    """Same events (kind, neuron, sample) with the same multiplicities?  And the largest
    time difference between corresponding occurrences."""
    def by_key(ev):
        d: dict = {}
        for t, *key in ev:
            d.setdefault(tuple(key), []).append(t)
        return d
    d1, d2 = by_key(e1), by_key(e2)
    if d1.keys() != d2.keys() or any(len(d1[k]) != len(d2[k]) for k in d1):
        return False, float("inf")
    dt = max((abs(u - v) for k in d1 for u, v in zip(d1[k], d2[k])), default=0.0)
    return True, float(dt)


def _w2c_regimes(ctx: RunContext) -> dict[str, Any]:
    """Kernel (delta -> -inf) and adaptive (delta -> +inf) limits of the full flow: angle
    changes at horizon T0/|delta| and the distance to the particle-plane reduced flow."""
    m2, s2 = ctx.size("regime_neurons"), ctx.size("regime_samples")
    rng2 = ctx.rng("w2c-regimes")
    xr, yr = draw_data(rng2, s2)
    rr0 = rng2.choice([-1.0, 1.0], m2) * rng2.uniform(0.3, 1.5, m2)
    tt0 = rng2.uniform(-np.pi, np.pi, m2)
    T0 = 2.0
    kern_rows, kern, adapt_rows, adapt = [], [], [], []
    plane = N.reduced_flow(rr0, tt0, 1.0, xr, yr, [0, T0], inverse_metric="plane")
    for dlt in (10.0, 100.0, 1000.0):
        aa, bb, cc = full_from_canonical(rr0, tt0, np.full(m2, -dlt))
        fl = N.gradient_flow(aa, bb, cc, xr, yr, "m", [0, T0 / dlt])
        _, thT, _ = canonical_from_full(*fl.state[-1])
        dth = float(np.max(np.abs(wrap_angle(thT - tt0))))
        kern.append(dth)
        kern_rows.append([-dlt, fmt(dth), fmt(dth * dlt**2)])
        aa, bb, cc = full_from_canonical(rr0, tt0, np.full(m2, dlt))
        fl = N.gradient_flow(aa, bb, cc, xr, yr, "m", [0, T0 / dlt])
        rT, thT, _ = canonical_from_full(*fl.state[-1])
        dev = float(max(np.max(np.abs(rT - plane.state[-1, 0])),
                        np.max(np.abs(rT * wrap_angle(thT - plane.state[-1, 1])))))
        adapt.append(dev)
        adapt_rows.append([dlt, fmt(dev), fmt(dev * dlt**2)])
    ds = np.log([10.0, 100.0, 1000.0])
    sk = float(np.polyfit(ds, np.log(kern), 1)[0])
    sa = float(np.polyfit(ds, np.log(adapt), 1)[0])
    return {"sk": sk, "sa": sa, "kern": kern, "adapt": adapt, "kern_rows": kern_rows,
            "adapt_rows": adapt_rows}


def _w2c(ctx: RunContext, thth_factor: float) -> Outcome:
    """pi(full flow) vs the reduced flow under the derived metric (angular entry times
    ``thth_factor``: 1 in the check); events; kernel/adaptive limits."""
    T = ctx.size("flow_time")
    te = np.linspace(0, T, 21)
    info: dict[str, Any] = {}

    cache: dict[bytes, Any] = {}

    def pair(inst):
        """Full flow, reduced flow (derived metric) on the same output times, up to 0.9 of
        the first collapse time: at |(a, b)| = 0 the map pi is singular (the reduced flow's
        angular rate G^-1_thth ~ delta / r^2 blows up for delta > 0)."""
        (a, b, c), (x, y) = inst
        key = b"".join(np.ascontiguousarray(v).tobytes() for v in (a, b, c, x, y))
        if key not in cache:
            full = N.gradient_flow(a, b, c, x, y, "m", te)
            t_c = min([e[0] for e in full.events if e[1] == "collapse"], default=np.inf)
            te_i = te[te <= 0.9 * t_c]
            r0, th0, dl = (np.atleast_1d(v) for v in canonical_from_full(a, b, c))
            red = N.reduced_flow(r0, th0, dl, x, y, te_i, inverse_metric=_metric(thth_factor))
            ev_full = [e for e in full.events if e[0] <= te_i[-1]]
            cache.clear()
            cache[key] = (full.state[:te_i.size], red, ev_full, t_c)
        return cache[key]

    def measure(inst) -> SubCheck:
        fstate, red, _, t_c = pair(inst)
        rf, tf, _ = canonical_from_full(fstate[:, 0], fstate[:, 1], fstate[:, 2])
        rs = float(np.max(np.abs(rf)))
        info.setdefault("collapse_times", []).append(t_c)
        # r relative to max |r|, theta absolute (the wrapped difference against 0)
        return compare("flows", np.concatenate([(rf / rs).ravel(),
                                                wrap_angle(tf - red.state[:, 1]).ravel()]),
                       np.concatenate([(red.state[:, 0] / rs).ravel(), np.zeros(tf.size)]),
                       rtol=0.0, atol=1e-8, reason="both flows DOP853 at rtol 1e-12 with "
                       "located events; error accumulation over ~1e3 steps and ~10 events "
                       "stays < 1e-9", unit="mixed (r relative, theta radians)")

    def measure_events(inst) -> SubCheck:
        _, red, ev_full, _ = pair(inst)
        # exits from sliding are where a one-sided normal velocity crosses 0, possibly
        # arbitrarily slowly: their times are ill-conditioned, so compare up to the first
        t_cut = min([e[0] for e in ev_full + red.events if e[1] == "unslide"], default=np.inf)
        e1 = [e for e in ev_full if e[0] < t_cut - 1e-6]
        e2 = [e for e in red.events if e[0] < t_cut - 1e-6]
        same, ev_dt = _match_events(e1, e2)
        return SubCheck("events", ev_dt, 1e-7, f"{len(e1)} events (crossings and slides up to "
                        "the first exit from sliding); an event time moves by (state error "
                        "~1e-11) / (normal speed |du/dt|, down to ~1e-3 at grazing crossings)",
                        passed=same and ev_dt <= 1e-7, unit="absolute")

    # c bounded away from 0 so that every particle has r != 0 (an angle to compare)
    inst = st.tuples(relu1d_networks(4, 12, "uniform", min_norm=0.05).map(
        lambda z: (z[0], z[1], 1.5 * np.where(np.abs(z[2]) < 0.05, 0.5, z[2]))),
        datasets_1d(3, 6, 0.1, x_range=(-1.0, 1.0)))
    s_flow = for_all_instances(ctx, f"max deviation of pi(z(t)) from the reduced flow with the "
                               f"derived metric (relative r, absolute theta), t in [0, {T:g}] "
                               "(or 0.9 x the first collapse |(a, b)| = 0)",
                               inst, measure, count=ctx.size("instances"))
    s_ev = for_all_instances(ctx, "switching events of both flows: same events, max time "
                             "difference (up to the first exit from sliding)", inst,
                             measure_events, count=ctx.size("instances"))
    reg = _w2c_regimes(ctx)
    subs = [s_flow, s_ev] + _regime_subchecks(reg) + _certified_w2c(ctx, thth_factor)
    return combine("pi(full flow of z) vs reduced flow of (r, theta) integrated with the derived "
                   "metric G(r, delta); kernel/adaptive limits; certified (Arb) at drawn neurons", subs,
                   details={"certified": certified_details(subs), "kernel_slope": reg["sk"], "adaptive_slope": reg["sa"],
                            "collapse_times": info.get("collapse_times", []),
                            "scope": "pi is singular at |(a, b)| = 0, which a neuron with delta > 0 "
                                     "can reach in finite time (then it stays there under ReLU'(0) "
                                     "= 0): the correspondence is checked up to 0.9 of the first "
                                     "such time"},
                   tables=_regime_tables(reg), artifacts={"kern": reg["kern"], "adapt": reg["adapt"]})


def _pi_gradients(a: float, b: float, c: float) -> tuple[list[Any], list[Any]]:
    """(grad r, grad theta) over (a, b, c) of the canonical map r = c |(a, b)|, theta =
    atan2(b, a) (the definition), each partial by an Arb power series in that parameter
    (theta as atan(b / a) plus a constant: a != 0 at the certified draws)."""
    from verify import certify

    def grads(fn) -> list[Any]:
        out = []
        for k in range(3):
            def along(t: Any, k: int = k) -> Any:
                z = [certify.ball(v) for v in (a, b, c)]
                z[k] = t
                return fn(*z) + 0 * t   # a series also where fn does not depend on z[k]
            out.append(AU.taylor_coefficients(along, (a, b, c)[k], 1)[1])
        return out
    return (grads(lambda A, B, C: C * (A * A + B * B).sqrt()),
            grads(lambda A, B, C: (B / A).atan()))


def _certified_w2c(ctx: RunContext, thth_factor: float) -> list[SubCheck]:
    """Proofs at drawn (a, b, c): the derived inverse metric (g_rr; g_thth times the
    variant's factor; its rationalized form where delta > 0) at (r, delta) of z equals
    D pi D pi^T of the definition (|grad r|^2, |grad theta|^2), the metric the pushforward
    of the gradient flow of L = L~ o pi carries."""
    from verify import certify
    res = ctx.derivation().results
    g = {k: certify.arb_function(res[k], (D.r, D.delta)) for k in ("g_rr", "g_thth", "g_thth_rationalized")}
    rr, tt, rat = [], [], []
    with certify.working_precision(128):
        fac = certify.ball(thth_factor)
        for a, b, c in certified_draws(ctx, "W2c", 3).tolist():
            A, B, C = (certify.ball(v) for v in (a, b, c))

            def at_z(key: str) -> Any:   # (r, delta) of z inside, so that precision can rise
                return certify.enclose_to(lambda: g[key](C * (A * A + B * B).sqrt(), C * C - A * A - B * B), 1e-32)
            gr, gt = _pi_gradients(a, b, c)
            lab = f"(a, b, c) = ({a!r}, {b!r}, {c!r})"
            rr.append(certify.CertifiedInstance(lab, at_z("g_rr"), sum((v * v for v in gr), certify.ball(0))))
            ref_t = sum((v * v for v in gt), certify.ball(0))
            tt.append(certify.CertifiedInstance(lab, at_z("g_thth") * fac, ref_t))
            if C * C - A * A - B * B > 0:
                rat.append(certify.CertifiedInstance(lab, at_z("g_thth_rationalized") * fac, ref_t))
    why = ("Arb balls at 128+ bits (floats enter exactly): the closed form from the derived "
           "expressions at (r, delta) of z; the reference D pi D pi^T from the definition of pi, "
           "its partial derivatives by Arb power series")
    out = [certify.certified_compare(f"certified: derived G^-1_rr vs |grad r|^2, {len(rr)} neurons", rr, reason=why),
           certify.certified_compare(f"certified: derived G^-1_thth vs |grad theta|^2, {len(tt)} neurons", tt, reason=why)]
    if rat:
        out.append(certify.certified_compare(f"certified: rationalized G^-1_thth (delta > 0) vs "
                                             f"|grad theta|^2, {len(rat)} neurons", rat, reason=why))
    return out


def _regime_subchecks(reg: dict[str, Any]) -> list[SubCheck]:
    """The kernel (delta -> -inf) and adaptive (delta -> +inf) limits of W2c as fitted slopes."""
    return [SubCheck("kernel regime: fitted slope of max |Delta theta| vs |delta| (expect -2)",
                     abs(reg["sk"] + 2.0), 0.15, "G^-1_thth / G^-1_rr = 1/delta^2 + O(delta^-4); "
                     "at fixed radial progress (T0/|delta|) angles move O(delta^-2)",
                     unit="|slope - predicted|"),
            SubCheck("adaptive regime: fitted slope of the distance to the particle-plane flow vs "
                     "delta (expect -2)", abs(reg["sa"] + 2.0), 0.15, "derived: G^-1 = delta "
                     "diag(1, 1/r^2) + diag(2 r^2, 1) / delta + ...: relative field error "
                     "O(delta^-2)", unit="|slope - predicted|")]


def _regime_tables(reg: dict[str, Any]) -> list[Table]:
    return [Table("Kernel regime (delta -> -inf), horizon T0/|delta|, T0 = 2",
                  ["delta", "max |theta(T) - theta(0)|", "x delta^2"], reg["kern_rows"]),
            Table("Adaptive regime (delta -> +inf): full flow at T0/delta vs particle-plane "
                  "reduced flow at T0", ["delta", "max deviation", "x delta^2"], reg["adapt_rows"])]


def _fig_w2c(ev: Evidence, outdir: Path):
    from verify.kit import new_figure, save_figure
    if "kern" not in ev.artifacts:
        return []
    fig, ax = new_figure(1, 1, width=4.6)
    dl = np.array([10.0, 100.0, 1000.0])
    ax.loglog(dl, ev.artifacts["kern"], "o-", label=r"kernel: max $|\Delta\theta|$ ($\delta\to-\infty$)")
    ax.loglog(dl, ev.artifacts["adapt"], "s-", label="adaptive: distance to reduced flow")
    ax.set_xlabel(r"$|\delta|$"), ax.legend(fontsize=7)
    name = "W2c_regimes.png"
    save_figure(fig, outdir / name)
    return [(name, "Kernel regime: knots frozen as delta^-2; adaptive regime: the full flow "
                   "approaches the particle-plane reduced flow as delta^-2.")]


# ====================================================================== registry
CLAIMS = [
    williams_claim(
        "W2a", "Canonical parametrization: pi(z) reproduces f_z; fibres are rescaling orbits",
        r"$\pi(a,b,c) = (c|(a,b)|, \mathrm{atan2}(b,a))$ satisfies $\tilde f_{\pi(z)} = f_z$ "
        r"($\alpha(m)=m$), and $\pi(z)=\pi(z')$ iff $z' = (ka, kb, c/k)$, $k>0$, per neuron.",
        _w2a, 0.0, W2A_ANGLE_OFFSET, "the canonical angle off by 2e-13 rad", "f_z vs f~_pi(z)",
        sizes={"quick": {"instances": 8, "certified": 24}, "full": {"instances": 60, "certified": 200}},
        notes=(SIGN_NOTE,), kind="convention"),
    williams_claim(
        "W2b", "delta_i = c_i^2 - a_i^2 - b_i^2 is conserved by the gradient flow",
        r"$\frac{d}{dt}\delta_i = 0$ along $\dot z = -\nabla L(z)$; one GD step changes $\delta_i$ by "
        r"$\eta^2(g_c^2 - g_a^2 - g_b^2)$.", _w2b, 1.0, W2B_WEIGHT,
        "the invariant with weights off by 1e-8: c^2 - (1 + 1e-8)(a^2 + b^2)",
        "delta_i(t) - delta_i(0) along the flow", figures=_fig_w2b,
        sizes={"quick": {"instances": 4, "flow_neurons": 20, "flow_samples": 6, "flow_time": 200.0,
                         "certified": 24},
               "full": {"instances": 30, "flow_neurons": 60, "flow_samples": 10,
                        "flow_time": 2000.0, "certified": 200}}),
    williams_claim(
        "W2c", "Full flow = reduced flow under the metric G(r, delta); kernel and adaptive regimes",
        r"$\pi(z(t))$ solves $\dot w_i = -G(r_i,\delta_i)^{-1}\nabla_{w_i}\tilde L$ with "
        r"$G^{-1} = \mathrm{diag}\big(\sqrt{\delta^2+4r^2},\ 2/(\sqrt{\delta^2+4r^2}-\delta)\big)$; "
        r"$\delta\to-\infty$ freezes knots, $\delta\to+\infty$ gives the reduced flow.",
        _w2c, 1.0, W2C_THTH_FACTOR, "angular metric entry off by 3e-7 relative",
        "max deviation of pi(z(t))", figures=_fig_w2c, kind="reconstructed",
        sizes={"quick": {"instances": 2, "flow_time": 40.0, "regime_neurons": 8,
                         "regime_samples": 4, "certified": 24},
               "full": {"instances": 10, "flow_time": 200.0, "regime_neurons": 20,
                        "regime_samples": 6, "certified": 200}}),
]
