"""Shallow univariate ReLU networks and their training dynamics (Williams et al. 2019,
claims W2a..W2h; conventions docs/conventions.md, section 1).

Network (W.1)::

    f_z(x) = (1/alpha) * sum_i c_i (a_i x - b_i)_+ ,   z = (a, b, c) in R^{3m}
    L(z)   = 1/2 sum_j (f_z(x_j) - y_j)^2 ,             rho_j = f_z(x_j) - y_j

``alpha`` is a positive number or one of the strings ``"1"``, ``"sqrt"`` (sqrt(m)),
``"m"`` (m); :func:`normalize_alpha` turns it into a float.

Convention at a kink: ReLU'(0) = 0, i.e. a sample exactly on a knot (a_i x_j - b_i == 0)
is INACTIVE for the gradient (its value contribution is 0 either way).  The sorted
O((m+s) log(m+s)) engine ``numerics.fast1d`` follows the same convention.

Public API
----------
- :func:`forward`, :func:`loss_and_grad` dispatch to ``numerics.fast1d`` when it imports
  (``forward_sorted`` / ``loss_and_grad_sorted``) and fall back to the dense O(m s)
  reference :func:`forward_dense` / :func:`loss_and_grad_dense`.
- :func:`gradient_descent`: plain GD z <- z - eta grad L.
- :func:`gradient_flow`: dz/dt = -grad L(z) with an error-controlled DOP853 integrator and
  exact treatment of the discontinuities (see "Discontinuities" below).
- :func:`canonical_loss_and_grad`, :func:`reduced_flow`: the canonical parametrization
  f~_w(x) = (1/m) sum_i r_i <x~, d(theta_i)>_+ (alpha = m), x~ = (x, -1), and its
  gradient flow dw_i/dt = -G_i^{-1} grad_{w_i} L~ under a diagonal inverse metric
  G_i^{-1} = diag(g_rr, g_thth) supplied by the caller (the metric of claim W2c is derived
  symbolically in ``derivations.relu1d``; this module does not type it in).

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
raises RuntimeError naming it, and so do more than ``MAX_PAIR_EVENTS`` events of one
(neuron, sample) pair (chattering, e.g. between nearly coincident sample lines).  A non-finite field at t = 0 (e.g. r = 0 under the
"plane" metric) is a ValueError, a non-finite state or step size later a
FloatingPointError: DOP853 never spins on NaN.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy.integrate import DOP853
from scipy.optimize import brentq

from numerics.fast1d import preactivation
from numerics.validation import (MAX_STEPS, ArgumentTypeError, as_float_array, as_float_scalar,
                                 ldexp_clipped, pow2_exponent, require_positive_int,
                                 require_same_shape, require_size)

__all__ = [
    "normalize_alpha", "forward", "loss_and_grad", "forward_dense", "loss_and_grad_dense",
    "knots", "gradient_descent", "GDResult", "FlowResult", "gradient_flow",
    "canonical_forward", "canonical_loss_and_grad", "reduced_flow",
]

_CHUNK = 1 << 20  # max entries of one m x n block in forward_dense
_N_PROBES = 8     # switching values checked at 8 points of every solver step
_STEP_OVERHEAD = 2000  # Python/NumPy overhead of one GD step, in elementary updates


# --------------------------------------------------------------------------- basics
def normalize_alpha(alpha: float | str, m: int) -> float:
    """alpha(m) as a float: a positive number, or ``"1"`` (1), ``"sqrt"`` (sqrt(m)),
    ``"m"`` (m) (docs/conventions.md, section 1); ``m >= 1`` is the width."""
    m = require_positive_int(m, "m (number of neurons)", maximum=2 ** 62)
    if isinstance(alpha, str):
        table = {"1": 1.0, "sqrt": float(np.sqrt(m)), "m": float(m)}
        if alpha not in table:
            raise ValueError(f"alpha must be a positive number or one of '1', 'sqrt', 'm'; got {alpha!r}")
        return table[alpha]
    if isinstance(alpha, (bool, np.bool_)):
        raise ValueError("alpha must be a positive number or one of '1', 'sqrt', 'm'; got a boolean")
    if not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise ValueError(f"alpha must be a positive number or one of '1', 'sqrt', 'm'; got "
                         f"{type(alpha).__name__} {alpha!r:.40}")
    try:
        val = float(alpha)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"alpha must be a positive finite number; got {alpha!r:.40}") from None
    if not np.isfinite(val) or val <= 0:
        raise ValueError(f"alpha must be a positive finite number; got {alpha!r:.40}")
    return val


def _params(a: Any, b: Any, c: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = as_float_array(a, "a (first-layer slopes)", ndim=1, allow_empty=False)
    b = as_float_array(b, "b (first-layer offsets; knots e = b/a)", ndim=1)
    c = as_float_array(c, "c (output weights)", ndim=1)
    require_same_shape(a=a, b=b, c=c)
    return a, b, c


_NO_Y = object()


def _data(x: Any, y: Any = _NO_Y) -> tuple[np.ndarray, np.ndarray | None]:
    x = as_float_array(x, "x (inputs)", ndim=1)
    if y is _NO_Y:
        return x, None
    y = as_float_array(y, "y (targets)", ndim=1)
    require_same_shape(x=x, y=y)
    return x, y


def knots(a: Any, b: Any) -> np.ndarray:
    """Knots e_i = b_i / a_i.  A neuron with a_i = 0 has no knot (ValueError: select the
    neurons with ``a != 0`` first); a knot beyond float64 raises too."""
    a = as_float_array(a, "a", ndim=1)
    b = as_float_array(b, "b", ndim=1)
    require_same_shape(a=a, b=b)
    if np.any(a == 0):
        raise ValueError(f"a must be nonzero: a neuron with a_i = 0 has no knot (indices "
                         f"{np.flatnonzero(a == 0)[:5].tolist()}); pass a[a != 0], b[a != 0]")
    with np.errstate(over="ignore"):
        e = b / a
    if not np.all(np.isfinite(e)):
        raise ValueError("a knot b_i / a_i overflows float64 (|a_i| tiny relative to |b_i|); "
                         f"indices {np.flatnonzero(~np.isfinite(e))[:5].tolist()}")
    return e


# --------------------------------------------------------------------------- dense reference
# The dense path works on operands rescaled EXACTLY by powers of two (numerics.validation):
#   x = 2^ex x^,  a x - b = 2^eu (a^ x^ - b^),  c = 2^ec c^,  alpha = 2^eal alpha^,
# with |a^ x^|, |b^| < 1, |c^| < 1, alpha^ in [1/2, 1); every intermediate is then bounded
# by a multiple of m or s, and the results are scaled back by one ldexp.  Powers of two
# commute with every rounding (no subnormals involved), so in the normal range the values
# are those of the unscaled sums bit for bit; outside it (|a|, |x| beyond 2^500, products
# or partial sums beyond float64) a representable result is still returned accurately and
# an unrepresentable one raises ValueError.
@dataclass
class _Scaled:
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    x: np.ndarray
    alpha: float
    ex: int
    eu: int
    ec: int
    eal: int

    @property
    def f_exp(self) -> int:
        """F with f = 2^F * (c^ . relu(a^ x^ - b^)) / alpha^."""
        return self.ec + self.eu - self.eal


def _scaled(a: np.ndarray, b: np.ndarray, c: np.ndarray, x: np.ndarray, alpha: float) -> _Scaled:
    ea, eb, ex = pow2_exponent(a), pow2_exponent(b), pow2_exponent(x)
    has_ax = bool(np.any(a != 0) and np.any(x != 0))
    parts = ([ea + ex] if has_ax else []) + ([eb] if np.any(b != 0) else [])
    eu = max(parts) if parts else 0
    if not np.any(x != 0):
        ex = eu - ea  # a x = 0 whatever the scale of a: keep a^ = a 2^-ea bounded
    ec = pow2_exponent(c)
    eal = int(np.frexp(alpha)[1])
    return _Scaled(ldexp_clipped(a, ex - eu), ldexp_clipped(b, -eu), ldexp_clipped(c, -ec),
                   ldexp_clipped(x, -ex), float(np.ldexp(alpha, -eal)), ex, eu, ec, eal)


def _chunks(m: int, s: int):
    step = max(1, _CHUNK // max(m, 1))
    return range(0, s, step), step


def _relu_scaled(z: _Scaled, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(activity, relu) of the scaled pre-activations for samples lo..hi-1, shape (m, k);
    the sign is exact (compensated product, kink convention ReLU'(0) = 0)."""
    u = preactivation(z.a, z.b, z.x[lo:hi])
    act = u > 0
    return act, np.where(act, u, 0.0)


