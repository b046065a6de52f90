"""The matrix cotangents of a transient adjoint (fesens/fem/transient/pattern_sums.py,
outer_kernel.py): the compiled pass over the pattern gives the bits of the numpy passes,
so a gradient has the same bits with either, with and without checkpointing; only the
traced matrices get a running sum."""

import numpy as np
import pytest
import scipy.sparse as sp

import fesens.fem.transient.pattern_sums as pattern_sums
from fesens.ad import grad, taylor_test
from fesens.ad.sparse import SparsePattern
from fesens.fem.transient import DynamicProblem, TransientProblem
from fesens.fem.transient.pattern_sums import PatternOuters
from fesens.mesh.generators import rectangle
from fesens.physics import Elasticity, HeatConduction

numba = pytest.importorskip("numba")


@pytest.fixture(params=["compiled", "numpy"])
def sums_pass(request, monkeypatch):
    """Every gradient of a test under each pass (numpy: as where numba is absent)."""
    if request.param == "numpy":
        monkeypatch.setattr(pattern_sums, "compiled_kernel", lambda: None)
    return request.param


def _pattern():
    """Random pattern with empty rows and rows of many entries."""
    matrix = sp.random(60, 60, density=0.2, random_state=8, format="lil")
    matrix[[4, 30], :] = 0.0
    matrix = matrix.tocsr()
    matrix.eliminate_zeros()
    return SparsePattern.of(matrix)


@pytest.mark.parametrize("count", [0, 1, 2])
@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5, 16])
def test_the_compiled_pass_gives_the_bits_of_the_numpy_pass(count, steps):
    """Values over many magnitudes, so that any other order of an entry's subtractions,
    or a fused multiply-add, changes bits; 11 calls: full buffers and a partial one, on
    both sides of the kernel's switch between its two loop orders."""
    pattern = _pattern()
    rng = np.random.default_rng(2)
    compiled = PatternOuters(pattern, count, steps, compiled=True)
    numpy_pass = PatternOuters(pattern, count, steps, compiled=False)
    assert compiled.compiled and not numpy_pass.compiled
    expected = [np.zeros(pattern.nnz) for _ in range(count)]
    for _ in range(11):
        lam, *xs = rng.standard_normal((count + 1, 60)) * 10.0 ** rng.integers(
            -8, 8, (count + 1, 60))
        compiled.subtract(lam, *xs)
        numpy_pass.subtract(lam, *xs)
        for total, x in zip(expected, xs, strict=True):
            total -= pattern.outer(lam, x)
    compiled.flush()
    numpy_pass.flush()
    for ours, theirs, reference in zip(compiled.sums, numpy_pass.sums, expected,
                                       strict=True):
        assert np.array_equal(ours, reference)
        assert np.array_equal(theirs, reference)


@pytest.mark.parametrize("steps", [1, 4])
def test_single_precision_vectors_are_summed_in_double_as_by_numpy(steps):
    """Unbuffered, either pass reads the vectors in place: as float64, the bits of a
    buffer's float64 copies."""
    pattern = _pattern()
    rng = np.random.default_rng(3)
    lam, x = rng.standard_normal((2, 60)).astype(np.float32)
    sums = []
    for compiled in (True, False):
        outers = PatternOuters(pattern, 1, steps, compiled=compiled)
        outers.subtract(lam, x)
        outers.flush()
        sums.append(outers.sums[0])
    assert np.array_equal(sums[0], sums[1])
    assert np.array_equal(sums[0], -pattern.outer(lam.astype(float), x.astype(float)))


def test_the_compiled_pass_without_numba_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr(pattern_sums, "compiled_kernel", lambda: None)
    with pytest.raises(ImportError, match=r"fesens\[jit\]"):
        PatternOuters(_pattern(), 2, 4, compiled=True)
    assert not PatternOuters.for_sweep(_pattern(), 2, 100, checkpointed=True).compiled


def _heat():
    model = HeatConduction(rectangle(8, 3, 1.0, 0.4))
    model.fix("left", value=1.0)
    model.heat_source(2.0, name="q")
    return model


