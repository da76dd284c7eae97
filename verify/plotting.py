"""Deterministic matplotlib output (Agg backend, no timestamps in the PNG)."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from verify._atomic import atomic_write_bytes  # noqa: E402

__all__ = ["plt", "new_figure", "save_figure", "sample_lines", "particle_picture"]

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
