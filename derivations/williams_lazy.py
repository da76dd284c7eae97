"""Williams et al. (2019), Prop. 4 at alpha(m) = o(m) (claim W2j): the lazy regime.

Network f = (1/alpha) sum_i c_i (a_i x - b_i)_+, loss 1/2 sum_j (f(x_j) - y_j)^2
(docs/conventions.md section 1).  From the definitions:

- one neuron's gradient-flow velocity is dz_i/dt = -(1/alpha) grad phi_i r (phi_i its unit,
  r the residual), so the predictor moves as df/dt = -(1/alpha^2) sum_i grad phi_i grad
  phi_i^T r = -(m/alpha^2) K_m r, K_m the width-m average of grad phi grad phi^T: the
  kernel time is T(m) = alpha^2/m (GD in z at step T(m) h is kernel GD at step h);
- over a kernel time of order one a neuron moves by |dz_i/dt| T(m) = alpha/m, which
  vanishes iff alpha(m) = o(m): the knots (the directions of (a_i, b_i)) freeze.  At
  alpha(m) = sqrt(m) the freeze is m^-1/2, the order of the fluctuation of K_m around its
  mean K_NTK (claim W3d), so the residual on the sample follows kernel GD with K_NTK up to
  O(m^-1/2)."""
from __future__ import annotations

from typing import Callable

import sympy as sp

from derivations.base import Derivation, Step

__all__ = ["DERIVATIONS", "derive_w2j", "m_width"]

m_width = sp.Symbol("m", positive=True)


def derive_w2j() -> Derivation:
    a, b, c, x, y, rest = sp.symbols("a b c x y R", real=True)
    alpha, gamma, t = sp.symbols("alpha gamma t", positive=True)
    f = (c * (a * x - b) + rest) / alpha
    loss = (f - y) ** 2 / 2
    z = (a, b, c)
    zdot = [-sp.diff(loss, v) for v in z]
    grad_phi = [sp.diff(c * (a * x - b), v) for v in z]
    r = f - y
    # df/dt from this neuron: sum_v (df/dv) (dv/dt)
    fdot = sp.simplify(sum(sp.diff(f, v) * vd for v, vd in zip(z, zdot)))
    per_neuron = sp.simplify(-fdot / (r * sum(g ** 2 for g in grad_phi)))
    kernel_rate = m_width * per_neuron                       # m neurons: m / alpha^2
    T = sp.simplify(1 / kernel_rate)
    speed = sp.simplify(sp.sqrt(sum(v ** 2 for v in zdot)) / (sp.Abs(r) * sp.sqrt(
        sum(g ** 2 for g in grad_phi))))                     # |dz_i/dt| / (|r| |grad phi|)
    move = sp.simplify(speed * T)
    at_sqrt = sp.simplify(move.subs(alpha, sp.sqrt(m_width)))
    freeze_exponent = sp.simplify(sp.log(move.subs(alpha, m_width ** gamma)) / sp.log(m_width))
    if sp.simplify(at_sqrt - m_width ** sp.Rational(-1, 2)) != 0:
        raise ArithmeticError(f"W2j: the displacement at alpha = sqrt(m) is {at_sqrt}")
    kernel_time = sp.Lambda((m_width, gamma), sp.powsimp(sp.simplify(
        T.subs(alpha, m_width ** gamma))))
    return Derivation(steps=[
        Step("One neuron's share of $df/dt$ per unit residual and unit $|\\nabla\\phi|^2$ "
             "(from $\\dot z_i = -\\nabla_{z_i} L$ and $f = \\frac1\\alpha\\sum_i c_i"
             "(a_ix-b_i)_+$):", per_neuron),
        Step("so $m$ neurons move $f$ at the kernel rate $m/\\alpha^2$, and the kernel time "
             "is", T, lhs="T"),
        Step("A neuron moves by $|\\dot z_i|\\,T$ per unit $|r|\\,|\\nabla\\phi|$ over a kernel "
             "time:", move, lhs="\\Delta z"),
        Step("With $\\alpha(m) = m^\\gamma$ its exponent in $m$ is", freeze_exponent,
             lhs="\\log_m \\Delta z"),
        Step("which is negative iff $\\gamma < 1$, i.e. $\\alpha(m) = o(m)$: the knots freeze. "
             "At $\\alpha = \\sqrt m$ (the width study) the move is", at_sqrt,
             lhs="\\Delta z"),
        Step("and GD in $z$ at step $T(m)\\,h$ is kernel GD at step $h$, with",
             kernel_time(m_width, gamma), lhs="T(m)"),
    ], results={"kernel_time": kernel_time})


DERIVATIONS: dict[str, Callable[[], Derivation]] = {"W2j": derive_w2j}
