"""How much memory a generated mesh and its solve need, estimated before anything is built.

A generated (structured) mesh is refused when the estimate does not fit in the memory the
machine has available, unless ``mesh.allow_large = true``. The estimate depends on the
solver the config asks for (``auto``: the one it will pick, as
:meth:`fesens.fem.model.solvers.SolverChoice.auto_solver` does):

* a direct solver: the mesh's arrays, the sparsity pattern of the system matrix and a
  sparse Cholesky factor (its fill: :func:`fesens.solvers.memory.factor_bytes`);
* an iterative solver on the assembled matrix: the arrays and the pattern;
* ``gmg`` with ``matrix_free = true``: the arrays and :data:`MATRIX_FREE_BYTES_PER_UNKNOWN`.
"""

from __future__ import annotations

import math

from fesens.config.checks import ConfigError
from fesens.fem.model.matrix_free import MATRIX_FREE_CELL_TYPES
from fesens.mesh.ground_structure import candidate_bars
from fesens.solvers import policy
from fesens.solvers.memory import available_bytes, factor_bytes

__all__ = ["available_bytes", "check_mesh_memory", "estimate_bytes", "out_of_memory"]

#: Per generated cell type: nodes per cell, nodes one node couples to, nodes per grid
#: vertex (mid-edge, face and cell nodes of quadratic cells), cells per grid cell.
_CELL_TYPES = {"quad4": (4, 9, 1, 1), "quad8": (8, 21, 3, 1), "quad9": (9, 25, 4, 1),
               "tri3": (3, 7, 1, 2), "tri6": (6, 19, 4, 2), "hex8": (8, 27, 1, 1),
               "hex20": (20, 81, 4, 1), "hex27": (27, 125, 8, 1), "tet4": (4, 15, 1, 6),
               "tet10": (10, 65, 8, 6)}
#: Bytes of one matrix entry in the pattern, the cached cell matrices and the gather maps.
_ENTRY = 24
#: Peak bytes per unknown of a matrix-free multigrid optimization iteration: measured
#: 6228 MB for 3,168,963 unknowns (1,024,000 hex8 cells, ``benchmarks/bench_scale.py``),
#: rounded up.
MATRIX_FREE_BYTES_PER_UNKNOWN = 2_100
#: Peak bytes per candidate bar of a truss optimization on a ground structure: measured
#: 1.37 GB over the start for 1,086,938 bars (``cells = [60, 30]``, no reach), rounded up.
BYTES_PER_BAR = 1_400
#: What each kind of solve holds, for the messages.
_HOLDS = {"direct": "mesh, matrix and factorization",
          "iterative": "mesh and matrix of an iterative solver",
          "matrix_free": "mesh and vectors of the matrix-free multigrid solver"}


def estimate_bytes(cells: list[int], cell_type: str, kind: str = "direct") -> float:
    """Memory (bytes) of a generated mesh of ``cells`` (``[nx, ny]`` or ``[nx, ny, nz]``)
    of ``cell_type`` and its solve, for a vector field (one unknown per node and
    dimension): coordinates and cells, and for ``kind`` ``"direct"`` the matrix pattern and
    a sparse Cholesky factor, ``"iterative"`` the pattern, ``"matrix_free"`` the vectors
    and coarse levels of the matrix-free multigrid. Floats, so that absurd sizes
    (``[10**15, 1]``) cannot overflow."""
    dim = len(cells)
    per_cell, coupled, node_factor, cell_factor = _CELL_TYPES.get(
        cell_type, (2 ** dim, 3 ** dim, 1, 1))
    n_cells = math.prod(float(c) for c in cells) * cell_factor
    n_nodes = math.prod(float(c) + 1.0 for c in cells) * node_factor
    unknowns = dim * n_nodes
    mesh = n_nodes * dim * 8 + n_cells * per_cell * 8
    if kind == "matrix_free":
        return mesh + unknowns * MATRIX_FREE_BYTES_PER_UNKNOWN
    pattern = unknowns * coupled * dim * _ENTRY + n_cells * (per_cell * dim) ** 2 * 8
    return mesh + pattern + (factor_bytes(unknowns, dim) if kind == "direct" else 0.0)


