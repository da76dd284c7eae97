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
  exact treatment of the discontinuities (``numerics.filippov``).
- :func:`canonical_loss_and_grad`, :func:`reduced_flow`: the canonical parametrization
  f~_w(x) = (1/m) sum_i r_i <x~, d(theta_i)>_+ (alpha = m), x~ = (x, -1), and its
  gradient flow dw_i/dt = -G_i^{-1} grad_{w_i} L~ under a diagonal inverse metric
  G_i^{-1} = diag(g_rr, g_thth) supplied by the caller (the metric of claim W2c is derived
  symbolically in ``derivations.williams_dynamics``; this module does not type it in).

Exact gradient flows
--------------------
:func:`gradient_flow` and :func:`reduced_flow` integrate the piecewise-smooth field
segment by segment with located switching events, Filippov sliding on attracting sample
lines and collapse of a neuron to the origin (``numerics.filippov``).  Budgets:
``max_steps`` accepted solver steps and ``max_events`` events; exhausting one raises
RuntimeError naming it, and a (neuron, sample) pair switching more than
``numerics.dynamics.MAX_CROSSINGS`` times raises ``numerics.dynamics.ChatteringError``
(chattering, e.g. between nearly coincident sample lines).  Results are the shared
``numerics.dynamics`` types: :class:`GDResult`, :class:`FlowResult`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from numerics.dynamics import FlowResult, GDResult
from numerics.fast1d import preactivation
from numerics.filippov import InverseMetric, _FullProblem, _integrate, _ReducedProblem
from numerics.validation import (ArgumentTypeError, DivergenceError, flow_budget,
                                 IntegratorError, RunProgress, as_float_array, ldexp_clipped,
                                 pow2_exponent, pow2_scale, require_positive_int,
                                 require_same_shape, require_size, require_work,
                                 wants_long_run)

__all__ = [
    "normalize_alpha", "forward", "loss_and_grad", "forward_dense", "loss_and_grad_dense",
    "knots", "sample_line_distance", "gradient_descent", "GDResult", "FlowResult", "gradient_flow",
    "canonical_forward", "canonical_loss_and_grad", "reduced_flow", "network_jacobian",
]

_CHUNK = 1 << 20  # max entries of one m x n block in forward_dense
#: largest m s of one dense (rescaled) evaluation: loss_and_grad_dense took 2.7 s of one
#: core at 2^25 pairs, so ~1.4 s at the limit
MAX_DENSE_PAIRS = 2 ** 24
#: cost of one GD step in the work units of ``numerics.validation.require_work`` (~1 ns):
#: a fixed overhead (measured 140-150 us) plus ~160 per neuron and per sample
_STEP_OVERHEAD = 150_000
_STEP_PER_ENTRY = 200
#: cost of one accepted solver step of the flows, same units (measured 0.5-1 ms at m <= 100
#: neurons, s <= 20 samples): a flow's step budget is capped at QUICK_WORK / this unless long
_FLOW_STEP_COST = 300_000
_FLOW_STEP_PER_PAIR = 300
_LONG_FLOW_STEPS = 1_000_000  # default step budget of a flow asked to run long


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


def sample_line_distance(theta: Any, x: Any) -> np.ndarray:
    """Angle from each particle direction d(theta_i) to the nearest sample line
    u x_j - v = 0 of the particle plane (docs/errata.md W-1): min_j |theta_i - atan(x_j)|
    modulo pi, in [0, pi/2].  It is 0 iff the knot tan(theta_i) of neuron i sits at a sample
    point x_j (or the neuron is vertical and x_j infinite, impossible for finite samples):
    the clustering statistic of Williams et al. Fig. 2 (claim W2k)."""
    theta = as_float_array(theta, "theta (particle angles)", ndim=1)
    x, _ = _data(x)
    require_size(theta.size * x.size, "the (m, s) angle matrix (m neurons x s samples)",
                 hint="use fewer neurons or samples")
    gap = np.subtract.outer(theta, np.arctan(x))                  # (m, s)
    folded = np.abs(np.remainder(gap + np.pi / 2, np.pi) - np.pi / 2)
    return np.min(folded, axis=1)


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
    require_size(a.size * x.size, "the dense sum (m neurons x s samples)",
                 limit=MAX_DENSE_PAIRS, hint="evaluate x in chunks of fewer samples")
    ea, eb, ex = pow2_exponent(a), pow2_exponent(b), pow2_exponent(x)
    has_ax = bool(np.any(a != 0) and np.any(x != 0))
    parts = ([ea + ex] if has_ax else []) + ([eb] if np.any(b != 0) else [])
    eu = max(parts) if parts else 0
    if not np.any(x != 0):
        ex = eu - ea  # a x = 0 whatever the scale of a: keep a^ = a 2^-ea bounded
    ec = pow2_exponent(c)
    alpha_hat, eal = pow2_scale(alpha)
    return _Scaled(ldexp_clipped(a, ex - eu), ldexp_clipped(b, -eu), ldexp_clipped(c, -ec),
                   ldexp_clipped(x, -ex), float(alpha_hat), ex, eu, ec, eal)


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


