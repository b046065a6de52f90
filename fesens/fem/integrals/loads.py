"""Consistent load vectors: point, surface (traction, pressure, flux) and volume loads.

All return global vectors ``(n_dofs,)`` in the interleaved dof numbering of
:class:`~fesens.fem.assembly.dofs.DofMap`. Surface loads integrate ``f_a = ∫_Γ N_a t dS`` and volume
loads ``f_a = ∫_Ω N_a b dΩ`` with quadrature of the element's mass order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad.numpy_wrapper import untake
from fesens.errors import BoundaryConditionError
from fesens.fem.assembly.dofs import DofMap
from fesens.fem.elements import reference_element
from fesens.fem.integrals.geometry import cell_geometry, facet_geometry
from fesens.mesh.mesh import FacetSet, Mesh

#: A load given as a constant (scalar or vector) or a function of coordinates ``(n, dim)``.
FieldSpec = float | tuple | list | np.ndarray | Callable[[np.ndarray], np.ndarray]


def evaluate_field(spec: FieldSpec, x: np.ndarray, n_components: int, what: str) -> np.ndarray:
    """Evaluate a load density at points ``x (..., dim)`` → ``(..., n_components)``.

    Raises
    ------
    BoundaryConditionError
        If the value (or the function's result) has the wrong number of components.
    """
    shape = x.shape[:-1]
    if callable(spec):
        n_points = int(np.prod(shape, dtype=int))
        values = np.asarray(spec(x.reshape(-1, x.shape[-1])), dtype=float)
        accepted = [(n_points, n_components)] + ([(n_points,)] if n_components == 1 else [])
        if values.shape not in accepted:
            raise BoundaryConditionError(
                f"{what}: the function must return {n_components} value(s) per point, "
                f"shape {accepted[0]}, got an array of shape {values.shape} for "
                f"{n_points} points"
            )
        return values.reshape(*shape, n_components)
    values = np.asarray(spec, dtype=float)
    if values.shape not in ((n_components,), () if n_components == 1 else (n_components,)):
        raise BoundaryConditionError(
            f"{what} must have {n_components} component(s), got {values.tolist()!r}"
        )
    return np.broadcast_to(values.reshape(-1), (*shape, n_components))


def _scatter(dofmap: DofMap, nodes: np.ndarray, nodal) -> np.ndarray:
    """Add nodal contributions ``(n, k, n_comp)`` at node ids ``(n, k)`` into a global vector
    (traced when ``nodal`` is)."""
    dofs = nodes[..., None] * dofmap.n_components + np.arange(dofmap.n_components)
    return untake(np.ravel(nodal), dofs.ravel(), (dofmap.n_dofs,))


def _reference_points(N: np.ndarray, mesh: Mesh, nodes: np.ndarray) -> np.ndarray:
    """Quadrature points ``(n, n_qp, dim)`` of the facets or cells ``nodes`` ``(n, k)`` at the
    mesh's own coordinates, where load densities given as functions are evaluated (they
    follow the material when ``points`` move the nodes: no derivative of the function is
    needed)."""
    return np.einsum("qa,fai->fqi", N, mesh.points[nodes])


def point_load_vector(
    mesh: Mesh, dofmap: DofMap, nodes: np.ndarray, value: FieldSpec
) -> np.ndarray:
    """Nodal forces (or heat inputs) ``value`` applied at each of ``nodes``."""
    nodes = np.asarray(nodes, dtype=np.int64).ravel()
    if nodes.size == 0:
        raise BoundaryConditionError("a point load selects no node")
    nodal = evaluate_field(value, mesh.points[nodes], dofmap.n_components, "point load")
    return _scatter(dofmap, nodes[:, None], nodal[:, None, :])


def surface_load_vector(
    mesh: Mesh,
    dofmap: DofMap,
    facet_set: FacetSet,
    density: FieldSpec | None = None,
    *,
    pressure: FieldSpec | None = None,
    thickness: float = 1.0,
    points=None,
) -> np.ndarray:
    """``f_a = ∫_Γ N_a t dS`` over a facet set (2D: times the thickness).

    Give either a ``density`` (traction vector, or scalar flux for one-component problems)
    or a ``pressure`` ``p``, which acts against the outward normal: ``t = −p n``.
    ``points`` (possibly traced) replace the mesh's coordinates in the integral; a density
    given as a function is evaluated at the mesh's coordinates (:func:`_reference_points`).
    """
    if len(facet_set) == 0:
        raise BoundaryConditionError("the surface load's facet set is empty")
    order = reference_element(facet_set.facet_type).mass_order
    geom = facet_geometry(mesh, facet_set, order=order, points=points)
    x = _reference_points(geom.N, mesh, facet_set.facets)
    if pressure is not None:
        p = evaluate_field(pressure, x, 1, "pressure")
        t = -p * geom.normal
    else:
        t = evaluate_field(density, x, dofmap.n_components, "surface load")
    nodal = np.einsum("fq,qa,fqc->fac", geom.dS * thickness, geom.N, t)
    return _scatter(dofmap, facet_set.facets, nodal)


def volume_load_vector(
    mesh: Mesh,
    dofmap: DofMap,
    density: FieldSpec,
    cells: np.ndarray | None = None,
    thickness: float = 1.0,
    points=None,
) -> np.ndarray:
    """``f_a = ∫_Ω N_a b dΩ`` (body force, or heat source for one-component problems).

    ``points``: as in :func:`surface_load_vector`.
    """
    order = reference_element(mesh.cell_type).mass_order
    geom = cell_geometry(mesh, order=order, points=points)
    b = evaluate_field(density, _reference_points(geom.N, mesh, mesh.cells),
                       dofmap.n_components, "volume load")
    dx = geom.dx * np.ones(np.shape(geom.x)[:2]) * thickness
    nodal = np.einsum("eq,qa,eqc->eac", dx, geom.N, b)
    cell_nodes = mesh.cells
    if cells is not None:
        nodal, cell_nodes = nodal[cells], cell_nodes[cells]
    return _scatter(dofmap, cell_nodes, nodal)
