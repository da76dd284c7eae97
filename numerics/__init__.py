"""NumPy / SciPy / mpmath side of the suite: particle systems, training dynamics,
quadrature references.  Knows nothing of SymPy and never imports ``derivations`` or
``verify`` (see docs/architecture.md).

The public surface is each module's ``__all__``: those names are documented, validate
their input (shapes, types, domains, finiteness, dps, sizes refused at once) and return an
accurate value or raise ``ValueError``/``TypeError`` naming the argument; every other name
carries a leading underscore.  ``numerics.validation`` is the shared vocabulary for that
validation and for exact rescaling (powers of two, error-free products)."""
