"""SymPy derivations of the closed forms of the three papers, from the definitions.

Pure functions returning SymPy objects plus the steps worth showing in a report.  No
numpy, no randomness; never imports ``numerics`` or ``verify`` (docs/architecture.md)."""
