"""Gradient checks that ship with the library: finite differences and the Taylor test.

Taylor test (pyadjoint's ``taylor_test``): for a direction ``h`` and steps ``ε_k = ε_0 2^-k``

    r_k = | J(x + ε_k h) − J(x) − ε_k ∇J(x)·h |

is ``O(ε²)`` when the gradient is right and only ``O(ε)`` when it is wrong, so the
observed rates ``log2(r_k / r_(k+1))`` approach 2.

:func:`check_grad` asserts (for tests), :func:`check_gradient` reports (for users, and
``fesens sensitivity --check``): both compare ``∇f·h`` with finite differences whose step
and tolerance come from the round-off measured on ``f`` itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fesens.ad.api import value_and_grad
from fesens.ad.pytree import as_leaf_value, flatten


def _random_direction(x, rng):
    leaves, unflatten = flatten(x)
    return unflatten([rng.standard_normal(np.shape(leaf)) if isinstance(leaf, np.ndarray)
                      else float(rng.standard_normal()) for leaf in leaves])


def _axpy(x, eps, h):
    xs, unflatten = flatten(x)
    hs, _ = flatten(h)
    return unflatten([as_leaf_value(a) + eps * b for a, b in zip(xs, hs, strict=True)])


def _dot(a, b) -> float:
    la, _ = flatten(a)
    lb, _ = flatten(b)
    return float(sum(np.sum(np.asarray(p) * np.asarray(q)) for p, q in zip(la, lb,
                                                                            strict=True)))


def _unit(x, h, size: float | None = None) -> float:
    """The step along ``h`` that moves ``x`` by ``size`` in its largest entry (default
    ``max(1, |x|_∞)``, the scale of ``x``)."""
    if size is None:
        size = max(1.0, max(np.max(np.abs(v), initial=0.0) for v in flatten(x)[0]))
    return size / max(max(np.max(np.abs(v), initial=0.0) for v in flatten(h)[0]), 1e-300)


@dataclass
class TaylorResult:
    """Outcome of :func:`taylor_test`.

    Attributes
    ----------
    steps, residuals : numpy.ndarray
        ``ε_k`` and ``r_k``.
    rates : numpy.ndarray
        ``log2(r_k / r_(k+1))``.
    """

    steps: np.ndarray
    residuals: np.ndarray
    rates: np.ndarray

    @property
    def rate(self) -> float:
        """The smallest observed rate (≈ 2 when the gradient is right)."""
        return float(np.min(self.rates))

    def table(self) -> str:
        lines = ["      step        remainder     rate"]
        for k, (e, r) in enumerate(zip(self.steps, self.residuals, strict=True)):
            rate = f"{self.rates[k - 1]:8.3f}" if k else "        "
            lines.append(f"  {e:10.3e}  {r:14.6e}  {rate}")
        return "\n".join(lines)


#: First Taylor step, as a fraction of the scale of ``x`` along ``h``.
TAYLOR_STEP = 1e-2


def _remainders(fun: Callable, x, h, J0: float, slope: float, steps: np.ndarray, *,
                noise: float) -> TaylorResult:
    """The Taylor remainders of ``fun`` at ``steps`` along ``h`` given ``J0 = fun(x)`` and
    the slope ``∇J·h`` to test; a rate whose smaller remainder is below ``noise`` is
    ``inf`` (round-off, not truncation)."""
    residuals = np.array([abs(float(fun(_axpy(x, e, h))) - J0 - e * slope) for e in steps])
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(residuals[1:] > noise, np.log2(residuals[:-1] / residuals[1:]),
                         np.inf)
    return TaylorResult(steps, residuals, rates)


def taylor_test(fun: Callable, x, direction=None, *, step: float | None = None,
                n_steps: int = 5, seed: int = 0, verbose: bool = True) -> TaylorResult:
    """Second-order Taylor remainder convergence of ``fun`` at ``x`` along ``direction``.

    Parameters
    ----------
    fun : callable
        Scalar function of one argument (array, number, or a dict/list/tuple of them).
    x
        The point.
    direction : optional
        Same structure as ``x``; random (seeded) by default.
    step : float, optional
        First step ``ε_0``; default ``1e-2 · max(1, |x|_∞) / |h|_∞``.
    n_steps : int
        Number of steps, each half the one before.
    seed : int
        Seed of the random direction.
    verbose : bool
        Print the remainder table and the rate.

    Returns
    -------
    TaylorResult
        The steps, remainders and rates.
    """
    rng = np.random.default_rng(seed)
    h = _random_direction(x, rng) if direction is None else direction
    J0, dJ = value_and_grad(fun)(x)
    if step is None:
        step = TAYLOR_STEP * _unit(x, h)
    # Remainders at round-off level (a function linear along h) carry no rate: report inf.
    result = _remainders(fun, x, h, float(J0), _dot(dJ, h), step * 0.5 ** np.arange(n_steps),
                         noise=1e-13 * max(abs(float(J0)), 1e-300))
    if verbose:
        print(result.table())
        print(f"  convergence rate: {result.rate:.3f} (2 when the gradient is right)")
    return result


#: Noise probe: ``f`` at ``x + j δ h``, ``j = 0 .. 4``, with ``δ`` this fraction of the scale of
#: ``x`` (so small that the smooth part of ``f`` vanishes from the 3rd and 4th differences).
NOISE_PROBE = 1e-6
#: First finite-difference step, as a fraction of the scale of ``x`` along ``h``.
TRIAL_STEP = 1e-3
#: Multiple of the noise's standard deviation a value may be off by (the 5-point formula
#: amplifies value errors of at most ``σ`` by ``1.5 σ / ε``; the estimate of ``σ`` from five
#: values is itself uncertain).
NOISE_FACTOR = 5.0


def _noise(g, f0: float, delta: float) -> float:
    """The standard deviation of the round-off in ``g`` (``t ↦ f(x + t h)``), from its 3rd
    and 4th differences at the spacing ``delta`` (Moré and Wild's ECnoise, on five values);
    never below the rounding of ``f0`` itself."""
    values = np.array([f0, *(g(j * delta) for j in range(1, 5))])
    size = max(float(np.max(np.abs(values))), np.finfo(float).tiny)  # no overflow in squares
    estimates = []
    for order in (3, 4):
        differences = np.diff(values / size, order)
        gamma = math.factorial(order) ** 2 / math.factorial(2 * order)
        estimates.append(size * math.sqrt(gamma * float(np.mean(differences ** 2))))
    return max(*estimates, 4.0 * np.finfo(float).eps * abs(f0))


def _stencil(g, eps: float) -> tuple[float, float, float]:
    """Central difference ``D1``, 5-point (Richardson) estimate ``D2`` and third
    derivative of ``g`` at 0 with step ``eps``."""
    g1, gm1, g2, gm2 = g(eps), g(-eps), g(2 * eps), g(-2 * eps)
    d1 = (g1 - gm1) / (2 * eps)
    d2 = (8 * (g1 - gm1) - (g2 - gm2)) / (12 * eps)
    third = (g2 - 2 * g1 + 2 * gm1 - gm2) / (2 * eps**3)
    return d1, d2, third


@dataclass(frozen=True)
class Difference:
    """``∇f·h`` against the finite difference of ``f`` along ``h`` (:func:`_difference`).

    Attributes
    ----------
    slope : float
        ``∇f·h`` from the gradient.
    difference : float
        The 5-point central difference ``D2`` of ``f`` along ``h``.
    step : float
        Its step along ``h``.
    noise : float
        The measured standard deviation ``σ`` of the round-off of ``f``.
    bound : float
        What round-off and truncation explain of ``|slope − difference|``.
    """

    slope: float
    difference: float
    step: float
    noise: float
    bound: float

    @property
    def agreement(self) -> float:
        """``|slope − difference| / max(|slope|, |difference|)``."""
        return abs(self.slope - self.difference) / max(abs(self.difference), abs(self.slope),
                                                       1e-300)

    @property
    def error(self) -> float:
        """The relative disagreement beyond what round-off and truncation explain."""
        return max(abs(self.slope - self.difference) - self.bound, 0.0) / max(
            abs(self.difference), abs(self.slope), 1e-300)

    def report(self) -> str:
        return (f"gradient·h = {self.slope:.10e}, finite difference = {self.difference:.10e} "
                f"(step {self.step:.1e}, bound {self.bound:.1e} from noise {self.noise:.1e} "
                "and truncation)")


def _difference(fun: Callable, x, h, f0: float, slope: float, unit: float,
                eps: float | None = None) -> Difference:
    """Finite differences of ``g(t) = fun(x + t h)`` at 0 against ``slope``:

    1. the noise ``σ`` of the values (round-off of the solves: ~1e-13 relative for one
       direct solver, several times more for another, the ``rtol`` of an iterative one)
       is estimated from the 3rd and 4th differences of ``g`` at tiny spacing;
    2. the step ``ε`` balances truncation and noise, ``ε = (3σ / |g‴|)^(1/3)`` (``g‴``
       from a trial stencil at ``TRIAL_STEP · unit``), unless ``eps`` is given;
    3. the derivative is the 5-point (Richardson) estimate ``D2``; its error bound is the
       difference from the central difference ``D1`` (the truncation left over) plus the
       noise it amplifies, ``NOISE_FACTOR · σ / ε``.
    """
    def g(t):
        return float(fun(_axpy(x, t, h)))

    sigma = _noise(g, f0, NOISE_PROBE * unit)
    step = TRIAL_STEP * unit if eps is None else eps
    d1, d2, third = _stencil(g, step)
    if eps is None and third != 0.0:
        best = min(max((3 * sigma / abs(third)) ** (1 / 3), step / 1e3), step * 1e2)
        if not step / 4 <= best <= step * 4:
            step = best
            d1, d2, third = _stencil(g, step)
    return Difference(float(slope), float(d2), float(step), float(sigma),
                      float(abs(d2 - d1) + NOISE_FACTOR * sigma / step))


def check_grad(fun: Callable, x, *, n_directions: int = 3, eps: float | None = None,
               rtol: float = 1e-5, seed: int = 0) -> float:
    """Compare ``∇f·h`` with finite differences along random directions, allowing for the
    round-off of ``f`` measured on ``f`` itself (for tests: it raises on failure;
    :func:`check_gradient` reports).

    For each direction ``h``, the noise of ``f`` along ``h``, a step that balances it
    against truncation and the 5-point difference ``D2`` with its error bound, as
    :func:`_difference` describes. The error of a direction is
    ``max(|∇f·h − D2| − bound, 0) / max(|∇f·h|, |D2|)``: a right gradient whose differences
    are blurred by round-off passes, a gradient whose error exceeds what round-off and
    truncation explain fails.

    Parameters
    ----------
    fun : callable
        Scalar function of one argument (array, number, or a dict/list/tuple of them).
    x
        The point.
    n_directions : int
        Number of random (seeded) directions ``h``.
    eps : float, optional
        Finite-difference step along ``h``; default chosen from the measured noise.
    rtol : float
        Largest accepted error.
    seed : int
        Seed of the directions.

    Returns
    -------
    float
        The largest error over the directions.

    Raises
    ------
    AssertionError
        If an error exceeds ``rtol``; the message gives both derivatives and the bound.
    """
    rng = np.random.default_rng(seed)
    f0, dJ = value_and_grad(fun)(x)
    worst, report = 0.0, ""
    for _ in range(n_directions):
        h = _random_direction(x, rng)
        found = _difference(fun, x, h, float(f0), _dot(dJ, h), _unit(x, h), eps)
        if found.error > worst:
            worst, report = found.error, found.report()
    if worst > rtol:
        raise AssertionError(
            f"gradient check failed: relative error {worst:.3e} between the gradient and "
            f"finite differences (tolerance {rtol:.1e}) beyond what the measured round-off "
            f"and truncation explain: {report}"
        )
    return worst


#: Smallest Taylor rate :func:`check_gradient` accepts: 2 for a right gradient, while the
#: remainders of a wrong one fall at rate 1 once the step is small.
MIN_RATE = 1.8
#: Taylor remainders below this multiple of the measured noise carry no rate (round-off
#: would move it by more than a tenth).
TAYLOR_NOISE = 100.0


def _rate_text(rate: float) -> str:
    return "none (round-off)" if math.isinf(rate) else f"{rate:.2f}"


@dataclass(frozen=True)
class GradientCheck:
    """Outcome of :func:`check_gradient`: one random direction ``h``, the central
    difference and the Taylor remainders along it, and the verdict.

    Attributes
    ----------
    seed : int
        Seed of the direction (the same seed draws the same ``h``).
    difference : Difference
        ``∇f·h``, the central difference, its step and what round-off explains.
    taylor : TaylorResult
        The Taylor remainders along ``h``; rates at round-off level are ``inf``.
    rtol : float
        Largest relative disagreement accepted beyond round-off and truncation.
    min_rate : float
        Smallest Taylor rate accepted.
    """

    seed: int
    difference: Difference
    taylor: TaylorResult
    rtol: float
    min_rate: float

    @property
    def rate(self) -> float:
        """The smallest Taylor rate above round-off (``inf`` if ``f`` is linear along
        ``h`` to round-off: then the central difference alone decides)."""
        return self.taylor.rate

    @property
    def passed(self) -> bool:
        """The central difference agrees and the Taylor remainders fall at rate 2."""
        return self.difference.error <= self.rtol and self.rate >= self.min_rate

    def verdict(self) -> str:
        """The one line that says pass or FAIL, with the tolerances."""
        agreement = (f"agreement {self.difference.agreement:.1e}, "
                     f"{self.difference.error:.1e} beyond round-off and truncation "
                     f"(tolerance {self.rtol:.0e})")
        rate = f"Taylor rate {_rate_text(self.rate)} (at least {self.min_rate:g})"
        return f"gradient check: {'pass' if self.passed else 'FAIL'}: {agreement}, {rate}"

    def lines(self) -> list[str]:
        """What :func:`check_gradient` found, line by line: a heading, the numbers, the
        verdict last."""
        d = self.difference
        return [
            f"gradient check along a random direction h (seed {self.seed}):",
            f"  gradient·h          {d.slope:.10e}",
            f"  central difference  {d.difference:.10e} (5-point, step {d.step:.1e} along h; "
            f"round-off of the values {d.noise:.1e})",
            f"  relative agreement  {d.agreement:.1e} (round-off and truncation explain "
            f"{d.bound / max(abs(d.difference), abs(d.slope), 1e-300):.1e})",
            "  Taylor remainders |J(x + εh) − J(x) − ε ∇J·h|:",
            *("  " + line for line in self.taylor.table().splitlines()),
            f"  Taylor rate         {_rate_text(self.rate)} (2 when the gradient is right)",
            self.verdict(),
        ]

    def as_dict(self) -> dict:
        """The numbers, JSON-ready (a rate at round-off level is ``None``)."""
        d = self.difference

        def finite(v: float) -> float | None:
            return None if math.isinf(v) else float(v)

        return {"passed": self.passed, "seed": self.seed, "tolerance": self.rtol,
                "directional_derivative": d.slope, "central_difference": d.difference,
                "step": d.step, "noise": d.noise, "bound": d.bound,
                "agreement": d.agreement, "error": d.error,
                "taylor": {"steps": self.taylor.steps.tolist(),
                           "remainders": self.taylor.residuals.tolist(),
                           "rates": [finite(r) for r in self.taylor.rates],
                           "rate": finite(self.rate), "min_rate": self.min_rate}}


def _scaled(r, scale):
    """``r ⊙ scale`` leaf by leaf (``scale`` a number, or the structure of ``r``)."""
    rs, unflatten = flatten(r)
    scales = [scale] * len(rs) if isinstance(scale, (int, float)) else flatten(scale)[0]
    return unflatten([a * np.asarray(b, dtype=float) if isinstance(a, np.ndarray)
                      else a * float(b) for a, b in zip(rs, scales, strict=True)])


def check_gradient(fun: Callable, x, *, gradient=None, scale=None, seed: int | None = None,
                   rtol: float = 1e-5, min_rate: float = MIN_RATE,
                   n_steps: int = 5) -> GradientCheck:
    """Check the gradient of ``fun`` at ``x`` along one random direction: a central
    difference and a Taylor test, with steps and tolerance from the round-off measured
    on ``fun`` itself. Reports; never raises for a wrong gradient (see ``passed``).

    The direction is ``h = r ⊙ scale`` for ``r`` standard normal (seeded). The central
    difference is :func:`check_grad`'s (5-point, its step balancing the measured noise
    against truncation); the Taylor remainders start at ``1e-2`` of a unit step along
    ``h`` and halve ``n_steps - 1`` times, rates below ``TAYLOR_NOISE`` times the noise
    being round-off (``inf``).

    Parameters
    ----------
    fun : callable
        Scalar function of one argument (array, number, or a dict/list/tuple of them).
    x
        The point.
    gradient : optional
        The gradient to check (the structure of ``x``), e.g. one already written; by
        default ``fesens.ad.grad(fun)(x)``.
    scale : optional
        A number or the structure of ``x``: how far each entry may move before ``fun``
        stops being smooth (e.g. a density itself, a cell's size for node coordinates); a
        unit step along ``h`` moves no entry further. Default: ``max(1, |x|_∞)`` for all.
    seed : int, optional
        Seed of ``r``; a fresh one is drawn (and reported) by default.
    rtol : float
        Largest relative disagreement accepted beyond round-off and truncation.
    min_rate : float
        Smallest Taylor rate accepted.
    n_steps : int
        Number of Taylor steps.

    Returns
    -------
    GradientCheck
        The numbers, ``passed``, ``lines()`` to print and ``as_dict()`` to store.
    """
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31))
    r = _random_direction(x, np.random.default_rng(seed))
    if scale is None:
        h = r
        unit = _unit(x, h)
    else:
        h = _scaled(r, scale)
        unit = _unit(r, r, 1.0)
    if gradient is None:
        f0, gradient = value_and_grad(fun)(x)
    else:
        f0 = fun(x)
    f0, slope = float(f0), _dot(gradient, h)
    difference = _difference(fun, x, h, f0, slope, unit)
    taylor = _remainders(fun, x, h, f0, slope, TAYLOR_STEP * unit * 0.5 ** np.arange(n_steps),
                         noise=TAYLOR_NOISE * difference.noise)
    return GradientCheck(seed, difference, taylor, rtol, min_rate)
