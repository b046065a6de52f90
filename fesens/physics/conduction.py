"""Steady heat conduction ``−∇·(κ ∇T) = Q`` with per-cell conductivity ``κ_e``.

Conductance per cell: ``K_e = s_e t κ_e Kκ_e`` (density scale ``s_e``, thickness ``t`` in 2D)
with ``Kκ_ab = ∫ ∇N_a · ∇N_b dΩ``
(:func:`~fesens.fem.integrals.kernels.gradient_matrices`, traced in
the node coordinates). Fluxes ``q`` on facets are heat *into* the body per unit area.

Convection (Robin) conditions ``q = −h (T − T∞)`` on boundary facets (Incropera et al.,
*Fundamentals of Heat and Mass Transfer*, §3.1) add ``t h ∫_Γ N Nᵀ dS`` to the conductance, a
cell matrix of the facets' owners (:mod:`fesens.fem.integrals.facets`) assembled with the
others on the same pattern, and ``t h T∞ ∫_Γ N dS`` to the load; ``h`` and ``T∞`` are
differentiable parameters of :meth:`HeatConduction.solve`.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import BoundaryConditionError, NonFiniteError
from fesens.fem.integrals.facets import (
    OwnedFacets,
    facet_mass_cell_matrices,
    owned_boundary_facets,
)
from fesens.fem.integrals.kernels import gradient_matrices
from fesens.fem.integrals.loads import FieldSpec, surface_load_vector
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.load_terms import Where
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.fem.model.solution import Solution
from fesens.mesh.mesh import Mesh
from fesens.physics.spec import (
    LoadKind,
    Option,
    PhysicsConfig,
    Plot,
    Reported,
    Section,
    SectionKey,
)


class HeatSolution(Solution):
    """A solved :class:`HeatConduction` model: temperatures and heat fluxes."""

    @property
    def temperature(self):
        """Nodal temperatures, ``(n_points,)``."""
        return self.field[:, 0]

    def heat_flux(self):
        """Cell-averaged heat flux ``q = −s κ ∇T`` (density scale ``s``), ``(n_cells, dim)``."""
        kappa = self.coefficients[0] / self.model.scaled_thickness()  # s κ
        return -kappa[:, None] * self.cell_gradient()[:, 0, :]

    def nodal_heat_flux(self, method: str = "spr") -> np.ndarray:
        """Recovered nodal heat flux ``q = −s κ ∇T``, ``(n_points, dim)``, from its values at
        the quadrature points (``method``: see :meth:`Solution.recovered
        <fesens.fem.model.solution.Solution.recovered>`; default: patch recovery)."""
        kappa = np.asarray(getval(self.coefficients[0])) / self.model.scaled_thickness()
        gradient = self.gradient_at_quadrature[:, :, 0, :]
        return self.recovered(-np.broadcast_to(kappa, gradient.shape[:1])[:, None, None]
                              * gradient, method)

    def nodal_fields(self) -> dict:
        """:meth:`probe` fields: ``temperature`` and the recovered ``heat_flux``."""
        return {"temperature": lambda: np.asarray(getval(self.temperature)),
                "heat_flux": self.nodal_heat_flux}

    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output: ``temperature`` ``(n_points,)``."""
        return {"temperature": np.asarray(self.temperature)}

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output: ``heat_flux`` ``(n_cells, dim)``."""
        return {"heat_flux": self.heat_flux()}


class HeatConduction(LinearModel):
    """Steady linear heat conduction.

    Parameters
    ----------
    mesh : Mesh
    conductivity : float or array_like
        Thermal conductivity ``κ > 0``, scalar or per cell ``(n_cells,)``.
    thickness : float
        Out-of-plane thickness (2D).
    quadrature_order : int, optional
    """

    name = "heat"
    field_name = "temperature"
    parameters = {
        "conductivity": Parameter("conductivity", "thermal conductivity", lower=0.0),
        "scale": SCALE,
        "h": Parameter("h", "film coefficient of the convection conditions (a scalar for "
                       "all, or one value per condition)", per_cell=False, lower=0.0,
                       lower_open=False),
        "ambient": Parameter("ambient", "ambient temperature of the convection conditions "
                             "(a scalar for all, or one value per condition)", per_cell=False),
    }
    solution_class = HeatSolution
    config = PhysicsConfig(
        options=(Option("thickness", "2D only: out-of-plane thickness", 1.0, dims=(2,)),),
        material=("conductivity",),
        loads=(
            LoadKind("point", "point_load", "nodes", False, "heat per node"),
            LoadKind("flux", "flux", "facets", False, "heat per unit area"),
            LoadKind("heat_source", "heat_source", "cells", False, "heat per unit volume"),
        ),
        responses={"compliance": "compliance", "thermal_compliance": "compliance",
                   "temperature": "value"},
        compliance_name="thermal compliance",
        plot=Plot("temperature", "temperature", "temperature"),
        reported=(Reported("min_temperature", "temperature", "min", "min temperature"),
                  Reported("max_temperature", "temperature", "max", "max temperature")),
        sections=(Section("convection", "convection", many=True, on="facets",
                          doc="convection (Robin) condition: heat h (T − T∞) leaves",
                          anchors="h", stiffness=True,
                          keys=(SectionKey("h", "film coefficient h", lower=0.0),
                                SectionKey("ambient", "ambient temperature T∞"))),),
        inertia="heat_capacity",
        time_order=1,
    )

    def __init__(
        self,
        mesh: Mesh,
        conductivity=1.0,
        *,
        thickness: float = 1.0,
        quadrature_order: int | None = None,
    ):
        super().__init__(mesh, 1, thickness=thickness, quadrature_order=quadrature_order)
        self.conductivity = np.asarray(self.checked("conductivity", conductivity), dtype=float)
        self.convections: dict[str, _Convection] = {}

    def cell_matrices(self, points=None) -> list:
        """``[Kκ, Kʰ_1, ...]`` for ``points`` (default: the mesh's): the conduction matrices
        and, per convection condition, its facet matrices ``t ∫_Γ N Nᵀ dS`` in the owning
        cells (zero elsewhere), each ``(n_cells or 1, nd, nd)``."""
        return [gradient_matrices(self.geometry(points)),
                *(facet_mass_cell_matrices(self.mesh, c.owned, self._thickness(), points)
                  for c in self.convections.values())]

    def has_integrand(self) -> bool:
        """Only without convection: the integrand rule covers the volume term alone."""
        return not self.convections and super().has_integrand()

    def integrand_values(self, grad_a, grad_b) -> list:
        """``[∇a · ∇b]`` at the quadrature points, ``(n_cells, n_qp)``: the integrand of
        ``aᵀKκb``."""
        n_cells, n_qp = np.shape(grad_a)[:2]
        return [np.sum(np.reshape(grad_a * grad_b, (n_cells, n_qp, -1)), axis=2)]

    def integrand_fluxes(self, grad_a, grad_b, coefficients) -> tuple:
        """``∂F/∂∇a = c ∇b`` and ``∂F/∂∇b = c ∇a`` for ``F = c ∇a · ∇b``."""
        c = coefficients[0][:, None, None, None, None]
        return c * grad_b, c * grad_a

    def stiffness_fields(self, conductivity=None, scale=None, h=None, ambient=None) -> tuple:
        """``(None, [s t κ, h_1, ...])``, each ``(n_cells,)`` (the thickness of the
        convection terms is in their cell matrices; ``ambient`` enters the load only)."""
        kappa = (self.conductivity if conductivity is None
                 else self.checked("conductivity", conductivity))
        films = [value * np.ones(self.mesh.n_cells) for value in self.convection_values("h", h)]
        return None, [self.scaled_thickness(scale) * kappa, *films]

    # ------------------------------------------------------------ convection
    def convection(self, where: Where, h: float, ambient: float, *,
                   name: str | None = None) -> str:
        """A convection (Robin) condition: heat ``h (T − T∞)`` leaves through the facets.

        Parameters
        ----------
        where : str or callable
            A facet-set name or a predicate on the boundary nodes; the facets must lie on
            the boundary of the mesh.
        h : float
            Film (heat-transfer) coefficient, ``h >= 0`` (W/(m² K) in SI units).
        ambient : float
            Ambient (fluid) temperature ``T∞``.
        name : str, optional
            Name of the condition (default ``convection<i>``); returned. ``solve(h=...,
            ambient=...)`` takes a scalar for every condition or one value per condition,
            in the order they were added.

        Raises
        ------
        BoundaryConditionError
            A negative ``h``, a name taken already, or facets that are not on the boundary.
        NonFiniteError
            NaN or infinite ``h`` or ``ambient``.
        """
        name = name or f"convection{len(self.convections)}"
        what = f"convection {name!r}"
        if name in self.convections:
            raise BoundaryConditionError(f"{what} exists already; give another name")
        h, ambient = _film_value(what, "h", h), _film_value(what, "ambient", ambient)
        owned = owned_boundary_facets(self.mesh, self.mesh.facets(where), what)
        self.convections[name] = _Convection(owned, h, ambient)
        self._cell_matrices = self._assembler = None  # one more component: rebuild
        return name

    def convection_values(self, key: str, value=None) -> list:
        """``h`` or ``ambient`` (``key``) of each convection condition: the models' values,
        or ``value`` (a scalar for all, or one per condition; traced values stay traced)."""
        if value is None:
            return [getattr(c, key) for c in self.convections.values()]
        raw = np.asarray(getval(value), dtype=float)
        n = len(self.convections)
        if raw.ndim > 1 or (raw.ndim == 1 and raw.shape[0] != n):
            raise ValueError(f"parameter {key!r} must be a scalar or have one value per "
                             f"convection condition ({n}), got shape {raw.shape}")
        for i, c in enumerate(self.convections):
            _film_value(f"convection {c!r}", key, raw if raw.ndim == 0 else raw[i])
        return [value if raw.ndim == 0 else value[i] for i in range(n)]

    def parameter_load(self, points=None, **parameters):
        """``Σ_c h_c T∞_c t ∫_Γc N dS`` over the convection conditions, ``(n_points,)``, or
        None without convection."""
        if not self.convections:
            return None
        films = self.convection_values("h", parameters.get("h"))
        ambients = self.convection_values("ambient", parameters.get("ambient"))
        total = 0.0
        for c, h, ambient in zip(self.convections.values(), films, ambients, strict=True):
            if points is None and c.integral is not None:  # kept for the mesh's coordinates
                integral = c.integral
            else:
                integral = surface_load_vector(self.mesh, self.dofmap, c.owned.facets, 1.0,
                                               thickness=self._thickness(), points=points)
                c.integral = integral if points is None else c.integral
            total = total + h * ambient * integral
        return total

    def _check_free_modes(self, dofs: np.ndarray) -> None:
        if not any(np.any(c.h > 0) for c in self.convections.values()):
            super()._check_free_modes(dofs)

    def flux(self, where: Where, q: FieldSpec, *, name: str | None = None) -> str:
        """Heat flux into the body per unit area on a facet set."""
        return self.surface_load(where, q, name=name)

    def heat_source(self, Q: FieldSpec, *, cells: Where | None = None,
                    name: str | None = None) -> str:
        """Heat generated per unit volume."""
        return self.volume_load(Q, cells=cells, name=name)


class _Convection:
    """One convection condition: its facets, ``h``, ``T∞`` and ``t ∫_Γ N dS`` at the mesh's
    coordinates (computed on first use)."""

    def __init__(self, owned: OwnedFacets, h: float, ambient: float):
        self.owned, self.h, self.ambient = owned, h, ambient
        self.integral: np.ndarray | None = None


def _film_value(what: str, key: str, value) -> float:
    """``value`` of ``h`` or ``ambient`` checked: finite, and ``h >= 0``."""
    raw = float(np.asarray(getval(value), dtype=float))
    if not np.isfinite(raw):
        raise NonFiniteError(f"{what}: {key} is {raw}; give a finite number")
    if key == "h" and raw < 0:
        raise BoundaryConditionError(f"{what}: the film coefficient h must be >= 0; got "
                                     f"{raw:g}")
    return raw
