"""Projections of the filtered densities, with a sharpness that may follow a continuation.

* Heaviside projection (Wang, Lazarov & Sigmund 2011):
  ``ρ̄ = (tanh(βη) + tanh(β(ρ − η))) / (tanh(βη) + tanh(β(1 − η)))``.
* The identity, :class:`NoProjection`.

A projection subclasses :class:`Projection` and declares what the design problem and the
loop read of it (``linear``, ``schedule``, ``beta``), each with its default there; the
robust formulation's three projections are :class:`~fesens.opt.robust.RobustProjection`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from fesens.opt.continuation import Continuation


class Projection(ABC):
    """A map of the filtered densities ``(n_cells,)`` to the physical ones (traced)."""

    name: str = ""
    """The projection's name in :data:`PROJECTIONS` (the config's ``[projection] type``)."""
    linear: bool = False
    """True when the projection is affine, so that an affine filter keeps the volume affine
    in the design (:meth:`DesignProblem.volume_excess
    <fesens.opt.problem.DesignProblem.volume_excess>` then extrapolates it exactly)."""
    schedule: Continuation | None = None
    """The continuation of the sharpness; None: nothing is scheduled (the loop may stop at
    any iteration)."""
    beta: float | None = None
    """The current sharpness ``β``, recorded in the history; None: the projection has
    none."""

    def update(self, iteration: int) -> None:
        """Start 1-based ``iteration``: take the scheduled sharpness, if any."""
        if self.schedule is not None:
            self.beta = self.schedule.value(iteration)

    @abstractmethod
    def __call__(self, rho):
        """The projected densities of ``rho`` ``(n_cells,)`` (traced)."""


class Heaviside(Projection):
    """Smoothed Heaviside projection with threshold ``eta`` and sharpness ``beta``."""

    name = "heaviside"

    def __init__(self, beta: float | Continuation = 1.0, eta: float = 0.5):
        self.schedule = beta if isinstance(beta, Continuation) else Continuation(beta)
        self.eta = eta
        self.beta = self.schedule.value(1)

    def __call__(self, rho):
        b, eta = self.beta, self.eta
        return (np.tanh(b * eta) + np.tanh(b * (rho - eta))) / (
            np.tanh(b * eta) + np.tanh(b * (1.0 - eta)))


class NoProjection(Projection):
    """Identity projection."""

    name = "none"
    linear = True

    def __call__(self, rho):
        return rho


#: Density projections by name (the config's ``[projection] type``); each takes its
#: parameters as keyword arguments (none for ``"none"``).
PROJECTIONS: dict[str, type[Projection]] = {cls.name: cls for cls in (NoProjection, Heaviside)}
