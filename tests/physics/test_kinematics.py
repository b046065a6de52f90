"""Laws of the invariants of ``C`` (:mod:`fesens.physics.kinematics`,
:meth:`HyperelasticLaw.from_invariants`): the invariants against their definitions, and
``P``, ``A``, plane strain's ``P_zz`` and the stress's derivatives equal to those of the
same energy written in ``H`` and differentiated by reverse over reverse (1e-12), with every
term of ``A`` present; the isotropic rubber laws' fast path against their ``W(H)``; a
user's invariant energy refused at its first non-finite point."""

import numpy as np
import pytest

from fesens.ad import grad
from fesens.physics.energy_law import (
    HyperelasticLaw,
    double_contraction,
    jacobian,
    strain_part,
    trace,
)
from fesens.physics.hyperelastic_law import HYPERELASTIC_LAWS, neo_hookean_of_invariants
from fesens.physics.kinematics import principal_invariants
from tests.physics.test_rubber_laws import EXAMPLES


def _state(d: int, seed: int):
    rng = np.random.default_rng(seed)
    H = 0.25 * rng.standard_normal((3, 4, d, d))
    assert np.all(jacobian(H) > 0.2)
    return H, rng


def _close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=0,
                               atol=1e-12 * np.max(np.abs(expected)))


