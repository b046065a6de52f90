"""A multistep scheme reading three earlier levels (BDF3), given only by its coefficients:
the linear and nonlinear heat steppers and their adjoints read the number of levels from
``α`` ``(N + 1, L + 1)`` (fesens/fem/transient/steps.py, sweep.py), so its forward run
follows the recursion written out by hand, its gradient passes central differences and a
Taylor test, and checkpointing gives the same bits."""

import numpy as np
import pytest

from fesens.ad import check_grad, grad, taylor_test
from fesens.fem.transient import TransientProblem
from fesens.fem.transient.schemes import StepCoefficients
from fesens.mesh.generators import rectangle
from fesens.physics import HeatConduction
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

#: BDF3's constant-step ``α`` (``β = (1, 0)``), started by a BDF1 and a BDF2 step.
BDF1, BDF2, BDF3 = (1.0, -1.0, 0.0, 0.0), (1.5, -2.0, 0.5, 0.0), (11 / 6, -3.0, 1.5, -1 / 3)
N_STEPS, DT = 10, 0.01


class BDF3Problem(TransientProblem):
    """A transient problem stepping by BDF3's coefficients, built by hand."""

    def _scheme_coefficients(self, scheme, theta):
        n_levels = self.times.size
        alpha, beta = np.zeros((n_levels, 4)), np.zeros((n_levels, 2))
        alpha[1], alpha[2], alpha[3:] = BDF1, BDF2, BDF3
        beta[1:, 0] = 1.0
        return StepCoefficients(alpha, beta, np.concatenate([[np.nan], np.diff(self.times)]))


def _plate(nonlinear=False):
    mesh = rectangle(6, 3, 1.0, 0.5)
    if nonlinear:
        model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=0.5)
        model.flux_load("right", 1.0, name="f")
    else:
        model = HeatConduction(mesh, conductivity=2.0)
        model.flux("right", 1.0, name="f")
    model.heat_source(3.0, name="q")
    return model


def _inputs(model):
    rng = np.random.default_rng(3)
    return {"k": 2.0 * (1.0 + 0.3 * rng.random(model.mesh.n_cells)),
            "c": 1.0 + rng.random(model.mesh.n_cells), "T0": 0.1 * rng.random(model.dofmap.n_dofs),
            "m": 1.3, "hq": np.array([0.0, 1.0, 0.4]), "w": 1.0 + rng.random(model.dofmap.n_dofs),
            "g": np.full(model.constrained_dofs.size, 0.5)}


def _objective(problem):
    def J(x):
        series = problem.values(lambda T, t, w: np.sum(w * T ** 2), term_args=(x["w"],),
                                T0=x["T0"], loads={"f": x["m"]},
                                histories={"q": (np.array([0.0, 0.05, 0.1]), x["hq"])},
                                heat_capacity=x["c"], conductivity=x["k"], dirichlet=x["g"])
        return np.sum(series * np.linspace(0.5, 1.5, series.size))
    return J


def test_the_forward_run_follows_the_three_level_recursion():
    """``(α_0/Δt M + K) T_n = −Σ_(k=1..3) α_k/Δt M T_(n−k)`` with BDF1 and BDF2 first."""
    model = HeatConduction(rectangle(6, 3, 1.0, 0.5), conductivity=2.0).fix("left")
    problem = BDF3Problem(model, t_end=N_STEPS * DT, dt=DT)
    T0 = np.random.default_rng(1).random(model.dofmap.n_dofs)
    values = problem.values(lambda T, t: np.sum(T ** 2), T0=T0)
    free = model.free_dofs
    K = model.stiffness("ff").tocsr().toarray()
    M = model.mass(1.0).tocsr().toarray()
    states = [T0[free]]
    for n in range(1, N_STEPS + 1):
        alpha = (BDF1, BDF2)[n - 1] if n < 3 else BDF3
        rhs = -sum(alpha[k] / DT * M @ states[-k] for k in range(1, 4) if alpha[k] != 0.0)
        states.append(np.linalg.solve(alpha[0] / DT * M + K, rhs))
    assert values == pytest.approx([np.sum(T ** 2) for T in states], rel=1e-10)


@pytest.mark.parametrize("nonlinear", [False, True])
def test_the_gradient_is_checked_and_checkpointing_gives_its_bits(nonlinear):
    """Every input kind at once (conductivity, capacity, initial field, load magnitude,
    history table, prescribed values, the step term's argument)."""
    model = _plate(nonlinear).fix("left", value=0.5)
    x = _inputs(model)
    problem = BDF3Problem(model, t_end=N_STEPS * DT, dt=DT)
    J = _objective(problem)
    check_grad(J, x)
    assert np.all(taylor_test(J, x, verbose=False).rates > 1.9)
    gradient = grad(J)(x)
    checkpointed = BDF3Problem(model, t_end=N_STEPS * DT, dt=DT, max_states=3)
    again = grad(_objective(checkpointed))(x)
    for name in x:
        assert np.array_equal(gradient[name], again[name]), name
    assert checkpointed.stats["advanced"] > 0
    assert checkpointed.stats["kept"] <= 3 * 3 + 1  # three levels per snapshot, state 0
