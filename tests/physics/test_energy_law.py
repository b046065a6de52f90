"""A law is its energy (:mod:`fesens.physics.energy_law`): the built-in laws' hand-written
stress, tangent and plane-strain ``P_zz`` equal the ones derived from their energies; a
small-strain energy gives Hooke's moduli and the element stiffness of linear elasticity; a
user's energy that is of the wrong shape, not finite or not objective is refused, naming the
law and the first failing quadrature point."""

from types import SimpleNamespace

import numpy as np
import pytest

from fesens.physics.elastic_law import elasticity_matrices
from fesens.physics.energy_law import (
    HyperelasticLaw,
    double_contraction,
    jacobian,
    log_jacobian,
    small_strain_response,
    strain_part,
    trace,
)
from fesens.physics.hyperelastic_law import HYPERELASTIC_LAWS


def _state(d: int, seed: int):
    """Random ``H`` ``(3, 4, d, d)`` with ``det F > 0`` and per-cell ``λ, μ`` ``(3, 1)``."""
    rng = np.random.default_rng(seed)
    H = 0.25 * rng.standard_normal((3, 4, d, d))
    assert np.all(jacobian(H) > 0.2)
    return H, 1.0 + rng.random((3, 1)), 0.5 + rng.random((3, 1))


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", sorted(name for name, law in HYPERELASTIC_LAWS.items()
                                          if law.constants == ("lam", "mu")))  # hand-written
def test_hand_written_kernels_equal_the_derived_ones(name, d):
    """``P``, ``A`` and ``P_zz`` to 1e-12 of their size at random deformations."""
    hand = HYPERELASTIC_LAWS[name]
    derived = HyperelasticLaw.from_energy(name, "derived", hand.energy_of, hand.constants)
    H, lam, mu = _state(d, seed=d)
    for method in ("first_piola", "tangent"):
        expected = getattr(hand, method)(H, lam, mu)
        np.testing.assert_allclose(getattr(derived, method)(H, lam, mu), expected, rtol=0,
                                   atol=1e-12 * np.max(np.abs(expected)))
    if d == 2:
        expected = hand.out_of_plane_of(H, lam, mu)
        np.testing.assert_allclose(derived.out_of_plane_of(H, lam, mu), expected, rtol=0,
                                   atol=1e-12 * np.max(np.abs(expected)))


def _hooke_energy(eps, lam, mu):
    """``ψ = λ/2 (tr ε)² + μ ε:ε``."""
    tr_eps = trace(eps)
    return 0.5 * lam * tr_eps * tr_eps + mu * double_contraction(eps, eps)


@pytest.mark.parametrize("d", [2, 3])
def test_small_strain_energy_gives_hookes_law(d):
    """``σ = λ tr ε I + 2μ ε``, ``C = λ δ_ij δ_kl + μ (δ_ik δ_jl + δ_il δ_jk)``, and the cell
    stiffness ``Σ_q dΩ ∇N C ∇N`` equals ``λ Kλ + μ Kμ`` of linear elasticity (1e-12)."""
    rng = np.random.default_rng(d)
    lam, mu = 1.3, 0.7
    eps = rng.standard_normal((2, 5, d, d))
    sigma, C = small_strain_response(_hooke_energy, eps, lam, mu)
    sym = 0.5 * (eps + np.swapaxes(eps, -1, -2))
    np.testing.assert_allclose(sigma, lam * np.trace(sym, axis1=-2, axis2=-1)[..., None, None]
                               * np.eye(d) + 2 * mu * sym, rtol=1e-13)
    delta = np.eye(d)
    hooke = (lam * np.einsum("ij,kl->ijkl", delta, delta)
             + mu * (np.einsum("ik,jl->ijkl", delta, delta)
                     + np.einsum("il,jk->ijkl", delta, delta)))
    np.testing.assert_allclose(C, np.broadcast_to(hooke, C.shape), rtol=0, atol=1e-12 * mu)

    n_nodes = 4
    geometry = SimpleNamespace(dNdx=rng.standard_normal((2, 5, n_nodes, d)),
                               dx=rng.random((2, 5)))
    K_lambda, K_mu = elasticity_matrices(geometry)
    stiffness = np.einsum("gqak,gqikjl,gqbl,gq->gaibj", geometry.dNdx, C, geometry.dNdx,
                          geometry.dx).reshape(2, n_nodes * d, n_nodes * d)
    expected = lam * K_lambda + mu * K_mu
    np.testing.assert_allclose(stiffness, expected, rtol=0,
                               atol=1e-12 * np.max(np.abs(expected)))


def _neo_hookean(H, mu, kappa):
    log_J = log_jacobian(H)
    return 0.5 * mu * (trace(strain_part(H)) - 2 * log_J) + 0.5 * kappa * log_J * log_J


def test_a_user_energy_is_a_law():
    """A user's ``(μ, κ)`` neo-Hookean is the built-in one with ``λ = κ``."""
    law = HyperelasticLaw.from_energy("user", "W", _neo_hookean, ("mu", "kappa"))
    H, lam, mu = _state(3, seed=5)
    built_in = HYPERELASTIC_LAWS["neo-hookean"]
    np.testing.assert_allclose(law.first_piola(H, mu, lam), built_in.first_piola(H, lam, mu),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(law.von_mises(H[..., :2, :2], mu, lam),
                               built_in.von_mises(H[..., :2, :2], lam, mu), rtol=1e-12)
    with pytest.raises(TypeError, match=r"'user' takes the constants \('mu', 'kappa'\)"):
        law.energy(H, mu)


def test_wrong_shape_is_refused_naming_the_law():
    def per_component(H, mu):
        return mu * strain_part(H)  # (..., d, d), not one value per point

    with pytest.raises(ValueError, match=r"law 'matrix'.*one value per point"):
        HyperelasticLaw.from_energy("matrix", "W", per_component, ("mu",))


def test_non_finite_values_name_the_first_failing_point():
    """``ln J`` of an inverted point (``W``), ``|C − I|`` at ``F = I`` (``P`` and ``A``)."""
    def log_energy(H, mu):
        return mu * np.log(jacobian(H)) ** 2 + mu * trace(strain_part(H))

    law = HyperelasticLaw.from_energy("log-J", "W", log_energy, ("mu",))
    H = np.zeros((2, 3, 2, 2))
    H[1, 2] = [[-2.0, 0.0], [0.0, 0.0]]  # J = -1
    with pytest.raises(ValueError, match=r"law 'log-J': the energy W is not finite at "
                                         r"quadrature point \(1, 2\).*H = \[\[-2\. +0\.\]"):
        law.energy(H, 1.0)

    def root_energy(H, mu):
        return mu * np.sqrt(double_contraction(strain_part(H), strain_part(H)))  # |C − I|

    law = HyperelasticLaw.from_energy("root", "W", root_energy, ("mu",))
    H = 0.1 * np.ones((2, 3, 3, 3))
    H[0, 1] = 0.0
    law.energy(H, 1.0)  # finite everywhere; its derivative is not at F = I
    with pytest.raises(ValueError, match=r"'root': the stress P is not finite at quadrature "
                                         r"point \(0, 1\)"):
        law.first_piola(H, 1.0)
    with pytest.raises(ValueError, match=r"'root': the tangent A is not finite"):
        law.tangent(H, 1.0)


def test_a_frame_dependent_energy_is_refused():
    def frame_dependent(H, mu):
        return mu * double_contraction(H, H)  # |F − I|²: changes under F ↦ QF

    with pytest.raises(ValueError, match=r"law 'frame' is not objective"):
        HyperelasticLaw.from_energy("frame", "W", frame_dependent, ("mu",))
