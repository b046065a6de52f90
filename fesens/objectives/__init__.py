"""Differentiable FEM: traced assembly and solves of a model, and objectives.

>>> from fesens.objectives import Differentiable, compliance       # doctest: +SKIP
>>> problem = Differentiable(model)                              # doctest: +SKIP
>>> dC = fesens.ad.grad(lambda x: compliance(problem.solve(scale=x**3)))(x)  # doctest: +SKIP
"""

from fesens.objectives import static
from fesens.objectives.differentiable import Differentiable, State
from fesens.objectives.eigen import (
    eigenvalue,
    eigenvalue_ks,
    eigenvalue_sum,
    frequency,
)
from fesens.objectives.static import *  # noqa: F403  (its __all__: the objectives)

__all__ = [
    "Differentiable",
    "State",
    "eigenvalue",
    "eigenvalue_ks",
    "eigenvalue_sum",
    "frequency",
    *static.__all__,
]
