"""The bridge and user-facing surface of the suite: the claim registry
(``verify.claims``), verified formulas (``verify.formulas``), experiments, the report
and the command line (``python -m verify``)."""

__version__ = "0.1.0"
