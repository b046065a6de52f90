"""Trusses: pin-jointed bars (``line2`` cells) in 2D or 3D space, axial stiffness ``E A / L``.

Stiffness per bar (e.g. Christensen & Klarbring, *An Introduction to Structural
Optimization*, 2009, ch. 2), with the unit direction ``c = (x₁ − x₀)/L`` and the length
``L = |x₁ − x₀|``::

    K_e = s_e E_e A_e / L_e [ c cᵀ  −c cᵀ ]
                            [−c cᵀ   c cᵀ]

one component ``K⁽⁰⁾_e = (1/L) [[c cᵀ, −c cᵀ], [−c cᵀ, c cᵀ]]``, traced in the node
coordinates (shape sensitivities), with the per-bar coefficient ``s_e E_e A_e``. The
cross-section areas ``A`` and Young's moduli ``E`` are per-bar differentiable parameters;
``scale`` multiplies the area (a design variable ``A_e = A_max ρ_e`` in truss topology
optimization). Post-processing: the elongation ``δ = c·(u₁ − u₀)``, the axial force
``N = s E A δ / L`` and stress ``σ = E δ / L`` of each bar.

A truss is a mechanism when its stiffness is singular for any areas: a node with no bar,
a node held by collinear bars only, or a collapsible arrangement of bars. The model
refuses it before the solve (:class:`~fesens.errors.MechanismError`, naming the free
nodes), once per set of supports.

In config files: ``[mesh] type = "ground_structure"`` and ``[physics] type = "truss"``,
material ``A`` and ``E``, point loads. In Python, build the mesh with
:func:`fesens.mesh.ground_structure.ground_structure` or ``Mesh(points, bars, "line2")``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fesens.ad.numpy_wrapper import getval
from fesens.errors import MechanismError, NonFiniteError, SingularMatrixError
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.fem.model.solution import Solution
from fesens.mesh.mesh import Mesh
from fesens.physics.spec import LoadKind, PhysicsConfig, Reported

#: Systems up to this many free dofs are checked for collapsible groups of bars with a
#: dense eigenvalue decomposition when the supports are set; larger ones for free nodes
#: only, and analysed densely (up to :data:`DENSE_ANALYSIS_LIMIT`) when the solver finds
#: the matrix singular.
DENSE_CHECK_LIMIT = 400
DENSE_ANALYSIS_LIMIT = 3000
#: Relative size below which an eigenvalue of the unit-area stiffness counts as zero.
MECHANISM_TOLERANCE = 1e-9
_LISTED = 20


def bar_vectors(points, cells):
    """``x₁ − x₀`` of each bar ``(n_bars, dim)`` and its length ``(n_bars,)`` (traced)."""
    d = points[cells[:, 1]] - points[cells[:, 0]]
    return d, np.sqrt(np.sum(d * d, axis=1))


def bar_matrices(points, cells):
    """``K⁽⁰⁾_e = (1/L) [[c cᵀ, −c cᵀ], [−c cᵀ, c cᵀ]]``, ``(n_bars, 2 dim, 2 dim)``,
    dofs ordered node by node (traced in ``points``)."""
    d, length = bar_vectors(points, cells)
    n, dim = np.shape(d)
    outer = d[:, :, None] * d[:, None, :] / (length**3)[:, None, None]
    sign = np.reshape(np.array([[1.0, -1.0], [-1.0, 1.0]]), (1, 2, 1, 2, 1))
    return np.reshape(outer[:, None, :, None, :] * sign, (n, 2 * dim, 2 * dim))


def _listed(ids) -> str:
    ids = np.asarray(ids)
    return f"{ids[:_LISTED].tolist()}{' ...' if ids.size > _LISTED else ''}"


def _describe_nodes(points: np.ndarray, nodes: np.ndarray) -> str:
    shown = ", ".join(f"{int(n)} at ({', '.join(f'{x:g}' for x in points[n])})"
                      for n in nodes[:_LISTED])
    return shown + (f" and {nodes.size - _LISTED} more" if nodes.size > _LISTED else "")


class TrussSolution(Solution):
    """A solved :class:`Truss`: nodal displacements, bar elongations, forces and stresses.

    Written in the traced numpy subset: inside :func:`fesens.ad.grad` the bar forces are
    traced too.
    """

    @property
    def displacement(self):
        """Nodal displacements, ``(n_points, dim)``."""
        return self.field

    def _bars(self):
        points = self.model.mesh.points if self.points is None else self.points
        return bar_vectors(points, self.model.mesh.cells)

    def elongation(self):
        """``δ = c·(u₁ − u₀)`` per bar, ``(n_bars,)`` (single load case)."""
        if np.ndim(self.u) != 1:
            raise ValueError("bar forces take a single load case")
        d, length = self._bars()
        u = self.field
        cells = self.model.mesh.cells
        return np.sum(d * (u[cells[:, 1]] - u[cells[:, 0]]), axis=1) / length

    def axial_strain(self):
        """``ε = δ / L`` per bar, ``(n_bars,)``."""
        return self.elongation() / self._bars()[1]

    def axial_force(self):
        """``N = s E A δ / L`` per bar (positive in tension), ``(n_bars,)``."""
        return self.coefficients[0] * self.axial_strain()

    def axial_stress(self):
        """``σ = E δ / L`` per bar (positive in tension), ``(n_bars,)``: the force over
        the (scaled) area ``s A``."""
        E = self.parameters.get("E", self.model.E)
        return E * self.axial_strain()

    def point_data(self) -> dict[str, np.ndarray]:
        """``displacement`` ``(n_points, dim)``."""
        return {"displacement": np.asarray(getval(self.field))}

    def cell_data(self) -> dict[str, np.ndarray]:
        """``axial_force``, ``axial_stress`` and ``area`` (``s A``) per bar."""
        area = getval(self.coefficients[0]) / np.asarray(
            getval(self.parameters.get("E", self.model.E)))
        return {"axial_force": np.asarray(getval(self.axial_force())),
                "axial_stress": np.asarray(getval(self.axial_stress())),
                "area": np.asarray(area * np.ones(self.model.mesh.n_cells))}


class Truss(LinearModel):
    """A pin-jointed truss: bars (``line2`` cells) in 2D or 3D space.

    Parameters
    ----------
    mesh : Mesh
        ``line2`` cells (the bars) in 2D or 3D space.
    A : float or array_like
        Cross-section areas ``A > 0``, scalar or per bar ``(n_bars,)``.
    E : float or array_like
        Young's moduli ``E > 0``, scalar or per bar ``(n_bars,)``.

    Raises
    ------
    MeshError
        A mesh of other cells than bars.
    ValueError, NonFiniteError
        Areas or moduli that are not positive, or NaN (naming the bars).
    """

    name = "truss"
    bars = True
    field_name = "displacement"
    parameters = {
        "A": Parameter("A", "cross-section area", lower=0.0),
        "E": Parameter("E", "Young's modulus", lower=0.0),
        "scale": SCALE,
    }
    solution_class = TrussSolution
    config = PhysicsConfig(
        material=("A", "E"),
        loads=(LoadKind("point", "point_load", "nodes", True, "force vector"),),
        responses={"compliance": "compliance", "displacement": "value"},
        reported=(Reported("max_displacement", "displacement", "max_norm", "max |u|"),
                  Reported("max_axial_stress", "axial_stress", "max", "max axial stress")),
    )

    def __init__(self, mesh: Mesh, A=1.0, E=1.0):
        super().__init__(mesh, mesh.dim)
        self.A = np.asarray(self.checked("A", A), dtype=float)
        self.E = np.asarray(self.checked("E", E), dtype=float)

    def checked(self, name: str, value):
        """As :meth:`LinearModel.checked`; a NaN or out-of-range value of a per-bar array
        is reported with the ids of the bars that have it."""
        raw = np.asarray(getval(value), dtype=float)
        if raw.ndim == 1 and raw.shape == (self.mesh.n_cells,):
            spec = self.parameters[name]
            nan = np.flatnonzero(~np.isfinite(raw))
            if nan.size:
                raise NonFiniteError(f"{spec.description} {name} is NaN or infinite for "
                                     f"bar(s) {_listed(nan)}")
            bad = np.flatnonzero(raw <= spec.lower) if spec.lower is not None else nan
            if bad.size:
                raise ValueError(f"{spec.description} {name} {spec.requirement()}; bar(s) "
                                 f"{_listed(bad)} have {raw[bad[0]]:g}")
        return super().checked(name, value)

    # ------------------------------------------------------------ kernels
    def cell_matrices(self, points=None) -> list:
        """``[K⁽⁰⁾]``, ``(n_bars, 2 dim, 2 dim)``, for ``points`` (default: the mesh's)."""
        return [bar_matrices(self.mesh.points if points is None else points, self.mesh.cells)]

    def stiffness_fields(self, A=None, E=None, scale=None) -> tuple:
        """``(None, [s E A])``, ``(n_bars,)``."""
        A = self.A if A is None else self.checked("A", A)
        E = self.E if E is None else self.checked("E", E)
        coefficient = E * A
        return None, [coefficient if scale is None else coefficient * self.checked("scale",
                                                                                  scale)]

    def cell_volumes(self, points=None):
        """Material volume ``A_e L_e`` of each bar with the model's areas, ``(n_bars,)``
        (traced for traced ``points``): design problems weigh densities with it, so
        ``volume(model, ρ) = Σ ρ_e A_e L_e``."""
        return self.A * self.bar_lengths(points)

    def bar_lengths(self, points=None):
        """``L_e``, ``(n_bars,)`` (traced for traced ``points``)."""
        return bar_vectors(self.mesh.points if points is None else points, self.mesh.cells)[1]

    # ------------------------------------------------------------ mechanisms
    def _check_free_modes(self, dofs: np.ndarray) -> None:
        try:
            super()._check_free_modes(dofs)
        except SingularMatrixError as exc:  # a rigid-body motion moves every node
            raise MechanismError(str(exc), np.arange(self.mesh.n_points)) from None
        self._raise_mechanism(self.mechanism_nodes(dofs, DENSE_CHECK_LIMIT))

    def _raise_mechanism(self, free: np.ndarray) -> None:
        if free.size:
            raise MechanismError(
                f"the truss is a mechanism: {free.size} node(s) can move without "
                f"stretching a bar: {_describe_nodes(self.mesh.points, free)}. Add bars "
                "(or diagonals) that hold them, or fix them with model.fix(...).", free)

    def solve(self, **kwargs):
        """:meth:`LinearModel.solve`; a singular stiffness (a mechanism the checks before
        the solve did not analyse, in a large truss) is a :class:`MechanismError` naming
        the free nodes."""
        try:
            return super().solve(**kwargs)
        except SingularMatrixError as exc:
            if isinstance(exc, MechanismError):
                raise
            self._raise_mechanism(self.mechanism_nodes(limit=DENSE_ANALYSIS_LIMIT))
            raise

    def mechanism_nodes(self, constrained: np.ndarray | None = None,
                        limit: int = DENSE_ANALYSIS_LIMIT) -> np.ndarray:
        """Ids of the nodes that can move without stretching a bar, for the given (default:
        the current) constrained dofs; empty for a stable truss.

        First node by node: a node with no bar, or whose bars are collinear, along a free
        direction. Then, for up to ``limit`` free dofs, the null space of the unit-area
        stiffness ``K_ff`` (collapsible groups of bars): the nodes that move in it.
        """
        constrained = self.constrained_dofs if constrained is None else constrained
        dim, n_nodes = self.mesh.dim, self.mesh.n_points
        is_free = np.ones(n_nodes * dim, dtype=bool)
        is_free[constrained] = False
        d, length = bar_vectors(self.mesh.points, self.mesh.cells)
        directions = d[:, :, None] * d[:, None, :] / (length**2)[:, None, None]
        node_stiffness = np.zeros((n_nodes, dim, dim))
        for end in (0, 1):
            np.add.at(node_stiffness, self.mesh.cells[:, end], directions)
        mask = is_free.reshape(n_nodes, dim)
        projected = node_stiffness * (mask[:, :, None] & mask[:, None, :])
        projected += np.eye(dim) * ~mask[:, :, None]
        local = np.flatnonzero(np.linalg.eigvalsh(projected)[:, 0] < MECHANISM_TOLERANCE)
        if local.size or is_free.sum() > limit:
            return local
        return self._collapsible_nodes(is_free)

    def _collapsible_nodes(self, is_free: np.ndarray) -> np.ndarray:
        """Nodes moving in the null space of the unit-area ``K_ff`` (dense)."""
        free = np.flatnonzero(is_free)
        if free.size == 0:
            return free
        Ke = bar_matrices(self.mesh.points, self.mesh.cells)
        dofs = self.dofmap.cell_dofs
        rows = np.repeat(dofs, dofs.shape[1], axis=1).ravel()
        cols = np.tile(dofs, (1, dofs.shape[1])).ravel()
        n = self.dofmap.n_dofs
        K = sp.csr_matrix((Ke.ravel(), (rows, cols)), shape=(n, n))[free][:, free].toarray()
        values, vectors = np.linalg.eigh(K)
        null = vectors[:, values < MECHANISM_TOLERANCE * max(values.max(), 1e-300)]
        if null.shape[1] == 0:
            return free[:0]
        motion = np.zeros(n)
        motion[free] = np.linalg.norm(null, axis=1)
        per_node = np.linalg.norm(motion.reshape(-1, self.mesh.dim), axis=1)
        return np.flatnonzero(per_node > 1e-6 * per_node.max())