def _forward_scaled(z: _Scaled) -> np.ndarray:
    """f^ = (c^ . relu^) / alpha^ for every sample (f = 2^F f^)."""
    out = np.empty_like(z.x)
    rng, step = _chunks(z.a.size, z.x.size)
    for lo in rng:
        out[lo:lo + step] = z.c @ _relu_scaled(z, lo, lo + step)[1] / z.alpha
    return out


def forward_dense(a: Any, b: Any, c: Any, x: Any, alpha: float | str) -> np.ndarray:
    """f_z(x) by the dense O(m n) sum (reference implementation; chunked over x, exactly
    rescaled by powers of two: any finite input with a representable result)."""
    a, b, c = _params(a, b, c)
    x, _ = _data(x)
    z = _scaled(a, b, c, x, normalize_alpha(alpha, a.size))
    return ldexp_clipped(_forward_scaled(z), z.f_exp, "f_z(x)", "|c_i (a_i x_j - b_i)| / "
                         "alpha exceeds float64; rescale a, b, c or x")


def loss_and_grad_dense(a: Any, b: Any, c: Any, x: Any, y: Any, alpha: float | str
                        ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """L(z) and its exact gradient (grad_a, grad_b, grad_c), dense O(m s) reference
    (chunked over the samples, exactly rescaled by powers of two: accurate for any finite
    input whose loss and gradient are representable).  ReLU'(0) = 0 at a kink."""
    a, b, c = _params(a, b, c)
    x, y = _data(x, y)
    return _loss_and_grad_scaled(_scaled(a, b, c, x, normalize_alpha(alpha, a.size)), y)


def _loss_and_grad_scaled(z: _Scaled, y: np.ndarray
                          ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Loss and gradient on the rescaled operands: rho = 2^E rho^ with E the larger of the
    exponents of f and y, so |rho^| <= 4 m + 1 and nothing overflows before the final
    ldexp (see the section comment above)."""
    F = z.f_exp
    f_hat = _forward_scaled(z)
    parts = (([F + pow2_exponent(f_hat)] if np.any(f_hat != 0) else [])
             + ([pow2_exponent(y)] if np.any(y != 0) else []))
    E = max(parts) if parts else 0  # rho = 2^E rho^ with max |rho^| ~ 1
    rho = ldexp_clipped(f_hat, F - E) - ldexp_clipped(y, -E)
    m = z.a.size
    s_act = np.zeros(m)     # sum_j rho^_j [u_ij > 0]
    s_actx = np.zeros(m)    # sum_j rho^_j x^_j [u_ij > 0]
    g_c = np.zeros(m)       # sum_j relu^_ij rho^_j
    rng, step = _chunks(m, z.x.size)
    for lo in rng:
        act, relu = _relu_scaled(z, lo, lo + step)
        r = rho[lo:lo + step]
        s_act += act @ r
        s_actx += act @ (r * z.x[lo:lo + step])
        g_c += relu @ r
    loss = float(ldexp_clipped(0.5 * float(rho @ rho), 2 * E, "the loss L(z)", _LOSS_CAUSE))
    grads = (ldexp_clipped(z.c * s_actx / z.alpha, z.ec + E + z.ex - z.eal, _GRAD, _GRAD_CAUSE),
             ldexp_clipped(-z.c * s_act / z.alpha, z.ec + E - z.eal, _GRAD, _GRAD_CAUSE),
             ldexp_clipped(g_c / z.alpha, z.eu + E - z.eal, _GRAD, _GRAD_CAUSE))
    return loss, grads


_LOSS_CAUSE = "the residuals f(x_j) - y_j exceed float64; rescale a, b, c, x or y"
_GRAD = "the gradient (grad_a, grad_b, grad_c)"
_GRAD_CAUSE = ("products of the residual with |a_i x_j - b_i| or |c_i x_j| exceed float64; "
               "rescale a, b, c, x or y")


# --------------------------------------------------------------------------- dispatch
def _fast():
    try:
        from numerics import fast1d  # noqa: PLC0415  (optional engine)
    except ImportError:
        return None
    if not all(hasattr(fast1d, n) for n in ("forward_sorted", "loss_and_grad_sorted", "_in_exact_range")):
        return None
    return fast1d


def forward(a: Any, b: Any, c: Any, x: Any, alpha: float | str) -> np.ndarray:
    """f_z(x); uses ``numerics.fast1d.forward_sorted`` when available, else (and when an
    intermediate overflows or the inputs leave the sorted engine's exactness range) the
    exactly rescaled dense reference.  ``alpha`` is normalized to a float first
    (:func:`normalize_alpha`)."""
    fast = _fast()
    a, b, c = _params(a, b, c)
    x, _ = _data(x)
    al = normalize_alpha(alpha, a.size)
    if fast is not None and fast._in_exact_range(a, x):  # inside 2^-900..2^500
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                out = fast.forward_sorted(a, b, c, x, al)
        except ValueError:  # an intermediate sum overflowed: the rescaled path decides
            out = None
        if out is not None and np.all(np.isfinite(out)):
            return out
    return forward_dense(a, b, c, x, al)


def loss_and_grad(a: Any, b: Any, c: Any, x: Any, y: Any, alpha: float | str
                  ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """L(z) and (grad_a, grad_b, grad_c); ``numerics.fast1d`` when available, else (and
    when an intermediate overflows, e.g. c_i a_i beyond float64 while the gradient is
    representable, or the inputs leave the engine's exactness range) the exactly
    rescaled dense reference :func:`loss_and_grad_dense`.  An unrepresentable loss or
    gradient raises ValueError naming the overflow."""
    fast = _fast()
    a, b, c = _params(a, b, c)
    x, y = _data(x, y)
    al = normalize_alpha(alpha, a.size)
    if fast is not None and fast._in_exact_range(a, x):  # inside 2^-900..2^500
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                out = fast.loss_and_grad_sorted(a, b, c, x, y, al)
        except ValueError:  # an intermediate sum overflowed: the rescaled path decides
            out = None
        if out is not None and np.isfinite(out[0]) and all(np.all(np.isfinite(g)) for g in out[1]):
            return out
    return _loss_and_grad_scaled(_scaled(a, b, c, x, al), y)


# --------------------------------------------------------------------------- gradient descent
@dataclass
class GDResult:
    """Plain GD trajectory: ``a, b, c`` of shape (n_records, m) at ``steps``; ``loss``."""
    steps: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    loss: np.ndarray


def gradient_descent(a: Any, b: Any, c: Any, x: Any, y: Any, alpha: float | str, *,
                     eta: float, steps: int, record_every: int = 1) -> GDResult:
    """z <- z - eta grad L(z) for ``steps`` steps (records every ``record_every`` steps
    and the last).  Raises ``FloatingPointError`` naming ``eta`` if the iteration diverges."""
    a, b, c = (v.copy() for v in _params(a, b, c))
    x, y = _data(x, y)
    eta = _real(eta, "eta (step size)")
    if not np.isfinite(eta) or eta <= 0:
        raise ValueError(f"eta (step size) must be a positive finite number; got {eta!r}")
    steps = require_positive_int(steps, "steps", minimum=0)
    record_every = require_positive_int(record_every, "record_every")
    normalize_alpha(alpha, a.size)  # a bad alpha is refused before any step
    # time: ~ (m + s) work per step plus a fixed per-step overhead; memory: the records
    require_size(steps * (a.size + x.size + _STEP_OVERHEAD), "steps", limit=MAX_STEPS,
                 what="elementary updates (steps x (m + s + overhead))",
                 hint="use fewer steps (or a larger eta), or split the run")
    require_size((steps // record_every + 2) * 3 * a.size, "the records (steps / "
                 "record_every x 3 m values)", hint="raise record_every")
    rec_t, ra, rb, rc, rl = [], [], [], [], []
    loss0 = None
    for k in range(steps + 1):
        try:
            loss, (ga, gb, gc) = loss_and_grad(a, b, c, x, y, alpha)
        except ValueError as exc:
            if k == 0:
                raise
            raise FloatingPointError(f"gradient descent diverged at step {k} with step size "
                                     f"eta={eta:g}: {exc}; reduce eta") from exc
        if loss0 is None:
            loss0 = loss
        if not np.isfinite(loss) or loss > 1e12 * max(loss0, 1.0):
            raise FloatingPointError(f"gradient descent diverged at step {k} with step size "
                                     f"eta={eta:g}: loss {loss:.3g}; reduce eta")
        if k % record_every == 0 or k == steps:
            rec_t.append(k), ra.append(a.copy()), rb.append(b.copy()), rc.append(c.copy()), rl.append(loss)
        if k < steps:
            a -= eta * ga
            b -= eta * gb
            c -= eta * gc
    return GDResult(np.array(rec_t), np.array(ra), np.array(rb), np.array(rc), np.array(rl))


# --------------------------------------------------------------------------- piecewise-smooth engine
@dataclass
class FlowResult:
    """Output of :func:`gradient_flow` / :func:`reduced_flow`.

    ``t`` (n_t,), ``state`` (n_t, k, m) with k = 3 (a, b, c) or 2 (r, theta); ``events``
    a list of ``(t, kind, i, j)`` with kind in {"cross", "slide", "unslide", "collapse"}
    (j = -1 for a collapse);
    ``sliding`` the (m, s) boolean mask of sliding pairs at the end; ``n_steps`` accepted
    solver steps."""
    t: np.ndarray
    state: np.ndarray
    events: list[tuple[float, str, int, int]] = field(default_factory=list)
    sliding: np.ndarray | None = None
    n_steps: int = 0
    segments: list[tuple] = field(default_factory=list, repr=False)  # (t0, t1, interp, P, S)

    def dense(self, t: float) -> np.ndarray:
        """The state at any time ``t`` in [0, t_eval[-1]] from the solver's dense output
        (only when the flow was run with ``dense=True``); flat vector (a, b, c) / (r, theta)."""
        k = self._segment(t)
        t0, t1, interp = self.segments[k][:3]
        return interp(min(max(t, t0), t1))

    def pattern(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """``(P, S)`` used by the integrator on the segment containing ``t`` (``dense=True``
        runs only): P the (m, s) activation pattern (pair (i, j) active), S the sliding
        pairs (held on their sample line by the Filippov projection)."""
        k = self._segment(t)
        return self.segments[k][3], self.segments[k][4]

    def _segment(self, t: Any) -> int:
        t = as_float_scalar(t, "t (a time of the run)")
        if not self.segments:
            raise ValueError("t: no dense output stored for this run; run the flow with "
                             "dense=True")
        starts = [s[0] for s in self.segments]
        return max(0, min(len(starts) - 1, int(np.searchsorted(starts, t, side="right")) - 1))

    @property
    def event_times(self) -> np.ndarray:
        return np.array([e[0] for e in self.events])

    @property
    def n_crossings(self) -> int:
        return sum(1 for e in self.events if e[1] == "cross")

    @property
    def n_slides(self) -> int:
        return sum(1 for e in self.events if e[1] == "slide")


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


#: switching events of one (neuron, sample) pair after which the flow is declared
#: chattering: a well-resolved flow crosses or slides onto one line a few times
MAX_PAIR_EVENTS = 100


def _integrate(prob: _Problem, y0: np.ndarray, t_eval: np.ndarray, rtol: float, atol: float,
               max_events: int, max_steps: int, keep_dense: bool = False) -> FlowResult:
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
    pair_events: dict[tuple[int, int], int] = {}  # events per (neuron, sample): chattering

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
                raise FloatingPointError(f"gradient flow diverged at t={solver.t:.6g} (rtol={rtol:g}): "
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
                pair_events[i, j] = pair_events.get((i, j), 0) + 1
                if pair_events[i, j] > MAX_PAIR_EVENTS:
                    raise RuntimeError(
                        f"chattering: neuron {i} switched more than {MAX_PAIR_EVENTS} times at "
                        f"sample {j} before t={t:.6g} (horizon {t1:g}; per-pair event budget "
                        "MAX_PAIR_EVENTS exhausted); its trajectory runs "
                        "along a sample line it keeps leaving and re-entering (e.g. nearly "
                        "coincident sample lines: merge samples x_j closer than the solver "
                        "tolerance, or a degenerate near-zero neuron)")
            else:
                t, y = t_new, y_new.copy()
    while k_out < t_eval.size:  # t reached t1
        out[k_out] = y
        k_out += 1
    return FlowResult(t=t_eval, state=out, events=events, sliding=S, n_steps=n_steps,
                      segments=segments)


def _check_t_eval(t_eval: Any) -> np.ndarray:
    t_eval = as_float_array(t_eval, "t_eval (output times)", ndim=1, allow_empty=False)
    if t_eval[0] < 0 or np.any(np.diff(t_eval) < 0):
        raise ValueError("t_eval must be non-negative and non-decreasing (the flow starts at t = 0)")
    return t_eval


def _check_tols(rtol: float, atol: float) -> tuple[float, float]:
    rtol = _real(rtol, "rtol")
    atol = _real(atol, "atol")
    if not (1e-15 <= rtol < 1):
        raise ValueError(f"rtol (relative tolerance) must lie in [1e-15, 1); got {rtol!r}")
    if not (0 < atol < np.inf):
        raise ValueError(f"atol (absolute tolerance) must be a positive finite number; got {atol!r}")
    return rtol, atol


def _flag(v: Any, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False; got {type(v).__name__}")
    return bool(v)


def _real(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number; got {v!r}")
    return float(v)


def _flow_sizes(m: int, s: int, n_t: int, k: int) -> None:
    """Refuse (fast) a flow whose (m, s) pattern matrices or (n_t, k, m) output would not
    fit in memory."""
    require_size(m * s, "the (m, s) activation pattern (m neurons x s samples)",
                 hint="use fewer neurons or samples")
    require_size(n_t * k * m, "t_eval (the output holds len(t_eval) x %d x m values)" % k,
                 hint="ask for fewer output times")


def _budgets(max_events: Any, max_steps: Any) -> tuple[int, int]:
    return (require_positive_int(max_events, "max_events"),
            require_positive_int(max_steps, "max_steps"))


class _FullProblem(_Problem):
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


def gradient_flow(a: Any, b: Any, c: Any, x: Any, y: Any, alpha: float | str, t_eval: Any, *,
                  rtol: float = 1e-12, atol: float = 1e-14, max_events: int = 100_000,
                  max_steps: int = 1_000_000, dense: bool = False) -> FlowResult:
    """Gradient flow dz/dt = -grad L(z) from z(0) = (a, b, c), reported at ``t_eval``.

    DOP853 (8th order, error-controlled, ``rtol``/``atol``) on segments of constant
    activation pattern, with located switching events and Filippov sliding on attracting
    sample lines (module docstring).  ``dense=True`` keeps the solver's dense output
    (``result.dense(t)``).  ``result.state[k] = (a, b, c)`` at ``t_eval[k]``."""
    a, b, c = _params(a, b, c)
    x, y = _data(x, y)
    t_eval = _check_t_eval(t_eval)
    rtol, atol = _check_tols(rtol, atol)
    dense = _flag(dense, "dense")
    max_events, max_steps = _budgets(max_events, max_steps)
    m = a.size
    _flow_sizes(m, x.size, t_eval.size, 3)
    prob = _FullProblem(x, y, normalize_alpha(alpha, m), m)
    res = _integrate(prob, np.concatenate([a, b, c]), t_eval, rtol, atol, max_events, max_steps, dense)
    res.state = res.state.reshape(t_eval.size, 3, m)
    return res


# --------------------------------------------------------------------------- canonical parametrization
def _canon(r: Any, theta: Any) -> tuple[np.ndarray, np.ndarray]:
    r = as_float_array(r, "r (signed radii)", ndim=1, allow_empty=False)
    theta = as_float_array(theta, "theta (angles)", ndim=1)
    require_same_shape(r=r, theta=theta)
    return r, theta


def _canonical_parts(r: np.ndarray, theta: np.ndarray, x: np.ndarray):
    """u_ij = <x~_j, d(theta_i)>, its theta-derivative, and their exact power-of-two
    scale: ``(u^, du^, eu)`` with u = 2^eu u^, max |u^|, |du^| < 1 (|u| <= |x| + 1 never
    overflows; the products with r are what may)."""
    require_size(r.size * x.size, "the (m, s) pre-activation matrix (m neurons x s samples)",
                 hint="use fewer neurons or samples")
    co, si = np.cos(theta), np.sin(theta)
    u = np.multiply.outer(co, x) - si[:, None]          # (m, s) = <x~_j, d(theta_i)>
    du = -np.multiply.outer(si, x) - co[:, None]        # <x~_j, t(theta_i)>
    eu = max(pow2_exponent(u), pow2_exponent(du))
    return ldexp_clipped(u, -eu), ldexp_clipped(du, -eu), eu


def canonical_forward(r: Any, theta: Any, x: Any) -> np.ndarray:
    """f~_w(x) = (1/m) sum_i r_i <x~, d(theta_i)>_+ with x~ = (x, -1) (docs/conventions.md,
    section 1); exactly rescaled by powers of two, so an intermediate overflow with a
    representable result is still accurate, and an output beyond float64 raises."""
    r, theta = _canon(r, theta)
    x, _ = _data(x)
    u, _, eu = _canonical_parts(r, theta, x)
    r_hat, er = ldexp_clipped(r, -pow2_exponent(r)), pow2_exponent(r)
    return ldexp_clipped(r_hat @ np.maximum(u, 0.0) / r.size, er + eu, "f~_w(x)",
                         "|r_i| |x_j| too large; rescale r or x")


def canonical_loss_and_grad(r: Any, theta: Any, x: Any, y: Any
                            ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """L~(w) and (dL~/dr_i, dL~/dtheta_i), computed directly (ReLU'(0) = 0), on operands
    rescaled exactly by powers of two (an unrepresentable loss or gradient raises).

    Note grad_{w_i} L~ = (1/m) grad V(w_i; mu) (claim W2d)."""
    r, theta = _canon(r, theta)
    x, y = _data(x, y)
    m = r.size
    u, du, eu = _canonical_parts(r, theta, x)
    er = pow2_exponent(r)
    r_hat = ldexp_clipped(r, -er)
    act = u > 0
    relu = np.where(act, u, 0.0)
    f_hat = r_hat @ relu / m                            # f = 2^(er + eu) f^
    parts = (([er + eu + pow2_exponent(f_hat)] if np.any(f_hat != 0) else [])
             + ([pow2_exponent(y)] if np.any(y != 0) else []))
    E = max(parts) if parts else 0                      # rho = 2^E rho^
    rho = ldexp_clipped(f_hat, er + eu - E) - ldexp_clipped(y, -E)
    loss = float(ldexp_clipped(0.5 * float(rho @ rho), 2 * E, "the loss L~(w)",
                               "the residuals exceed float64; rescale r or y"))
    why = "it exceeds float64; rescale r, x or y"
    g_r = ldexp_clipped(relu @ rho / m, eu + E, "the gradient dL~/dr", why)
    g_th = ldexp_clipped(r_hat * ((act * du) @ rho) / m, er + eu + E, "the gradient dL~/dtheta", why)
    return loss, (g_r, g_th)


InverseMetric = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _inverse_metric(spec: str | InverseMetric) -> InverseMetric:
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise ArgumentTypeError("inverse_metric must be 'cylinder', 'plane' or a callable "
                                f"(r, delta) -> (g_rr, g_thth); got {type(spec).__name__}")
    if spec == "cylinder":  # flat metric dr^2 + dtheta^2 on R x S^1
        return lambda r, d: (np.ones_like(r), np.ones_like(r))
    if spec == "plane":  # Euclidean metric of the particle plane: dr^2 + r^2 dtheta^2
        return _plane_metric
    raise ValueError("inverse_metric must be 'cylinder', 'plane' or a callable "
                     f"(r, delta) -> (g_rr, g_thth); got {spec!r:.60}")


def _plane_metric(r: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1, 1/r^2); r = 0 gives inf without a warning: the flow reports the non-finite
    field by name (ValueError at t = 0, FloatingPointError later)."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.ones_like(r), 1.0 / (r * r)


class _ReducedProblem(_Problem):
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


def reduced_flow(r: Any, theta: Any, delta: Any, x: Any, y: Any, t_eval: Any, *,
                 inverse_metric: str | InverseMetric = "cylinder", time_scale: float = 1.0,
                 rtol: float = 1e-12, atol: float = 1e-14, max_events: int = 100_000,
                 max_steps: int = 1_000_000, dense: bool = False) -> FlowResult:
    """Flow of the canonical particles w_i = (r_i, theta_i) (alpha = m):

        dr_i/dt = -time_scale * g_rr(r_i, delta_i) dL~/dr_i,
        dtheta_i/dt = -time_scale * g_thth(r_i, delta_i) dL~/dtheta_i,

    with ``inverse_metric`` a callable ``(r, delta) -> (g_rr, g_thth)`` (e.g. the W2c
    metric), ``"cylinder"`` (g = 1, 1) or ``"plane"`` (g = 1, 1/r^2).  ``time_scale = m``
    gives the mean-field time dw/dt = -grad V(w; mu).  Same event/sliding treatment as
    :func:`gradient_flow`.  ``result.state[k] = (r, theta)``."""
    r, theta = _canon(r, theta)
    delta = as_float_array(delta, "delta (invariants c^2 - a^2 - b^2)")
    delta = np.broadcast_to(delta, r.shape).astype(np.float64) if delta.ndim == 0 else delta
    require_same_shape(r=r, delta=delta)
    x, y = _data(x, y)
    t_eval = _check_t_eval(t_eval)
    rtol, atol = _check_tols(rtol, atol)
    dense = _flag(dense, "dense")
    max_events, max_steps = _budgets(max_events, max_steps)
    time_scale = _real(time_scale, "time_scale")
    if not (0 < time_scale < np.inf):
        raise ValueError(f"time_scale must be a positive finite number; got {time_scale!r}")
    m = r.size
    _flow_sizes(m, x.size, t_eval.size, 2)
    prob = _ReducedProblem(x, y, delta, _inverse_metric(inverse_metric), time_scale, m)
    res = _integrate(prob, np.concatenate([r, theta]), t_eval, rtol, atol, max_events, max_steps, dense)
    res.state = res.state.reshape(t_eval.size, 2, m)
    return res
