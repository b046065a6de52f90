"""How much memory a generated mesh and its solve need, estimated before anything is built.

A generated (structured) mesh is refused when the estimate of its arrays, the sparsity
pattern of its system matrix and a sparse Cholesky factor (its fill:
:func:`fesens.solvers.memory.factor_bytes`) does not fit in the memory the machine has
available, unless ``mesh.allow_large = true``.
"""

from __future__ import annotations

import math

from fesens.config.checks import ConfigError
from fesens.solvers.memory import available_bytes, factor_bytes

__all__ = ["available_bytes", "check_mesh_memory", "estimate_bytes"]

#: Per generated cell type: nodes per cell, nodes one node couples to, nodes per grid
#: vertex (mid-edge, face and cell nodes of quadratic cells), cells per grid cell.
_CELL_TYPES = {"quad4": (4, 9, 1, 1), "quad8": (8, 21, 3, 1), "quad9": (9, 25, 4, 1),
               "tri3": (3, 7, 1, 2), "tri6": (6, 19, 4, 2), "hex8": (8, 27, 1, 1),
               "hex20": (20, 81, 4, 1), "hex27": (27, 125, 8, 1), "tet4": (4, 15, 1, 6),
               "tet10": (10, 65, 8, 6)}
#: Bytes of one matrix entry in the pattern, the cached cell matrices and the gather maps.
_ENTRY = 24


def estimate_bytes(cells: list[int], cell_type: str) -> float:
    """Memory (bytes) of a generated mesh of ``cells`` (``[nx, ny]`` or ``[nx, ny, nz]``)
    of ``cell_type``: coordinates and cells, the matrix pattern and a sparse Cholesky factor
    of a vector field (one unknown per node and dimension). Floats, so that absurd sizes
    (``[10**15, 1]``) cannot overflow."""
    dim = len(cells)
    per_cell, coupled, node_factor, cell_factor = _CELL_TYPES.get(
        cell_type, (2 ** dim, 3 ** dim, 1, 1))
    n_cells = math.prod(float(c) for c in cells) * cell_factor
    n_nodes = math.prod(float(c) + 1.0 for c in cells) * node_factor
    unknowns = dim * n_nodes
    mesh = n_nodes * dim * 8 + n_cells * per_cell * 8
    pattern = unknowns * coupled * dim * _ENTRY + n_cells * (per_cell * dim) ** 2 * 8
    return mesh + pattern + factor_bytes(unknowns, dim)


def check_mesh_memory(spec: dict) -> None:
    """Refuse the generated mesh of a checked ``[mesh]`` table whose estimate
    (:func:`estimate_bytes`) exceeds the available memory, unless ``allow_large``.

    Raises
    ------
    ConfigError
        Naming ``mesh.cells``, the estimate, the available memory and the override.
    """
    if spec["type"] not in ("rectangle", "box") or spec.get("allow_large"):
        return
    available = available_bytes()
    needed = estimate_bytes(spec["cells"], spec["cell_type"])
    if available is not None and needed > available:
        raise ConfigError(
            f"mesh.cells = {spec['cells']} needs about {needed / 1e9:.3g} GB (mesh, matrix "
            f"and factorization), more than the {available / 1e9:.3g} GB of memory available; "
            "use fewer cells, or set mesh.allow_large = true to build it anyway")
