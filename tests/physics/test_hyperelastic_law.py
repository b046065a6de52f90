"""The finite-strain laws of :mod:`fesens.physics.hyperelastic_law`.

P against the AD gradient of W, the hand-derived tangent against forward-over-reverse AD
and central differences of P, the small-strain limit (Hooke's law), objectivity, plane
strain as 3D with a unit out-of-plane stretch, and the uniaxial tension of the compressible
neo-Hookean block in closed form (Bonet & Wood, *Nonlinear Continuum Mechanics for Finite
Element Analysis*, 2nd ed., 2008, eq. 6.27 for W).
"""

import dataclasses

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation

from fesens.ad import grad, jvp, taylor_test
from fesens.physics.hyperelastic_law import (
    HYPERELASTIC_LAWS,
    HyperelasticLaw,
    check_constants,
    hyperelastic_law,
    inverted_points,
    jacobian,
    lame_constants,
)

#: the laws of the Lamé constants (the rubber laws: tests/physics/test_rubber_laws.py)
LAWS = sorted(name for name, law in HYPERELASTIC_LAWS.items() if law.constants == ("lam", "mu"))
N_CELLS, N_QP = 3, 4


def _state(d: int, seed: int = 0, size: float = 0.25):
    """Random ``H`` ``(N_CELLS, N_QP, d, d)`` with ``det F > 0`` and per-cell ``λ, μ``."""
    rng = np.random.default_rng(seed)
    H = size * rng.standard_normal((N_CELLS, N_QP, d, d))
    assert np.all(jacobian(H) > 0.2)
    lam = 1.0 + rng.random((N_CELLS, 1))
    mu = 0.5 + rng.random((N_CELLS, 1))
    return H, lam, mu


def _rotations(d: int, seed: int) -> np.ndarray:
    """Random rotations ``(N_CELLS, N_QP, d, d)``."""
    if d == 3:
        return Rotation.random(N_CELLS * N_QP, random_state=seed).as_matrix().reshape(
            N_CELLS, N_QP, 3, 3)
    angle = np.random.default_rng(seed).uniform(-np.pi, np.pi, (N_CELLS, N_QP))
    cos, sin = np.cos(angle), np.sin(angle)
    return np.stack([np.stack([cos, -sin], -1), np.stack([sin, cos], -1)], -2)


def _contract(A, dH):
    return np.einsum("...iJkL,...kL->...iJ", A, dH)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
def test_first_piola_is_the_gradient_of_the_energy(name, d):
    law = hyperelastic_law(name)
    H, lam, mu = _state(d)
    P = law.first_piola(H, lam, mu)
    dW = grad(lambda h: np.sum(law.energy(h, lam, mu)))(H)
    assert P.shape == H.shape
    np.testing.assert_allclose(P, dW, rtol=0, atol=1e-12 * np.max(np.abs(P)))


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
def test_tangent_is_the_derivative_of_the_stress(name, d):
    """Against forward-over-reverse AD of W (any direction) and central differences of P
    (every column ``∂P/∂F_kL``), to 1e-8 of the tangent's size; major symmetry."""
    law = hyperelastic_law(name)
    H, lam, mu = _state(d, seed=1)
    A = law.tangent(H, lam, mu)
    assert A.shape == H.shape + (d, d)
    scale = np.max(np.abs(A))

    dH = np.random.default_rng(2).standard_normal(H.shape)
    _, A_dH = jvp(grad(lambda h: np.sum(law.energy(h, lam, mu))), (H,), (dH,))
    np.testing.assert_allclose(_contract(A, dH), A_dH, rtol=0,
                               atol=1e-8 * scale * np.max(np.abs(dH)))

    step = 1e-5
    for k in range(d):
        for L in range(d):
            e = np.zeros((d, d))
            e[k, L] = step
            central = (law.first_piola(H + e, lam, mu)
                       - law.first_piola(H - e, lam, mu)) / (2 * step)
            np.testing.assert_allclose(A[..., k, L], central, rtol=0, atol=1e-8 * scale)

    np.testing.assert_allclose(A, np.einsum("...iJkL->...kLiJ", A), rtol=0, atol=1e-13 * scale)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
