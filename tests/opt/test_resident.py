"""A compliance design resident in one array library (fesens.opt.resident) and the grid
filter's array-API form (fesens.opt.grid_filter).

References: the general, traced loop (``optimize(..., resident=False)``: the tape's
gradient of the same problem, itself checked by Taylor tests in tests/opt) gives the
design history the resident path must repeat; ``scipy.ndimage.correlate`` with zeros
outside the grid is the filter's reference (the stencil form ``ConeStencil``, itself
checked against the sparse cone matrix in tests/opt/test_opt_filters.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

import fesens.opt.loop as loop
from fesens.mesh import box, rectangle
from fesens.objectives.static import compliance
from fesens.opt import MMA, OC, DesignProblem
from fesens.opt.filters import DensityFilter
from fesens.opt.grid_filter import CentroidLattice, ConeStencil, correlate_by_slices
from fesens.opt.loop import optimize
from fesens.opt.resident import ResidentCompliance, compliance_objective, resident_refusal
from fesens.physics import Elasticity
from fesens.workflow.design_fields import grayness_report

STRICT = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed "
                             "(pip install array-api-strict, part of fesens[test])")
#: The class of array_api_strict's arrays (not exported by the module).
STRICT_ARRAY = type(STRICT.asarray(0.0))


def cantilever(mesh, *, device="numpy", rtol=1e-10, radius=None, objective=None, **kw):
    """The cantilever of top88 (left side clamped, a downward traction on the right)."""
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    model = Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")
    model.traction("right", [0.0, -1.0] if mesh.dim == 2 else [0.0, 0.0, -1.0])
    return DesignProblem(model, objective or compliance_objective, volume_fraction=0.4,
                         filter=None if radius is None else DensityFilter(mesh, radius),
                         solver=("gmg", {"matrix_free": True, "device": device, "rtol": rtol}),
                         **kw)


# ---------------------------------------------------------------- the grid filter
@pytest.mark.parametrize("cells, radius", [((24, 12), 0.15), ((9, 6), 0.55),
                                           ((7, 4, 5), 0.3), ((6, 3, 3), 5.0),
                                           ((12, 1), 0.25)])
def test_filter_by_slices_equals_scipy(cells, radius):
    """Correlation by shifted slices = scipy.ndimage.correlate (zeros outside), and the
    normalised filter and its transpose on array_api_strict = numpy's (scipy's), near the
    boundary included (radii up to beyond the domain)."""
    mesh = rectangle(*cells, 2.0, 1.0) if len(cells) == 2 else box(*cells, 1.4, 0.8, 1.0)
    lattice = CentroidLattice.of(mesh.cell_centroids())
    weights = lattice.stencil(radius)
    rng = np.random.default_rng(3)
    grid = rng.standard_normal(lattice.shape)
    expected = ndimage.correlate(grid, weights, mode="constant", cval=0.0)
    assert np.max(np.abs(correlate_by_slices(grid, weights) - expected)) <= \
        1e-12 * np.max(np.abs(expected))
    stencil = ConeStencil(lattice, radius, rng.uniform(0.5, 1.5, mesh.n_cells))
    x = rng.uniform(size=mesh.n_cells)
    for method in (stencil.apply, stencil.transpose):
        on_strict = method(STRICT.asarray(x))
        assert isinstance(on_strict, STRICT_ARRAY)
        np.testing.assert_allclose(np.from_dlpack(on_strict), method(x), rtol=1e-12, atol=0)
    # the boundary normalisation: a uniform field stays uniform
    np.testing.assert_allclose(np.from_dlpack(stencil.apply(STRICT.ones(mesh.n_cells,
                                                                       dtype=STRICT.float64))),
                               1.0, rtol=1e-12)


def test_tensor_product_stencil_runs_per_axis():
    """A stencil that is a tensor product is applied one axis at a time, to the same
    values as scipy's."""
    weights = np.multiply.outer(np.array([0.5, 1.0, 0.5]), np.array([0.25, 1.0, 0.25]))
    grid = np.random.default_rng(0).standard_normal((7, 9))
    np.testing.assert_allclose(correlate_by_slices(grid, weights),
                               ndimage.correlate(grid, weights, mode="constant"),
                               rtol=0, atol=1e-14)


