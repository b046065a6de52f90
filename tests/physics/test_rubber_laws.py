"""The rubber and fibre laws of fesens.physics.rubber_laws: linear elasticity at F = I,
uniaxial tension against each law's closed form in the incompressible limit, the derived
tangent against central differences of the stress (at equal stretches too), and the
refused constants."""

import numpy as np
import pytest

from fesens.physics.hyperelastic_law import hyperelastic_law
from fesens.physics.rubber_laws import RUBBER_LAWS, arruda_boyce_shear_modulus

KAPPA = 50.0
#: constants of each law (κ = KAPPA) and its initial shear modulus μ₀
EXAMPLES = {
    "mooney-rivlin": ((0.3, 0.2, KAPPA), 1.0),
    "yeoh": ((0.4, -0.01, 0.002, KAPPA), 0.8),
    "gent": ((1.0, 30.0, KAPPA), 1.0),
    "arruda-boyce": ((1.0, 3.0, KAPPA), arruda_boyce_shear_modulus(1.0, 3.0)),
    "ogden": ((0.6, 3.0, KAPPA), 0.9),
    "ogden-2": ((0.6, 3.0, -0.02, -2.0, KAPPA), 0.92),
    # Ogden 1972's three-term fit to Treloar's data (μ_p in kg/cm²)
    "ogden-3": ((6.3, 1.3, 0.012, 5.0, -0.1, -2.0, KAPPA), 0.5 * (6.3 * 1.3 + 0.06 + 0.2)),
    "holzapfel-gasser-ogden": ((1.0, 2.0, 3.0, KAPPA, 0.4), 1.0),
}


def test_every_law_has_an_example():
    assert sorted(EXAMPLES) == sorted(law.name for law in RUBBER_LAWS)


def _isotropic(d, lam, mu):
    eye = np.eye(d)
    return (lam * np.einsum("iJ,kL->iJkL", eye, eye)
            + mu * (np.einsum("ik,JL->iJkL", eye, eye) + np.einsum("iL,Jk->iJkL", eye, eye)))


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_stress_free_with_the_linear_elastic_tangent_at_identity(name, d):
    """``P(I) = 0`` and ``A(I) = λ δδ + μ₀ (δδ + δδ)`` with ``λ = κ − 2μ₀/3`` (plane
    strain: the same in 2D), plus ``4 k₁ N⊗N``, ``N = a⊗a − I/3``, per fibre family."""
    law = hyperelastic_law(name)
    constants, mu0 = EXAMPLES[name]
    H = np.zeros((1, 1, d, d))
    expected = _isotropic(d, KAPPA - 2.0 * mu0 / 3.0, mu0)
    if name == "holzapfel-gasser-ogden":
        angle = constants[-1]
        for sign in (1.0, -1.0):
            a = np.array([np.cos(angle), sign * np.sin(angle), 0.0])
            N = (np.outer(a, a) - np.eye(3) / 3.0)[:d, :d]
            expected = expected + 4.0 * constants[1] * np.einsum("iJ,kL->iJkL", N, N)
    np.testing.assert_allclose(law.first_piola(H, *constants), 0.0, atol=1e-14)
    np.testing.assert_allclose(law.tangent(H, *constants)[0, 0], expected, rtol=0,
                               atol=1e-12 * np.max(np.abs(expected)))


def _uniaxial_nominal_stress(law, constants, stretches):
    """``P₁₁`` of ``F = diag(λ, t, t)`` at each stretch ``λ`` ``(n,)``, with ``t`` such that
    ``P₂₂ = P₃₃ = 0``: Newton on ``t`` from ``λ^{-1/2}``, all stretches at once."""
    lateral = stretches ** -0.5
    for _ in range(30):
        H = np.zeros((len(stretches), 3, 3))
        H[:, 0, 0], H[:, 1, 1], H[:, 2, 2] = stretches - 1.0, lateral - 1.0, lateral - 1.0
        P, A = law.first_piola(H, *constants), law.tangent(H, *constants)
        step = P[:, 1, 1] / (A[:, 1, 1, 1, 1] + A[:, 1, 1, 2, 2])
        lateral = lateral - step
        if np.max(np.abs(step)) < 1e-15:
            return P[:, 0, 0]
    raise AssertionError(f"no lateral stretch found: last step {step}")


