"""Reproducible randomness: every stream is a ``numpy.random.Generator`` spawned from
one integer seed and a tuple of names, so one seed determines a run bit for bit and
different purposes (particles, data, noise) get independent streams."""
from __future__ import annotations

import zlib

import numpy as np

__all__ = ["make_rng"]


def _key(name: str | int) -> int:
    return int(name) if isinstance(name, (int, np.integer)) else zlib.crc32(str(name).encode())


def make_rng(seed: int, *names: str | int) -> np.random.Generator:
    """Generator for stream ``names`` under ``seed``: ``make_rng(0, "H1b", "particles")``.

    Streams with different names are statistically independent (SeedSequence spawn keys);
    the same ``(seed, names)`` always gives the same numbers."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(int(seed), spawn_key=tuple(_key(n) for n in names))))

