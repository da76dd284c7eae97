"""Exact gradient flows of the univariate ReLU network through its kinks (Williams et al.
2019, claims W2b, W2c, W2f, W2g, W2h): the field of ``numerics.relu1d``'s
:func:`~numerics.relu1d.gradient_flow` (z = (a, b, c)) and
:func:`~numerics.relu1d.reduced_flow` (canonical w = (r, theta)) is smooth between the
switching lines of the (neuron, sample) pairs and jumps across them; this module
integrates it segment by segment, locates the switching events and slides along
attracting lines in Filippov's sense.  The public entry points, their validation and
their documentation live in ``numerics.relu1d``; everything here is private.

Discontinuities
---------------
The gradient field is discontinuous when a knot crosses a sample, i.e. when the
switching function u_ij = <x~_j, v_i> changes sign (v_i = (a_i, b_i) for the full flow,
v_i = d(theta_i) for the reduced flow).  The integrator freezes the activation pattern
P_ij = [u_ij > 0] on each segment, so the right-hand side is a polynomial there and
DOP853 keeps its order and error control.  After every accepted step the signs of u at
the step end are compared with P; the first sign change is located with ``brentq`` on
the solver's dense output, the integration is restarted from that time with the pattern
toggled (an "event").  The jump of the field is purely normal to the switching line
(along x~_j, claim W2f), so two cases occur:

- crossing: the normal velocity du_ij/dt has the same sign on both sides -> the pattern
  flips and the trajectory continues;
- sliding (Filippov): the normal velocities on the two sides point towards the line
  (the attractor of claim W2h) -> the pair (i, j) becomes "sliding": the normal
  component of neuron i's velocity is removed (projection of (da, db) on the line
  direction (1, x_j); theta_i frozen in the reduced flow), which is the Filippov
  convex combination because the tangential components agree on both sides.  Sliding
  ends (another located event) when one of the two one-sided normal velocities changes
  sign.

The projection is orthogonal to (a_i, b_i) on the line, so delta_i = c_i^2 - a_i^2 - b_i^2
stays an exact invariant also while sliding.

Two further situations are resolved explicitly, so that the integrator never needs its
step budget as a way out (both occurred in practice):

- return crossings: after an event the trajectory starts ON a line; if it leaves into
  one side and comes back within one solver step, the crossing is located where it comes
  back (probing the dense output), not at the restart time (that produced an endless
  sequence of zero-progress restarts).  Should a pair still produce events at one
  instant without progress, the other side is tried, then sliding, then a RuntimeError
  names the pair and the time;
- collapse: a neuron of the full flow can reach (a_i, b_i) = (0, 0) in finite time (for
  delta_i > 0 the radius |(a, b)| shrinks at a rate independent of itself), where all
  its sample lines meet.  With ReLU'(0) = 0 its whole gradient is zero there, so it stays
  (event "collapse"; a stationary point of the convention's field, delta_i unchanged).

Budgets: ``max_steps`` accepted solver steps and ``max_events`` events; exhausting one
raises RuntimeError naming it.  Chattering (one (neuron, sample) pair switching more than
``MAX_CROSSINGS`` times, e.g. between nearly coincident sample lines) is stopped by the
shared :class:`numerics.dynamics.ChatteringGuard` (a ``ChatteringError``, both a
``DivergenceError`` and a ``RuntimeError``).  A non-finite field at t = 0 (e.g. r = 0
under the "plane" metric) is a ValueError, a non-finite state or step size later a
``DivergenceError`` (a FloatingPointError): DOP853 never spins on NaN.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.integrate import DOP853
from scipy.optimize import brentq

from numerics.dynamics import ChatteringGuard, FlowResult
from numerics.validation import DivergenceError

__all__: list[str] = []

_N_PROBES = 8     # switching values checked at 8 points of every solver step

InverseMetric = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


# --------------------------------------------------------------------------- the engine
class _Problem:
    """A piecewise-smooth gradient flow: state y, switching values u (m, s)."""
    m: int
    s: int

    def switch(self, y: np.ndarray) -> np.ndarray:  # u_ij
        raise NotImplementedError

    def rhs(self, y: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(dy/dt with pattern P, no projection; du/dt (m, s))."""
        raise NotImplementedError

    def jump(self, y: np.ndarray, P: np.ndarray) -> np.ndarray:
        """Change of du_ij/dt when pair (i, j) is switched from inactive to active."""
        raise NotImplementedError

    def switch_scale(self, y: np.ndarray) -> np.ndarray:
        """Magnitude of the terms of u_ij (for the rounding tolerance of a sign test)."""
        raise NotImplementedError

    def project(self, y: np.ndarray, dy: np.ndarray, S: np.ndarray) -> np.ndarray:
        """Remove the normal component of the sliding neurons' velocity."""
        raise NotImplementedError

    def radius(self, y: np.ndarray) -> np.ndarray | None:
        """|(a_i, b_i)| (full flow: all switching lines of neuron i meet at 0), else None."""
        return None

    def freeze(self, dy: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return dy

    def to_origin(self, y: np.ndarray, i: int) -> np.ndarray:
        return y


def _first_crossing(u_of_t: Callable[[float], float], side: bool, t_old: float, t_new: float,
                    n_probe: int = 16) -> float | None:
    """First time in (t_old, t_new] at which the switching value leaves the side ``side``
    (True: u > 0) after having been on it, for a trajectory that STARTS ON THE LINE
    (u(t_old) == 0, e.g. right after an event).  ``None`` if the probes never see the
    trajectory on ``side``: it did not leave the line on that side at all."""
    ts = t_old + (t_new - t_old) * np.arange(1, n_probe + 1) / n_probe
    on = [(u_of_t(tt) > 0) == side and u_of_t(tt) != 0 for tt in ts]
    if not on[0]:
        return None
    for k in range(1, n_probe):
        if not on[k]:
            return brentq(u_of_t, ts[k - 1], ts[k], xtol=1e-15 * max(1.0, abs(t_new)), rtol=1e-15)
    return t_new


# long: one event loop whose locals (the active set, the sliding state, the step) every branch updates
def _integrate(prob: _Problem, y0: np.ndarray, t_eval: np.ndarray, rtol: float, atol: float,
               max_events: int, max_steps: int, keep_dense: bool = False,
               names: tuple[str, ...] = ()) -> FlowResult:
    """The flow of ``prob`` from ``y0`` (the parameters ``names`` stacked), reported at
    ``t_eval``; events, sliding and collapse as in the module docstring."""
    t_eval = np.asarray(t_eval, dtype=np.float64)
    t0, t1 = 0.0, float(t_eval[-1])
    y = y0.astype(np.float64).copy()
    u0 = prob.switch(y)
    P = u0 > 0  # ReLU'(0) = 0: on the line counts as inactive
    S = np.zeros_like(P)
    dy0, _ = prob.rhs(y, P)
    if not np.all(np.isfinite(dy0)):
        raise ValueError("the velocity field is not finite at t = 0 (NaN or inf): check the "
                         "initial state and the metric (e.g. r = 0 with the 'plane' metric, "
                         "a non-finite time_scale)")
    out = np.empty((t_eval.size, y.size))
    k_out = 0
    while k_out < t_eval.size and t_eval[k_out] <= t0:
        out[k_out] = y
        k_out += 1
    events: list[tuple[float, str, int, int]] = []
    segments: list[tuple] = []
    n_steps = 0
    t = t0
    # zero-progress guard: events of one pair at one instant (a trajectory that does not
    # leave the line on the side chosen): 1st normal rule, 2nd the other side, 3rd sliding
    attempts: dict[tuple[float, int, int], int] = {}
    # switching events per (neuron, sample): a pair past the guard's limit chatters
    chatter = ChatteringGuard(P.shape[0], P.shape[1], kink="u_ij = <x~_j, v_i> = 0", hint=(
        f"horizon {t1:g}; the trajectory runs along a sample line it keeps leaving and "
        "re-entering, e.g. nearly coincident sample lines (merge samples x_j closer than "
        "the solver tolerance) or a degenerate near-zero neuron"))
    nfev = 0

    # neurons whose first-layer weights reached (a, b) = (0, 0) (full flow only): there
    # every sample is on the neuron's line, so with ReLU'(0) = 0 its whole gradient is 0
    # and it stays (a stationary point of the convention's field; delta_i is unchanged)
    Z = np.zeros(P.shape[0], dtype=bool)
    radius0 = prob.radius(y)
    ref_radius = float(np.max(radius0)) if radius0 is not None else 0.0

    def fun(_t, yy, P=None, S=None, Z=None):
        dy, _ = prob.rhs(yy, P)
        if Z.any():
            dy = prob.freeze(dy, Z)
        return prob.project(yy, dy, S) if S.any() else dy

    while t < t1 and k_out < t_eval.size:
        Pc, Sc, Zc = P.copy(), S.copy(), Z.copy()
        solver = DOP853(lambda tt, yy: fun(tt, yy, Pc, Sc, Zc), t, y, t1, rtol=rtol, atol=atol)
        restart = False
        while solver.status == "running" and not restart:
            t_old = solver.t
            y_old = solver.y.copy()
            msg = solver.step()
            if solver.status == "failed":
                raise RuntimeError(f"ODE solver failed at t={t_old:.6g}: {msg}")
            n_steps += 1
            if n_steps > max_steps:
                raise RuntimeError(f"step budget exhausted: more than max_steps={max_steps} solver "
                                   f"steps before t={t1:g} (reached t={solver.t:.6g}, "
                                   f"{len(events)} events); raise max_steps or shorten the horizon")
            if not (np.all(np.isfinite(solver.y)) and np.isfinite(solver.step_size or 0.0)):
                raise DivergenceError(f"gradient flow diverged at t={solver.t:.6g} (rtol={rtol:g}): "
                                      "non-finite state or step size")
            t_new, y_new = solver.t, solver.y
            dense = solver.dense_output()
            cand: list[tuple[float, str, int, int, int]] = []
            # crossings of non-sliding pairs
            # switching values at N_PROBES points of the step (its end included): a knot
            # that crosses a sample and comes back within one long step is not missed
            t_pr = t_old + (t_new - t_old) * np.arange(1, _N_PROBES + 1) / _N_PROBES
            U = np.stack([prob.switch(dense(tp)) for tp in t_pr[:-1]] + [prob.switch(y_new)])
            # a pair within rounding of its line keeps its side (no spurious re-detection of
            # a neuron resting on the line, e.g. a dead neuron whose inactive side is static)
            thr = 1e-13 * prob.switch_scale(y_new)
            wrong_side = ((U > 0) != Pc[None]) & ~Sc[None] & (np.abs(U) > thr[None])
            mism = wrong_side.any(axis=0)
            if mism.any():
                u_old = prob.switch(y_old)
                first = np.argmax(wrong_side, axis=0)  # first probe on the wrong side
                for i, j in zip(*np.nonzero(mism)):
                    k = int(first[i, j])
                    ta = t_old if k == 0 else t_pr[k - 1]
                    ua = u_old[i, j] if k == 0 else U[k - 1, i, j]
                    tb, ub = t_pr[k], U[k, i, j]
                    if k == 0 and (ua > 0) == (ub > 0) and ua != 0:
                        # left the line on the "wrong" side right after a restart: accept
                        Pc[i, j] = P[i, j] = ub > 0
                        continue
                    u_ij = (lambda tt, i=i, j=j: prob.switch(dense(tt))[i, j])
                    if ua == 0 and k == 0:
                        # starting on the line (after an event): the crossing is where the
                        # trajectory comes back, not at t_old
                        tc = _first_crossing(u_ij, bool(Pc[i, j]), t_old, tb)
                        tc = t_old if tc is None else tc
                    elif (ua > 0) == (ub > 0):
                        tc = ta  # the previous probe is within rounding of the line
                    else:
                        tc = brentq(u_ij, ta, tb, xtol=1e-15 * max(1.0, abs(tb)), rtol=1e-15)
                    cand.append((tc, "cross", int(i), int(j), 0))
            # exits from sliding
            if Sc.any():
                def normal_rates(yy):
                    _, du = prob.rhs(yy, Pc & ~Sc)
                    return du, du + prob.jump(yy, Pc & ~Sc)
                n_in, n_act = normal_rates(y_new)
                leave = Sc & ((n_in < 0) | (n_act > 0))
                for i, j in zip(*np.nonzero(leave)):
                    side = 0 if n_in[i, j] < 0 else 1
                    def g(tt, i=i, j=j, side=side):
                        r = normal_rates(dense(tt))
                        return r[side][i, j]
                    ga, gb = g(t_old), g(t_new)
                    tc = t_old if np.sign(ga) == np.sign(gb) else brentq(
                        g, t_old, t_new, xtol=1e-15 * max(1.0, abs(t_new)), rtol=1e-15)
                    cand.append((tc, "unslide", int(i), int(j), side))
            t_stop = min(cand)[0] if cand else t_new
            if keep_dense and t_stop > t_old:
                segments.append((t_old, t_stop, dense, Pc.copy(), Sc.copy()))
            while k_out < t_eval.size and t_eval[k_out] <= t_stop:
                out[k_out] = dense(t_eval[k_out]) if t_eval[k_out] < t_new else y_new
                k_out += 1
            if cand:
                tc, kind, i, j, side = min(cand)
                y = dense(tc) if tc < t_new else y_new.copy()
                t = tc
                restart = True
                key = (t, i, j)
                attempts[key] = attempts.get(key, 0) + 1
                rad = prob.radius(y)
                if rad is not None and rad[i] <= 1e-10 * ref_radius:
                    # the neuron reached the origin of its (a, b) plane: all its lines meet
                    Z[i] = True
                    P[i, :] = False
                    S[i, :] = False
                    y = prob.to_origin(y, i)
                    events.append((t, "collapse", i, -1))
                    continue
                if attempts[key] > 3:
                    raise RuntimeError(f"cannot resolve the switching of neuron {i} at sample {j} "
                                       f"at t={t:.12g}: neither side nor sliding carries the "
                                       "trajectory (degenerate grazing contact)")
                if kind == "unslide":
                    S[i, j] = False
                    P[i, j] = bool(side)  # the side whose normal velocity changed sign
                    events.append((t, "unslide", i, j))
                elif attempts[key] == 2 and tc == t_old:
                    P[i, j] = not P[i, j]  # the side chosen did not carry it: the other one
                    events.append((t, "cross", i, j))
                elif attempts[key] == 3 and tc == t_old:
                    S[i, j] = True  # neither side carries it: Filippov sliding
                    P[i, j] = False
                    events.append((t, "slide", i, j))
                else:
                    Pn = P & ~S
                    Pn[i, j] = False
                    _, du = prob.rhs(y, Pn)
                    n_in = du[i, j]
                    n_act = n_in + prob.jump(y, Pn)[i, j]
                    if n_in > 0 > n_act:  # both sides point at the line: Filippov sliding
                        S[i, j] = True
                        P[i, j] = False
                        events.append((t, "slide", i, j))
                    elif (not P[i, j] and n_act > 0) or (P[i, j] and n_in <= 0):
                        P[i, j] = not P[i, j]  # the new side accepts the trajectory
                        events.append((t, "cross", i, j))
                    # otherwise the side being left keeps the neuron on the line (its normal
                    # rate is 0 there, e.g. a neuron inactive on all samples): no switch
                if len(events) > max_events:
                    raise RuntimeError(f"event budget exhausted: more than max_events={max_events} "
                                       f"switching events before t={t1:g} (at t={t:.6g})")
                chatter.switch(i, j, t)
            else:
                t, y = t_new, y_new.copy()
        nfev += solver.nfev
    while k_out < t_eval.size:  # t reached t1
        out[k_out] = y
        k_out += 1
    return FlowResult(t=t_eval, state=out.reshape(t_eval.size, len(names), -1), events=events,
                      sliding=S, n_steps=n_steps, segments=segments, names=names, nfev=nfev,
                      rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- the two fields
class _FullProblem(_Problem):
    """dz/dt = -grad L(z), z = (a, b, c) stacked; switching values u_ij = a_i x_j - b_i."""

    def __init__(self, x: np.ndarray, y: np.ndarray, alpha: float, m: int):
        self.x, self.yd, self.al, self.m, self.s = x, y, alpha, m, x.size
        self.xt2 = 1.0 + x * x  # |x~_j|^2

    def split(self, y):
        m = self.m
        return y[:m], y[m:2 * m], y[2 * m:]

    def switch(self, y):
        a, b, _ = self.split(y)
        return np.multiply.outer(a, self.x) - b[:, None]

    def rhs(self, y, P):
        a, b, c = self.split(y)
        x, al = self.x, self.al
        u = np.multiply.outer(a, x) - b[:, None]
        relu = np.where(P, u, 0.0)
        rho = c @ relu / al - self.yd
        self._rho = rho
        da = -c * (P @ (rho * x)) / al
        db = c * (P @ rho) / al
        dc = -(relu @ rho) / al
        du = np.multiply.outer(da, x) - db[:, None]
        return np.concatenate([da, db, dc]), du

    def switch_scale(self, y):
        a, b, _ = self.split(y)
        return np.multiply.outer(np.abs(a), np.abs(self.x)) + np.abs(b)[:, None]

    def jump(self, y, P):
        _, _, c = self.split(y)
        self.rhs(y, P)
        # activating (i, j) adds -(c_i/alpha) rho_j x~_j to (da_i, db_i): d(du_ij/dt) below
        return -np.multiply.outer(c, self._rho * self.xt2) / self.al

    def radius(self, y):
        a, b, _ = self.split(y)
        return np.hypot(a, b)

    def freeze(self, dy, Z):
        dy = dy.copy()
        idx = np.flatnonzero(Z)
        dy[idx] = dy[self.m + idx] = dy[2 * self.m + idx] = 0.0
        return dy

    def to_origin(self, y, i):
        y = y.copy()
        y[i] = y[self.m + i] = 0.0
        return y

    def project(self, y, dy, S):
        m = self.m
        dy = dy.copy()
        i, j = np.nonzero(S)
        xj = self.x[j]
        da, db = dy[i], dy[m + i]
        coef = (da + xj * db) / (1.0 + xj * xj)  # projection on (1, x_j)
        dy[i], dy[m + i] = coef, coef * xj
        return dy


class _ReducedProblem(_Problem):
    """dw_i/dt = -time_scale G_i^{-1} grad_{w_i} L~, w = (r, theta) stacked; switching
    values u_ij = <x~_j, d(theta_i)>; sliding freezes theta_i."""

    def __init__(self, x, y, delta, ginv: InverseMetric, time_scale: float, m: int):
        self.x, self.yd, self.delta, self.ginv, self.ts, self.m, self.s = x, y, delta, ginv, time_scale, m, x.size

    def switch(self, y):
        m = self.m
        th = y[m:]
        return np.multiply.outer(np.cos(th), self.x) - np.sin(th)[:, None]

    def rhs(self, y, P):
        m, x = self.m, self.x
        r, th = y[:m], y[m:]
        co, si = np.cos(th), np.sin(th)
        u = np.multiply.outer(co, x) - si[:, None]
        relu = np.where(P, u, 0.0)
        rho = r @ relu / m - self.yd
        w = -np.multiply.outer(si, x) - co[:, None]  # du/dtheta
        g_rr, g_tt = self.ginv(r, self.delta)
        g_rr = np.broadcast_to(np.asarray(g_rr, dtype=np.float64), r.shape)
        g_tt = np.broadcast_to(np.asarray(g_tt, dtype=np.float64), r.shape)
        with np.errstate(over="ignore", invalid="ignore"):  # a non-finite field is named
            dr = -self.ts * g_rr * (relu @ rho) / m         # by the integrator
            dth = -self.ts * g_tt * r * ((P * w) @ rho) / m
        self._rho, self._w, self._gtt = rho, w, g_tt
        return np.concatenate([dr, dth]), w * dth[:, None]

    def switch_scale(self, y):
        th = y[self.m:]
        return np.multiply.outer(np.abs(np.cos(th)), np.abs(self.x)) + np.abs(np.sin(th))[:, None]

    def jump(self, y, P):
        m = self.m
        r = y[:m]
        self.rhs(y, P)
        return -self.ts * (self._gtt * r / m)[:, None] * self._rho[None, :] * self._w ** 2

    def project(self, y, dy, S):
        dy = dy.copy()
        dy[self.m + np.nonzero(S.any(axis=1))[0]] = 0.0
        return dy
