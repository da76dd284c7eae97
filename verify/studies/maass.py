"""Maass Martinez & Fontbona (2024): the settings, instances and statistics that the claims
M1a-M1e and the Maass experiments share (docs/conventions.md, section 3): the N-trend
sizes, the reference experiment, the drawn groups and units, the rate fits of the
N-trends, and the E^G discovery heuristic's runs."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.linalg import subspace_angles
from scipy.stats import t as student_t

from numerics.equivariant import (HiddenLayerUnit, LogisticUnit, SGDConfig, TanhUnit, UVUnit,
                                  discover_fixed_space, init_particles, make_teacher,
                                  train_schemes)
from numerics.groups import (GroupAction, c2_swap, c2_swap_uv, cyclic_network_action,
                             cyclic_shifts, permutation_action, sign_flips, uv_action,
                             symmetric_group_matrices)
from verify.kit import RunContext, SubCheck, loglog_slope

SOURCE = "Maass Martinez & Fontbona (NeurIPS 2024), arXiv 2405.19995"
EXACT_TOL = 1e-12
EXACT_REASON = ("both sides are sums of at most |G| N terms of size <= 1 evaluated in "
                "float64: rounding <= |G| N eps ~ 1e-13; 1e-12 is the exactness bar")
#: per-run false-alarm budget of one statistical sub-check: 20 seeds x <= 5 statistical
#: sub-checks per claim x 1e-4 <= 0.01 (20 seeds pass together with probability >= 0.99)
ALPHA_STAT = 1e-4


# ----------------------------------------------------------------------------------------
# settings shared by the claims and the experiments
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrendSettings:
    """Sizes of the N-trend runs (see the module docstring).  ``precision`` is that of the
    unit evaluations in the SGD step (``numerics.equivariant.SGDConfig``): the trends are
    statistical, and float32's per-step rounding is four to five decades below the step's
    own batch fluctuation (bound in ``numerics.equivariant``; measured effect on the trend
    statistics in the tests); every exactness sub-check runs in float64."""
    Ns: tuple[int, ...]
    T: float
    replicates: int
    beta: float = 1e-6
    precision: str = "float32"

    def steps(self, N: int) -> int:
        return max(1, int(round(N * self.T)))


QUICK = TrendSettings(Ns=(10, 20, 50, 100, 200), T=2.0, replicates=8)
#: the full profile runs the paper's sizes: horizon T = 20 and N up to 5000 (a run costs
#: ~ N^2 T unit evaluations, B |G| N dY per step for N T steps).  Measured on 2 shared
#: cores (float32 trends, M1c's three schemes on one draw): M1c check 4.7 CPU-min, its
#: control 6.3; M1d check 1.5, its control about as much.  Replicates: 4 up to N = 1000,
#: 2 at 2000, 1 at 5000 (the rate fits over 31 points had SE 0.03-0.06 at seed 0: a true
#: N^-1/2 trend fails the <= -1/4 test with probability 1e-8 to 7e-5, within ALPHA_STAT)
FULL = TrendSettings(Ns=(10, 20, 50, 100, 200, 500, 1000, 2000, 5000), T=20.0, replicates=4)


def settings(ctx: RunContext) -> TrendSettings:
    """The N-trend sizes the claim declares for the run's profile (``trend_Ns``,
    ``trend_T``, ``trend_replicates``; see :data:`TREND_SIZES`)."""
    return TrendSettings(Ns=tuple(ctx.size("trend_Ns")), T=float(ctx.size("trend_T")),
                         replicates=int(ctx.size("trend_replicates")))


#: the N-trend sizes per profile, as a claim declares them (``Claim(sizes=...)``)
TREND_SIZES = {p: {"trend_Ns": s.Ns, "trend_T": s.T, "trend_replicates": s.replicates}
               for p, s in (("quick", QUICK), ("full", FULL))}


def reference() -> tuple[GroupAction, LogisticUnit]:
    """The reference experiment: C_2 swap on R^2, sigma_*(x, z) = logistic(z x), z in R^{2x2}."""
    return group_action("C2"), LogisticUnit(2, 2)


def cyclic_net() -> tuple[GroupAction, HiddenLayerUnit]:
    """C_3 acting on a single-hidden-layer unit W tanh(A^T x + B) (parameter sharing)."""
    return group_action("C3 net"), HiddenLayerUnit(3)


@lru_cache(maxsize=None)
def group_action(key: str) -> GroupAction:
    makers = {"C2": c2_swap, "C3": lambda: cyclic_shifts(3),
              "D3": lambda: permutation_action("dihedral", 3),
              "S3": lambda: permutation_action("symmetric", 3),
              "D4": lambda: permutation_action("dihedral", 4),
              "flips3": lambda: sign_flips(3), "C3 net": lambda: cyclic_network_action(3),
              "C2 uv": c2_swap_uv,
              "S3 uv": lambda: uv_action(symmetric_group_matrices(3),
                                         symmetric_group_matrices(3), name="S3 on (u, v)")}
    return makers[key]()


#: (name, group key, unit, alpha for dynamics): jointly equivariant pairs.  The C3
#: hidden-layer unit uses alpha = 5: with alpha = 50 its step alpha/N is so large that the
#: dynamics are chaotic and rounding differences between algebraically equal updates grow
#: to O(1) (the identities are per-step algebra, not a stability statement).
EXAMPLES = (("C2 swap, logistic(zx) [reference]", "C2", LogisticUnit(2, 2), 50.0),
            ("C3 shifts, logistic(zx)", "C3", LogisticUnit(3, 3), 50.0),
            ("D3, logistic(zx)", "D3", LogisticUnit(3, 3), 50.0),
            ("S3, tanh(zx)", "S3", TanhUnit(3, 3), 50.0),
            ("D4, logistic(zx)", "D4", LogisticUnit(4, 4), 50.0),
            ("sign flips {+-1}^3, tanh(zx)", "flips3", TanhUnit(3, 3), 50.0),
            ("C2 swap, paper's (u, v) unit v s(u.x/2)", "C2 uv", UVUnit(2, 2), 50.0),
            ("S3, paper's (u, v) unit", "S3 uv", UVUnit(3, 3), 50.0),
            ("C3 hidden layer W tanh(A^T x + B)", "C3 net", HiddenLayerUnit(3), 5.0))


def examples() -> list[tuple[str, GroupAction, Any]]:
    """Group / jointly equivariant unit pairs used by the exactness checks."""
    return [(name, group_action(key), u) for name, key, u, _ in EXAMPLES]


def example(i: int) -> tuple[str, GroupAction, Any, float]:
    name, key, u, alpha = EXAMPLES[i]
    return name, group_action(key), u, alpha


def replicates(s: TrendSettings, N: int) -> int:
    return s.replicates if N <= 1000 else (2 if N <= 2000 else 1)


def trend_slope(Ns, vals) -> float:
    return loglog_slope(Ns, vals, floor=1e-300)  # an exact zero counts as 1e-300


def scaled_error(a, b) -> float:
    """max |a - b| / max(1, max |b|): relative for large values, absolute below 1."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max())))


