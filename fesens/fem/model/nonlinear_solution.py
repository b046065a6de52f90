"""What a nonlinear solve returns: the converged state with its Newton report and load
path (:class:`NonlinearSolution`), and the states at requested load factors
(:class:`LoadStepStates`, read by :meth:`NonlinearSolution.at`)."""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import ArgumentTypeError, LevelIndexError
from fesens.fem.model.solution import Solution
from fesens.fem.nonlinear.implicit_solve import along
from fesens.fem.nonlinear.newton import NewtonReport


class NonlinearSolution(Solution):
    """Result of :meth:`NonlinearModel.solve`: the converged state and how it was reached.

    Besides the attributes of :class:`~fesens.fem.model.solution.Solution` (whose
    ``coefficients`` hold the material fields' values in the order of ``fields``):

    Attributes
    ----------
    fields : dict
        The material fields of the solve (traced values included), each ``(n_cells,)``.
    report : NewtonReport or None
        The load steps, Newton residual histories and cut-backs of the solve.
    at_load_factors : tuple of float
        The load factors whose states :meth:`at` returns (those given to
        ``solve(at_load_factors=...)``; empty otherwise).
    """

    def __init__(self, model, u, f, coefficients, parameters, loads=None, points=None, *,
                 fields: dict | None = None, report: NewtonReport | None = None,
                 prescribed=None, steps: LoadStepStates | None = None):
        super().__init__(model, u, f, coefficients, parameters, loads, points)
        self.fields = {} if fields is None else fields
        self.report = report
        self._paths = prescribed  # (f₀, g₀, g) of the load path, to rebuild the states
        self._steps = steps
        self.at_load_factors = () if steps is None else steps.requested

    def at(self, k: int) -> NonlinearSolution:
        """The converged state at the ``k``-th of :attr:`at_load_factors` ``t_k``: a
        solution of the same class whose ``u`` (traced when the solve is) is the
        equilibrium under the loads ``t_k f`` (its ``f``; follower pressures, among its
        ``fields``, at ``t_k`` times theirs too) and the prescribed values
        ``g₀ + t_k (g − g₀)`` (``g₀``: those of the reference state), so that every
        objective of a solution applies to it (e.g. ``compliance(solution.at(0))``).

        Raises
        ------
        ValueError
            The solve was not asked for the states at load factors.
        LevelIndexError
            ``k`` is not an index of :attr:`at_load_factors` (an ``IndexError``).
        """
        steps = self._steps
        if steps is None:
            raise ValueError("this solution holds no states at load factors: solve with "
                             "at_load_factors=[t_1, ..., t_k] to differentiate them")
        levels = len(steps.requested)
        if not isinstance(k, int | np.integer) or isinstance(k, bool):
            raise ArgumentTypeError(f"at(k): k must be an integer index of at_load_factors, "
                                    f"got {type(k).__name__} {k!r:.80}")
        if not -levels <= k < levels:
            raise LevelIndexError(
                f"at({k}): this solution holds {levels} state(s) at load factors "
                f"(at_load_factors = {list(steps.requested)}), so k must lie in "
                f"0..{levels - 1} (or -{levels}..-1 from the end)")
        t = steps.requested[k]
        row = steps.stops.index(t)
        loads = self.load_magnitudes
        loads = ({name: t for name in self.model.loads} if loads is None
                 else {name: t * value for name, value in loads.items()})
        # the loads among the fields (follower pressures) at t, from the unloaded state
        fields = self.model.fields_at(self.fields, None, t)
        return type(self)(
            self.model, self.model.state(steps.states[row], along(t, steps.g0, steps.g)),
            t * self.f, [fields[k] for k in self.fields], self.parameters, loads,
            self.points, fields=fields, report=self.report, prescribed=self._paths)

    def detached(self) -> NonlinearSolution:
        """The same solution with every traced value replaced by its value."""
        return type(self)(self.model, getval(self.u), getval(self.f),
                          [getval(c) for c in self.coefficients],
                          {k: getval(v) for k, v in self.parameters.items()},
                          self.load_magnitudes,
                          None if self.points is None else getval(self.points),
                          fields={k: getval(v) for k, v in self.fields.items()},
                          report=self.report, prescribed=self._paths,
                          steps=None if self._steps is None else self._steps.detached())

    def load_path(self, dof: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The load–displacement curve of the solve: the load factor of every converged
        step (0 first) and, at each, ``u[dof]`` or (``dof=None``) ``‖u‖``.

        Returns
        -------
        tuple of numpy.ndarray
            ``(n_steps + 1,)`` each (plain arrays).
        """
        if self.report is None or self._paths is None:
            raise ValueError("this solution has no load path (it was not made by "
                             "NonlinearModel.solve)")
        g0, g = self._paths
        factors = np.array(self.report.load_factors)
        states = [self.model.state(x, g0 + t * (g - g0))
                  for t, x in zip(factors, self.report.states, strict=True)]
        values = [float(np.linalg.norm(u)) if dof is None else float(u[dof]) for u in states]
        return factors, np.array(values)

    def reactions(self) -> np.ndarray:
        """Reaction forces (heat flows) ``F_int(u) − f`` at the constrained dofs, zero
        elsewhere, ``(n_points, n_components)`` (plain arrays)."""
        model = self.model
        fields = {k: np.asarray(getval(v)) for k, v in self.fields.items()}
        points = None if self.points is None else np.asarray(getval(self.points))
        residual = (model.internal_forces(np.asarray(getval(self.u)), fields, points)
                    - np.asarray(getval(self.f)))
        out = np.zeros_like(residual)
        out[model.constrained_dofs] = residual[model.constrained_dofs]
        return out.reshape(model.mesh.n_points, model.n_components)


class LoadStepStates:
    """The states of a solve at its requested load factors (what :meth:`NonlinearSolution.at`
    reads).

    Attributes
    ----------
    requested : tuple of float
        The load factors asked for, increasing, in ``(0, 1]``.
    stops : tuple of float
        ``requested`` with 1 appended where it is not among them.
    states : array
        The free unknowns at each stop, ``(n_stops, n_free)`` (traced when the solve is).
    g0, g : array
        The prescribed values ``(n_constrained,)`` at load factors 0 (plain) and 1
        (traced when given traced).
    """

    def __init__(self, requested: tuple, stops: tuple, states, g0, g):
        self.requested, self.stops, self.states, self.g0, self.g = (
            requested, stops, states, g0, g)

    def detached(self) -> LoadStepStates:
        return LoadStepStates(self.requested, self.stops, getval(self.states), self.g0,
                              getval(self.g))
