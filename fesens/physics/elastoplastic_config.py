"""The configuration fragment of small-strain J2 elastoplasticity (``[physics] type =
"elastoplasticity"``), kept apart from the model so that its module holds the mechanics.

The ``[material]`` keys are the model's constants: ``E``, ``nu``, ``yield_stress`` and the
hardening, given by its moduli (each optional, default 0: perfect plasticity):
``isotropic_modulus`` (linear isotropic), ``kinematic_modulus`` (linear kinematic, with
``kinematic_recovery`` Armstrong–Frederick's), ``saturation_stress`` with
``saturation_rate`` (Voce's isotropic saturation). Its analysis is incremental
(``[analysis] type = "incremental"`` with the load factors of its history).
"""

from __future__ import annotations

from fesens.physics.spec import LoadKind, Option, PhysicsConfig, Reported

#: The ``[material]`` keys: the elastic constants, the yield stress, the hardening moduli.
MATERIAL = ("E", "nu", "yield_stress", "isotropic_modulus", "kinematic_modulus",
            "saturation_stress", "saturation_rate", "kinematic_recovery")

ELASTOPLASTIC_CONFIG = PhysicsConfig(
    options=(
        Option("thickness", "2D only: out-of-plane thickness (plane strain)", 1.0, dims=(2,)),
        Option("penal", "design: the stiffness follows the density scale as rho^penal", 3.0),
        Option("yield_penal", "design: the yield stress and hardening moduli follow it as "
               "rho^yield_penal (below penal: intermediate densities no stronger than they "
               "are stiff)", 2.5),
    ),
    material=MATERIAL,
    vector_field=True,
    loads=(
        LoadKind("point", "point_load", "nodes", True, "force vector"),
        LoadKind("traction", "surface_load", "facets", True, "force vector per unit area"),
        LoadKind("body_force", "volume_load", "cells", True, "force vector per unit volume"),
    ),
    responses={"compliance": "compliance", "displacement": "value",
               "plastic_work": "plastic_work"},
    compliance_name="external work f·u",
    # a design's summary (the last increment's fields; ``fesens solve`` reports every
    # increment's in solution.json)
    reported=(Reported("max_displacement", "displacement", "max_norm", "max |u|"),
              Reported("max_von_mises", "von_mises", "max", "max von Mises"),
              Reported("max_equivalent_plastic_strain", "equivalent_plastic_strain", "max",
                       "max equivalent plastic strain")),
    # Armstrong–Frederick's recovery turns the flow with the back stress: no major symmetry
    unsymmetric_material=("kinematic_recovery",),
)