def _heat_gradient(model, scheme, max_states):
    rng = np.random.default_rng(1)
    p = {"kappa": 1.0 + 0.2 * rng.random(model.mesh.n_cells),
         "rho": 1.0 + 0.2 * rng.random(model.mesh.n_cells), "m": 1.3}
    problem = TransientProblem(model, t_end=0.06, dt=0.001, scheme=scheme,
                               max_states=max_states)

    def J(q):
        values = problem.values(lambda T, t: np.sum(T ** 2), loads={"q": q["m"]},
                                conductivity=q["kappa"], density=q["rho"])
        return np.sum(values)

    return grad(J)(p)


@pytest.mark.parametrize("scheme", ["backward_euler", "bdf2", "crank_nicolson"])
def test_heat_gradients_have_the_same_bits_with_either_pass_and_checkpointing(
        monkeypatch, scheme):
    model = _heat()
    gradients = {}
    for kind in ("compiled", "numpy"):
        if kind == "numpy":
            monkeypatch.setattr(pattern_sums, "compiled_kernel", lambda: None)
        for max_states in (None, 5):
            gradients[kind, max_states] = _heat_gradient(model, scheme, max_states)
    reference = gradients["compiled", None]
    for key, g in gradients.items():
        for name, value in reference.items():
            assert np.array_equal(g[name], value), (key, name)


def test_dynamic_gradients_have_the_same_bits_with_either_pass_and_checkpointing(
        monkeypatch):
    model = Elasticity(rectangle(6, 2, 1.0, 0.2), E=1e3, nu=0.3, plane="stress").fix("left")
    model.point_load((1.0, 0.0), (0.0, -1e-3), name="tip")
    tip = 2 * model.mesh.nearest_node((1.0, 0.0)) + 1
    E = 1e3 * (1.0 + 0.1 * np.random.default_rng(4).random(model.mesh.n_cells))
    gradients = {}
    for kind in ("compiled", "numpy"):
        if kind == "numpy":
            monkeypatch.setattr(pattern_sums, "compiled_kernel", lambda: None)
        for max_states in (None, 4):
            problem = DynamicProblem(model, t_end=0.6, dt=0.01, scheme="newmark",
                                     max_states=max_states)
            gradients[kind, max_states] = grad(lambda e, p=problem: np.sum(
                p.values(lambda u, t: u[tip] ** 2, E=e)))(E)
    for key, g in gradients.items():
        assert np.array_equal(g, gradients["compiled", None]), key


def test_taylor_test_under_each_pass(sums_pass):
    """From a first step of 5e-4: at the default 5e-3 the remainders still hold a large
    third-order term (rates 0.09, 1.55, 1.82, 1.92, then from 1e-3: 1.86, 1.94, 1.97)."""
    model = _heat()
    problem = TransientProblem(model, t_end=0.06, dt=0.001, scheme="bdf2", max_states=4)
    kappa = 1.0 + 0.2 * np.random.default_rng(5).random(model.mesh.n_cells)
    result = taylor_test(lambda k: np.sum(problem.values(lambda T, t: np.sum(T ** 2),
                                                         conductivity=k)),
                         kappa, step=5e-4, n_steps=4, verbose=False)
    assert result.rate > 1.9, result.table()


@pytest.mark.parametrize(("traced", "count"), [("conductivity", 1), ("density", 1),
                                                ("both", 2)])
def test_only_the_traced_matrices_get_a_running_sum(monkeypatch, traced, count):
    """A conductivity design leaves the mass untraced: one sum over the pattern, not two
    (half the passes and half the memory of the matrix cotangents)."""
    counts = []
    original = PatternOuters.__init__

    def recorded(self, pattern, n, *args, **kwargs):
        counts.append(n)
        original(self, pattern, n, *args, **kwargs)

    monkeypatch.setattr(PatternOuters, "__init__", recorded)
    model = _heat()
    problem = TransientProblem(model, t_end=0.01, dt=0.001, scheme="backward_euler")
    ones = np.ones(model.mesh.n_cells)

    def J(x):
        fields = {"conductivity": x, "density": x} if traced == "both" else {traced: x}
        return np.sum(problem.values(lambda T, t: np.sum(T ** 2), **fields))

    grad(J)(ones)
    assert counts == [count]
