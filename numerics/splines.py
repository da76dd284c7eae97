"""Cubic splines on [-1, 1] with end conditions given as linear relations (Williams et al.
2019, Thm 5; claim W3b): the uniform-init random-feature kernel interpolant of data in
(-1, 1) is a cubic spline whose two outer pieces satisfy linear relations between their
derivatives at -1 and +1 (derived in ``derivations.williams_kernels``; this module only
receives them as a matrix).

>>> import numpy as np
>>> rel = np.zeros((4, 8))
>>> rel[0, 0] = rel[1, 4] = rel[2, 2] = rel[3, 6] = 1.0   # f = f'' = 0 at -1 and at 1
>>> s = spline_with_end_conditions([-0.5, 0.5], [1.0, -1.0], rel)
>>> [round(float(v), 12) for v in s([-1.0, -0.5, 0.5, 1.0])]
[0.0, 1.0, -1.0, 0.0]
>>> round(float(s(1.0, 2)), 12)
0.0
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.interpolate import CubicSpline

from numerics.validation import as_float_array, require_size

__all__ = ["spline_with_end_conditions", "MAX_SPLINE_POINTS"]

#: largest number of data points accepted (each unknown costs one spline build)
MAX_SPLINE_POINTS = 1_000_000


def _data(x_data: Any, y_data: Any) -> tuple[np.ndarray, np.ndarray]:
    x = as_float_array(x_data, "x_data", ndim=1, allow_empty=False, max_size=MAX_SPLINE_POINTS)
    require_size(x.size, "x_data", limit=MAX_SPLINE_POINTS, what="data points")
    y = as_float_array(y_data, "y_data", ndim=1, allow_empty=False, max_abs=1e150,
                       max_size=MAX_SPLINE_POINTS)
    if y.shape != x.shape:
        raise ValueError(f"y_data must have the shape of x_data {x.shape}; got {y.shape}")
    if not (np.all(x > -1.0) and np.all(x < 1.0)):
        raise ValueError("x_data must lie strictly inside (-1, 1) (the spline's outer knots "
                         f"are -1 and 1); got min {float(x.min()):.6g}, max {float(x.max()):.6g}")
    gaps = np.diff(np.concatenate([[-1.0], x, [1.0]]))
    if not np.all(gaps > 1e-9):
        raise ValueError("x_data must be strictly increasing with gaps > 1e-9 (also from the "
                         f"knots -1 and 1); smallest gap {float(gaps.min()):.3g}: sort the data "
                         "and merge near-duplicate points")
    return x, y


def spline_with_end_conditions(x_data: Any, y_data: Any, relations: Any) -> CubicSpline:
    """The C^2 cubic spline with knots (-1, x_1, ..., x_s, 1) through (x_j, y_j) whose outer
    pieces satisfy ``relations @ [l_0, l_1, l_2, l_3, r_0, r_1, r_2, r_3] = 0``, where l_k
    (r_k) is the k-th derivative of the spline at -1 (+1).

    The free quantities are the values at -1 and +1 and the second derivatives there; the
    spline is affine in them, so it is built at the base point and at the 4 unit vectors
    and the 4 x 4 system ``relations`` imposes is solved.  ``relations`` must be a finite
    4 x 8 matrix that determines those 4 quantities (ValueError otherwise).  Returns a
    ``scipy.interpolate.CubicSpline`` on [-1, 1]."""
    x, y = _data(x_data, y_data)
    M = as_float_array(relations, "relations", ndim=2, max_abs=1e150)
    if M.shape != (4, 8):
        raise ValueError("relations must be a 4 x 8 matrix (4 relations between the "
                         "derivatives 0..3 at -1 and at +1); got shape " f"{M.shape}")
    nodes = np.concatenate([[-1.0], x, [1.0]])

    def build(u: np.ndarray) -> CubicSpline:
        vals = np.concatenate([[u[0]], y, [u[1]]])
        return CubicSpline(nodes, vals, bc_type=((2, u[2]), (2, u[3])))

    def residual(u: np.ndarray) -> np.ndarray:
        sp_ = build(u)
        dl = [float(sp_(-1.0, k)) for k in range(4)]
        dr = [float(sp_(1.0, k)) for k in range(4)]
        return M @ np.array(dl + dr)

    with np.errstate(all="ignore"):
        r0 = residual(np.zeros(4))
        J = np.column_stack([residual(e) - r0 for e in np.eye(4)])
        ok = np.all(np.isfinite(J)) and np.all(np.isfinite(r0))
        cond = np.linalg.cond(J) if ok else np.inf
    if not (np.isfinite(cond) and cond < 1e12):
        raise ValueError("relations do not determine the end values and end second "
                         f"derivatives (the 4 x 4 system has condition number {cond:.3g}); "
                         "give 4 independent relations")
    spline = build(np.linalg.solve(J, -r0))
    if not np.all(np.isfinite(spline.c)):
        raise ValueError("y_data is too large: the spline's coefficients overflow float64; "
                         "rescale y_data")
    return spline
