"""What the reverse sweep of a transient run costs (fesens/fem/transient/steps.py,
checkpointing.py): the matrix cotangents' running sums are the bits of the pattern outer
products they replace; an adjoint step reads the state after its step from the step
reversed before it, so a checkpointed gradient re-runs only the last step; the sweep frees
the forward's snapshots once past them (a second pullback recomputes them); a forward run
checks the residual of one solve per factorization."""

import gc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

import fesens.solvers.base as solver_base
from fesens.ad import grad, vjp
from fesens.ad.sparse import SparsePattern
from fesens.fem.transient import DynamicProblem, TransientProblem, minimal_advances
from fesens.fem.transient.checkpointing import (
    forward_snapshots,
    reverse_sweep,
    with_next_state,
)
from fesens.fem.transient.steps import PatternOuters, Run
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity, HeatConduction

N_STEPS = 60


def _heat():
    model = HeatConduction(rectangle(8, 3, 1.0, 0.4))
    model.fix("left", value=1.0)
    model.heat_source(2.0, name="q")
    return model


def _squares(T, t):
    return np.sum(T ** 2)


@pytest.mark.parametrize("steps", [1, 2, 3, 16])
@pytest.mark.parametrize("block", [1, 7, 16384])
def test_pattern_outers_are_the_bits_of_pattern_outer(monkeypatch, block, steps):
    """Random pattern with empty rows, blocks smaller than a row, of a few rows, of all;
    calls buffered in blocks of ``steps`` (7 calls: full blocks and a partial one), values
    spread over many magnitudes so that any other order of the subtractions changes bits."""
    monkeypatch.setattr(PatternOuters, "BLOCK", block)
    rng = np.random.default_rng(5)
    matrix = sp.random(40, 40, density=0.15, random_state=6, format="lil")
    matrix[[3, 17], :] = 0.0  # empty rows
    matrix = matrix.tocsr()
    matrix.eliminate_zeros()
    pattern = SparsePattern.of(matrix)
    outers = PatternOuters(pattern, 2, steps)
    expected = [np.zeros(pattern.nnz), np.zeros(pattern.nnz)]
    for _ in range(7):
        lam, x, y = rng.standard_normal((3, 40)) * 10.0 ** rng.integers(-8, 8, (3, 40))
        outers.subtract(lam, x, y)
        expected[0] -= pattern.outer(lam, x)
        expected[1] -= pattern.outer(lam, y)
    outers.flush()
    for total, reference in zip(outers.sums, expected, strict=True):
        assert np.array_equal(total, reference)
    with pytest.raises(ValueError, match="2 sums take 2 vectors"):
        outers.subtract(lam, x)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_checkpointed_sweep_buffers_few_products_and_holds_no_index_array(compiled):
    """Checkpointed: no index array of the pattern's size held, and no buffer with the
    numpy passes (a few calls with the compiled one); every state stored: at most 64
    steps buffered by the numpy passes, 16 by the compiled one, and at most an eighth of
    the steps."""
    if compiled:
        pytest.importorskip("numba")
    pattern = SparsePattern.of(sp.random(50, 50, density=0.2, random_state=3, format="csr"))
    checkpointed = PatternOuters.for_sweep(pattern, 2, 1000, checkpointed=True,
                                           compiled=compiled)
    assert checkpointed.rows is None and checkpointed.cols is pattern.cols
    assert checkpointed._vectors.shape[1] == (PatternOuters.CHECKPOINTED_STEPS if compiled
                                              else 0)
    most = PatternOuters.COMPILED_STEPS if compiled else 64
    for n_steps, buffered in ((1000, most), (100, min(most, 13)), (5, 1)):
        outers = PatternOuters.for_sweep(pattern, 2, n_steps, checkpointed=False,
                                         compiled=compiled)
        assert outers._vectors.shape == (3, buffered if buffered > 1 else 0, 50)


