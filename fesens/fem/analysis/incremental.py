"""A load history of a path-dependent model: :class:`IncrementalAnalysis`, its settings (the
factor tables, checkpointing, Newton) at construction and its runs on the traced inputs.

The model has internal variables at its quadrature points
(:class:`~fesens.fem.transient.increments.HistoryModel`); its loads and prescribed values
are scaled by the factor of each increment (``t_n f``, ``d_n g``).
:meth:`~IncrementalAnalysis.solve` is the plain run that keeps every state (an
:class:`IncrementalSolution`, of the model's ``history_class``);
:meth:`~IncrementalAnalysis.values` (:meth:`~IncrementalAnalysis.run`) is one primitive
over the increments whose gradient is one reverse sweep
(:mod:`fesens.fem.transient.increments`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import NewtonError, NonFiniteError
from fesens.fem.analysis.base import Analysis
from fesens.fem.transient.checkpointing import check_snapshots
from fesens.fem.transient.increments import (
    IncrementInputs,
    IncrementStepper,
    increment_values,
)


@dataclass(frozen=True)
class IncrementalSolution:
    """The states of a run of load increments (plain arrays).

    Attributes
    ----------
    model : Model
    factors, dirichlet_factors : numpy.ndarray
        ``(N + 1,)`` the load and prescribed factors of the increments (``0`` first).
    displacements : numpy.ndarray
        ``(N + 1, n_dofs)`` the field on all dofs (displacements for a displacement model).
    reactions : numpy.ndarray
        ``(N + 1, n_dofs)`` the internal forces ``R_int(u_n)``: the reactions on the
        constrained dofs, the applied loads on the free ones.
    history : dict
        The internal variables by name, ``(N + 1, n_cells, n_qp, ...)`` each.
    outputs : dict
        The per-point outputs by name (e.g. ``stress``), ``(N + 1, n_cells, n_qp, ...)``.
    dissipation : numpy.ndarray
        ``(N + 1,)`` the work dissipated up to each increment.
    substeps : dict
        Increment -> the fractions of its sub-increments where it was cut back.
    stats : dict
        Newton iterations and factorizations of the run.
    """

    model: object
    factors: np.ndarray
    dirichlet_factors: np.ndarray
    displacements: np.ndarray
    reactions: np.ndarray
    history: dict
    outputs: dict
    dissipation: np.ndarray
    substeps: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    @property
    def n_increments(self) -> int:
        """``N``: the increments held (fewer than asked where a run failed)."""
        return self.factors.size - 1

    def curve(self, dofs) -> np.ndarray:
        """``(N + 1, 2)``: the mean field of ``dofs`` (indices into the dof vector) against
        the sum of their internal forces (reactions where constrained, loads where free),
        a load–displacement curve."""
        dofs = np.atleast_1d(np.asarray(dofs, dtype=int))
        return np.stack([self.displacements[:, dofs].mean(axis=1),
                         self.reactions[:, dofs].sum(axis=1)], axis=1)


class IncrementalAnalysis(Analysis):
    """Load increments of a path-dependent model, Newton per increment with cut-backs.

    Parameters
    ----------
    model : NonlinearModel
        A model with internal variables
        (:class:`~fesens.fem.transient.increments.HistoryModel`).
    factors : array_like
        ``(N + 1,)`` load factors ``t_n``, starting at 0: the loads of increment ``n`` are
        ``t_n f``; any sequence (loading, unloading, reversal).
    dirichlet_factors : array_like, optional
        ``(N + 1,)`` factors ``d_n`` of the prescribed values (starting at 0; default:
        ``factors``).
    max_states : int, optional
        None: the gradient keeps every increment's state; ``k >= 2``: ``k`` states on
        Griewank's binomial schedule, the others recomputed (the same bits).
    newton : dict, optional
        :class:`~fesens.fem.nonlinear.newton.NewtonOptions` of each increment (the
        options' ``steps`` and ``max_cutbacks`` are not read).
    solver : str, (str, dict) or LinearSolver, optional
        The tangent's solver (default: the model's).
    max_cutbacks : int
        How many times a failed increment may be halved: its sub-increments never fall
        below ``2^-max_cutbacks`` of it, and one that fails at that size stops the run.

    Raises
    ------
    ValueError
        A factor table that does not start at 0, of another length, or not finite.
    TypeError
        A model without internal variables.
    """

    def __init__(self, model, factors, *, dirichlet_factors=None, max_states=None,
                 newton: dict | None = None, solver=None, max_cutbacks: int = 4):
        super().__init__(model)
        for hook in ("history_start", "with_history", "increment"):
            if not callable(getattr(model, hook, None)):
                raise TypeError(f"IncrementalAnalysis needs a model with internal variables "
                                f"(history_start, with_history, increment); "
                                f"{type(model).__name__} has no {hook}")
        self.times = _factor_table("factors", factors)
        self.dirichlet_factors = (self.times if dirichlet_factors is None
                                  else _factor_table("dirichlet_factors", dirichlet_factors))
        if self.dirichlet_factors.size != self.times.size:
            raise ValueError(f"dirichlet_factors must have as many entries as factors "
                             f"({self.times.size}); got {self.dirichlet_factors.size}")
        self.max_states = None if max_states is None else check_snapshots(max_states)
        if isinstance(max_cutbacks, bool) or not isinstance(max_cutbacks, int | np.integer) \
                or max_cutbacks < 0:
            raise ValueError(f"max_cutbacks must be an integer >= 0, got {max_cutbacks!r}")
        self.max_cutbacks = int(max_cutbacks)
        self.newton_options = model._newton_options(newton, None)
        self.solver = solver
        self.lock = threading.RLock()
        self.stats: dict = {}

    @property
    def n_steps(self) -> int:
        """``N``, the increments."""
        return self.times.size - 1

    def tangent_backend(self):
        """The model's solver of its tangents."""
        return self.model.tangent_solver(self.solver)

    def _inputs(self, loads, dirichlet, points, parameters, term_args=()) -> IncrementInputs:
        model = self.model
        model.check_parameters(parameters)
        if model.followers:
            raise ValueError("follower loads are not offered with load increments")
        points = model.checked_points(points)
        fields = model.material_fields(**parameters)
        f = model.load_vector(loads, points)
        constrained = model.constrained_dofs
        g = model.prescribed_values() if dirichlet is None else dirichlet
        if np.shape(getval(g)) != constrained.shape:
            raise ValueError(f"dirichlet values must have shape {constrained.shape}, "
                             f"got {np.shape(getval(g))}")
        if not np.all(np.isfinite(getval(g))):
            raise NonFiniteError("dirichlet values contain NaN or infinity")
        return IncrementInputs(f, g if constrained.size else None, points, fields,
                               tuple(term_args))

    def solve(self, *, loads: dict | None = None, dirichlet=None, points=None,
              **parameters) -> IncrementalSolution:
        """The plain run, every state kept.

        Parameters
        ----------
        loads : dict, optional
            Magnitude of each named load term (default 1) at factor 1.
        dirichlet : array_like, optional
            Prescribed values ``(n_constrained,)`` at factor 1 (default: those of ``fix``).
        points : array_like, optional
            Node coordinates ``(n_points, dim)``.
        **parameters
            The model's parameters.

        Returns
        -------
        IncrementalSolution
            Of the model's ``history_class``.

        Raises
        ------
        NewtonError
            An increment failed after its cut-backs; ``error.last_converged`` is the last
            converged increment and ``error.partial`` the record up to it.
        """
        inputs = self._inputs(loads, dirichlet, points, parameters)
        inputs = IncrementInputs(*(getval(x) if not isinstance(x, dict) else
                                   {k: getval(v) for k, v in x.items()} for x in inputs))
        substeps: dict = {}
        with self.lock:
            self.stats = {"newton_iterations": 0, "factorizations": 0}
            stepper = IncrementStepper(self, inputs, substeps, keep_outputs=True)
            with stepper.thread_limit():
                state = stepper.start()
                start = stepper.model.increment(stepper.full(state, 0),
                                                stepper.model.with_history(stepper.fields,
                                                                           state.history),
                                                stepper.points)
                levels = [state._replace(outputs=start.outputs)]
                try:
                    for n in range(1, self.n_steps + 1):
                        levels.append(stepper.advance(n, levels[-1]))
                except NewtonError as exc:
                    exc.partial = self._record(stepper, levels, substeps)
                    raise
        return self._record(stepper, levels, substeps)

    def _record(self, stepper: IncrementStepper, levels: list, substeps: dict):
        count = len(levels)
        return self.model.history_class(
            model=self.model, factors=self.times[:count].copy(),
            dirichlet_factors=self.dirichlet_factors[:count].copy(),
            displacements=np.stack([stepper.full(level, n) for n, level in enumerate(levels)]),
            reactions=np.stack([level.forces for level in levels]),
            history={k: np.stack([np.asarray(level.history[k]) for level in levels])
                     for k in levels[0].history},
            outputs={k: np.stack([np.asarray(level.outputs[k]) for level in levels])
                     for k in levels[0].outputs},
            dissipation=np.array([level.dissipation for level in levels]),
            substeps={n: f for n, f in substeps.items() if len(f) > 1}, stats=dict(self.stats))

    def values(self, step_term, term_args=(), *, loads: dict | None = None, dirichlet=None,
               points=None, **parameters):
        """``values[n] = step_term(state_n, t_n, *term_args)`` ``(N + 1,)``, one primitive
        (traced when an input is): ``state_n`` an
        :class:`~fesens.fem.transient.increments.IncrementState` (``u``, ``reactions``,
        ``dissipation``), ``t_n`` the load factor. The gradient of any function of the
        values is one reverse sweep over the increments.

        Parameters are those of :meth:`solve`; ``step_term`` must read traced values only
        through its arguments (``term_args``), as for a transient run.
        """
        self.stats = {"newton_iterations": 0, "factorizations": 0}
        inputs = self._inputs(loads, dirichlet, points, parameters, term_args)
        return increment_values(self, step_term, inputs)

    def run(self, step_term, term_args=(), **inputs):
        """:meth:`values` (the analyses' shape, :class:`~fesens.fem.analysis.base.Analysis`)."""
        return self.values(step_term, term_args, **inputs)


def _factor_table(name: str, factors) -> np.ndarray:
    table = np.asarray(factors, dtype=float)
    if table.ndim != 1 or table.size < 2 or not np.all(np.isfinite(table)):
        raise ValueError(f"{name} must be a table of at least 2 finite factors starting at "
                         f"0, e.g. [0, 0.5, 1, 0, -1]; got {factors!r}")
    if table[0] != 0.0:
        raise ValueError(f"{name} must start at 0 (the unloaded state the increments start "
                         f"from); got {table[0]!r} first in {factors!r}")
    return table
