"""NumPy / SciPy / mpmath side of the suite: particle systems, training dynamics,
quadrature references.  Knows nothing of SymPy and never imports ``derivations`` or
``verify`` (see docs/architecture.md)."""
