"""BDF3 (fesens/fem/transient/schemes.py's record): third order in time on a closed form,
with constant and variable steps, and its exact gradient (Taylor test, central
differences)."""

import numpy as np
import pytest
import scipy.linalg as sl

from fesens.ad import check_grad, taylor_test
from fesens.fem.transient import TransientProblem
from fesens.mesh.generators import rectangle
from fesens.physics import HeatConduction


def _bar():
    """A bar of 4 x 1 cells held at 0 at both ends, heated by ``q(t) = t³``."""
    model = HeatConduction(rectangle(4, 1, 1.0, 0.25), conductivity=0.5)
    model.fix("left")
    model.fix("right")
    model.heat_source(1.0, name="q")
    return model


def _exact(model, t: float) -> np.ndarray:
    """The semi-discrete solution of ``M Ṫ + K T = b t³``, ``T(0) = 0``, on the free dofs:
    with ``K v_i = λ_i M v_i`` (``vᵢᵀ M v_j = δ_ij``) each mode ``q_i' + λ_i q_i = c_i t³``
    gives ``q_i = c_i (p(t) − p(0) e^(−λ_i t))``, ``p = t³/λ − 3t²/λ² + 6t/λ³ − 6/λ⁴``.
    Its first two derivatives vanish at 0, so the backward Euler and BDF2 starting steps
    err by ``O(Δt³)`` (not ``O(Δt²)``) and the run's error is BDF3's own."""
    free = model.free_dofs
    lam, modes = sl.eigh(model.stiffness("ff").tocsr().toarray(),
                         model.mass(1.0).tocsr().toarray())
    c = modes.T @ model.load_vector({"q": 1.0})[free]

    def p(s):
        return s ** 3 / lam - 3 * s ** 2 / lam ** 2 + 6 * s / lam ** 3 - 6 / lam ** 4

    return modes @ (c * (p(t) - p(0.0) * np.exp(-lam * t)))


def _orders(errors: list[float]) -> np.ndarray:
    return np.log2(np.array(errors[:-1]) / np.array(errors[1:]))


def _error(model, times: np.ndarray) -> float:
    problem = TransientProblem(model, times=times, scheme="bdf3")
    ((_, _, T),) = problem.states(at=[times.size - 1], histories={"q": lambda t: t ** 3})
    return float(np.max(np.abs(T[model.free_dofs] - _exact(model, times[-1]))))


def test_bdf3_is_third_order_with_constant_steps():
    """Errors at t = 1 for 20, 40, 80 steps (λ from 5 to 160): each halving of Δt divides
    the error by about 8 (measured orders 3.2 and 3.1)."""
    model = _bar()
    errors = [_error(model, np.linspace(0.0, 1.0, n + 1)) for n in (20, 40, 80)]
    orders = _orders(errors)
    assert np.all(orders > 2.8), f"errors {errors}, observed orders {orders}"


def test_bdf3_is_third_order_with_variable_steps():
    """Steps growing geometrically (ratio 1.05 between blocks), refined by halving: the
    variable-step coefficients keep the third order (measured 3.2, 3.1, 3.0)."""
    model = _bar()
    errors = []
    for n in (20, 40, 80, 160):
        steps = np.repeat(1.05 ** np.arange(20), n // 20) / (n // 20)
        errors.append(_error(model, np.concatenate([[0.0], np.cumsum(steps)]) / np.sum(steps)))
    orders = _orders(errors)
    assert np.all(orders > 2.8), f"errors {errors}, observed orders {orders}"


@pytest.mark.parametrize("max_states", [None, 3])
def test_bdf3_gradient_passes_taylor_and_central_differences(max_states):
    """Per-cell conductivity and heat capacity, the initial field and the source's
    magnitude, stored states and checkpointing."""
    model = _bar()
    rng = np.random.default_rng(7)
    problem = TransientProblem(model, t_end=0.1, dt=0.01, scheme="bdf3",
                               max_states=max_states)
    x = {"k": 0.5 * (1.0 + 0.3 * rng.random(model.mesh.n_cells)),
         "c": 1.0 + rng.random(model.mesh.n_cells), "T0": 0.1 * rng.random(model.dofmap.n_dofs),
         "m": 1.3}

    def J(x):
        series = problem.values(lambda T, t: np.sum(T ** 2), T0=x["T0"], loads={"q": x["m"]},
                                histories={"q": lambda t: 1.0 + t}, heat_capacity=x["c"],
                                conductivity=x["k"])
        return np.sum(series)

    check_grad(J, x)
    assert np.all(taylor_test(J, x, verbose=False).rates > 1.9)
