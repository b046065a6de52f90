"""The distributed density and sensitivity filters on cells split among the MPI ranks.

Run by ``tests/opt/test_distributed_filter.py`` under ``mpirun -n 2``::

    python distributed_filter_script.py OUT

For each case (a 30 x 10 rectangle and a 12 x 6 x 4 box, each with two radii) the cells are
split by centroid: the left half (``x < 0.5``) on rank 0, the right half on the last rank
(by hand, so that the test does not depend on the partitioner). Each rank filters its part
of one field and gathers, in global cell order: the filtered densities, the VJP of the
density filter, the sensitivity filter's gradient, the gradient of
``total(Σ x̃², collective)``, its JVP and its Hessian-vector product along a direction.
Each rank writes ``OUT/rank<r>.npz`` (``<case>-<quantity>`` arrays).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from fesens.ad import grad, hvp, jvp, vjp
from fesens.ad.rank_primitives import total
from fesens.mesh.generators import box, rectangle
from fesens.mpi import collective
from fesens.opt.rank_filters import DistributedDensityFilter, DistributedSensitivityFilter

#: (case name, mesh, filter radii)
CASES = (("rectangle", lambda: rectangle(30, 10), (0.05, 0.12)),
         ("box", lambda: box(12, 6, 4), (0.1, 0.25)))


def fields(n_cells: int) -> dict[str, np.ndarray]:
    """The global fields every case uses (identical on every rank and in the test)."""
    rng = np.random.default_rng(7)
    return {"x": rng.uniform(0.05, 1.0, n_cells), "cotangent": rng.standard_normal(n_cells),
            "gradient": rng.standard_normal(n_cells), "direction": rng.standard_normal(n_cells)}


def mesh_part(mesh, cell_ranks: np.ndarray, rank: int):
    """This rank's part: :func:`fesens.fem.partition.mesh_part.partition_mesh` when it exists,
    else a
    stand-in with the attributes the filters read."""
    try:
        from fesens.fem.partition.mesh_part import partition_mesh
    except ImportError:
        counts = np.bincount(cell_ranks, minlength=cell_ranks.max() + 1)
        return SimpleNamespace(cells=np.flatnonzero(cell_ranks == rank), rank=rank,
                               size=len(counts), cell_counts=counts,
                               cell_start=int(counts[:rank].sum()),
                               n_global_cells=len(cell_ranks))
    return partition_mesh(mesh, cell_ranks, rank)


def run_case(mesh, radius: float, reductions) -> dict[str, np.ndarray]:
    """The gathered results of one mesh and radius (global cell order)."""
    cell_ranks = np.where(mesh.cell_centroids()[:, 0] < 0.5, 0, reductions.size - 1)
    part = mesh_part(mesh, cell_ranks, reductions.rank)
    order = reductions.allgather(part.cells)

    def gathered(local):
        out = np.empty(mesh.n_cells)
        out[order] = reductions.allgather(np.asarray(local, dtype=float))
        return out

    given = {key: value[part.cells] for key, value in fields(mesh.n_cells).items()}
    density = DistributedDensityFilter(mesh, part, radius)
    sensitivity = DistributedSensitivityFilter(mesh, part, radius)
    filtered, pull = vjp(density, given["x"])

    def objective(x):
        return total(np.sum(density(x) ** 2), reductions)

    value, slope = jvp(objective, (given["x"],), (given["direction"],))
    return {"density": gathered(filtered), "vjp": gathered(pull(given["cotangent"])),
            "sensitivity": gathered(sensitivity.filter_gradient(given["x"],
                                                                given["gradient"])),
            "grad": gathered(grad(objective)(given["x"])),
            "hvp": gathered(hvp(objective)(given["x"], given["direction"])),
            "jvp": np.array([value, slope]), "n_local": np.array([len(part.cells)])}


def main(out: Path) -> None:
    reductions = collective()
    results = {}
    for name, make_mesh, radii in CASES:
        mesh = make_mesh()
        for radius in radii:
            for key, value in run_case(mesh, radius, reductions).items():
                results[f"{name}-{radius}-{key}"] = value
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / f"rank{reductions.rank}.npz", **results)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
