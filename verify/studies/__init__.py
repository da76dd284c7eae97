"""Claim-level studies: simulations, references and width studies that a claim and an
experiment (or two claims) share.  Public and validated; claims and experiments import
them from here, never from a claim module (docs/architecture.md)."""
