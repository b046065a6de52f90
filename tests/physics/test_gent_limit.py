"""Gent's energy ``−μ J_m/2 ln(1 − (Ī₁ − 3)/J_m)`` is defined for ``Ī₁ − 3 < J_m`` only: a
state beyond is inadmissible (Newton's step control backs off), a solve that must leave the
domain stops naming the law, the limit and the first point, and a load path that ends near
the limit converges inside it."""

import numpy as np
import pytest

from fesens.errors import NewtonError
from fesens.mesh.generators import box
from fesens.physics.energy_law import HyperelasticLaw
from fesens.physics.hyperelastic_law import HYPERELASTIC_LAWS
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.physics.rubber_laws import (
    DOMAIN_LIMITS,
    RUBBER_LAWS,
    domain_limit,
    gent,
    isochoric_first,
)

CONSTANTS = {"mu": 0.6, "Jm": 0.3, "kappa": 60.0}


def _cube() -> FiniteStrainElasticity:
    return FiniteStrainElasticity(box(1, 1, 1, 1.0, 1.0, 1.0, "hex8"), law="gent", **CONSTANTS)


def _largest_invariant(model, u) -> float:
    """The largest ``Ī₁ − 3`` over the quadrature points of the state ``u``."""
    _, _, grad_q = model._at_quadrature(u, None)
    return float(np.max(isochoric_first(grad_q)))


def test_a_shear_beyond_the_limit_is_refused_naming_the_law_the_limit_and_the_point():
    """Simple shear ``γ = 0.8`` of one cell: ``Ī₁ − 3 ≈ γ² > J_m = 0.3``."""
    model = _cube()
    model.fix("bottom").fix("top", components=[0], value=0.8)
    with pytest.raises(NewtonError, match=r"law 'gent' is defined for Ī₁ − 3 < J_m only: "
                                          r"beyond it at .* the first at cell 0, point \d, "
                                          r"with 0\.3\d* against 0\.3"):
        model.solve(newton={"max_cutbacks": 3})


def test_a_load_path_near_the_limit_converges_inside_it():
    """A tension whose equilibrium has ``Ī₁ − 3 ≈ 0.95 J_m``; Newton's linear predictor
    (strain ≈ P/(3μ) = 5) lies far beyond, so the step control kept the iterates inside."""
    model = _cube()
    model.fix("left", components=[0]).fix("bottom", components=[1])
    model.fix("back", components=[2]).traction("right", (9.0, 0.0, 0.0))
    solution = model.solve()
    assert np.all(np.isfinite(solution.u))
    assert 0.9 < _largest_invariant(model, solution.u) / CONSTANTS["Jm"] < 1.0
    beyond = model.inadmissibility(1.5 * solution.u, model.material_fields())
    assert beyond is not None and "Ī₁ − 3 < J_m" in beyond


def test_only_gent_has_a_limit_besides_a_positive_jacobian():
    assert set(DOMAIN_LIMITS) == {"gent"}
    assert [law.name for law in RUBBER_LAWS if domain_limit(law)] == ["gent"]
    assert domain_limit(HYPERELASTIC_LAWS["neo-hookean"]) is None
    # a user's law of the same name is not the registered one
    assert domain_limit(HyperelasticLaw.from_energy("gent", "a user's Gent", gent,
                                                    ("mu", "Jm", "kappa"),
                                                    example_constants=(1.0, 50.0, 1.0))) is None
