"""One rank's part of a distributed model: the conditions of the whole model restricted to
the rank's cells, and where its free dofs sit among the global ones.

A distributed run (``mpirun -n N``; :mod:`fesens.mpi`) builds on every rank the model of its
sub-mesh (:class:`~fesens.fem.partition.mesh_part.MeshPart`), a normal model of the physics whose
matrices are those of the rank's cells only. :func:`adopt` gives it the Dirichlet conditions
and load terms of the model of the whole mesh: every Dirichlet dof of its nodes (so the ranks
agree on which shared dofs are free), and the load terms on the nodes it owns only (each
nodal load counted once: the global load vector is the sum of the ranks' local ones).
:func:`dof_layout` says where its free dofs sit, for the distributed PETSc solve
(:mod:`fesens.solvers.petsc_distributed`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fesens.errors import BoundaryConditionError
from fesens.mpi import collective
from fesens.solvers.petsc_distributed import DofLayout

if TYPE_CHECKING:
    from fesens.fem.partition.mesh_part import MeshPart
    from fesens.mesh.mesh import Mesh


def adopt(local, whole, part: MeshPart):
    """Give ``local`` (a model of ``part.mesh``) the Dirichlet conditions and load terms of
    ``whole`` (the same physics on the whole mesh) restricted to the part; returns ``local``
    with ``local.partition = part``.

    Load terms become fixed vectors (the rebuilders for moved nodes are not carried over:
    shape derivatives are not offered in distributed runs).

    Raises
    ------
    BoundaryConditionError
        ``local`` already has conditions or loads, the two models differ in their
        unknowns per node, or ``whole`` has springs.
    """
    n = whole.n_components
    if local.n_components != n:
        raise BoundaryConditionError(f"the part's model has {local.n_components} unknowns per "
                                     f"node, the whole model {n}")
    if local.constrained_dofs.size or local.loads:
        raise BoundaryConditionError("adopt() needs a part's model without Dirichlet "
                                     "conditions or loads of its own")
    if getattr(whole, "springs", None):
        raise BoundaryConditionError("spring supports are not split among MPI ranks; run "
                                     "a model with springs on one process")
    dofs, values = whole.constrained_dofs, whole.prescribed_values()
    position = np.searchsorted(part.nodes, dofs // n)
    position = np.minimum(position, part.nodes.size - 1)
    kept = part.nodes[position] == dofs // n
    local_dofs = position[kept] * n + dofs[kept] % n
    local._dirichlet.update(zip(local_dofs.tolist(), values[kept].tolist(), strict=True))
    owned = part.owned[:, None].astype(float)
    for name, vector in whole.loads.items():
        local._add_load(name, "restricted", (vector.reshape(-1, n)[part.nodes] * owned).ravel())
    local.partition = part
    return local


def split_model(whole, build: Callable[[Mesh], object]) -> tuple[MeshPart, object]:
    """This rank's part of ``whole`` under ``mpirun`` (the whole model in a serial run).

    Parameters
    ----------
    whole : LinearModel
        The model of the whole mesh with its Dirichlet conditions and loads (every rank
        builds it: it holds the mesh and the load vectors, no matrix).
    build : callable
        ``build(mesh) -> LinearModel``: the same physics, material and options on a mesh
        (called with the rank's sub-mesh), without conditions or loads.

    Returns
    -------
    part : MeshPart
        The rank's cells and nodes (:func:`fesens.fem.partition.mesh_part.partition_mesh` of
        :func:`~fesens.fem.partition.cells.cell_ranks`: DMDA blocks on a structured grid,
        PT-Scotch otherwise).
    model : LinearModel
        ``build(part.mesh)`` given the whole model's conditions and loads (:func:`adopt`).

    Raises
    ------
    SingularMatrixError
        The whole model's supports leave a rigid-body motion free (checked on the whole
        model: a rank's part alone may have none).
    """
    from fesens.fem.partition.cells import cell_ranks
    from fesens.fem.partition.mesh_part import partition_mesh

    ranks = collective()
    whole.check_supports()
    part = partition_mesh(whole.mesh, cell_ranks(whole.mesh, ranks.size), ranks.rank,
                          ranks.size)
    return part, adopt(build(part.mesh), whole, part)


def dof_layout(part: MeshPart, n_components: int, free_dofs: np.ndarray) -> DofLayout:
    """Where a part's free dofs ``(n_free,)`` (local ids) sit: their ids in the rank-ordered
    numbering of all nodes (``node_order * n_components + component``) and which the rank
    owns."""
    nodes, components = np.divmod(np.asarray(free_dofs, dtype=np.int64), n_components)
    return DofLayout(ids=part.node_order[nodes] * n_components + components,
                     owned=np.asarray(part.owned[nodes], dtype=bool))
