"""Eigenvalue and frequency objectives: scalar functions of
:class:`~fesens.fem.analysis.modal.Modes`.

Written in the traced numpy subset, so :func:`fesens.ad.grad` differentiates them with the
eigen solve (:meth:`~fesens.fem.analysis.modal.ModalAnalysis.modes`).

Repeated eigenvalues (symmetric structures: a square plate, a beam of square section) have
no derivative one by one; :func:`eigenvalue` and :func:`frequency` refuse them.
:func:`eigenvalue_sum` and :func:`eigenvalue_ks` are symmetric in the eigenvalues they
include, so they are differentiable as long as they include a cluster whole: both check
that the last one they include is separated from the next computed one (compute one mode
more than they use).
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.analysis.modal import CLUSTER_RTOL, Modes


def _cluster_of(modes: Modes, index: int) -> tuple:
    return next((group for group in modes.clusters if index in group), ())


def eigenvalue(modes: Modes, index: int = 0):
    """``λ_index`` of a simple eigenvalue (``ω²``).

    Raises
    ------
    ValueError
        The eigenvalue is repeated (its derivative depends on the basis of the cluster's
        modes): use :func:`eigenvalue_sum` or :func:`eigenvalue_ks` over the cluster.
    """
    cluster = _cluster_of(modes, index)
    if cluster:
        raise ValueError(
            f"eigenvalue {index} is repeated (eigenvalues {list(cluster)} are equal): it has "
            "no derivative; use eigenvalue_sum or eigenvalue_ks over the whole cluster")
    return modes.values[index]


def frequency(modes: Modes, index: int = 0):
    """Frequency ``f = √λ / 2π`` of a simple eigenvalue (see :func:`eigenvalue`)."""
    return np.sqrt(eigenvalue(modes, index)) / (2 * np.pi)


def _lowest(modes: Modes, count: int | None):
    """The lowest ``count`` eigenvalues, after checking no cluster is cut at the top."""
    values = modes.values
    n = len(getval(values))
    count = n - 1 if count is None else count
    if not 1 <= count < n:
        raise ValueError(f"count = {count} needs 1 <= count < k = {n}: compute at least "
                         "one mode more than you use, to check the last is not repeated")
    raw = getval(values)
    if raw[count] - raw[count - 1] <= CLUSTER_RTOL * abs(raw[count]):
        raise ValueError(
            f"the lowest {count} eigenvalues cut a cluster of repeated eigenvalues "
            f"(λ[{count - 1}] = λ[{count}] = {raw[count]:.6g}): include the whole cluster")
    return values[:count]


def eigenvalue_sum(modes: Modes, count: int | None = None):
    """``Σ_(i<count) λ_i``: differentiable also when some of them are repeated.

    ``count`` default: all computed but the last (which checks the gap).
    """
    return np.sum(_lowest(modes, count))


def eigenvalue_ks(modes: Modes, rho: float = 50.0, count: int | None = None):
    """A smooth lower bound of the smallest eigenvalue (KS aggregate), symmetric in the
    lowest ``count``: ``λ̄ · (−1/ρ) log Σ_i exp(−ρ λ_i / λ̄)``, ``λ̄`` their mean.

    ``rho``: larger is closer to ``min λ_i`` (within ``λ̄ log(count) / ρ``).
    """
    values = _lowest(modes, count)
    mean = np.mean(values)
    return -mean / rho * np.log(np.sum(np.exp(-rho * values / mean)))
