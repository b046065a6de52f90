"""One model shared by several threads: every call returns what the same call returns
alone (value and gradient, the same bits), and none raises a false solver error.

Each test runs 8 threads × several calls with different inputs per call (densities,
conductivities, Young's moduli) on one shared object, with the interpreter switching
threads every microsecond so that the calls interleave inside their solves, and compares
each result with the same call made serially before the threads start."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from fesens.ad import value_and_grad
from fesens.fem.transient import TransientProblem
from fesens.mesh.generators import rectangle
from fesens.objectives import Differentiable, compliance
from fesens.physics import Elasticity, HeatConduction
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

THREADS, CALLS = 8, 6


@pytest.fixture(autouse=True)
def fast_switching():
    """Switch threads every microsecond: calls interleave inside each other's solves."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _inputs(n_cells: int, seed: int) -> list[np.ndarray]:
    """One per-cell field per call, far apart (factors 0.2 to 5)."""
    rng = np.random.default_rng(seed)
    return [np.exp(rng.uniform(-1.6, 1.6)) * (0.5 + rng.random(n_cells))
            for _ in range(THREADS * CALLS)]


def _assert_same_in_threads(call, inputs: list[np.ndarray]) -> None:
    """``call(x) -> (value, gradient)`` in 8 threads equals its serial result."""
    expected = [call(x) for x in inputs]
    with ThreadPoolExecutor(THREADS) as pool:
        got = list(pool.map(call, inputs))
    wrong = [i for i, ((v, g), (v0, g0)) in enumerate(zip(got, expected, strict=True))
             if not (np.array_equal(v, v0) and np.array_equal(g, g0))]
    assert not wrong, (f"{len(wrong)} of {len(inputs)} threaded calls differ from the "
                       f"serial ones (first: call {wrong[0]}, value {got[wrong[0]][0]!r} "
                       f"against {expected[wrong[0]][0]!r})")


def _cantilever() -> Elasticity:
    model = Elasticity(rectangle(16, 8, 2.0, 1.0), plane="stress").fix("left")
    model.point_load((2.0, 0.0), (0.0, -1.0))
    return model


@pytest.mark.parametrize("solver", ["cholmod", "superlu"])
def test_a_shared_differentiable(solver):
    problem = Differentiable(_cantilever(), solver)

    def call(scale):
        return value_and_grad(lambda s: compliance(problem.solve(scale=s)))(scale)

    _assert_same_in_threads(call, _inputs(problem.model.mesh.n_cells, 1))


def test_a_shared_linear_model():
    model = HeatConduction(rectangle(16, 8, 2.0, 1.0))
    model.fix("left", value=1.0).fix("right")
    model.heat_source(2.0, name="q")

    def call(kappa):
        return value_and_grad(lambda k: compliance(model.solve(conductivity=k)))(kappa)

    _assert_same_in_threads(call, _inputs(model.mesh.n_cells, 2))


def test_a_shared_transient_problem():
    model = HeatConduction(rectangle(8, 4, 1.0, 0.5))
    model.fix("left", value=1.0).fix("right")
    model.heat_source(2.0, name="q")
    problem = TransientProblem(model, t_end=0.2, dt=0.02)

    def call(kappa):
        def peak(k):
            values = problem.values(lambda T, t: np.sum(T ** 2), conductivity=k)
            return np.sum(values)

        return value_and_grad(peak)(kappa)

    _assert_same_in_threads(call, _inputs(model.mesh.n_cells, 3))


def _heat() -> NonlinearHeatConduction:
    model = NonlinearHeatConduction(rectangle(10, 5, 1.0, 0.5, "quad4"), conductivity=1.5,
                                    beta=0.8)
    model.fix("left", value=0.5).fix("right", value=4.0)
    model.heat_source(5.0, name="source")
    return model


def test_a_shared_nonlinear_model_without_warm_start():
    model = _heat()

    def call(kappa):
        return value_and_grad(lambda k: compliance(
            model.solve(conductivity=k, warm_start=False)))(kappa)

    _assert_same_in_threads(call, _inputs(model.mesh.n_cells, 4))


def _in_threads(function, arguments: list, *, together: bool) -> list:
    """``function(a)`` for each argument, each in a new thread of its own: all running
    together, or one after the other."""
    results = [None] * len(arguments)

    def target(i):
        results[i] = function(arguments[i])

    threads = [threading.Thread(target=target, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
        if not together:
            thread.join()
    for thread in threads:
        thread.join(timeout=600)
        assert not thread.is_alive()
    return results


def test_a_shared_nonlinear_model_warm_starts_only_from_its_own_thread_s_state():
    """With warm starts (the default), each thread's calls in sequence give what the same
    sequence gives alone: a solve starts from the state of its own thread's previous
    solve, never from another thread's."""
    model = _heat()
    n_cells = model.mesh.n_cells
    base = 1.5 * (0.8 + 0.4 * np.random.default_rng(5).random(n_cells))
    # each thread's sequence moves its own conductivity a little per call (warm starts)
    sequences = [[base * (1 + 0.3 * i / THREADS) * (1 + 0.01 * k) for k in range(CALLS)]
                 for i in range(THREADS)]

    def run(sequence):
        out = []
        for kappa in sequence:
            out.append(value_and_grad(lambda c: compliance(model.solve(conductivity=c)))(
                kappa))
            assert model.converged_state is not None
        return out

    alone = _in_threads(run, sequences, together=False)
    together = _in_threads(run, sequences, together=True)
    assert model.converged_state is None  # this thread solved nothing
    for mine, expected in zip(together, alone, strict=True):
        for (v, g), (v0, g0) in zip(mine, expected, strict=True):
            assert np.array_equal(v, v0) and np.array_equal(g, g0)


def test_a_fresh_model_s_first_calls_in_threads():
    """No serial call first: the threads build the model's caches (assembler, pattern,
    solver instance) together, and still each gets its own call's answer."""
    inputs = _inputs(_cantilever().mesh.n_cells, 6)
    reference = Differentiable(_cantilever(), "cholmod")

    def solve_on(problem):
        return lambda s: value_and_grad(lambda x: compliance(problem.solve(scale=x)))(s)

    expected = [solve_on(reference)(x) for x in inputs]
    model = _cantilever()
    with ThreadPoolExecutor(THREADS) as pool:
        got = list(pool.map(lambda x: value_and_grad(lambda s: compliance(
            model.solve(scale=s, solver="cholmod")))(x), inputs))
    for (v, g), (v0, g0) in zip(got, expected, strict=True):
        assert np.array_equal(v, v0) and np.array_equal(g, g0)
