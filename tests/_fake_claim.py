"""A cheap, fully deterministic claim for testing the registry, CLI and report machinery
without running an expensive real check."""
from __future__ import annotations

import numpy as np
import sympy as sp

from verify.claims import Claim, Derivation, Outcome, RunContext, Step, Table

x = sp.Symbol("x", positive=True)


def _derive() -> Derivation:
    expr = sp.integrate(sp.exp(-x), (x, 0, sp.oo))
    return Derivation([Step("An integral, $\\int_0^\\infty e^{-x}dx$:", expr, lhs="I")],
                      {"I": expr})


def _check(ctx: RunContext, value: float) -> Outcome:
    rng = ctx.rng("samples")
    est = float(np.mean(rng.exponential(size=1000) > -1.0))  # = 1 exactly
    err = abs(est - value)
    return Outcome("I vs Monte Carlo", err, 1e-12, "exact", details={"n": 1000},
                   tables=[Table("t", ["a", "b"], [[1, 2.5]])],
                   artifacts={"value": value})


def _figures(ev, outdir):
    from verify.plotting import new_figure, save_figure
    fig, ax = new_figure()
    ax.plot([0, 1], [0, ev.artifacts["value"]])
    save_figure(fig, outdir / "T0a_line.png")
    return [("T0a_line.png", "a line")]


FAKE = Claim(id="T0a", title="Fake claim", source="tests", statement="$I = 1$",
             derive=_derive, check=lambda ctx: _check(ctx, 1.0),
             negative_control=lambda ctx: _check(ctx, 1.5),
             negative_control_description="I = 1.5", figures=_figures)




BROKEN = Claim(id="T0b", title="Broken claim", source="tests", statement="$0$",
               derive=_derive, check=lambda ctx: (_ for _ in ()).throw(RuntimeError("boom")),
               negative_control=lambda ctx: _check(ctx, 2.0),
               negative_control_description="-")
