"""Deterministic matplotlib output (Agg backend, no timestamps in the PNG)."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from verify._atomic import atomic_write_bytes  # noqa: E402

__all__ = ["plt", "new_figure", "save_figure"]

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
