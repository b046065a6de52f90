"""Differentiable FEM: traced assembly and solves of a model, and objectives.

>>> from fesens.objectives import Differentiable, compliance       # doctest: +SKIP
>>> problem = Differentiable(model)                              # doctest: +SKIP
>>> dC = fesens.ad.grad(lambda x: compliance(problem.solve(scale=x**3)))(x)  # doctest: +SKIP
"""

from fesens.objectives.differentiable import Differentiable, State
from fesens.objectives.eigen import (
    eigenvalue,
    eigenvalue_ks,
    eigenvalue_sum,
    frequency,
)
from fesens.objectives.static import (
    compliance,
    displacement_at,
    displacement_norm,
    mean_displacement,
    mean_temperature,
    mean_value,
    misfit,
    strain_energy,
    stress_ks,
    stress_pnorm,
    thermal_compliance,
    value_at,
    volume,
    von_mises_squared,
)

__all__ = [
    "Differentiable",
    "State",
    "compliance",
    "displacement_at",
    "displacement_norm",
    "eigenvalue",
    "eigenvalue_ks",
    "eigenvalue_sum",
    "frequency",
    "mean_displacement",
    "mean_temperature",
    "mean_value",
    "misfit",
    "stress_ks",
    "stress_pnorm",
    "strain_energy",
    "thermal_compliance",
    "value_at",
    "volume",
    "von_mises_squared",
]
