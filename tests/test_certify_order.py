"""One seed determines a certified run bit for bit: the Arb balls (midpoint and radius) of
the certified sub-checks do not depend on what ran earlier in the process.

FLINT caches the Gauss-Legendre nodes of ``acb.integral`` and constants (pi, log 2, ...)
per thread at the highest precision asked so far and rounds them to later requests, so
without ``working_precision``'s and ``ball_cache``'s resets a ball's last bits follow the
process's history (docs/certification.md).  The tests run a computation, then computations
at 1024 bits that leave every cache wide, then the same computation again."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import pytest

pytest.importorskip("flint")

from numerics import arb_quadrature as aq  # noqa: E402
from verify import certify  # noqa: E402
from verify.runner import Task, run_task  # noqa: E402


def _widen_flint_caches() -> None:
    """Integrals at 1024 bits that leave FLINT's node cache wide at many degrees (the
    polynomials: the low degrees; the oscillating integrands: the high ones) and its
    constants (pi, log 2, Euler's gamma) at 1024 bits, the working precision restored."""
    flint = aq.flint_module()
    old = flint.ctx.prec
    flint.ctx.prec = 1024
    try:
        for m in [*range(64), *range(64, 800, 16)]:
            flint.acb.integral(lambda z, _an, m=m: z ** m, 0, 1)
        for w in (1, 5, 20, 60, 200):
            flint.acb.integral(lambda z, _an, w=w: (z * w).sin() / (1 + z * z), 0, 3)
        flint.arb.pi(), flint.arb.const_log2(), flint.arb.const_euler(), flint.arb(3).gamma()
    finally:
        flint.ctx.prec = old


def _bits(b: Any) -> tuple[str, str]:
    """A ball's midpoint and radius, exactly (their binary digits, not a rounded print)."""
    return b.mid().man_exp(), b.rad().man_exp()


@contextlib.contextmanager
def _without_resets() -> Iterator[None]:
    """The negative control: FLINT's cache reset disabled, so a history shows in the bits."""
    flint = aq.flint_module()

    class _Ctx:
        def __getattr__(self, name: str) -> Any:
            return getattr(flint.ctx, name)

        def __setattr__(self, name: str, value: Any) -> None:
            setattr(flint.ctx, name, value)

        def cleanup(self) -> None:
            pass

    class _Flint:
        ctx = _Ctx()

        def __getattr__(self, name: str) -> Any:
            return getattr(flint, name)

    original = aq.flint_module
    aq.flint_module = lambda: _Flint()  # type: ignore[assignment]
    try:
        yield
    finally:
        aq.flint_module = original  # type: ignore[assignment]


BALLS = {"K_RF(0.3, -0.7), uniform init": lambda: aq.rf_kernel_ball(0.3, -0.7),
         "E[(u.e)_+] on S^49": lambda: aq.positive_part_mean_ball(50)}


@pytest.mark.parametrize("name", sorted(BALLS))
def test_a_ball_has_the_same_bits_after_wider_computations(name: str) -> None:
    first = _bits(BALLS[name]())
    _widen_flint_caches()
    assert _bits(BALLS[name]()) == first, f"{name}: the bits follow FLINT's cache history"


def test_the_balls_follow_the_history_without_the_reset() -> None:
    """Without the reset the same two balls differ after the wide computations: the test
    above can fail, and the reset is what makes the bits reproducible."""
    aq.flint_module().ctx.cleanup()
    with _without_resets():
        firsts = {name: _bits(f()) for name, f in BALLS.items()}
        _widen_flint_caches()
        seconds = {name: _bits(f()) for name, f in BALLS.items()}
    assert firsts != seconds, ("no ball changed with FLINT's caches wide: FLINT no longer "
                               "rounds cached nodes/constants (docs/certification.md)")


def test_ball_cache_validates_and_clears() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        certify.ball_cache(0)
    with pytest.raises(ValueError, match="maxsize"):
        certify.ball_cache(True)  # type: ignore[arg-type]
    calls = []

    @certify.ball_cache(maxsize=4)
    def square_root(n: int) -> Any:
        calls.append(n)
        with certify.working_precision(128):
            return aq.flint_module().arb(n).sqrt()
    assert _bits(square_root(2)) == _bits(square_root(2)) and calls == [2]
    certify.clear_ball_caches()
    square_root(2)
    assert calls == [2, 2]


def _errors(claim_id: str) -> list[tuple[str, float]]:
    """The claim's sub-checks' (name, error) at the quick profile, seed 0, computed afresh
    (the memoized definition balls cleared first)."""
    certify.clear_ball_caches()
    result = run_task(Task("claim", claim_id, "quick", 0))
    assert result.error is None, result.error
    return [(s["name"], s["error"]) for s in result.evidence.details["subchecks"]]


@pytest.mark.parametrize("claim_id", ["W3c", pytest.param("H1f", marks=pytest.mark.slow)])
def test_a_certified_claim_has_the_same_bits_after_wider_computations(claim_id: str) -> None:
    """W3c (the kernels' Arb quadratures; ~5 s) and H1f (the sphere constant's; ~10 s):
    without the reset, 2 and 3 of their certified errors change in the 9th digit after
    the wider computations."""
    first = _errors(claim_id)
    _widen_flint_caches()
    assert _errors(claim_id) == first


@pytest.mark.slow
def test_two_certified_claims_in_both_orders() -> None:
    """H1e then H1f and H1f then H1e in one process: each claim's sub-check errors are the
    same floats (H1f after H1e differed in the 9th digit before the reset; ~30 s)."""
    h1f_first = _errors("H1f")
    h1e_second = _errors("H1e")
    h1e_first = _errors("H1e")
    h1f_second = _errors("H1f")
    assert h1f_first == h1f_second
    assert h1e_first == h1e_second
