"""A distributed checkpoint gathers the optimizer arrays the optimizer declares
design-sized (``design_sized_state``), and no other: an array that merely has as many
entries as this rank's part of the design (a multiplier per constraint, say) is stored as
it is."""

from types import SimpleNamespace

import numpy as np
import pytest
from opt_helpers import mbb_problem

from fesens.opt import OPTIMIZERS
from fesens.opt.loop import _gathered_state, _state_part

N_PART = 3  # this rank's design variables, and the number of constraints


class _FirstOfTwoRanks:
    """The design operations of rank 0 of two, each rank holding ``N_PART`` variables: the
    whole design is this rank's part followed by the other rank's (here its negative)."""

    def gather_design(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, -x])

    def design_part(self, x_whole: np.ndarray) -> np.ndarray:
        return x_whole[:N_PART]


class _WithMultipliers:
    """An optimizer whose state holds a previous design and one multiplier per constraint,
    as many as this rank's design variables."""

    design_sized_state = ("xold",)


def test_only_the_declared_arrays_are_gathered_and_split_back():
    problem, optimizer = _FirstOfTwoRanks(), _WithMultipliers()
    state = {"xold": np.array([0.1, 0.2, 0.3]), "multipliers": np.array([4.0, 5.0, 6.0]),
             "steps": np.array(7)}
    assert state["multipliers"].shape == state["xold"].shape  # a length rule would gather both
    stored = _gathered_state(problem, optimizer, state)
    np.testing.assert_array_equal(stored["xold"], [0.1, 0.2, 0.3, -0.1, -0.2, -0.3])
    np.testing.assert_array_equal(stored["multipliers"], state["multipliers"])
    assert stored["steps"] is state["steps"]
    restored = _state_part(problem, optimizer, stored)
    assert set(restored) == set(state)
    for key, value in state.items():
        np.testing.assert_array_equal(restored[key], value)


def test_an_undeclared_array_of_the_whole_design_length_is_not_split():
    # on resume, an array with as many entries as the WHOLE design is kept unless declared
    problem, optimizer = _FirstOfTwoRanks(), _WithMultipliers()
    stored = {"xold": np.arange(2.0 * N_PART), "multipliers": np.arange(2.0 * N_PART) + 10}
    restored = _state_part(problem, optimizer, stored)
    np.testing.assert_array_equal(restored["xold"], np.arange(N_PART))
    np.testing.assert_array_equal(restored["multipliers"], stored["multipliers"])


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_each_optimizer_declares_exactly_its_design_sized_state(name):
    problem = mbb_problem(6, 2, 1.5, "density")
    optimizer = OPTIMIZERS[name]()
    x = problem.initial_design()
    evaluation = problem.evaluate(x)
    optimizer.step(x, evaluation, problem.volume_excess(x, evaluation), 1)
    state = optimizer.state()
    assert set(optimizer.design_sized_state) <= set(state)
    for key, value in state.items():
        assert (np.shape(value) == x.shape) == (key in optimizer.design_sized_state), key


def test_a_serial_problem_keeps_every_array():
    # serial: gathering and splitting are the identity, whatever the optimizer declares
    problem = SimpleNamespace(gather_design=lambda x: x, design_part=lambda x: x)
    optimizer = OPTIMIZERS["mma"]()
    state = {key: np.ones(N_PART) for key in optimizer.design_sized_state}
    restored = _state_part(problem, optimizer, _gathered_state(problem, optimizer, state))
    assert all(restored[key] is value for key, value in state.items())
