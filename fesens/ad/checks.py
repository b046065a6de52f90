"""Gradient checks that ship with the library: finite differences and the Taylor test.

Taylor test (pyadjoint's ``taylor_test``): for a direction ``h`` and steps ``ε_k = ε_0 2^-k``

    r_k = | J(x + ε_k h) − J(x) − ε_k ∇J(x)·h |

is ``O(ε²)`` when the gradient is right and only ``O(ε)`` when it is wrong, so the
observed rates ``log2(r_k / r_(k+1))`` approach 2.
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
    verbose : bool
        Print the remainder table and the rate.
    """
    rng = np.random.default_rng(seed)
    h = _random_direction(x, rng) if direction is None else direction
    J0, dJ = value_and_grad(fun)(x)
    slope = _dot(dJ, h)
    if step is None:
        x_scale = max(1.0, max(np.max(np.abs(v)) for v in flatten(x)[0]))
        h_scale = max(np.max(np.abs(v)) for v in flatten(h)[0])
        step = 1e-2 * x_scale / h_scale
    steps = step * 0.5 ** np.arange(n_steps)
    residuals = np.array([abs(float(fun(_axpy(x, e, h))) - float(J0) - e * slope)
                          for e in steps])
    # Remainders at round-off level (a function linear along h) carry no rate: report inf.
    noise = 1e-13 * max(abs(float(J0)), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = np.where(residuals[1:] > noise, np.log2(residuals[:-1] / residuals[1:]),
                         np.inf)
    result = TaylorResult(steps, residuals, rates)
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


def check_grad(fun: Callable, x, *, n_directions: int = 3, eps: float | None = None,
               rtol: float = 1e-5, seed: int = 0) -> float:
    """Compare ``∇f·h`` with finite differences along random directions, allowing for the
    round-off of ``f`` measured on ``f`` itself.

    For each direction ``h`` and ``g(t) = f(x + t h)``:

    1. the noise ``σ`` of the values (round-off of the solves: ~1e-13 relative for one
       direct solver, several times more for another, the ``rtol`` of an iterative one)
       is estimated from the 3rd and 4th differences of ``g`` at tiny spacing;
    2. the step ``ε`` balances truncation and noise, ``ε = (3σ / |g‴|)^(1/3)`` (``g‴``
       from a trial stencil), unless ``eps`` is given;
    3. the derivative is the 5-point (Richardson) estimate ``D2``; its error bound is the
       difference from the central difference ``D1`` (the truncation left over) plus the
       noise it amplifies, ``NOISE_FACTOR · σ / ε``.

    The error of a direction is ``max(|∇f·h − D2| − bound, 0) / max(|∇f·h|, |D2|)``: a
    right gradient whose differences are blurred by round-off passes, a gradient whose
    error exceeds what round-off and truncation explain fails.

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
    f0 = float(f0)
    x_scale = max(1.0, max(np.max(np.abs(v), initial=0.0) for v in flatten(x)[0]))
    worst, report = 0.0, ""
    for _ in range(n_directions):
        h = _random_direction(x, rng)
        scale = x_scale / max(max(np.max(np.abs(v), initial=0.0) for v in flatten(h)[0]),
                              1e-300)

        def g(t, h=h):
            return float(fun(_axpy(x, t, h)))

        sigma = _noise(g, f0, NOISE_PROBE * scale)
        step = TRIAL_STEP * scale if eps is None else eps
        d1, d2, third = _stencil(g, step)
        if eps is None and third != 0.0:
            best = min(max((3 * sigma / abs(third)) ** (1 / 3), step / 1e3), step * 1e2)
            if not step / 4 <= best <= step * 4:
                step = best
                d1, d2, third = _stencil(g, step)
        ad = _dot(dJ, h)
        bound = abs(d2 - d1) + NOISE_FACTOR * sigma / step
        error = max(abs(ad - d2) - bound, 0.0) / max(abs(d2), abs(ad), 1e-300)
        if error > worst:
            worst = error
            report = (f"gradient·h = {ad:.10e}, finite difference = {d2:.10e} (step "
                      f"{step:.1e}, bound {bound:.1e} from noise {sigma:.1e} and truncation)")
    if worst > rtol:
        raise AssertionError(
            f"gradient check failed: relative error {worst:.3e} between the gradient and "
            f"finite differences (tolerance {rtol:.1e}) beyond what the measured round-off "
            f"and truncation explain: {report}"
        )
    return worst