def _closed_forms(s):
    """Incompressible uniaxial nominal stress of each law at the stretch ``s``."""
    x = s * s + 2.0 / s - 3.0  # Ī₁ − 3
    shear = s - s ** -2
    ab = sum(i * a * (x + 3.0) ** (i - 1) / 9.0 ** (i - 1) for i, a in
             enumerate((1 / 2, 1 / 20, 11 / 1050, 19 / 7000, 519 / 673750), start=1))

    def ogden(*pairs):
        return sum(mu * (s ** (alpha - 1.0) - s ** (-alpha / 2.0 - 1.0)) for mu, alpha in pairs)

    return {
        "mooney-rivlin": 2.0 * shear * (0.3 + 0.2 / s),
        "yeoh": 2.0 * shear * (0.4 - 2 * 0.01 * x + 3 * 0.002 * x * x),
        "gent": shear / (1.0 - x / 30.0),
        "arruda-boyce": 2.0 * shear * ab,
        "ogden": ogden((0.6, 3.0)),
        "ogden-2": ogden((0.6, 3.0), (-0.02, -2.0)),
        "ogden-3": ogden((6.3, 1.3), (0.012, 5.0), (-0.1, -2.0)),
        # both fibre families along x (θ = 0): Ī₄ = λ²
        "holzapfel-gasser-ogden": shear + 4.0 * 2.0 * s * (s * s - 1.0)
        * np.exp(3.0 * (s * s - 1.0) ** 2),
    }


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_uniaxial_tension_approaches_the_incompressible_closed_form(name):
    """With ``κ = 10⁸ μ₀`` the lateral stretch makes ``J → 1`` and ``P₁₁`` is the closed
    form of the incompressible law (e.g. Mooney–Rivlin ``2(λ − λ⁻²)(c₁₀ + c₀₁/λ)``) to
    ``O(μ₀/κ)``, in tension and compression."""
    law = hyperelastic_law(name)
    constants, mu0 = EXAMPLES[name]
    constants = (*constants[:-1], 1e8 * mu0) if name != "holzapfel-gasser-ogden" else \
        (*constants[:3], 1e8 * mu0, 0.0)
    stretches = np.array([0.7, 1.3, 2.5 if name != "holzapfel-gasser-ogden" else 1.2])
    expected = [_closed_forms(stretch)[name] for stretch in stretches]
    np.testing.assert_allclose(_uniaxial_nominal_stress(law, constants, stretches), expected,
                               rtol=1e-6)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_tangent_is_the_derivative_of_the_stress(name, d):
    """``A dH`` against central differences of ``P`` at random deformations with per-cell
    constants, and at equal stretches (``F = 1.2 I``), where an eigen-decomposition's
    derivatives would divide by zero."""
    law = hyperelastic_law(name)
    constants, _ = EXAMPLES[name]
    rng = np.random.default_rng(d)
    H = np.concatenate([0.15 * rng.standard_normal((3, 2, d, d)),
                        np.broadcast_to(0.2 * np.eye(d), (3, 1, d, d))], axis=1)
    per_cell = tuple(c * (1.0 + 0.1 * rng.random((3, 1))) for c in constants)
    dH, h = rng.standard_normal(H.shape), 1e-6
    A = law.tangent(H, *per_cell)
    difference = (law.first_piola(H + h * dH, *per_cell)
                  - law.first_piola(H - h * dH, *per_cell)) / (2 * h)
    np.testing.assert_allclose(np.einsum("...iJkL,...kL->...iJ", A, dH), difference,
                               rtol=0, atol=1e-7 * np.max(np.abs(difference)))
    np.testing.assert_allclose(A, np.swapaxes(np.swapaxes(A, -4, -2), -3, -1), atol=1e-10)


@pytest.mark.parametrize(("name", "constants", "message"), [
    ("mooney-rivlin", (0.3, 0.2, 0.0), "kappa must be > 0"),
    ("mooney-rivlin", (0.3, -0.4, 1.0), "initial shear modulus"),
    ("ogden", (0.3, 0.0, 1.0), "alpha1 must not be 0"),
    ("gent", (1.0, -1.0, 1.0), "Jm must be > 0"),
    ("yeoh", (np.nan, 0.0, 0.0, 1.0), "finite"),
])
def test_constants_outside_the_range_are_refused(name, constants, message):
    with pytest.raises(ValueError, match=message):
        hyperelastic_law(name).first_piola(np.zeros((1, 3, 3)), *constants)