def test_small_strains_give_hookes_law(name, d):
    """``|H| ~ 1e-6``: ``P = λ tr ε I + 2μ ε + O(|H|²)``, ``ε = (H + Hᵀ)/2``."""
    law = hyperelastic_law(name)
    H, lam, mu = _state(d, seed=3)
    H = 1e-6 * H / np.max(np.abs(H))
    eps = 0.5 * (H + np.swapaxes(H, -1, -2))
    trace = np.trace(eps, axis1=-2, axis2=-1)
    hooke = (lam * trace)[..., None, None] * np.eye(d) + 2 * mu[..., None, None] * eps
    P = law.first_piola(H, lam, mu)
    np.testing.assert_allclose(P, hooke, rtol=0, atol=1e-5 * np.max(np.abs(hooke)))


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
def test_objectivity(name, d):
    """``W(QF) = W(F)`` and ``P(QF) = Q P(F)`` for rotations ``Q``."""
    law = hyperelastic_law(name)
    H, lam, mu = _state(d, seed=4)
    Q = _rotations(d, seed=5)
    F = H + np.eye(d)
    H_rotated = Q @ F - np.eye(d)
    np.testing.assert_allclose(law.energy(H_rotated, lam, mu), law.energy(H, lam, mu),
                               rtol=1e-12)
    P = law.first_piola(H, lam, mu)
    np.testing.assert_allclose(law.first_piola(H_rotated, lam, mu), Q @ P, rtol=0,
                               atol=1e-12 * np.max(np.abs(P)))


@pytest.mark.parametrize("name", LAWS)
def test_plane_strain_is_3d_with_unit_out_of_plane_stretch(name):
    """The 2D law is the 3D one at ``F = diag(F_2D, 1)``: ``W``, ``P``, ``A`` in plane and
    the Cauchy stress with its ``σ_zz``."""
    law = hyperelastic_law(name)
    H2, lam, mu = _state(2, seed=7)
    H3 = np.zeros((N_CELLS, N_QP, 3, 3))
    H3[..., :2, :2] = H2
    np.testing.assert_allclose(law.energy(H2, lam, mu), law.energy(H3, lam, mu), rtol=1e-13)
    np.testing.assert_allclose(law.first_piola(H2, lam, mu),
                               law.first_piola(H3, lam, mu)[..., :2, :2], atol=1e-13)
    np.testing.assert_allclose(law.tangent(H2, lam, mu),
                               law.tangent(H3, lam, mu)[..., :2, :2, :2, :2], atol=1e-13)
    sigma2, sigma_zz = law.cauchy(H2, lam, mu)
    sigma3, none = law.cauchy(H3, lam, mu)
    assert none is None
    np.testing.assert_allclose(sigma2, sigma3[..., :2, :2], atol=1e-13)
    np.testing.assert_allclose(sigma_zz, sigma3[..., 2, 2], atol=1e-13)
    assert np.max(np.abs(sigma_zz)) > 0.01
    np.testing.assert_allclose(law.von_mises(H2, lam, mu), law.von_mises(H3, lam, mu),
                               rtol=1e-12)


