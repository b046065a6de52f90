"""Frequency response (fesens/fem/transient/harmonic.py): equal to the modal superposition
over all modes with Rayleigh damping (A. K. Chopra, *Dynamics of Structures*, §12.6 and
§11.4; dense eigendecomposition of a small mesh), the static solve at ω = 0, Taylor tests
and central differences of the dynamic compliance |f · u| (N. Olhoff and J. Du, *Struct.
Multidisc. Optim.* 2016) and of Re(f̄ · u) in every input, the steady state of a Newmark run
under a harmonic load, and refusals."""

import numpy as np
import pytest
from scipy.linalg import eigh

from fesens.ad import grad, taylor_test
from fesens.errors import SingularMatrixError
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.fem.transient.harmonic import HarmonicAnalysis
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity

OMEGAS = np.array([0.3, 1.1, 2.5])


def _model():
    model = Elasticity(rectangle(8, 2, 4.0, 0.5), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    return model


@pytest.mark.parametrize("lumped", [False, True])
def test_response_equals_the_modal_superposition(lumped):
    """u = Σ_i φ_i φ_iᵀ f / (ω_i² − ω² + i ω (c_M + c_K ω_i²)) over all modes, to 1e-9."""
    model = _model()
    damping = (0.05, 0.002)
    response = HarmonicAnalysis(model, lumped=lumped).run(OMEGAS, density=1.5, damping=damping)
    free = model.free_dofs
    K = model.stiffness("ff").tocsr().toarray()
    M = model.mass(1.5, lumped=lumped).tocsr().toarray()
    lam, phi = eigh(K, M)
    f = np.asarray(response.force)[free]
    for k, omega in enumerate(OMEGAS):
        denominator = lam - omega ** 2 + 1j * omega * (damping[0] + damping[1] * lam)
        exact = phi @ (phi.T @ f / denominator)
        u = response.real[k, free] + 1j * response.imag[k, free]
        assert np.max(np.abs(u - exact)) < 1e-9 * np.max(np.abs(exact))
    assert np.all(response.real[:, model.constrained_dofs] == 0.0)


def test_zero_frequency_is_the_static_solve():
    model = _model()
    response = HarmonicAnalysis(model).run(np.array([0.0]), damping=(0.1, 0.01))
    static = model.solve()
    assert np.allclose(response.real[0], static.u, rtol=1e-12, atol=1e-12 * np.max(
        np.abs(static.u)))
    assert np.all(response.imag[0] == 0.0)
    # SuperLU against the model's backend: round-off apart
    assert response.compliance()[0] == pytest.approx(float(static.u @ static.f), rel=1e-10)


def _parameters(model):
    rng = np.random.default_rng(5)
    n_cells = model.mesh.n_cells
    return {"x": 0.5 + 0.5 * rng.random(n_cells), "E": 100.0 * (1 + 0.2 * rng.random(n_cells)),
            "rho": 1.0 + rng.random(n_cells), "cM": 0.05, "cK": 0.002, "m": 1.3,
            "omegas": OMEGAS.copy(), "X": model.mesh.points.copy()}


def _compliance(response):
    return np.sum(response.compliance())


def _real_part(response):
    return np.sum(response.real @ response.force)


def _objective(model, objective):
    def J(p):
        response = HarmonicAnalysis(model).run(
            p["omegas"], loads={"tip": p["m"]}, density=p["rho"] * p["x"],
            damping=(p["cM"], p["cK"]), E=p["E"] * p["x"] ** 3, points=p["X"])
        return objective(response)
    return J


@pytest.mark.parametrize("key", ["x", "E", "rho", "cM", "cK", "m", "omegas", "X"])
@pytest.mark.parametrize("objective", [_compliance, _real_part], ids=["abs", "real"])
def test_harmonic_adjoint(objective, key):
    model = _model()
    J = _objective(model, objective)
    p = _parameters(model)

    def along(x):
        return J({**p, key: x})

    x0 = p[key]
    # scalars: half their value (c_K's effect is small: smaller steps reach round-off)
    step = 0.5 * x0 if np.ndim(x0) == 0 else 1e-3 if key == "X" else None
    result = taylor_test(along, x0, step=step, verbose=False)
    assert result.rate > 1.9, result.table()
    # positive directions for the fields: no cancellation in the sum over the cells
    rng = np.random.default_rng(2)
    direction = (1.0 if np.ndim(x0) == 0 else rng.standard_normal(np.shape(x0))
                 if key in ("X", "omegas") else 0.5 + rng.random(np.shape(x0)))
    # c_K acts as c_K ω² next to c_M: 5% of it moves the damping as 0.02% of c_M does
    h = (1e-5 * max(1.0, float(np.max(np.abs(x0)))) if np.ndim(x0)
         else (0.05 if key == "cK" else 1e-3) * x0)
    slope = float(np.sum(grad(along)(x0) * direction))

    def change(step):
        return along(x0 + step * direction) - along(x0 - step * direction)

    # fourth-order central differences: ω = 0.3 lies near the first resonance (0.28),
    # where the response bends sharply in the damping
    difference = (8 * change(h) - change(2 * h)) / (12 * h)
    assert slope == pytest.approx(difference, rel=1e-6)


def test_refusals():
    model = _model()
    empty = np.ones(model.mesh.n_cells)
    empty[-1] = 0.0  # the corner node of this cell has neither stiffness nor mass
    with pytest.raises(SingularMatrixError, match="neither stiffness nor mass"):
        HarmonicAnalysis(model).run(OMEGAS, density=empty, scale=empty)
    with pytest.raises(ValueError, match="1D"):
        HarmonicAnalysis(model).run(1.0)
    with pytest.raises(ValueError, match="Rayleigh"):
        HarmonicAnalysis(model).run(OMEGAS, damping=(0.1,))
    model.fix("right", "x", value=0.1)
    with pytest.raises(ValueError, match="homogeneous"):
        HarmonicAnalysis(model).run(OMEGAS)


def test_steady_state_of_the_time_integration_is_the_harmonic_response():
    """Driving with f cos(ω t) under mass damping (transients decay as e^(−c_M t / 2),
    e^(−18) at t = 100): Newmark's late displacements equal Re(u e^(iωt)) = Re u cos ωt −
    Im u sin ωt within 1e-4 of their amplitude (ωΔt = 0.01)."""
    model = _model()
    omega, damping = 0.5, (0.36, 0.001)
    response = HarmonicAnalysis(model).run(np.array([omega]), density=1.5, damping=damping)
    problem = DynamicProblem(model, t_end=100.0, dt=0.02)
    amplitude = np.max(np.hypot(response.real[0], response.imag[0]))
    for _, t, u, _, _ in problem.states(at=range(4500, 5001, 25), density=1.5,
                                        damping=damping,
                                        histories={"tip": lambda t: np.cos(omega * t)}):
        steady = response.real[0] * np.cos(omega * t) - response.imag[0] * np.sin(omega * t)
        assert np.max(np.abs(u - steady)) < 1e-4 * amplitude, t
