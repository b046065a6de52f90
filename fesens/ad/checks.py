"""Gradient checks that ship with the library: finite differences and the Taylor test.

Taylor test (pyadjoint's ``taylor_test``): for a direction ``h`` and steps ``ε_k = ε_0 2^-k``

    r_k = | J(x + ε_k h) − J(x) − ε_k ∇J(x)·h |

is ``O(ε²)`` when the gradient is right and only ``O(ε)`` when it is wrong, so the
observed rates ``log2(r_k / r_(k+1))`` approach 2.
"""

from __future__ import annotations

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


def check_grad(fun: Callable, x, *, n_directions: int = 3, eps: float = 1e-6,
               rtol: float = 1e-5, value_rtol: float = 1e-13, seed: int = 0) -> float:
    """Compare ``∇f·h`` with central differences along random directions.

    The central difference ``(f(x + εh) − f(x − εh)) / 2ε`` cannot resolve a directional
    difference below its round-off floor ``value_rtol · max|f(x ± εh)| / ε`` (each value
    carries a relative error of about ``value_rtol``: ~1e-13 for a direct solve, the
    solver's ``rtol`` for an iterative one), so the error of each direction is

        max(|∇f·h − FD| − floor, 0) / max(|∇f·h|, |FD|)

    and a derivative that is zero up to round-off (``f`` flat along ``h``) is not reported
    as a 100 % error, while a wrong gradient whose error exceeds the floor still is.

    Parameters
    ----------
    fun : callable
        Scalar function of one argument (array, number, or a dict/list/tuple of them).
    x
        The point.
    n_directions : int
        Number of random (seeded) directions ``h``.
    eps : float
        Finite-difference step along ``h``.
    rtol : float
        Largest accepted error.
    value_rtol : float
        Relative accuracy of the values of ``fun``.
    seed : int
        Seed of the directions.

    Returns
    -------
    float
        The largest error over the directions.

    Raises
    ------
    AssertionError
        If an error exceeds ``rtol``; the message gives both derivatives and the floor.
    """
    rng = np.random.default_rng(seed)
    _, dJ = value_and_grad(fun)(x)
    worst, report = 0.0, ""
    for _ in range(n_directions):
        h = _random_direction(x, rng)
        f_plus, f_minus = float(fun(_axpy(x, eps, h))), float(fun(_axpy(x, -eps, h)))
        fd = (f_plus - f_minus) / (2 * eps)
        ad = _dot(dJ, h)
        floor = value_rtol * max(abs(f_plus), abs(f_minus)) / eps
        error = max(abs(ad - fd) - floor, 0.0) / max(abs(fd), abs(ad), 1e-300)
        if error > worst:
            worst = error
            report = (f"gradient·h = {ad:.10e}, central difference = {fd:.10e}, "
                      f"round-off floor {floor:.1e}")
    if worst > rtol:
        raise AssertionError(
            f"gradient check failed: relative error {worst:.3e} between the gradient and "
            f"central differences (tolerance {rtol:.1e}): {report}"
        )
    return worst