@pytest.mark.parametrize("d", [2, 3])
def test_uniaxial_tension_of_the_neo_hookean_block(d):
    """Stretch ``λ1`` along x, traction-free sides: ``F = diag(λ1, λ2[, λ2])``.

    With ``P = μ (F − F⁻ᵀ) + λ ln J F⁻ᵀ`` (the derivative of Bonet & Wood's eq. 6.27):
    ``P_xx = μ (λ1 − 1/λ1) + λ ln J / λ1`` and ``σ_yy = 0`` ⇔ ``μ (λ2² − 1) + λ ln J = 0``,
    ``J = λ1 λ2^(d−1)`` (plane strain: the out-of-plane stretch is 1 and
    ``σ_zz = λ ln J / J``). ``λ2`` is found by brentq on the law's own ``σ_yy``; the von Mises
    stress of this state (``σ_yy = 0``) is ``√(σ_xx² − σ_xx σ_zz + σ_zz²)`` (``σ_xx`` in 3D).
    """
    law = hyperelastic_law("neo-hookean")
    lam, mu = lame_constants(1.0, 0.3, None if d == 3 else "strain")
    stretch = 1.5

    def gradient(lateral):
        return np.diag([stretch] + [lateral] * (d - 1)) - np.eye(d)

    lateral = brentq(lambda s: law.cauchy(gradient(s), lam, mu)[0][1, 1], 0.5, 1.0,
                     xtol=1e-15, rtol=1e-15)
    J = stretch * lateral ** (d - 1)
    assert abs(mu * (lateral**2 - 1) + lam * np.log(J)) < 1e-12
    P = law.first_piola(gradient(lateral), lam, mu)
    P_xx = mu * (stretch - 1 / stretch) + lam * np.log(J) / stretch
    assert P[0, 0] == pytest.approx(P_xx, rel=1e-12)
    np.testing.assert_allclose(P - np.diag(np.diag(P)), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.diag(P)[1:], 0.0, atol=1e-12)
    sigma, sigma_zz = law.cauchy(gradient(lateral), lam, mu)
    sigma_xx = P_xx * stretch / J
    assert sigma[0, 0] == pytest.approx(sigma_xx, rel=1e-12)
    out_of_plane = 0.0 if d == 3 else lam * np.log(J) / J
    if d == 2:
        assert sigma_zz == pytest.approx(out_of_plane, rel=1e-12)
    assert law.von_mises(gradient(lateral), lam, mu) == pytest.approx(
        np.sqrt(sigma_xx**2 - sigma_xx * out_of_plane + out_of_plane**2), rel=1e-12)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
def test_no_stress_in_the_reference_state(name, d):
    law = hyperelastic_law(name)
    H = np.zeros((N_CELLS, N_QP, d, d))
    _, lam, mu = _state(d)
    assert np.all(law.energy(H, lam, mu) == 0.0)
    np.testing.assert_allclose(law.first_piola(H, lam, mu), 0.0, atol=1e-15)
    sigma, sigma_zz = law.cauchy(H, lam, mu)
    np.testing.assert_allclose(sigma, 0.0, atol=1e-15)
    if d == 2:
        np.testing.assert_allclose(sigma_zz, 0.0, atol=1e-15)
    np.testing.assert_allclose(law.von_mises(H, lam, mu), 0.0, atol=1e-15)


def test_inverted_points_are_flagged():
    H = np.zeros((2, 3, 3, 3))
    H[0, 1, 0, 0] = -2.0    # F_xx = −1: inverted
    H[1, 2, 1, 1] = -1.0    # F_yy = 0: degenerate
    expected = np.zeros((2, 3), dtype=bool)
    expected[0, 1] = expected[1, 2] = True
    np.testing.assert_array_equal(inverted_points(H), expected)
    np.testing.assert_array_equal(inverted_points(_state(2)[0]), False)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
def test_stresses_are_differentiable(name, d):
    """Taylor test (rate ≈ 2) of a scalar of P and of σ_vm in ``H`` and ``(λ, μ)`` per cell,
    and forward mode in ``μ`` against reverse mode."""
    law = hyperelastic_law(name)
    H, lam, mu = _state(d, seed=8)
    weights = np.random.default_rng(9).standard_normal(H.shape)

    def response(x):
        return (np.sum(law.first_piola(x["H"], x["lam"], x["mu"]) * weights)
                + np.sum(law.von_mises(x["H"], x["lam"], x["mu"])))

    result = taylor_test(response, {"H": H, "lam": lam, "mu": mu}, verbose=False)
    assert result.rate > 1.9, result.table()

    direction = np.random.default_rng(10).standard_normal(mu.shape)
    _, forward = jvp(lambda m: response({"H": H, "lam": lam, "mu": m}), (mu,), (direction,))
    reverse = grad(lambda m: response({"H": H, "lam": lam, "mu": m}))(mu)
    assert forward == pytest.approx(np.sum(reverse * direction), rel=1e-12)


