"""A run in time beyond the machine's memory is refused before it allocates or steps
(:class:`~fesens.errors.TooLargeError`, naming what to change), where numpy raised a bare
``MemoryError`` or the run grew until killed: a time grid of 1e12 levels, and a traced run
that keeps every state (``max_states=None``) on a machine whose memory is set by the test;
the same run with ``max_states`` fits and gives its gradient."""

import numpy as np
import pytest

from fesens.ad import grad
from fesens.errors import TooLargeError
from fesens.fem.transient import DynamicProblem, TransientProblem, run_memory
from fesens.mesh import rectangle
from fesens.physics import Elasticity, HeatConduction


def _plate():
    model = HeatConduction(rectangle(4, 2, 1.0, 0.5), conductivity=1.0)
    return model.fix("left")


def _beam():
    model = Elasticity(rectangle(4, 1, 2.0, 0.5), E=100.0, nu=0.3, plane="stress")
    model.fix("left")
    model.point_load((2.0, 0.0), (0.0, -1.0), name="tip")
    return model


@pytest.mark.parametrize("problem", [TransientProblem, DynamicProblem])
def test_a_time_grid_of_a_trillion_levels_is_refused_before_it_is_made(problem):
    """1e12 levels hold at least 8 TB of times alone: more than any machine this runs on."""
    model = _plate() if problem is TransientProblem else _beam()
    with pytest.raises(TooLargeError, match=r"dt = 1e-12 .* gives 1e\+12 time steps") as refused:
        problem(model, t_end=1.0, dt=1e-12)
    assert "give a larger dt" in str(refused.value)


@pytest.mark.parametrize("problem", [TransientProblem, DynamicProblem])
def test_a_gradient_keeping_every_state_beyond_the_memory_is_refused(monkeypatch, problem):
    """On a 0.5 MB machine, 2001 kept states of at least 12 values (96 bytes) each need at
    least 0.19 MB of values alone and as much again for their arrays and the schedule:
    refused, naming max_states; with max_states = 10 the gradient runs (every entry
    finite, some non-zero)."""
    monkeypatch.setattr(run_memory, "available_bytes", lambda: 5e5)
    model = _plate() if problem is TransientProblem else _beam()
    key = "conductivity" if problem is TransientProblem else "E"
    start = {"T0": 1.0} if problem is TransientProblem else {"v0": 1.0}
    unit = np.ones(model.mesh.n_cells)

    def objective(run):
        return lambda c: np.sum(run.values(lambda u, t: np.sum(u ** 2), **start, **{key: c}))

    every = problem(model, t_end=1.0, dt=1 / 2000)
    with pytest.raises(TooLargeError, match="max_states = None keeps every one of the 2,001 "
                                            "time levels") as refused:
        grad(objective(every))(unit)
    assert "give max_states" in str(refused.value)
    assert every.stats["steps"] == 0  # refused before stepping
    few = problem(model, t_end=1.0, dt=1 / 2000, max_states=10)
    gradient = grad(objective(few))(unit)
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0.0)
    every.values(lambda u, t: np.sum(u ** 2), **start)  # plain values keep nothing: they run
