"""Real symbolic vectors and matrices named entry by entry, shared by the Maass derivations
(``derivations.maass`` exports them; ``derivations.maass_projection`` reads them here, so
the two modules do not import each other)."""
from __future__ import annotations

import sympy as sp

__all__ = ["matrix_symbols", "vector_symbols"]


def matrix_symbols(name: str, rows: int, cols: int) -> sp.Matrix:
    """A real symbolic matrix z_{ij} (i, j from 1)."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}{i + 1}{j + 1}", real=True))


def vector_symbols(name: str, n: int) -> sp.Matrix:
    """A real symbolic column vector x_i (i from 1)."""
    return sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"{name}{i + 1}", real=True))