NUMPY = ("numpy",)  # lambdify into plain NumPy


# ----------------------------------------------------------------------------------------
# statistics of an N-trend
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RateFit:
    """Least-squares fit of log(value) = c + slope log(N) over all replicate points."""
    slope: float
    se: float
    df: int

    def false_alarm(self, predicted: float, threshold: float) -> float:
        """P(fitted slope > threshold) if the true slope is ``predicted`` (t distribution
        with the fit's standard error): the chance that a true O(N^predicted) trend fails
        the test ``slope <= threshold``."""
        if self.se <= 0:
            return 0.0 if predicted <= threshold else 1.0
        return float(student_t.sf((threshold - predicted) / self.se, self.df))


def fit_rate(Ns, samples) -> RateFit:
    """Fit over every replicate: ``samples[k]`` are the replicate values at ``Ns[k]``."""
    x = np.concatenate([np.full(len(v), np.log(n)) for n, v in zip(Ns, samples)])
    y = np.log(np.maximum(np.concatenate([np.asarray(v, float) for v in samples]), 1e-300))
    A = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    df = max(1, len(x) - 2)
    s2 = float(resid @ resid) / df
    se = float(np.sqrt(s2 / np.sum((x - x.mean()) ** 2)))
    return RateFit(float(coef[1]), se, df)