def solve_kind(spec: dict, solver: dict) -> str:
    """``"direct"``, ``"iterative"`` or ``"matrix_free"``: how the checked ``[solver]``
    table will solve on the generated mesh of the checked ``[mesh]`` table ``spec``."""
    backend, options = solver["backend"], solver["options"]
    if policy.is_auto(backend):  # a generated rectangle or box is a lattice
        cells, cell_type = spec["cells"], spec["cell_type"]
        dim = len(cells)
        unknowns = dim * math.prod(float(c) + 1.0 for c in cells) * _CELL_TYPES.get(
            cell_type, (0, 0, 1, 1))[2]
        backend = policy.model_choice(
            unknowns, dim, estimate_bytes(cells, cell_type, "direct"), available_bytes(),
            on_lattice=lambda: True,
            matrix_free_refusal=lambda: None if cell_type in MATRIX_FREE_CELL_TYPES else
            f"{cell_type} cells")
        options = backend.options
    return policy.solve_kind(backend, options)


def check_mesh_memory(spec: dict, solver: dict) -> None:
    """Refuse the generated mesh of a checked ``[mesh]`` table whose estimate
    (:func:`estimate_bytes` for the solve of the checked ``[solver]`` table, see
    :func:`solve_kind`) exceeds the available memory, unless ``allow_large``.

    Raises
    ------
    ConfigError
        Naming ``mesh.cells``, the estimate, the available memory and the override (a
        ground structure: ``mesh.reach`` and its number of bars).
    """
    if spec["type"] == "ground_structure":
        _check_ground_structure(spec)
        return
    if spec["type"] not in ("rectangle", "box") or spec.get("allow_large"):
        return
    available = available_bytes()
    kind = solve_kind(spec, solver)
    needed = estimate_bytes(spec["cells"], spec["cell_type"], kind)
    if available is not None and needed > available:
        raise ConfigError(
            f"mesh.cells = {spec['cells']} needs about {needed / 1e9:.3g} GB ({_HOLDS[kind]}),"
            f" more than the {available / 1e9:.3g} GB of memory available; use fewer cells, "
            "or set mesh.allow_large = true to build it anyway")


def out_of_memory(spec: dict, solver: dict, error: MemoryError) -> str:
    """The one-line message of ``error``, raised while generating the mesh of the checked
    ``[mesh]`` table ``spec`` (one ``allow_large`` let through, or one the estimate
    underrated): its cells, the estimate, the available memory and the fix."""
    cells, available = spec["cells"], available_bytes()
    estimate = ""
    if "cell_type" in spec:
        kind = solve_kind(spec, solver)
        estimate = (f" needs about {estimate_bytes(cells, spec['cell_type'], kind) / 1e9:.3g}"
                    f" GB ({_HOLDS[kind]})")
        if available is not None:
            estimate += f" of the {available / 1e9:.3g} GB available"
    override = " (mesh.allow_large = true)" if spec.get("allow_large") else ""
    return (f"mesh.cells = {cells}{override}{estimate}: the machine ran out of memory "
            f"building the mesh ({error}); use fewer cells")


def _check_ground_structure(spec: dict) -> None:
    """Refuse a ground structure whose bars (:func:`~fesens.mesh.ground_structure.
    candidate_bars`, :data:`BYTES_PER_BAR` each) exceed the available memory."""
    available = available_bytes()
    reach = spec.get("reach")
    bars = candidate_bars(spec["cells"], reach)
    needed = bars * BYTES_PER_BAR
    if available is not None and needed > available:
        given = "no mesh.reach" if reach is None else f"mesh.reach = {reach:g}"
        raise ConfigError(
            f"mesh.cells = {spec['cells']} with {given} gives {bars:,} candidate bars, which "
            f"need about {needed / 1e9:.3g} GB, more than the {available / 1e9:.3g} GB of "
            "memory available; give mesh.reach = a few grid steps (e.g. 3) or fewer cells")
