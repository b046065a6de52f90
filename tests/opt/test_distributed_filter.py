"""The distributed density and sensitivity filters (fesens.opt.rank_filters): on one
rank they are the serial filters (matrix and stencil forms); under ``mpirun -n 2``
(tests/opt/distributed_filter_script.py) the ranks' gathered results are the serial ones."""

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from mpi_launch import mpirun

from fesens.ad import grad, jvp, vjp
from fesens.ad.rank_primitives import total
from fesens.errors import MeshError
from fesens.mesh import Mesh, box, rectangle
from fesens.mpi import SERIAL, Collective
from fesens.opt import FILTERS, DensityFilter, Filter, NoFilter, SensitivityFilter
from fesens.opt.rank_filters import (
    COUNTERPARTS,
    DistributedDensityFilter,
    DistributedSensitivityFilter,
    rank_ordered_ids,
)
from fesens.solvers.petsc import petsc4py_available

SCRIPT = Path(__file__).with_name("distributed_filter_script.py")
needs_mpi = pytest.mark.skipif(
    not petsc4py_available() or shutil.which("mpirun") is None,
    reason="petsc4py/mpi4py or mpirun missing (make petsc installs them)")


def whole(mesh: Mesh) -> SimpleNamespace:
    """A one-rank part: every cell (the attributes the filters read)."""
    return SimpleNamespace(cells=np.arange(mesh.n_cells), cell_counts=np.array([mesh.n_cells]),
                           size=1, rank=0, cell_start=0)


def unstructured() -> Mesh:
    """A 14 x 8 triangle mesh with moved interior points (no lattice: the matrix form)."""
    mesh = rectangle(14, 8, 1.4, 0.8, cell_type="tri3")
    points = mesh.points.copy()
    inner = np.flatnonzero((points[:, 0] > 0) & (points[:, 0] < 1.4)
                           & (points[:, 1] > 0) & (points[:, 1] < 0.8))
    points[inner] += np.random.default_rng(2).uniform(-0.02, 0.02, (len(inner), 2))
    return Mesh(points, mesh.cells, "tri3")


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-14) -> bool:
    return bool(np.abs(a - b).max() <= rtol * np.abs(b).max())


MESHES = {"unstructured": (unstructured, 0.25), "grid": (lambda: rectangle(30, 10), 0.12),
          "box": (lambda: box(12, 6, 4), 0.25)}


@pytest.mark.parametrize("name", MESHES)
def test_on_one_rank_the_filters_are_the_serial_ones(name):
    make_mesh, radius = MESHES[name]
    mesh = make_mesh()
    rng = np.random.default_rng(3)
    x, g = rng.uniform(0.05, 1.0, mesh.n_cells), rng.standard_normal(mesh.n_cells)
    serial, split = DensityFilter(mesh, radius), DistributedDensityFilter(mesh, whole(mesh),
                                                                        radius)
    assert (serial.stencil is None) == (name == "unstructured")
    assert close(split(x), serial(x))
    assert close(vjp(split, x)[1](g), vjp(serial, x)[1](g))
    assert close(grad(lambda x: total(np.sum(split(x) ** 2), SERIAL))(x),
                 grad(lambda x: np.sum(serial(x) ** 2))(x))
    assert close(np.array(jvp(split, (x,), (g,))[1]), serial(g))
    sensitivity = SensitivityFilter(mesh, radius)
    assert close(DistributedSensitivityFilter(mesh, whole(mesh), radius).filter_gradient(x, g),
                 sensitivity.filter_gradient(x, g))
    assert split.name == "density" and split.linear and split.takes_radius


@pytest.mark.parametrize("name", list(COUNTERPARTS))
def test_each_distributed_filter_is_a_filter_like_its_serial_counterpart(name):
    distributed, serial = COUNTERPARTS[name], FILTERS[name]
    assert issubclass(distributed, Filter) and not issubclass(distributed, NoFilter)
    assert distributed.name == serial.name == name
    for attribute in ("linear", "takes_radius", "needs_solid_cells"):
        assert getattr(distributed, attribute) == getattr(serial, attribute), attribute


def test_cells_are_renumbered_rank_by_rank():
    """Rank 0 with cells 1 and 3, rank 1 with 0, 2 and 4: rank-ordered ids 1, 3, 0, 2, 4 ->
    0, 1, 2, 3, 4 (the gathered cells stand for the two ranks')."""

    class TwoRanks(Collective):
        size = 2

        def allgather(self, part):
            return np.array([1, 3, 0, 2, 4])

    mesh = rectangle(5, 1)
    part = SimpleNamespace(cells=np.array([1, 3]), size=2)
    np.testing.assert_array_equal(rank_ordered_ids(mesh, part, TwoRanks()), [2, 0, 3, 1, 4])


def test_bad_parts_and_radii_are_refused():
    mesh = rectangle(5, 1)
    with pytest.raises(ValueError, match="radius must be > 0"):
        DistributedDensityFilter(mesh, whole(mesh), 0.0)
    with pytest.raises(MeshError, match="partition the mesh for this launch"):
        rank_ordered_ids(mesh, SimpleNamespace(cells=np.arange(5), size=2), SERIAL)
    with pytest.raises(MeshError, match="partition this mesh"):
        DistributedSensitivityFilter(mesh, whole(rectangle(6, 1)), 0.3)


@needs_mpi
def test_two_ranks_give_the_serial_filters(tmp_path):
    """``mpirun -n 2`` of the script (each mesh split into a left and a right half): both
    ranks' gathered densities, VJPs, sensitivity-filtered gradients, gradients, JVPs and
    Hessian-vector products of ``total(Σ x̃²)`` are those of the serial classes of
    fesens.opt.filters."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import distributed_filter_script as script
    finally:
        sys.path.remove(str(SCRIPT.parent))
    result = mpirun(2, sys.executable, str(SCRIPT), str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = [np.load(tmp_path / f"rank{rank}.npz") for rank in (0, 1)]
    for name, make_mesh, radii in script.CASES:
        mesh = make_mesh()
        given = script.fields(mesh.n_cells)
        x = given["x"]
        for radius in radii:
            density = DensityFilter(mesh, radius)

            def objective(x, density=density):
                return np.sum(density(x) ** 2)

            expected = {
                "density": density(x), "vjp": vjp(density, x)[1](given["cotangent"]),
                "sensitivity": SensitivityFilter(mesh, radius).filter_gradient(
                    x, given["gradient"]),
                "grad": grad(objective)(x),
                # the serial stencil filter has no JVP (and a VJP that cannot be traced)
                "jvp": np.array([objective(x), grad(objective)(x) @ given["direction"]]),
                "hvp": 2 * vjp(density, x)[1](density(given["direction"]))}
            for rank, found in enumerate(ranks):
                assert found[f"{name}-{radius}-n_local"][0] == mesh.n_cells // 2
                for key, value in expected.items():
                    assert close(found[f"{name}-{radius}-{key}"], value), (name, radius, key,
                                                                           rank)
