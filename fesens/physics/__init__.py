"""Physics: one module each, registered once (:mod:`fesens.physics.registry`).

* :mod:`fesens.physics.elasticity`: :class:`Elasticity` (plane stress/strain, 3D).
* :mod:`fesens.physics.conduction`: :class:`HeatConduction` (steady heat conduction).
"""

from fesens.physics.conduction import HeatConduction, HeatSolution
from fesens.physics.elasticity import Elasticity, ElasticSolution
from fesens.physics.registry import PHYSICS, physics_class, register_physics

__all__ = [
    "PHYSICS",
    "ElasticSolution",
    "Elasticity",
    "HeatConduction",
    "HeatSolution",
    "physics_class",
    "register_physics",
]