#: the a-priori rate of a finite-N fluctuation (CLT): RMD = O(N^-1/2)
PREDICTED_RATE = -0.5
#: the test "shrinks with N": fitted slope <= -1/4, halfway between the predicted -1/2
#: and "no shrinking" (0)
RATE_THRESHOLD = -0.25


def shrink_subcheck(name: str, Ns, samples) -> tuple[SubCheck, RateFit]:
    """'Shrinks with N': the slope fitted over all replicates is <= -1/4; the false-alarm
    probability (a true N^-1/2 trend failing) is stated from the fit's standard error."""
    fit = fit_rate(Ns, samples)
    fa = fit.false_alarm(PREDICTED_RATE, RATE_THRESHOLD)
    return SubCheck(f"{name}: fitted log-log rate in N (must be <= -1/4)", fit.slope,
                    RATE_THRESHOLD,
                    f"a finite-N fluctuation shrinks like N^-1/2 (CLT); the slope fitted over "
                    f"{fit.df + 2} replicate points (SE {fit.se:.2g}) must be <= -1/4, halfway "
                    f"to 'no shrinking'; false-alarm probability if the true rate is -1/2: "
                    f"{fa:.1e}", passed=bool(fit.slope <= RATE_THRESHOLD), unit="slope"), fit


def plateau_subcheck(name: str, Ns, samples, floor: float) -> tuple[SubCheck, RateFit]:
    """'Does not shrink': the fitted slope is > -1/4 and every replicate mean >= floor."""
    fit = fit_rate(Ns, samples)
    means = [float(np.mean(v)) for v in samples]
    ok = fit.slope > RATE_THRESHOLD and min(means) >= floor
    return SubCheck(f"{name}: min over N of the mean RMD (must be >= the bound, rate > -1/4)",
                    min(means), floor,
                    f"a different mean-field limit: the discrepancy must stay >= {floor} at "
                    f"every N and its fitted rate ({fit.slope:.3g}, SE {fit.se:.2g}) must be "
                    "> -1/4", passed=bool(ok), unit="relative"), fit


# ----------------------------------------------------------------------------------------
# M1a: Q_G Phi_mu = Phi_{mu^G}
# ----------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------
# the N-trends of claim M1c (and the maass-rmd experiment)
# ----------------------------------------------------------------------------------------
def trend_streams(rng: np.random.Generator, s: TrendSettings):
    """The streams of one N-trend, spawned from ``rng`` in a fixed order: the teacher's,
    then per N and replicate the four streams (init, data, noise, g)."""
    teacher_rng, *per_n = rng.spawn(1 + len(s.Ns))
    return teacher_rng, [[tuple(r.spawn(4)) for r in pn.spawn(replicates(s, N))]
                         for N, pn in zip(s.Ns, per_n)]