@pytest.mark.parametrize("d", [2, 3])
def test_invariants_are_those_of_C(d):
    """``I₁ = tr C``, ``I₂ = ((tr C)² − tr C²)/2``, ``J = det F`` of the 3D ``F`` (plane
    strain: ``F_zz = 1``)."""
    H, _ = _state(d, seed=1)
    F = np.broadcast_to(np.eye(3), H.shape[:-2] + (3, 3)).copy()
    F[..., :d, :d] += H
    C = np.swapaxes(F, -1, -2) @ F
    tr_C = np.trace(C, axis1=-2, axis2=-1)
    expected = (tr_C, 0.5 * (tr_C**2 - np.trace(C @ C, axis1=-2, axis2=-1)),
                np.linalg.det(F))
    for got, want in zip(principal_invariants(H), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def _all_terms(I1, I2, J, a, b):
    """Every partial ``W_a`` and ``W_ab`` nonzero (``M₁₁…M₃₃`` of the tangent all used)."""
    x1, x2, log_J = I1 - 3.0, I2 - 3.0, np.log(J)
    return (a * x1 + b * x2 + 0.3 * x1 * x1 + 0.2 * x1 * x2 + 0.1 * x2 * x2
            + 0.4 * x1 * log_J + 0.15 * x2 * log_J + (a + b) * (J - 1.0 - log_J)
            + 2.0 * log_J * log_J)


def _all_terms_of_gradient(H, a, b):
    D = strain_part(H)
    tr_D = trace(D)
    change = np.linalg.det(np.eye(np.shape(H)[-1]) + H) - 1.0
    return _all_terms(3.0 + tr_D, 3.0 + 2.0 * tr_D + 0.5 * (tr_D * tr_D
                                                           - double_contraction(D, D)),
                      1.0 + change, a, b)


CASES = {
    "neo-hookean": (neo_hookean_of_invariants, HYPERELASTIC_LAWS["neo-hookean"].energy_of,
                    ("lam", "mu")),
    "all terms": (_all_terms, _all_terms_of_gradient, ("a", "b")),
}


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_invariant_law_equals_the_energy_of_H(case, d):
    """``W``, ``P``, ``A`` and ``P_zz`` to 1e-12 of their size; the constants per cell."""
    energy, energy_of_H, constants = CASES[case]
    fast = HyperelasticLaw.from_invariants(case, "invariants", energy, constants)
    reference = HyperelasticLaw.from_energy(case, "W(H)", energy_of_H, constants)
    H, rng = _state(d, seed=d)
    values = (1.0 + rng.random((3, 1)), 0.5 + rng.random((3, 1)))
    for method in ("energy", "first_piola", "tangent"):
        _close(getattr(fast, method)(H, *values), getattr(reference, method)(H, *values))
    if d == 2:
        _close(fast.out_of_plane_of(H, *values), reference.out_of_plane_of(H, *values))


def test_neo_hookean_of_invariants_equals_the_hand_kernels():
    hand = HYPERELASTIC_LAWS["neo-hookean"]
    fast = HyperelasticLaw.from_invariants("nh", "invariants", neo_hookean_of_invariants)
    for d in (2, 3):
        H, rng = _state(d, seed=d)
        lam, mu = 1.0 + rng.random((3, 1)), 0.5 + rng.random((3, 1))
        for method in ("first_piola", "tangent"):
            _close(getattr(fast, method)(H, lam, mu), getattr(hand, method)(H, lam, mu))


def test_the_stress_is_differentiable_in_H_and_the_constants():
    """The gradients of ``Σ P:V`` in ``H`` and in a constant equal the W(H) law's."""
    energy, energy_of_H, constants = CASES["all terms"]
    fast = HyperelasticLaw.from_invariants("fast", "invariants", energy, constants)
    reference = HyperelasticLaw.from_energy("ref", "W(H)", energy_of_H, constants)
    H, rng = _state(3, seed=3)
    V = rng.standard_normal(H.shape)
    in_H, in_a = ({law: grad(lambda G, law=law: np.sum(law.first_piola(G, 0.7, 0.3) * V))(H)
                   for law in (fast, reference)},
                  {law: grad(lambda a, law=law: np.sum(law.first_piola(H, a, 0.3) * V))(0.7)
                   for law in (fast, reference)})
    _close(in_H[fast], in_H[reference])
    _close(in_a[fast], in_a[reference])


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("name", ["arruda-boyce", "gent", "mooney-rivlin", "yeoh"])
def test_isotropic_rubber_laws_take_the_invariants_path(name, d):
    """The registered law's ``P``, ``A``, ``P_zz`` (from its energy of the invariants)
    equal those of its energy of ``H`` by reverse over reverse (1e-12)."""
    law = HYPERELASTIC_LAWS[name]
    reference = HyperelasticLaw.from_energy(name, "W(H)", law.energy_of, law.constants)
    H, _ = _state(d, seed=d)
    constants = EXAMPLES[name][0]
    for method in ("first_piola", "tangent"):
        _close(getattr(law, method)(H, *constants), getattr(reference, method)(H, *constants))
    if d == 2:
        _close(law.out_of_plane_of(H, *constants), reference.out_of_plane_of(H, *constants))


def test_a_non_finite_invariant_energy_names_the_law_and_the_point():
    """``ln J`` of an inverted point (``W``, ``P``, ``A``); ``|I₁ − 3|`` at ``F = I``
    (finite, its derivatives not)."""
    def log_energy(I1, I2, J, mu):
        return mu * np.log(J) ** 2 + mu * (I1 - 3.0)

    law = HyperelasticLaw.from_invariants("log-J", "W", log_energy, ("mu",))
    H = np.zeros((2, 3, 2, 2))
    H[1, 2] = [[-2.0, 0.0], [0.0, 0.0]]  # J = -1
    for method, what in (("energy", "the energy W"), ("first_piola", "the stress P"),
                         ("tangent", "the tangent A")):
        with pytest.raises(ValueError, match=rf"law 'log-J': {what} is not finite at "
                                             r"quadrature point \(1, 2\).*H = \[\[-2\. +0\.\]"):
            getattr(law, method)(H, 1.0)

    def root_energy(I1, I2, J, mu):
        return mu * np.sqrt((I1 - 3.0) ** 2)

    law = HyperelasticLaw.from_invariants("root", "W", root_energy, ("mu",))
    H = 0.1 * np.ones((2, 3, 3, 3))
    H[0, 1] = 0.0
    law.energy(H, 1.0)  # finite everywhere; its derivative is not at F = I
    with pytest.raises(ValueError, match=r"'root': the stress P is not finite at quadrature "
                                         r"point \(0, 1\)"):
        law.first_piola(H, 1.0)
    with pytest.raises(ValueError, match=r"'root': the tangent A is not finite at quadrature "
                                         r"point \(0, 1\)"):
        law.tangent(H, 1.0)
