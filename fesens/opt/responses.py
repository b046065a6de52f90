"""What a design problem gives its optimizer: the responses at one design, and the
constraints of a response.

A :class:`Response` is a traced function ``f(state, ρ)`` of the solution and the densities;
a :class:`Constraint` bounds one; an :class:`Evaluation` holds the objective, the
constraints and their gradients at one design (:meth:`DesignProblem.evaluate
<fesens.opt.problem.DesignProblem.evaluate>`), what every optimizer's ``step`` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fesens.mpi import SERIAL, Collective
from fesens.objectives.differentiable import State

#: A response: ``f(state, rho) -> scalar`` (traced).
Response = Callable[[State, object], object]


@dataclass
class Evaluation:
    """Responses at one design.

    Attributes
    ----------
    objective : float
    gradient : numpy.ndarray
        ``(n_design,)``; already post-processed by a sensitivity filter if one is used.
    constraints : numpy.ndarray
        ``(m,)`` values ``g_i(x)`` of the constraints ``g_i ≤ 0`` (volume first).
    constraint_gradients : numpy.ndarray
        ``(m, n_design)``.
    density : numpy.ndarray
        Physical densities ``ρ``, ``(n_cells,)``.
    volume_fraction : float
    state : State
        The (untraced) solution at ``ρ``.
    extras : dict
        Named values of the extra constraints' responses and of the problem's ``reports``.
    bounds : numpy.ndarray or None
        ``(k,)``: for a min–max problem (:class:`~fesens.opt.minmax.MinMaxProblem`), the
        functions whose largest is the objective (``objective = max(bounds)``, ``gradient``
        that of the largest); an optimizer with ``bound_constraints`` (MMA) minimizes their
        maximum. None otherwise.
    bound_gradients : numpy.ndarray or None
        ``(k, n_design)``, filtered as ``gradient``.
    collective : Collective
        The ranks among which the design is split (:mod:`fesens.mpi`; :data:`SERIAL` in a
        serial run). The arrays (``gradient``, the rows of ``constraint_gradients`` and
        ``bound_gradients``, ``density``) are this rank's part; the numbers (``objective``,
        ``constraints``, ``volume_fraction``, ``bounds``) are global, the same on every rank.
    """

    objective: float
    gradient: np.ndarray
    constraints: np.ndarray
    constraint_gradients: np.ndarray
    density: np.ndarray
    volume_fraction: float
    state: State
    extras: dict = field(default_factory=dict)
    bounds: np.ndarray | None = None
    bound_gradients: np.ndarray | None = None
    collective: Collective = SERIAL

    def on_host(self) -> Evaluation:
        """This evaluation with numpy arrays and its ``state``, what outputs are written
        from: itself (an evaluation resident on a device,
        :class:`~fesens.opt.resident.ResidentEvaluation`, makes it)."""
        return self


@dataclass
class Constraint:
    """``response(state, ρ) ≤ limit`` (scaled as ``response / limit − 1 ≤ 0``)."""

    name: str
    response: Response
    limit: float

    def update(self, iteration: int) -> None:
        """Start ``iteration``: nothing here; a constraint that changes between iterations
        (:class:`~fesens.opt.normalized.NormalizedConstraint`) does it here."""

    def restore(self, history: list[dict]) -> None:
        """Take back what the constraint derived from the iterations of ``history`` (a
        resumed run's): nothing here."""
