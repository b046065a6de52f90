"""The mass matrix of a linear model, ``M = ∫ ρ t N Nᵀ``, traced like its stiffness.

A mixin of :class:`~fesens.fem.model.linear.LinearModel`: the analyses with inertia (free
vibration, structural dynamics, the frequency response; for conduction the heat capacity)
read :meth:`MassMatrices.mass` and :meth:`MassMatrices.mass_operator`. The cell matrices are
those of :class:`~fesens.fem.integrals.mass.MassForm` (consistent or HRZ-lumped).
"""

from __future__ import annotations

import numpy as np

from fesens.fem.assembly.assembler import Assembler
from fesens.fem.assembly.primitives import BlockOperator, assemble, assemble_at_points
from fesens.fem.integrals.mass import MassForm
from fesens.fem.model.parameters import Parameter

#: The density of a mass matrix (for conduction: the heat capacity ``ρ c``).
DENSITY = Parameter("density", "the mass", lower=0.0, lower_open=False)


class MassMatrices:
    """Mass operators and matrices of a :class:`~fesens.fem.model.linear.LinearModel`."""

    def mass_operator(self, lumped: bool = False) -> tuple[BlockOperator, MassForm]:
        """The free–free mass operator for the current Dirichlet dofs, and its form (kept
        until the set of Dirichlet dofs changes)."""
        dofs = self.constrained_dofs
        kept = self.__dict__.setdefault("_mass_operators", {})
        entry = kept.get(bool(lumped))
        if entry is None or not np.array_equal(entry[0], dofs):
            form = MassForm(self, lumped)
            assembler = Assembler(self.dofmap.cell_dofs, self.dofmap.n_dofs, dofs,
                                  form.cell_matrices())
            entry = kept[bool(lumped)] = (dofs, BlockOperator(assembler, "ff"), form)
        return entry[1], entry[2]

    def mass(self, density=1.0, *, lumped: bool = False, points=None):
        """The free–free mass matrix ``M_ff`` as a :class:`~fesens.ad.sparse.PatternMatrix`
        (traced in ``density`` ``()`` or ``(n_cells,)`` and ``points`` ``(n_points, dim)``)."""
        DENSITY.check(density, self.mesh.n_cells)
        operator, form = self.mass_operator(lumped)
        coefficient = form.coefficient(density)
        if points is None:
            return assemble(operator, coefficient)
        return assemble_at_points(operator, form, None, points, coefficient)