# ---------------------------------------------------------------- the resident path
CASES = {
    "quad4 24x12, filter": (lambda: rectangle(24, 12, 2.0, 1.0), 0.15, {}),
    "quad4 20x10, passive": (lambda: rectangle(20, 10, 2.0, 1.0), 0.2,
                             {"passive_solid": [0, 20, 40], "passive_void": [95, 96, 115]}),
    "quad4 16x8, no filter": (lambda: rectangle(16, 8, 2.0, 1.0), None, {}),
    "hex8 12x4x4, filter": (lambda: box(12, 4, 4, 3.0, 1.0, 1.0), 0.4, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_resident_history_equals_the_general_path(case):
    """Six OC iterations resident on numpy = the traced path with the same device
    multigrid: designs to 1e-8, compliances to 1e-10 (relative), and the result's
    evaluation is the general path's."""
    mesh, radius, passive = CASES[case]
    runs = []
    for resident in (True, False):
        problem = cantilever(mesh(), radius=radius, **passive)
        assert resident_refusal(problem, OC()) is None
        snapshots: list[np.ndarray] = []

        def keep(record, evaluation, x, snapshots=snapshots):
            snapshots.append(np.array(x))

        result = optimize(problem, OC(), max_iter=6, tol_change=0.0, resident=resident,
                          callback=keep)
        runs.append((result, snapshots))
    (resident, designs), (general, expected) = runs
    for a, b in zip(designs, expected, strict=True):
        assert np.max(np.abs(a - b)) <= 1e-8
    for a, b in zip(resident.history, general.history, strict=True):
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-10)
        assert a["volume"] == pytest.approx(b["volume"], abs=1e-12)
        assert a["change"] == pytest.approx(b["change"], abs=1e-8)
    assert isinstance(resident.x, np.ndarray)
    assert resident.evaluation.state is not None  # the outputs' evaluation, on the host
    assert resident.evaluation.objective == pytest.approx(general.evaluation.objective,
                                                          rel=1e-10)


def test_refusals_name_the_reason():
    """The resident path takes compliance + volume + OC on a device only; the loop runs
    the general path otherwise."""
    mesh = rectangle(8, 4, 2.0, 1.0)
    assert "'mma'" in resident_refusal(cantilever(mesh), MMA())
    assert "device" in resident_refusal(cantilever(mesh, device="cpu"), OC())
    other = cantilever(mesh, objective=lambda state, rho: compliance(state))
    assert "compliance" in resident_refusal(other, OC())


# ---------------------------------------------------------------- crossings
def test_no_full_size_array_crosses_inside_an_iteration(monkeypatch):
    """Resident on array_api_strict: inside every iteration no array of the design's
    size or larger is copied to the library (``asarray`` of a numpy array) or back
    (``__array__``, ``__dlpack__``, ``to_device``); only numbers cross, the grayness
    report's included. The run itself mixes no numpy array into the library's
    (array_api_strict refuses that)."""
    problem = cantilever(rectangle(24, 12, 2.0, 1.0), radius=0.15)
    problem.reports["grayness"] = grayness_report(problem)  # a density report, as a config's
    n_cells = problem.mesh.n_cells
    monkeypatch.setattr(loop, "resident_path",
                        lambda problem, optimizer: ResidentCompliance(problem, xp=STRICT))
    inside, crossings = [False], []

    def counted(name, size):
        if inside[0] and size >= n_cells:
            crossings.append((name, size))

    asarray = STRICT.asarray

    def counting_asarray(obj, *args, **kwargs):
        if isinstance(obj, np.ndarray):
            counted("asarray", obj.size)
        return asarray(obj, *args, **kwargs)

    monkeypatch.setattr(STRICT, "asarray", counting_asarray)
    for method in ("__array__", "__dlpack__", "to_device"):
        original = getattr(STRICT_ARRAY, method)

        def wrapper(self, *args, _original=original, _name=method, **kwargs):
            counted(_name, self.size)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(STRICT_ARRAY, method, wrapper)
    update = problem.update_schedules

    def start(iteration):
        inside[0] = True
        update(iteration)

    monkeypatch.setattr(problem, "update_schedules", start)
    iterations = []

    def end(record, evaluation, x):
        inside[0] = False
        iterations.append(record["iteration"])
        assert isinstance(x, STRICT_ARRAY) and isinstance(evaluation.gradient, STRICT_ARRAY)

    result = optimize(problem, OC(), max_iter=4, tol_change=0.0, callback=end)
    assert iterations == [1, 2, 3, 4]
    assert crossings == []
    assert isinstance(result.x, np.ndarray)  # the result comes to the host at the end
    plain = cantilever(rectangle(24, 12, 2.0, 1.0), radius=0.15)
    plain.reports["grayness"] = grayness_report(plain)
    reference = optimize(plain, OC(), max_iter=4, tol_change=0.0, resident=False)
    np.testing.assert_allclose(result.x, reference.x, rtol=0, atol=1e-8)
    for a, b in zip(result.history, reference.history, strict=True):
        assert a["grayness"] == pytest.approx(b["grayness"], abs=1e-10)