def test_constants_are_checked():
    with pytest.raises(ValueError, match="mu must be > 0"):
        check_constants(1.0, np.array([[1.0], [0.0]]))
    with pytest.raises(ValueError, match="lam must be > -2 mu / 3"):
        check_constants(-0.7, 1.0)
    check_constants(-0.6, 1.0)   # κ = 0.0667 > 0: a negative λ is allowed
    with pytest.raises(ValueError, match="finite"):
        check_constants(np.nan, 1.0)
    law = hyperelastic_law("neo-hookean")
    with pytest.raises(ValueError, match="mu must be > 0"):
        law.first_piola(np.zeros((2, 2)), 1.0, -1.0)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., d, d\)"):
        law.energy(np.zeros((4, 3)), 1.0, 1.0)
    with pytest.raises(ValueError, match=r"do not broadcast.*\(n_cells, 1\)"):
        law.energy(np.zeros((4, 3, 2, 2)), np.ones(4), 1.0)
    with pytest.raises(ValueError, match="Poisson's ratio nu must lie in"):
        lame_constants(1.0, 0.5)
    with pytest.raises(ValueError, match="Poisson's ratio nu must lie in"):
        lame_constants(1.0, np.array([0.3, -1.0]), "strain")
    with pytest.raises(ValueError, match="Young's modulus E must be > 0"):
        lame_constants(0.0, 0.3)
    with pytest.raises(ValueError, match="plane strain"):
        lame_constants(1.0, 0.3, "stress")
    lam, mu = lame_constants(1.0, 0.25, "strain")
    assert (lam, mu) == pytest.approx((0.4, 0.4))


def test_registry():
    assert LAWS == ["neo-hookean", "saint-venant-kirchhoff"]
    for name, law in HYPERELASTIC_LAWS.items():
        assert isinstance(law, HyperelasticLaw)
        assert law.name == name
    with pytest.raises(TypeError):
        HYPERELASTIC_LAWS["other"] = HYPERELASTIC_LAWS["neo-hookean"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        HYPERELASTIC_LAWS["neo-hookean"].name = "other"
    with pytest.raises(ValueError, match="unknown hyperelastic law 'mooney'.*neo-hookean"):
        hyperelastic_law("mooney")


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", LAWS)
@pytest.mark.parametrize("size", [1e-8, 1e-11])
def test_tiny_strains_keep_full_relative_precision(name, d, size):
    """At ``|H| ≪ √ε`` the stress is Hooke's to ``O(|H|)`` relative: written as
    ``F − F⁻ᵀ`` and ``ln det F`` it would lose ``ε/|H|`` to cancellation (1e-5 at 1e-11),
    which keeps Newton from reaching a relative tolerance in the small-load limit."""
    law = hyperelastic_law(name)
    H, lam, mu = _state(d, seed=3)
    H = size * H / np.max(np.abs(H))
    eps = 0.5 * (H + np.swapaxes(H, -1, -2))
    trace = np.trace(eps, axis1=-2, axis2=-1)
    hooke = (lam * trace)[..., None, None] * np.eye(d) + 2 * mu[..., None, None] * eps
    P = law.first_piola(H, lam, mu)
    np.testing.assert_allclose(P, hooke, rtol=0, atol=20 * size * np.max(np.abs(hooke)))
    zz = law.out_of_plane_of(H, lam, mu) if d == 2 else None
    if zz is not None:
        np.testing.assert_allclose(zz, lam * trace, rtol=0,
                                   atol=20 * size * np.max(np.abs(lam * trace)))
