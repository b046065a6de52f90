"""A driving frequency at a resonance of an undamped model is refused: within the relative
tolerance τ = 1e-4 of an eigenfrequency whose damping ratio is below τ
(:class:`~fesens.errors.ResonanceError`, naming the frequency and the mode's), while the
same frequency with a damping ratio of 1e-3, or 2τ away from the eigenfrequency, runs.
The eigenfrequencies come from a dense generalized eigendecomposition (scipy's ``eigh``)
of the assembled matrices."""

import numpy as np
import pytest
from scipy.linalg import eigh

from fesens.ad import grad
from fesens.errors import ResonanceError, SingularMatrixError
from fesens.fem.transient.harmonic import RESONANCE_TOLERANCE, HarmonicAnalysis
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity


def _model():
    model = Elasticity(rectangle(8, 2, 1.0, 0.25), E=1e3, nu=0.3, plane="stress")
    model.fix("left")
    model.point_load((1.0, 0.0), (0.0, -1e-3), name="tip")
    return model


def _eigen_omegas(model, count: int = 3) -> np.ndarray:
    """The lowest ``count`` undamped ``ω_i = √λ_i`` of ``K φ = λ M φ`` (unit density)."""
    K = model.stiffness("ff").tocsr().toarray()
    M = model.mass(1.0).tocsr().toarray()
    return np.sqrt(eigh(K, M, eigvals_only=True)[:count])


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("offset", [0.0, 1e-6, -5e-5])
def test_a_frequency_at_an_undamped_resonance_is_refused(mode, offset):
    model = _model()
    omega_i = _eigen_omegas(model)[mode]
    omegas = np.array([0.5 * omega_i, omega_i * (1 + offset)])
    with pytest.raises(ResonanceError) as refused:
        HarmonicAnalysis(model).run(omegas, density=1.0)
    error = refused.value
    assert isinstance(error, SingularMatrixError)  # what the guide promised
    assert error.index == 1 and error.omega == omegas[1]
    assert error.eigenfrequency == pytest.approx(omega_i / (2 * np.pi), rel=1e-9)
    message = str(error)
    assert f"{omegas[1] / (2 * np.pi):.6g} Hz" in message
    assert f"eigenfrequency {omega_i / (2 * np.pi):.6g} Hz" in message
    assert "add damping" in message


def test_a_damped_resonance_and_a_frequency_beyond_the_tolerance_run():
    """At the resonance, damping ratio ζ = c_K ω / 2 = 1e-3 > τ: the response is finite
    and equals its modal value within 1e-6; undamped at 2τ from the eigenfrequency it
    runs too."""
    model = _model()
    omega_1 = _eigen_omegas(model)[0]
    c_K = 2e-3 / omega_1
    response = HarmonicAnalysis(model).run(np.array([omega_1]), density=1.0, damping=(0.0, c_K))
    # the resonant mode dominates: |f·u| ≈ (φᵀf)² / (ω λ c_K) with φ M-normalized
    K = model.stiffness("ff").tocsr().toarray()
    M = model.mass(1.0).tocsr().toarray()
    lam, phi = eigh(K, M)
    f = np.asarray(response.force)[model.free_dofs]
    modal = phi.T @ f
    z = lam - omega_1 ** 2 + 1j * omega_1 * c_K * lam
    exact = abs(np.sum(modal ** 2 / z))
    assert response.compliance()[0] == pytest.approx(exact, rel=1e-6)
    beyond = HarmonicAnalysis(model).run(np.array([omega_1 * (1 + 2 * RESONANCE_TOLERANCE)]),
                                         density=1.0)
    assert np.isfinite(beyond.compliance()[0])


def test_the_gradient_at_a_resonance_is_refused_too():
    """The traced response (an optimization's) is checked as the plain one."""
    model = _model()
    omega_1 = _eigen_omegas(model)[0]
    scale = np.ones(model.mesh.n_cells)
    with pytest.raises(ResonanceError):
        grad(lambda s: HarmonicAnalysis(model).run(np.array([omega_1]), density=1.0,
                                                   scale=s).compliance()[0])(scale)


def test_the_tolerance_can_be_set_and_is_checked():
    model = _model()
    omega_1 = _eigen_omegas(model)[0]
    near = np.array([omega_1 * (1 + 1e-3)])
    HarmonicAnalysis(model).run(near, density=1.0)
    with pytest.raises(ResonanceError, match="below 0.01"):
        HarmonicAnalysis(model, resonance_tolerance=1e-2).run(near, density=1.0)
    with pytest.raises(ValueError, match="resonance_tolerance"):
        HarmonicAnalysis(model, resonance_tolerance=-1.0).run(near, density=1.0)
