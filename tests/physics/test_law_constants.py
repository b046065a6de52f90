"""A law's constants as the finite-strain model's parameters: a homogeneous solve against
the closed form, Taylor tests of gradients through the solve in each constant and the
scale, and the refused constants."""

import numpy as np
import pytest

from fesens.ad import taylor_test
from fesens.mesh.generators import box, rectangle
from fesens.objectives import compliance
from fesens.physics.energy_law import HyperelasticLaw, strain_part, trace
from fesens.physics.hyperelasticity import FiniteStrainElasticity

CASES = {
    "mooney-rivlin": {"c10": 0.3, "c01": 0.05, "kappa": 10.0},
    "yeoh": {"c10": 0.3, "c20": -0.01, "c30": 0.002, "kappa": 10.0},
    "gent": {"mu": 0.6, "Jm": 5.0, "kappa": 10.0},
    "arruda-boyce": {"mu": 0.6, "lambda_m": 2.5, "kappa": 10.0},
    "ogden": {"mu1": 0.6, "alpha1": 3.0, "kappa": 10.0},
    "holzapfel-gasser-ogden": {"mu": 0.6, "k1": 0.5, "k2": 2.0, "kappa": 10.0,
                               "fibre_angle": 0.3},
}


def test_one_cell_tension_is_the_closed_form_of_mooney_rivlin():
    """A hex8 cube pulled along x by a traction ``P`` with symmetry supports, nearly
    incompressible (``κ = 10⁴ μ₀``): the stretch solves ``P = 2(λ − λ⁻²)(c₁₀ + c₀₁/λ)`` to
    ``O(μ₀/κ)``."""
    model = FiniteStrainElasticity(box(1, 1, 1, 1.0, 1.0, 1.0, "hex8"), law="mooney-rivlin",
                                   c10=0.3, c01=0.05, kappa=7e3)
    model.fix("left", components=[0]).fix("bottom", components=[1])
    model.fix("back", components=[2]).traction("right", (1.0, 0.0, 0.0))
    stretch = 1.0 + model.solve(steps=1).displacement[:, 0].max()
    assert 2.0 * (stretch - stretch ** -2) * (0.3 + 0.05 / stretch) == pytest.approx(
        1.0, rel=2e-4)


def _strip(law: str) -> FiniteStrainElasticity:
    model = FiniteStrainElasticity(rectangle(4, 2, 1.0, 0.5, "quad4"), law=law, **CASES[law])
    model.fix("left").traction("right", (0.2, 0.05), name="tip")
    return model


@pytest.fixture(scope="module", params=sorted(CASES))
def strip(request):
    return _strip(request.param)


def test_taylor_through_the_solve_in_every_constant_and_the_scale(strip):
    """Per-cell constants and scale at once; the remainders fall at rate 2."""
    n = strip.mesh.n_cells
    rng = np.random.default_rng(0)
    x = {key: value * (1.0 + 0.1 * rng.random(n)) for key, value in strip.constants.items()}
    x["scale"] = 0.8 + 0.2 * rng.random(n)

    def objective(values):
        solution = strip.solve(steps=2, **values)
        return compliance(solution) + 3.0 * np.sum(solution.u ** 3)

    result = taylor_test(objective, x, verbose=False)
    assert result.rate > 1.9, result.table()


def test_the_scale_scales_the_stress():
    """``s P``: with ``s = 2`` and twice the load the displacement is that of ``s = 1``
    and the von Mises stress twice it."""
    strip = _strip("holzapfel-gasser-ogden")
    once = strip.solve(steps=2)
    twice = strip.solve(steps=2, scale=2.0 * np.ones(strip.mesh.n_cells), loads={"tip": 2.0})
    np.testing.assert_allclose(twice.displacement, once.displacement, atol=1e-10)
    np.testing.assert_allclose(twice.von_mises(), 2.0 * once.von_mises(), rtol=1e-9)


@pytest.mark.parametrize(("keywords", "message"), [
    ({"c10": 0.3, "c01": 0.05}, r"takes the constants c10, c01, kappa .*got c01, c10"),
    ({"c10": 0.3, "c01": 0.05, "kappa": 1.0, "E": 3.0}, r"\(not E, nu\).*E"),
    ({"c10": 0.3, "c01": 0.05, "kappa": -1.0}, "kappa must be > 0"),
])
def test_constants_are_checked(keywords, message):
    with pytest.raises((TypeError, ValueError), match=message):
        FiniteStrainElasticity(rectangle(2, 1, 1.0, 0.5, "quad4"), law="mooney-rivlin",
                               **keywords)


def test_solve_takes_the_law_constants_not_E():
    model = FiniteStrainElasticity(rectangle(2, 1, 1.0, 0.5, "quad4"), law="mooney-rivlin",
                                   **CASES["mooney-rivlin"])
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['E'\].*c10, c01, kappa"):
        model.solve(E=2.0)
    with pytest.raises(ValueError, match="void_treatment"):
        FiniteStrainElasticity(model.mesh, law="yeoh", c10=1.0, c20=0.0, c30=0.0, kappa=1.0,
                               void_treatment="energy_interpolation")
    with pytest.raises(TypeError, match="takes E and nu"):
        FiniteStrainElasticity(model.mesh, c10=1.0)
    scaled = HyperelasticLaw.from_energy("scaled", "W = scale tr(C − I)",
                                         lambda H, scale: scale * trace(strain_part(H)),
                                         constants=("scale",))
    with pytest.raises(ValueError, match="names a constant 'scale'"):
        FiniteStrainElasticity(model.mesh, law=scaled, scale=1.0)
