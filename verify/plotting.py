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


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6):
    """``(fig, axes)`` with a size per panel; use this rather than ``plt.subplots``."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows),
                             squeeze=False, constrained_layout=True)
    return fig, axes.ravel() if axes.size > 1 else axes[0, 0]


def save_figure(fig, path: str | Path) -> None:
    """Save as PNG without metadata (byte-identical across runs) and close the figure."""
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
