"""Frequency topology optimization: the design problem of an eigen solve, and the mass and
stiffness interpolations that keep low-density regions from vibrating on their own.

With SIMP stiffness ``ρ^p`` and a linear mass ``ρ``, the stiffness-to-mass ratio of a cell,
``ρ^(p−1)``, goes to zero with its density: the void regions of a design then carry
*localized modes* of artificially low frequency, which become the lowest eigenvalues and
stall the optimization. Two published fixes keep that ratio away from zero below
``ρ = 0.1`` (both in :mod:`fesens.opt.interpolation`, registered for ``[penalization]``):

* :class:`DuOlhoff` — J. Du and N. Olhoff, "Topological design of freely vibrating
  continuum structures for maximum values of simple and multiple eigenfrequencies and
  frequency gaps", Struct. Multidisc. Optim. 34 (2007) 91–110: SIMP stiffness, and a
  mass that is linear above ``ρ = 0.1`` and ``c₁ ρ⁶ + c₂ ρ⁷`` below it, with
  ``c₁ = 6·10⁵``, ``c₂ = −5·10⁶`` (value and slope continuous at 0.1), so
  ``m / s → ∞`` as ``ρ → 0``.
* :class:`Pedersen` — N. L. Pedersen, "Maximization of eigenvalues using topology
  optimization", Struct. Multidisc. Optim. 20 (2000) 2–11: linear mass, and a stiffness
  that is ``ρ^p`` above ``ρ = 0.1`` and linear below it (``0.1^(p−1) ρ``, continuous), so
  ``s / m`` stays constant in the void.

:class:`FrequencyProblem` is a :class:`~fesens.opt.problem.DesignProblem` whose traced
"solve" is :class:`~fesens.fem.analysis.modal.ModalAnalysis` with density
``ρ₀ m(ρ) + ρ_added`` and stiffness scale ``s(ρ)``: its objective and constraints receive
the :class:`~fesens.fem.analysis.modal.Modes` (``f(modes, ρ)``) and the same loop, filters and
optimizers run it. No static solve is made.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.analysis.modal import ModalAnalysis, Modes
from fesens.opt.interpolation import THRESHOLD, DuOlhoff, Pedersen
from fesens.opt.problem import DesignProblem

__all__ = ["THRESHOLD", "DuOlhoff", "FrequencyProblem", "Pedersen"]


class FrequencyProblem(DesignProblem):
    """Density-based design of the eigenvalues of ``K(ρ) φ = λ M(ρ) φ``.

    Parameters
    ----------
    model : LinearModel
        With its Dirichlet conditions (no loads needed).
    objective : callable
        ``f(modes, ρ)`` of the :class:`~fesens.fem.analysis.modal.Modes`, minimized; e.g. to
        maximize a KS bound of the lowest three eigenvalues
        ``lambda modes, rho: -eigenvalue_ks(modes, count=3)``.
    n_modes : int
        Eigenpairs computed per evaluation (at least one more than an objective like
        :func:`~fesens.objectives.eigen.eigenvalue_sum` uses).
    density : float
        The solid material's density ``ρ₀``.
    added_density : float or numpy.ndarray, optional
        Non-structural mass per cell ``(n_cells,)`` (not interpolated): a point mass spread
        over a few cells.
    lumped : bool
        Lumped instead of consistent mass.
    interpolation : DuOlhoff or Pedersen
        Default :class:`DuOlhoff` with ``p = 3``.
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (``volume_fraction``, ``filter``,
        ``projection``, passive cells, ``constraints`` of ``f(modes, ρ)``, ``solver``).
    """

    def __init__(self, model, objective, *, n_modes: int = 4, density: float = 1.0,
                 added_density=0.0, lumped: bool = False, interpolation=None, **options):
        interpolation = interpolation or DuOlhoff()
        if not interpolation.interpolates_mass:
            raise TypeError(f"a frequency problem needs an interpolation with a mass "
                            f"(DuOlhoff or Pedersen), not {type(interpolation).__name__}")
        if options.get("load_cases") is not None:
            raise ValueError("a frequency problem has no load cases: drop load_cases")
        if not density > 0.0:
            raise ValueError(f"density must be > 0, got {density!r}")
        super().__init__(model, objective, interpolation=interpolation, **options)
        self.n_modes = int(n_modes)
        self.material_density = float(density)
        self.added_density = np.broadcast_to(np.asarray(added_density, dtype=float),
                                             (self.mesh.n_cells,)).copy()
        self.lumped = bool(lumped)

    def solve(self, rho) -> Modes:
        """The lowest :attr:`n_modes` eigenpairs at densities ``ρ`` (traced)."""
        density = self.material_density * self.interpolation.mass(rho) + self.added_density
        analysis = ModalAnalysis(self.model, self.n_modes, lumped=self.lumped,
                                 solver=self.differentiable.solver)
        return analysis.run(density=density, scale=self.interpolation(rho))
