"""The path-dependent adjoint over load increments (Michaleris, Tortorelli & Vidal 1994)
against central differences and by Taylor tests (rate 2), through 20 increments with
unloading and reversal, for every parameter kind: E, nu, the yield stress, the hardening
moduli, Voce's saturation constants, Armstrong–Frederick's recovery, the density scale per
cell, a load magnitude, the prescribed values and the node coordinates; and the same bits
with every state stored and with binomial checkpoints."""

import numpy as np
import pytest

from fesens.ad import taylor_test, value_and_grad
from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import rectangle
from fesens.physics.elastoplasticity import Elastoplasticity

# 20 increments: loading, unloading, reversal and reloading, the prescribed values on
# another path than the traction
LOAD = [0, .2, .4, .6, .8, 1.0, .8, .5, .2, 0, -.3, -.6, -.9, -.6, -.3, 0, .3, .6, .9, .5, .2]
MOVE = [0, .1, .3, .5, .7, .9, 1.0, .7, .4, .1, -.2, -.5, -.8, -1., -.7, -.4, 0, .4, .8, .6, .3]
LAWS = {
    "linear": {"isotropic_modulus": 5e3, "kinematic_modulus": 1e4},
    "voce": {"isotropic_modulus": 1e3, "saturation_stress": 320.0, "saturation_rate": 40.0},
    "armstrong_frederick": {"kinematic_modulus": 2e4, "kinematic_recovery": 80.0},
}


def _history(law="linear", max_states=None):
    mesh = rectangle(4, 2, 2.0, 1.0, "quad4")
    model = Elastoplasticity(mesh, E=200e3, nu=0.3, yield_stress=250.0, **LAWS[law])
    model.fix("left").fix("right", components=[1], value=0.006)
    model.surface_load("right", (220.0, 0.0), name="pull")
    return IncrementalAnalysis(model, LOAD, dirichlet_factors=MOVE, max_states=max_states,
                               newton={"rtol": 1e-13})


def _term(state, t, weights):
    """A mix of every field of the state: a displacement, reactions and the plastic work."""
    return (1e3 * np.dot(weights, state.u) + 1e-4 * np.sum(state.reactions[:6] ** 2)
            + 0.1 * state.dissipation)


def _objective(history, **fixed):
    weights = np.linspace(-1.0, 1.0, history.model.dofmap.n_dofs)

    def J(**inputs):
        values = history.values(_term, (weights,), **fixed, **inputs)
        return np.sum(values) + 3.0 * values[-1]

    return J


def _check(J, x, direction):
    """Central differences along ``direction`` and a Taylor test (rate 2)."""
    value, gradient = value_and_grad(J)(x)
    slope = np.sum(np.asarray(gradient) * direction)
    h = 1e-5 * max(np.abs(x).max(), 1e-12) / np.abs(direction).max()
    central = (J(x + h * direction) - J(x - h * direction)) / (2 * h)
    assert slope == pytest.approx(central, rel=2e-5, abs=1e-9 * abs(value))
    result = taylor_test(J, x, direction, step=5e-4 * np.abs(x).max()
                         / np.abs(direction).max(), n_steps=3, verbose=False)
    assert result.rate > 1.8, result.table()


def test_the_history_is_plastic_and_reverses():
    sol = _history().solve()
    alpha = sol.equivalent_plastic_strain.max(axis=(1, 2))
    grows = np.diff(alpha) > 1e-12
    assert grows[:5].any() and grows[10:14].any() and not grows.all()  # unloads elastically
    assert sol.plastic_work[-1] > 0.0


@pytest.mark.parametrize("name, law, x0", [
    ("E", "linear", 200e3), ("nu", "linear", 0.3), ("yield_stress", "linear", 250.0),
    ("isotropic_modulus", "linear", 5e3), ("kinematic_modulus", "linear", 1e4),
    ("saturation_stress", "voce", 320.0), ("saturation_rate", "voce", 40.0),
    ("kinematic_recovery", "armstrong_frederick", 80.0),
])
def test_material_constants(name, law, x0):
    history = _history(law)
    J = _objective(history)
    _check(lambda x: J(**{name: x}), np.array(x0), np.array(1.0))


def test_yield_stress_per_cell_and_density_scale():
    history = _history()
    n_cells = history.model.mesh.n_cells
    rng = np.random.default_rng(0)
    J = _objective(history)
    _check(lambda s: J(scale=s), rng.uniform(0.8, 1.0, n_cells), rng.standard_normal(n_cells))
    _check(lambda y: J(yield_stress=y), rng.uniform(230.0, 260.0, n_cells),
           rng.standard_normal(n_cells))


def test_load_magnitude_and_prescribed_values():
    history = _history()
    model = history.model
    rng = np.random.default_rng(1)
    J = _objective(history)
    _check(lambda m: J(loads={"pull": m}), np.array(1.0), np.array(1.0))
    g = model.prescribed_values()
    _check(lambda d: J(dirichlet=d), g, rng.standard_normal(g.size))


@pytest.mark.slow
def test_node_coordinates():
    history = _history()
    X = history.model.mesh.points.copy()
    J = _objective(history)
    _check(lambda p: J(points=p), X, np.random.default_rng(5).standard_normal(X.shape))


def test_checkpointing_gives_the_same_bits():
    rng = np.random.default_rng(2)
    gradients = []
    for max_states in (None, 4):
        history = _history(max_states=max_states)
        J = _objective(history)
        n_cells = history.model.mesh.n_cells
        scale = rng.uniform(0.8, 1.0, n_cells) if not gradients else scale  # noqa: F821
        gradients.append(value_and_grad(lambda s, J=J: J(scale=s, yield_stress=260.0))(scale))
    assert gradients[0][0] == gradients[1][0]
    assert np.array_equal(gradients[0][1], gradients[1][1])