def scheme_trend(teacher_kind: str, s: TrendSettings, rng: np.random.Generator,
                 schemes=("vanilla", "da_orbit", "fa")) -> dict:
    """RMD between the final particle measures of ``schemes`` (common random numbers:
    same i.i.d. initialization, data and noise) for every N; ``samples[pair][k]`` holds
    the replicate values at ``Ns[k]`` and ``rmd[pair]`` their means.  ``rng``: the root
    of the trend's streams (:func:`trend_streams`)."""
    from verify import formulas
    G, u = reference()
    teacher_rng, streams = trend_streams(rng, s)
    teacher = make_teacher(teacher_kind, u, G, teacher_rng)
    pairs = [(a, b) for i, a in enumerate(schemes) for b in schemes[i + 1:]]
    samples = {f"{a}|{b}": [] for a, b in pairs}
    for N, reps in zip(s.Ns, streams):
        acc = {k: [] for k in samples}
        for init_rng, data_rng, noise_rng, g_rng in reps:
            th0 = init_particles("iid", N, u, G, init_rng)
            cfg = SGDConfig(steps=s.steps(N), beta=s.beta, precision=s.precision)
            fin = train_schemes(u, G, th0, teacher, tuple(schemes), cfg, data_rng, noise_rng,
                                g_rng)
            for a, b in pairs:
                acc[f"{a}|{b}"].append(float(formulas.rmd(fin[a], fin[b])))
        for k in samples:
            samples[k].append(acc[k])
    return {"Ns": list(s.Ns), "samples": samples, "teacher": teacher_kind,
            "rmd": {k: [float(np.mean(v)) for v in vals] for k, vals in samples.items()}}


# ----------------------------------------------------------------------------------------
# the E^G discovery heuristic (claim M1e)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HeuristicSettings:
    N: int
    T: float
    rmd_threshold: float = 0.01
    eigen_threshold: float = 1e-3
    max_iter: int = 6
    scheme: str = "da_orbit"


H_QUICK = HeuristicSettings(N=100, T=5.0)
H_FULL = HeuristicSettings(N=500, T=10.0)
#: the heuristic as the paper states it: free (vanilla, i.i.d. batches) training
H_VANILLA = HeuristicSettings(N=200, T=2.0, rmd_threshold=0.05, eigen_threshold=0.02,
                              scheme="vanilla")


def heuristic_run(G: GroupAction, u, teacher_kind: str, hs: HeuristicSettings,
                  teacher_rng: np.random.Generator, heuristic_rng: np.random.Generator,
                  E: np.ndarray | None = None) -> dict:
    """Run the discovery heuristic (beta = 0: free noiseless training with ``hs.scheme``)
    and compare its subspace with E^G (``E``: orthonormal basis; default the numerics');
    the teacher is drawn from ``teacher_rng``, the heuristic's particles, data and noise
    from ``heuristic_rng``."""
    from verify import formulas
    teacher = make_teacher(teacher_kind, u, G, teacher_rng)
    cfg = SGDConfig(steps=max(1, int(hs.N * hs.T)), beta=0.0)
    basis, its, conv = discover_fixed_space(
        u, G, teacher, cfg, hs.N, heuristic_rng,
        rmd_threshold=hs.rmd_threshold, eigen_threshold=hs.eigen_threshold,
        max_iter=hs.max_iter, scheme=hs.scheme, distance=formulas.rmd)
    E = G.fixed_space_basis() if E is None else E

    def angles(B):
        return subspace_angles(B, E).tolist() if B.shape[1] else []
    iters = [{"j": j, "dim": it.basis.shape[1], "rmd_escape": it.rmd_escape,
              "spectrum": it.escape_spectrum[:6].tolist(), "added": it.added,
              "angles_to_EG": angles(it.basis)} for j, it in enumerate(its)]
    ang = angles(basis) if basis.shape[1] == E.shape[1] else [np.pi / 2]
    return {"converged": conv, "dim_found": basis.shape[1], "dim_EG": E.shape[1],
            "max_angle": float(max(ang)) if ang else np.pi / 2, "iterates": iters,
            "teacher": teacher_kind, "scheme": hs.scheme, "N": hs.N, "T": hs.T}


def heuristic_examples() -> list[tuple[str, GroupAction, object]]:
    return [("reference (C2 swap, logistic)", *reference()),
            ("C3 shifts, logistic on R^3", group_action("C3"), LogisticUnit(3, 3))]
