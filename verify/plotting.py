"""Deterministic matplotlib output (Agg backend, no timestamps in the PNG)."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from verify._atomic import atomic_write_bytes  # noqa: E402

__all__ = ["plt", "new_figure", "save_figure", "rate_study_panel", "sample_lines",
           "particle_picture"]

plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 110, "font.size": 9,
                     "axes.grid": True, "grid.alpha": 0.3, "svg.hashsalt": "verify"})


#: most panels in one direction of a figure, and the largest panel side in inches
MAX_PANELS = 32
MAX_PANEL_INCHES = 20.0


def _panel_count(v: object, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= MAX_PANELS:
        raise ValueError(f"new_figure: {name} must be an integer in 1..{MAX_PANELS}; got {v!r}")
    return int(v)


def _panel_inches(v: object, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not 0.5 <= float(v) <= MAX_PANEL_INCHES:
        raise ValueError(f"new_figure: {name} (inches per panel) must be a number in "
                         f"0.5..{MAX_PANEL_INCHES:g}; got {v!r}")
    return float(v)


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6):
    """``(fig, axes)`` with a size per panel; use this rather than ``plt.subplots``."""
    ncols, nrows = _panel_count(ncols, "ncols"), _panel_count(nrows, "nrows")
    width, height = _panel_inches(width, "width"), _panel_inches(height, "height")
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, constrained_layout=True)
    return fig, axes.ravel() if axes.size > 1 else axes[0, 0]


def save_figure(fig, path: str | Path) -> None:
    """Save as PNG without metadata (byte-identical across runs) and close the figure."""
    from matplotlib.figure import Figure
    if not isinstance(fig, Figure):
        raise TypeError(f"save_figure: fig must be a matplotlib Figure (from new_figure); got "
                        f"{type(fig).__name__}")
    if not isinstance(path, (str, Path)) or not str(path):
        raise TypeError(f"save_figure: path must be a file path (str or Path); got "
                        f"{type(path).__name__}")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def rate_study_panel(ax, study: dict, ylabel: str, xlabel: str = "width m") -> None:
    """A width study on log-log axes (``RateStudy.to_json()``): every seed (dots), the mean
    per width, the fitted slope with its interval and the predicted rate, both through the
    first mean."""
    from matplotlib.axes import Axes
    if not isinstance(ax, Axes):
        raise TypeError(f"rate_study_panel: ax must be matplotlib Axes (from new_figure); got "
                        f"{type(ax).__name__}")
    keys = ("widths", "distances", "interval", "slope", "predicted")
    if not isinstance(study, dict) or any(k not in study for k in keys):
        raise TypeError("rate_study_panel: study must be a RateStudy's to_json() dict (keys "
                        f"{', '.join(keys)})")
    if not isinstance(ylabel, str) or not isinstance(xlabel, str):
        raise TypeError("rate_study_panel: ylabel and xlabel must be text")
    try:
        w, D = np.asarray(study["widths"], float), np.asarray(study["distances"], float)
        lo, hi = (float(v) for v in study["interval"])
        slope, pred = float(study["slope"]), float(study["predicted"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rate_study_panel: study holds non-numbers ({exc})") from None
    if D.ndim != 2 or w.ndim != 1 or D.shape[0] != w.size or w.size < 2 \
            or not (np.all(np.isfinite(w)) and np.all(w > 0) and np.all(np.isfinite(D))
                    and np.all(D > 0) and np.isfinite([lo, hi, slope, pred]).all()):
        raise ValueError("rate_study_panel: study needs positive finite widths (n,), "
                         "distances (n, seeds) and finite slope, interval and predicted")
    mean = D.mean(axis=1)
    ax.loglog(w, D, ".", color="0.6", ms=3)
    ax.loglog(w, mean, "o", color="C0", label="mean over seeds")
    ax.loglog(w, mean[0] * (w / w[0]) ** slope, "-", color="C0",
              label=f"fit: slope {slope:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    ax.loglog(w, mean[0] * (w / w[0]) ** pred, "--", color="k", label=f"predicted {pred:+g}")
    ax.set_xlabel(xlabel), ax.set_ylabel(ylabel), ax.legend()


def sample_lines(ax, x, radius: float) -> None:
    """The sample lines u x_j - v = 0 (theta = atan(x_j) mod pi) of the particle plane of
    a 1-D ReLU network (Williams et al. 2019), drawn to ``radius``."""
    for xj in np.atleast_1d(x):
        v = np.array([np.cos(np.arctan(xj)), np.sin(np.arctan(xj))]) * radius
        ax.plot([-v[0], v[0]], [-v[1], v[1]], color="0.75", lw=0.8, zorder=0)


def particle_picture(ax, r, theta, x) -> None:
    """Neurons of a 1-D ReLU network drawn at |r| d(theta) (canonical coordinates, claims
    W2a-W2h), red for r > 0 and blue for r < 0, with the sample lines of the inputs ``x``."""
    r, theta = np.atleast_1d(r), np.atleast_1d(theta)
    sample_lines(ax, x, 1.1 * (np.max(np.abs(r)) if r.size else 1.0))
    col = np.where(r > 0, "tab:red", "tab:blue")
    ax.scatter(np.abs(r) * np.cos(theta), np.abs(r) * np.sin(theta), c=col, s=12)
    ax.set_aspect("equal"), ax.set_xlabel("u"), ax.set_ylabel("v")