@pytest.mark.parametrize(("l", "s"), [(1, 2), (9, 2), (40, 4), (30, 31)])
def test_with_next_state_hands_each_step_the_state_after_it(l, s):
    """Counting toy (state n is n): step n gets state n − 1 and state n, but step l."""
    seen = []

    def adjoint_step(n, state, after):
        seen.append((n, state, after))

    reverse_sweep(l, s, 0, lambda n, state: n, with_next_state(adjoint_step))
    assert seen == [(l, l - 1, None)] + [(n, n - 1, n) for n in range(l - 1, 0, -1)]


@pytest.mark.parametrize("scheme", ["backward_euler", "bdf2"])
def test_checkpointed_gradient_reruns_one_step_and_matches_the_stored_bits(scheme):
    model = _heat()
    kappa = 1.0 + 0.2 * np.random.default_rng(1).random(model.mesh.n_cells)
    gradients = {}
    for max_states in (None, 5):
        problem = TransientProblem(model, t_end=0.06, dt=0.001, scheme=scheme,
                                   max_states=max_states)
        gradients[max_states] = grad(
            lambda k, p=problem: np.sum(p.values(_squares, conductivity=k)))(kappa)
    assert np.array_equal(gradients[None], gradients[5])
    spine = forward_snapshots(N_STEPS, 5)
    assert problem.stats["advanced"] + spine[-1] == minimal_advances(N_STEPS, 5)
    assert problem.stats["taped"] == 1


def test_the_sweep_frees_the_forward_snapshots_and_a_second_pullback_recomputes_them(
        monkeypatch):
    """The forward's snapshots die once the sweep is past them (weak references); a second
    pullback of the same run gives the same bits, recomputing the snapshots' chain."""
    runs = []
    original_init = Run.__init__

    def recorded(self, *args):
        original_init(self, *args)
        runs.append(self)

    monkeypatch.setattr(Run, "__init__", recorded)
    model = _heat()
    problem = TransientProblem(model, t_end=0.06, dt=0.001, scheme="backward_euler",
                               max_states=5)
    _, pull = vjp(lambda k: problem.values(_squares, conductivity=k),
                  np.ones(model.mesh.n_cells))
    (run,) = runs
    kept = [weakref.ref(state) for state in run.stored.values()]
    assert len(kept) == len(forward_snapshots(N_STEPS, 5)) + 1  # the snapshots, state 0
    cotangent = np.ones(N_STEPS + 1)
    first = pull(cotangent)
    gc.collect()
    assert sum(ref() is not None for ref in kept) == 1  # state 0 only
    advanced = problem.stats["advanced"]
    second = pull(cotangent)
    assert np.array_equal(first, second)
    assert problem.stats["advanced"] - advanced == minimal_advances(N_STEPS, 5)


def test_dynamic_checkpointed_gradient_reruns_one_step():
    model = Elasticity(rectangle(6, 2, 1.0, 0.2), E=1e3, nu=0.3, plane="stress").fix("left")
    model.point_load((1.0, 0.0), (0.0, -1e-3), name="tip")
    tip = 2 * model.mesh.nearest_node((1.0, 0.0)) + 1
    E = np.full(model.mesh.n_cells, 1e3)
    gradients = {}
    for max_states in (None, 4):
        problem = DynamicProblem(model, t_end=0.6, dt=0.01, scheme="newmark",
                                 max_states=max_states)
        gradients[max_states] = grad(lambda e, p=problem: np.sum(
            p.values(lambda u, t: u[tip] ** 2, E=e)))(E)
    assert np.array_equal(gradients[None], gradients[4])
    assert problem.stats["taped"] == 1
    spine = forward_snapshots(N_STEPS, 4)
    assert problem.stats["advanced"] + spine[-1] == minimal_advances(N_STEPS, 4)


def test_a_forward_run_checks_one_residual_per_factorization(monkeypatch):
    """The residual check guards the factorization: its first solve only (a run of 60
    steps with one step matrix: one check, not 60)."""
    calls = []
    original = solver_base.relative_residual

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(solver_base, "relative_residual", counted)
    model = _heat()
    problem = TransientProblem(model, t_end=0.06, dt=0.001, scheme="backward_euler",
                               solver="superlu")
    problem.values(_squares, conductivity=np.ones(model.mesh.n_cells))
    assert problem.stats["factorizations"] == 1
    assert len(calls) == 1
