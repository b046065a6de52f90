"""Physics: one module each, registered once (:mod:`fesens.physics.registry`).

* :mod:`fesens.physics.elasticity`: :class:`Elasticity` (plane stress/strain, 3D).
* :mod:`fesens.physics.conduction`: :class:`HeatConduction` (steady heat conduction).
* :mod:`fesens.physics.nonlinear_conduction`: :class:`NonlinearHeatConduction` (steady heat
  conduction with a temperature-dependent conductivity; Newton).
* :mod:`fesens.physics.hyperelasticity`: :class:`FiniteStrainElasticity` (finite-strain
  hyperelasticity, plane strain and 3D).
* :mod:`fesens.physics.mean_dilatation`: :class:`MeanDilatationElasticity` (its
  locking-free formulation for nearly incompressible laws).
* :mod:`fesens.physics.truss`: :class:`Truss` (pin-jointed bars in 2D and 3D).
* :mod:`fesens.physics.geometric_stiffness`: :class:`ElasticBuckling` (buckling load
  factors of an elastic model and their sensitivities; :func:`linear_buckling`, deprecated).

The package imports every formulation's class, where ``FiniteStrainElasticity(...,
formulation=...)`` finds it.
"""

from fesens.physics.conduction import HeatConduction, HeatSolution
from fesens.physics.elasticity import Elasticity, ElasticSolution
from fesens.physics.geometric_stiffness import ElasticBuckling, linear_buckling
from fesens.physics.hyperelasticity import FiniteStrainElasticity, FiniteStrainSolution
from fesens.physics.mean_dilatation import MeanDilatationElasticity
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction, NonlinearHeatSolution
from fesens.physics.registry import PHYSICS, physics_class, register_physics
from fesens.physics.truss import Truss, TrussSolution

__all__ = [
    "PHYSICS",
    "ElasticBuckling",
    "ElasticSolution",
    "Elasticity",
    "FiniteStrainElasticity",
    "FiniteStrainSolution",
    "MeanDilatationElasticity",
    "HeatConduction",
    "HeatSolution",
    "NonlinearHeatConduction",
    "NonlinearHeatSolution",
    "Truss",
    "TrussSolution",
    "linear_buckling",
    "physics_class",
    "register_physics",
]
