"""fesens.ad.spectral: tr(M^β) and M^p of symmetric positive definite matrices, their
first and second derivatives against central differences where the eigenvalues are
distinct, pairwise equal and all equal (M = I), in M and in the exponent, forward against
reverse mode, the refused third derivatives, and Ogden's law built on them."""

import numpy as np
import pytest

from fesens.ad import grad, jvp
from fesens.ad.pointwise import pointwise_grad, pointwise_hessian
from fesens.ad.spectral import power_trace, sym_power
from fesens.physics.hyperelastic_law import hyperelastic_law

ROTATION = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
#: eigenvalues of the three kinds of points: distinct, two equal, all equal (M = I)
SPECTRA = {"distinct": (2.5, 1.1, 0.4), "two equal": (2.5, 0.6, 0.6),
           "identity": (1.0, 1.0, 1.0)}
BETAS = (0.65, 2.5, -1.0)


def _matrices():
    """``(3 kinds, 3 exponents, 3, 3)`` rotated diagonal matrices, and the exponents
    ``(3, 3)`` (one per point)."""
    M = np.array([[ROTATION @ np.diag(s) @ ROTATION.T] * len(BETAS) for s in SPECTRA.values()])
    return M, np.broadcast_to(np.array(BETAS), M.shape[:2]).copy()


def _symmetric_direction(seed):
    d = np.random.default_rng(seed).standard_normal((3, 3))
    return d + d.T


def test_values_are_the_eigenvalue_sums():
    M, beta = _matrices()
    expected = [[sum(m ** b - 1.0 for m in s) for b in BETAS] for s in SPECTRA.values()]
    np.testing.assert_allclose(power_trace(M, beta), expected, rtol=1e-13, atol=1e-14)
    p = 1.7
    np.testing.assert_allclose(sym_power(M[0, 0], p),
                               ROTATION @ np.diag(np.power(SPECTRA["distinct"], p)) @ ROTATION.T,
                               rtol=1e-13)


def test_gradient_and_hessian_in_M_against_central_differences():
    """``β M^{β−1}`` and its derivative (the Daleckii–Krein rule, reverse over reverse)
    against central differences at every kind of spectrum, ``M = I`` included."""
    M, beta = _matrices()
    hessian = pointwise_hessian(power_trace, M, beta, event_ndim=2)
    gradient = pointwise_grad(power_trace, M, beta)
    h = 1e-6
    for seed in range(3):
        dM = np.broadcast_to(_symmetric_direction(seed), M.shape)
        plus, minus = power_trace(M + h * dM, beta), power_trace(M - h * dM, beta)
        np.testing.assert_allclose(np.sum(gradient * dM, axis=(-2, -1)), (plus - minus) / (2 * h),
                                   rtol=1e-8, atol=1e-9)
        difference = (pointwise_grad(power_trace, M + h * dM, beta)
                      - pointwise_grad(power_trace, M - h * dM, beta)) / (2 * h)
        np.testing.assert_allclose(np.einsum("...ijkl,...kl->...ij", hessian, dM), difference,
                                   rtol=0, atol=1e-8 * np.max(np.abs(difference)))
    # at M = I: ∂²tr(M^β)/∂M² = β(β − 1) I⊗I on symmetric directions (μ_i = μ_j = 1)
    eye = np.eye(3)
    for b, H in zip(BETAS, hessian[2], strict=True):
        dM = _symmetric_direction(7)
        np.testing.assert_allclose(np.einsum("ijkl,kl->ij", H, dM), b * (b - 1.0) * dM,
                                   rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(pointwise_grad(power_trace, eye, b), b * eye, rtol=1e-14)


def test_derivatives_in_the_exponent_against_central_differences():
    """``Σ μ^β ln μ`` (β per point, and a scalar β summed over the points), and the mixed
    derivative ``∂(β M^{β−1})/∂β`` through ``sym_power``'s rule in ``p``."""
    M, beta = _matrices()
    h = 1e-6
    central = (power_trace(M, beta + h) - power_trace(M, beta - h)) / (2 * h)
    np.testing.assert_allclose(grad(lambda b: np.sum(power_trace(M, b)))(beta), central,
                               rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(grad(lambda b: np.sum(power_trace(M, b)))(0.7),
                               np.sum((power_trace(M, 0.7 + h) - power_trace(M, 0.7 - h))
                                      / (2 * h)), rtol=1e-8)
    weights = np.random.default_rng(3).standard_normal(M.shape)

    def stress_work(b):
        return np.sum(pointwise_grad(power_trace, M, b) * weights)

    units = np.eye(beta.size).reshape(-1, *beta.shape)
    central = [(stress_work(beta + h * e) - stress_work(beta - h * e)) / (2 * h) for e in units]
    np.testing.assert_allclose(grad(stress_work)(beta), np.reshape(central, beta.shape),
                               rtol=1e-7, atol=1e-8)


def test_forward_mode_agrees_with_reverse_mode():
    M, beta = _matrices()
    dM = np.broadcast_to(_symmetric_direction(4), M.shape)
    db = np.random.default_rng(5).standard_normal(beta.shape)
    _, tangent = jvp(power_trace, (M, beta), (dM, db))
    gM, gb = grad(lambda m, b: np.sum(power_trace(m, b)), (0, 1))(M, beta)
    np.testing.assert_allclose(tangent, np.sum(gM * dM, axis=(-2, -1)) + gb * db, rtol=1e-12,
                               atol=1e-12)
    weights = _symmetric_direction(6)
    _, tangent = jvp(lambda m, p: np.sum(sym_power(m, p) * weights), (M, beta), (dM, db))
    gM, gp = grad(lambda m, p: np.sum(sym_power(m, p) * weights), (0, 1))(M, beta)
    np.testing.assert_allclose(tangent, np.sum(gM * dM) + np.sum(gp * db), rtol=1e-12)


def test_third_derivatives_are_refused_by_name():
    M, _ = _matrices()

    def second_in_beta(b):
        return np.sum(grad(lambda c: np.sum(power_trace(M, c)))(b))

    with pytest.raises(NotImplementedError, match="power_trace's derivative in beta"):
        grad(second_in_beta)(0.7)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("stretches", [(1.0, 1.0, 1.0), (1.4, 0.8, 0.8), (1.4, 0.9, 0.7)],
                         ids=["identity", "two equal", "distinct"])
def test_ogden_tangent_is_the_derivative_of_the_stress(stretches, d):
    """Ogden 1972's three-term law (rotated principal stretches): ``A dH`` against central
    differences of ``P`` at ``F = I``, at two equal stretches and at distinct ones."""
    law = hyperelastic_law("ogden-3")
    constants = (6.3, 1.3, 0.012, 5.0, -0.1, -2.0, 50.0)
    rotation = ROTATION[:d, :d] if d == 3 else np.linalg.qr(ROTATION[:2, :2])[0]
    H = (rotation @ np.diag(stretches[:d]) @ rotation.T - np.eye(d))[None, None]
    dH, h = np.random.default_rng(d).standard_normal(H.shape), 1e-6
    A = law.tangent(H, *constants)
    difference = (law.first_piola(H + h * dH, *constants)
                  - law.first_piola(H - h * dH, *constants)) / (2 * h)
    np.testing.assert_allclose(np.einsum("...iJkL,...kL->...iJ", A, dH), difference,
                               rtol=0, atol=1e-8 * np.max(np.abs(difference)))
