"""Jointly equivariant units and noisy SGD for the four training schemes of Maass Martinez
& Fontbona (2024): vanilla, data augmentation (DA), feature averaging (FA) and equivariant
architectures (EA) (docs/conventions.md, section 3; claims M1a-M1e).

The public face of two topic modules:

- :mod:`numerics.equivariant_units`: the jointly equivariant units sigma_*(x, theta)
  (logistic, tanh, linear, norm-gated, hidden-layer, (u, v)), their vector-Jacobian products, the
  model Phi_mu and its feature average Q_G Phi_mu;
- :mod:`numerics.equivariant_sgd`: teachers and initial particles, noisy SGD for the
  schemes ``vanilla``, ``da_random``, ``da_orbit``, ``fa``, ``ea`` (one scheme,
  :func:`train`, or several on common random numbers, :func:`train_schemes`; float64 or a
  float32 unit evaluation for long statistical runs) and the data-driven discovery of
  E^G (:func:`discover_fixed_space`).
"""
from __future__ import annotations

from numerics.equivariant_sgd import (NOISE_MODES, PRECISIONS, SCHEMES, STUDENT_STD, TEACHERS,
                                      X_STD, HeuristicIterate, SGDConfig, discover_fixed_space,
                                      init_particles, make_teacher, scheme_gradient, train,
                                      train_schemes)
from numerics.equivariant_units import (NORM_GATES, UV_ACTIVATIONS, HiddenLayerUnit,
                                        LinearUnit, LogisticUnit, NormGatedUnit, TanhUnit, Unit,
                                        UVUnit, model_output, symmetrized_output)
from numerics.validation import DivergenceError

__all__ = ["Unit", "LogisticUnit", "TanhUnit", "LinearUnit", "HiddenLayerUnit", "UVUnit",
           "NormGatedUnit", "UV_ACTIVATIONS", "NORM_GATES", "SGDConfig",
           "SCHEMES", "NOISE_MODES", "PRECISIONS", "TEACHERS", "model_output", "symmetrized_output",
           "make_teacher", "init_particles", "train", "train_schemes", "DivergenceError", "X_STD",
           "STUDENT_STD", "HeuristicIterate", "discover_fixed_space", "scheme_gradient"]
