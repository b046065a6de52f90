"""A model bound to one solver: the object an optimization or a study differentiates.

Since a model's own :meth:`~fesens.fem.model.linear.LinearModel.solve` is the traced program
(one solve path), :class:`Differentiable` only fixes the solver instance, so that every
solve of a loop, traced or not, re-uses its symbolic analysis; it is kept because scripts
and the README use it. ``problem.solve(...)`` takes what ``model.solve`` takes:

* per-cell density scale ``scale`` and the physics' parameters (``E``, ``nu``,
  ``conductivity``, ...; scalars or per-cell fields);
* ``loads``: the magnitude of every named load term, or ``load_cases``;
* ``dirichlet``: the prescribed values ``g``;
* ``points``: the node coordinates (shape sensitivities).

A nonlinear model's solve (a :class:`~fesens.fem.model.nonlinear.NonlinearModel`: Newton
with its one-solve adjoint) is differentiated the same way; the solver is then its
tangent's (``auto``: LU for a non-symmetric tangent), and options fixed for every solve
(``newton=``) are given once to the constructor.
"""

from __future__ import annotations

from fesens.fem.model.base import Model
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.solution import Solution

#: A traced solution (what objectives take): the model's :class:`Solution`.
State = Solution


class Differentiable:
    """``model`` with its solver for the current pattern.

    Parameters
    ----------
    model : Model
        A linear or a nonlinear model of :mod:`fesens.physics`. Dirichlet conditions and
        named loads must be set before wrapping; the Dirichlet *set* fixes the pattern,
        their values stay differentiable (``dirichlet=``).
    solver : str, (str, dict) or LinearSolver, optional
        Backend for the forward and the adjoint solves (default: the physics' default,
        ``"auto"``: CHOLMOD when installed). A Krylov backend with AMG gets the rigid-body
        modes of a vector field as its near-null space (:meth:`LinearModel.solver`).
    **solve_options
        Keywords given to every ``model.solve`` (e.g. a nonlinear model's ``newton``
        options); those of a call take precedence.

    Notes
    -----
    Safe to share between threads, as its model is (:class:`LinearModel`,
    :class:`NonlinearModel`): each call, value or gradient, returns the bits it returns
    alone; the calls take turns at the solver's factorization (its ``lock``).

    Examples
    --------
    >>> problem = Differentiable(model)                          # doctest: +SKIP
    >>> J = lambda x: compliance(problem.solve(scale=x ** 3))    # doctest: +SKIP
    >>> dJ = fesens.ad.grad(J)(x)                                # doctest: +SKIP
    """

    def __init__(self, model: Model, solver=None, **solve_options):
        if not isinstance(model, Model):
            raise TypeError(f"cannot differentiate a {type(model).__name__}: expected a "
                            "model of fesens.physics (a LinearModel or a NonlinearModel)")
        self.model = model
        self.solve_options = solve_options
        # a tangent that is not symmetric needs its own backend (LU for "auto")
        self.solver = (model.tangent_solver(solver) if isinstance(model, NonlinearModel)
                       else model.solver(solver))

    @property
    def assembler(self):
        return self.model.assembler

    @property
    def free(self):
        return self.model.assembler.free

    @property
    def constrained(self):
        return self.model.assembler.constrained

    @property
    def load_names(self) -> tuple[str, ...]:
        return tuple(self.model.loads)

    def coefficients(self, **parameters) -> list:
        """Per-cell coefficients ``c_k`` of the stiffness (traced), each ``(n_cells,)``."""
        return self.model.coefficients(**parameters)

    def solve(self, **inputs) -> Solution:
        """``model.solve(solver=<this problem's solver>, **solve_options, **inputs)``."""
        return self.model.solve(solver=self.solver, **{**self.solve_options, **inputs})