def _require_engine_size(fast: Any, m: int, s: int) -> None:
    """Refuse, naming m + s, a call the sorted engine would run for more than ~2 s (checked
    here, since its ValueErrors otherwise hand the call to the slower dense path)."""
    if fast is not None:
        fast.require_sorted_size(m, s)


def forward(a: Any, b: Any, c: Any, x: Any, alpha: float | str) -> np.ndarray:
    """f_z(x); uses ``numerics.fast1d.forward_sorted`` when available, else (and when an
    intermediate overflows or the inputs leave the sorted engine's exactness range) the
    exactly rescaled dense reference.  ``alpha`` is normalized to a float first
    (:func:`normalize_alpha`)."""
    fast = _fast()
    a, b, c = _params(a, b, c)
    x, _ = _data(x)
    al = normalize_alpha(alpha, a.size)
    _require_engine_size(fast, a.size, x.size)
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
    _require_engine_size(fast, a.size, x.size)
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
def gradient_descent(a: Any, b: Any, c: Any, x: Any, y: Any, alpha: float | str, *,
                     eta: float, steps: int, record_every: int = 1,
                     long_run: bool | None = None) -> GDResult:
    """z <- z - eta grad L(z) for ``steps`` steps (records every ``record_every`` steps
    and the last).  Raises :class:`~numerics.validation.DivergenceError` (a
    ``FloatingPointError``) naming ``eta`` if the iteration diverges.  The result's
    ``a``, ``b``, ``c`` are the recorded trajectories, shape (n_records, m).  A run above
    ``numerics.validation.QUICK_WORK`` needs ``long_run=True`` (it then shows its
    progress and stops at Ctrl-C)."""
    a, b, c = (v.copy() for v in _params(a, b, c))
    x, y = _data(x, y)
    eta = _real(eta, "eta (step size)")
    if not np.isfinite(eta) or eta <= 0:
        raise ValueError(f"eta (step size) must be a positive finite number; got {eta!r}")
    steps = require_positive_int(steps, "steps", minimum=0)
    record_every = require_positive_int(record_every, "record_every")
    normalize_alpha(alpha, a.size)  # a bad alpha is refused before any step
    # time: ~ (m + s) work per step plus a fixed per-step overhead; memory: the records
    long = require_work(steps * (_STEP_PER_ENTRY * (a.size + x.size) + _STEP_OVERHEAD), "steps",
                        long_run=long_run, what="work units (steps x (200 (m + s) + overhead))",
                        hint="use fewer steps (or a larger eta), or split the run")
    require_size((steps // record_every + 2) * 3 * a.size, "the records (steps / "
                 "record_every x 3 m values)", hint="raise record_every")
    if not np.isfinite(eta * steps):
        raise ValueError(f"eta * steps (the time of the last step) must be finite; got eta="
                         f"{eta!r}, steps={steps}: reduce eta or steps")
    rec_t, ra, rb, rc, rl = [], [], [], [], []
    loss0 = None
    for k in RunProgress(steps + 1, "relu1d.gradient_descent steps", long).steps():
        try:
            loss, (ga, gb, gc) = loss_and_grad(a, b, c, x, y, alpha)
        except ValueError as exc:
            if k == 0:
                raise
            raise DivergenceError(f"gradient descent diverged at step {k} with step size "
                                  f"eta={eta:g}: {exc}; reduce eta") from exc
        if loss0 is None:
            loss0 = loss
        if not np.isfinite(loss) or loss > 1e12 * max(loss0, 1.0):
            raise DivergenceError(f"gradient descent diverged at step {k} with step size "
                                  f"eta={eta:g}: loss {loss:.3g}; reduce eta")
        if k % record_every == 0 or k == steps:
            rec_t.append(k), ra.append(a.copy()), rb.append(b.copy()), rc.append(c.copy()), rl.append(loss)
        if k < steps:
            a -= eta * ga
            b -= eta * gb
            c -= eta * gc
    rec = {"a": np.array(ra), "b": np.array(rb), "c": np.array(rc)}
    steps_rec = np.array(rec_t)
    return GDResult(steps_rec, steps_rec * eta, np.array(rl), rec,
                    {k: v[-1] for k, v in rec.items()}, by_name="trajectory")


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


def _budgets(max_events: Any, max_steps: Any, long_run: Any, m: int, s: int) -> tuple[int, int]:
    """(max_events, max_steps): the step budget (default 10^6 for a long run) capped at
    about QUICK_WORK of work unless the run is long (numerics.validation.flow_budget)."""
    max_events = require_positive_int(max_events, "max_events")
    cost = _FLOW_STEP_COST + _FLOW_STEP_PER_PAIR * m * s
    return max_events, flow_budget(max_steps, "max_steps", cost, long_run=long_run,
                                   long_default=_LONG_FLOW_STEPS)


def _stopped(exc: RuntimeError, long_run: Any) -> IntegratorError:
    """A solver failure or an exhausted budget as the named IntegratorError (a
    DivergenceError and a RuntimeError) saying what to change."""
    more = "" if wants_long_run(long_run) else "; a longer run needs long_run=True"
    return IntegratorError(f"gradient flow stopped: {exc} (the step-size control failed: the "
                           f"field is too stiff or too large; rescale a, b, c or shorten t_eval"
                           f"{more})")


def gradient_flow(a: Any, b: Any, c: Any, x: Any, y: Any, alpha: float | str, t_eval: Any, *,
                  rtol: float = 1e-12, atol: float = 1e-14, max_events: int = 100_000,
                  max_steps: int | None = None, dense: bool = False,
                  long_run: bool | None = None) -> FlowResult:
    """Gradient flow dz/dt = -grad L(z) from z(0) = (a, b, c), reported at ``t_eval``.

    DOP853 (8th order, error-controlled, ``rtol``/``atol``) on segments of constant
    activation pattern, with located switching events and Filippov sliding on attracting
    sample lines (module docstring).  ``dense=True`` keeps the solver's dense output
    (``result.dense(t)``).  ``result.state[k] = (a, b, c)`` at ``t_eval[k]``.  The step
    budget ``max_steps`` (default 10^6) is capped at about two seconds of work unless
    ``long_run=True``; a solver failure or an exhausted budget raises
    :class:`~numerics.validation.IntegratorError`."""
    a, b, c = _params(a, b, c)
    x, y = _data(x, y)
    t_eval = _check_t_eval(t_eval)
    rtol, atol = _check_tols(rtol, atol)
    dense = _flag(dense, "dense")
    max_events, max_steps = _budgets(max_events, max_steps, long_run, a.size, x.size)
    m = a.size
    _flow_sizes(m, x.size, t_eval.size, 3)
    prob = _FullProblem(x, y, normalize_alpha(alpha, m), m)
    try:
        return _integrate(prob, np.concatenate([a, b, c]), t_eval, rtol, atol, max_events,
                          max_steps, dense, names=("a", "b", "c"))
    except DivergenceError:
        raise
    except RuntimeError as exc:
        raise _stopped(exc, long_run) from exc


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
    r_hat, er = pow2_scale(r)
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
    r_hat, er = pow2_scale(r)
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


def reduced_flow(r: Any, theta: Any, delta: Any, x: Any, y: Any, t_eval: Any, *,
                 inverse_metric: str | InverseMetric = "cylinder", time_scale: float = 1.0,
                 rtol: float = 1e-12, atol: float = 1e-14, max_events: int = 100_000,
                 max_steps: int | None = None, dense: bool = False,
                 long_run: bool | None = None) -> FlowResult:
    """Flow of the canonical particles w_i = (r_i, theta_i) (alpha = m):

        dr_i/dt = -time_scale * g_rr(r_i, delta_i) dL~/dr_i,
        dtheta_i/dt = -time_scale * g_thth(r_i, delta_i) dL~/dtheta_i,

    with ``inverse_metric`` a callable ``(r, delta) -> (g_rr, g_thth)`` (e.g. the W2c
    metric), ``"cylinder"`` (g = 1, 1) or ``"plane"`` (g = 1, 1/r^2).  ``time_scale = m``
    gives the mean-field time dw/dt = -grad V(w; mu).  Same event/sliding treatment as
    :func:`gradient_flow` (the same step budget and IntegratorError).
    ``result.state[k] = (r, theta)``."""
    r, theta = _canon(r, theta)
    delta = as_float_array(delta, "delta (invariants c^2 - a^2 - b^2)")
    delta = np.broadcast_to(delta, r.shape).astype(np.float64) if delta.ndim == 0 else delta
    require_same_shape(r=r, delta=delta)
    x, y = _data(x, y)
    t_eval = _check_t_eval(t_eval)
    rtol, atol = _check_tols(rtol, atol)
    dense = _flag(dense, "dense")
    max_events, max_steps = _budgets(max_events, max_steps, long_run, r.size, x.size)
    time_scale = _real(time_scale, "time_scale")
    if not (0 < time_scale < np.inf):
        raise ValueError(f"time_scale must be a positive finite number; got {time_scale!r}")
    m = r.size
    _flow_sizes(m, x.size, t_eval.size, 2)
    prob = _ReducedProblem(x, y, delta, _inverse_metric(inverse_metric), time_scale, m)
    try:
        return _integrate(prob, np.concatenate([r, theta]), t_eval, rtol, atol, max_events,
                          max_steps, dense, names=("r", "theta"))
    except DivergenceError:
        raise
    except RuntimeError as exc:
        raise _stopped(exc, long_run) from exc


# --------------------------------------------------------------------------- Jacobian
def network_jacobian(a: Any, b: Any, c: Any, x: Any, alpha: float | str
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(J_a, J_b, J_c)``, each of shape (s, m): the parameter Jacobian of the network,
    ``J_a[j, i] = d f_z(x_j) / d a_i = c_i x_j 1[a_i x_j > b_i] / alpha``,
    ``J_b[j, i] = -c_i 1[a_i x_j > b_i] / alpha``, ``J_c[j, i] = (a_i x_j - b_i)_+ / alpha``
    (kink convention ReLU'(0) = 0 with the exact sign of a_i x_j - b_i).  The tangent
    kernel of all layers is ``J_a @ J_a.T + J_b @ J_b.T + J_c @ J_c.T`` (claims W2g, W3d).
    Exactly rescaled like :func:`forward_dense`: an entry beyond float64 raises."""
    a, b, c = _params(a, b, c)
    x, _ = _data(x)
    al = normalize_alpha(alpha, a.size)
    require_size(3 * a.size * x.size, "the Jacobian (3 x m x s entries)",
                 hint="use fewer neurons or samples")
    z = _scaled(a, b, c, x, al)
    act, relu = _relu_scaled(z, 0, z.x.size)           # (m, s)
    cause = "an entry of the Jacobian exceeds float64; rescale a, b, c or x"
    j_a = ldexp_clipped((z.c[:, None] * z.x[None, :] * act).T / z.alpha,
                        z.ec + z.ex - z.eal, "d f / d a", cause)
    j_b = ldexp_clipped(-(z.c[:, None] * act).T / z.alpha, z.ec - z.eal, "d f / d b", cause)
    j_c = ldexp_clipped(relu.T / z.alpha, z.eu - z.eal, "d f / d c", cause)
    return j_a, j_b, j_c
