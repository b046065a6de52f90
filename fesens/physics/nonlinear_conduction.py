"""Steady heat conduction with a temperature-dependent conductivity,
``−∇·(k(T) ∇T) = Q``, ``k(T) = k₀ (1 + β (T − T_ref))``.

The residual is ``R_a = Σ_q t dΩ_q s k(T) ∇T · ∇N_a − f_a`` (density scale ``s``,
thickness ``t`` in 2D; the sign convention of :mod:`fesens.physics.conduction`: the flux
``P = s k(T) ∇T`` is minus the heat flux, ``f`` the heat supplied by sources, surface
fluxes into the body and point loads). ``β = 0`` is linear conduction with ``κ = k₀``.
Its tangent ``∂P/∂∇T = s k I``, ``∂P/∂T = s k₀ β ∇T`` is not symmetric, so the solves use
LU. A state where ``k ≤ 0`` at a quadrature point is refused (the Newton iteration
backtracks, then cuts the load back, then stops naming the cells).

The law is its weak form (:func:`conduction_weak_form`, ``r0 = 0``, ``r1 = k(T) ∇T``;
not an energy: ``k(T) ∇T`` is no gradient of a ``ψ(∇T, T)``), the one
:func:`~fesens.physics.user_physics.weak_form_physics` solves and differentiates by itself;
the hand-derived tangent below stays as a faster override, checked against the derived one
in the tests.

With the Kirchhoff transform ``Θ(T) = ∫_{T_ref}^T k dT = k₀ [(T − T_ref) + β (T − T_ref)²/2]``
the equation becomes ``−∇²Θ = Q`` (Carslaw & Jaeger, *Conduction of Heat in Solids*, 2nd
ed., 1959, §1.15), the closed form the tests check.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.integrals.loads import FieldSpec
from fesens.fem.model.load_terms import Where
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.nonlinear_solution import NonlinearSolution
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.mesh.mesh import Mesh
from fesens.physics.spec import LoadKind, Option, PhysicsConfig, Plot, Reported


class NonlinearHeatSolution(NonlinearSolution):
    """A solved :class:`NonlinearHeatConduction` model: temperatures and heat fluxes."""

    @property
    def temperature(self):
        """Nodal temperatures, ``(n_points,)``."""
        return self.field[:, 0]

    def heat_flux(self):
        """Cell-averaged heat flux ``q = −s k(T) ∇T`` at the quadrature points, averaged
        over each cell, ``(n_cells, dim)`` (plain arrays)."""
        plain = self.detached()
        fields = {k: np.asarray(v) for k, v in plain.fields.items()}
        geometry, u_q, grad_q = self.model._at_quadrature(np.asarray(plain.u), plain.points)
        q = -np.asarray(self.model.flux(u_q, grad_q, fields))[:, :, 0, :]
        weights = np.broadcast_to(geometry.dx, q.shape[:2])
        return np.einsum("eq,eqk->ek", weights, q) / weights.sum(axis=1)[:, None]

    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output: ``temperature`` ``(n_points,)``."""
        return {"temperature": np.asarray(self.detached().temperature)}

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output: ``heat_flux`` ``(n_cells, dim)``."""
        return {"heat_flux": self.heat_flux()}


class NonlinearHeatConduction(NonlinearModel):
    """Steady heat conduction with ``k(T) = k₀ (1 + β (T − T_ref))``.

    Parameters
    ----------
    mesh : Mesh
    conductivity : float or array_like
        ``k₀ > 0``, the conductivity at ``T_ref``, scalar or per cell ``(n_cells,)``.
    beta : float or array_like
        ``β``, the relative change of the conductivity per degree, scalar or per cell.
    reference_temperature : float
        ``T_ref``; also the uniform temperature Newton starts from.
    thickness : float
        Out-of-plane thickness (2D).
    quadrature_order : int, optional
    """

    name = "nonlinear_heat"
    field_name = "temperature"
    symmetric_tangent = False
    parameters = {
        "conductivity": Parameter("conductivity", "conductivity k0 at the reference "
                                  "temperature", lower=0.0),
        "beta": Parameter("beta", "relative change of the conductivity per degree, "
                          "k = k0 (1 + beta (T - T_ref))"),
        "reference_temperature": Parameter("reference_temperature", "reference temperature "
                                           "T_ref of the conductivity law", per_cell=False),
        "scale": SCALE,
    }
    solution_class = NonlinearHeatSolution
    config = PhysicsConfig(
        options=(Option("thickness", "2D only: out-of-plane thickness", 1.0, dims=(2,)),
                 Option("reference_temperature", "reference temperature T_ref of the "
                        "conductivity law k = k0 (1 + beta (T - T_ref))", 0.0, lower=None)),
        material=("conductivity", "beta"),
        loads=(
            LoadKind("point", "point_load", "nodes", False, "heat per node"),
            LoadKind("flux", "flux_load", "facets", False, "heat per unit area"),
            LoadKind("heat_source", "heat_source", "cells", False, "heat per unit volume"),
        ),
        responses={"compliance": "compliance", "thermal_compliance": "compliance",
                   "temperature": "value"},
        compliance_name="thermal compliance",
        plot=Plot("temperature", "temperature", "temperature"),
        reported=(Reported("min_temperature", "temperature", "min", "min temperature"),
                  Reported("max_temperature", "temperature", "max", "max temperature")),
        inertia="heat_capacity",
        time_order=1,
    )

    def __init__(self, mesh: Mesh, conductivity=1.0, beta=0.0, reference_temperature=0.0,
                 *, thickness: float = 1.0, quadrature_order: int | None = None):
        super().__init__(mesh, 1, thickness=thickness, quadrature_order=quadrature_order)
        self.conductivity = np.asarray(self.checked("conductivity", conductivity), float)
        self.beta = np.asarray(self.checked("beta", beta), dtype=float)
        self.reference_temperature = float(self.parameters["reference_temperature"].check(
            reference_temperature, mesh.n_cells))

    def material_fields(self, conductivity=None, beta=None, reference_temperature=None,
                        scale=None) -> dict:
        """``{"k0": s k₀, "beta": β, "T_ref": T_ref}``, ``(n_cells,)`` each (``T_ref`` a
        scalar); traced when a parameter is."""
        k0 = self.conductivity if conductivity is None else self.checked("conductivity",
                                                                         conductivity)
        if scale is not None:
            k0 = k0 * self.checked("scale", scale)
        if reference_temperature is None:
            reference_temperature = self.reference_temperature
        else:
            self.parameters["reference_temperature"].check(reference_temperature,
                                                           self.mesh.n_cells)
        return {"k0": k0, "beta": self.beta if beta is None else self.checked("beta", beta),
                "T_ref": reference_temperature}

    def reference_state(self) -> np.ndarray:
        """``T_ref`` everywhere, where ``k = k₀ > 0`` and no heat flows."""
        return np.full(self.dofmap.n_dofs, self.reference_temperature)

    def conductivity_at(self, u_q, fields):
        """``s k(T)`` at the quadrature points ``(n_cells, n_qp)`` (traced numpy)."""
        return conductivity(u_q[:, :, 0], _per_cell(fields["k0"]), _per_cell(fields["beta"]),
                            fields["T_ref"])

    def flux(self, u_q, grad_q, fields):
        """``P = s k(T) ∇T``, ``(n_cells, n_qp, 1, dim)``: ``r1`` of
        :func:`conduction_weak_form`."""
        _, r1 = conduction_weak_form(u_q[:, :, 0], grad_q[:, :, 0, :], None,
                                     _per_cell(fields["k0"]), _per_cell(fields["beta"]),
                                     fields["T_ref"])
        return r1[:, :, None, :]

    def flux_tangent(self, u_q, grad_q, fields) -> tuple:
        """``∂P/∂∇T = s k(T) I`` ``(n_cells, n_qp, 1, dim, 1, dim)`` and
        ``∂P/∂T = s k₀ β ∇T`` ``(n_cells, n_qp, 1, dim, 1)``: hand-derived, a faster
        override of the tangent :func:`~fesens.physics.user_physics.weak_form_physics`
        derives from :func:`conduction_weak_form` (the tests check they agree)."""
        dim = np.shape(grad_q)[-1]
        k = self.conductivity_at(u_q, fields)
        identity = np.eye(dim)[None, None, None, :, None, :]
        slope = np.asarray(_per_cell(fields["k0"]) * _per_cell(fields["beta"]))
        return (k[:, :, None, None, None, None] * identity,
                slope[..., None, None, None] * grad_q[..., None])

    def inadmissible(self, u_q, grad_q, fields) -> str | None:
        """Names the cells where ``k(T) ≤ 0`` at a quadrature point."""
        k = np.broadcast_to(self.conductivity_at(u_q, fields), np.shape(u_q)[:2])
        bad = np.flatnonzero((k <= 0).any(axis=1))
        if bad.size == 0:
            return None
        return (f"the conductivity k(T) = k0 (1 + beta (T - T_ref)) is <= 0 (down to "
                f"{k.min():.3g}) at quadrature points of {bad.size} cell(s) "
                f"{bad[:10].tolist()}{' ...' if bad.size > 10 else ''}: the temperatures "
                "leave the range where the law is valid; check beta, T_ref and the loads")

    def flux_load(self, where: Where, q: FieldSpec, *, name: str | None = None) -> str:
        """Heat flux into the body per unit area on a facet set (``flux`` is the
        residual's flux ``P``)."""
        return self.surface_load(where, q, name=name)

    def heat_source(self, Q: FieldSpec, *, cells: Where | None = None,
                    name: str | None = None) -> str:
        """Heat generated per unit volume."""
        return self.volume_load(Q, cells=cells, name=name)


def conductivity(T, k0, beta, T_ref):
    """``k(T) = k₀ (1 + β (T − T_ref))`` at the quadrature points ``(n_cells, n_qp)`` of
    ``T`` ``(n_cells, n_qp)`` and per-cell ``k₀``, ``β`` ``(n_cells, 1)`` (or numbers)."""
    return k0 * (1.0 + beta * (T - T_ref))


def conduction_weak_form(T, g, x, k0=1.0, beta=0.0, T_ref=0.0):
    """The law as a weak form ``∫ (r0 N + r1 · ∇N) dΩ`` (traced numpy): ``r0 = 0`` and
    ``r1 = k(T) ∇T`` ``(n_cells, n_qp, dim)`` for ``T`` ``(n_cells, n_qp)`` and ``g = ∇T``
    ``(n_cells, n_qp, dim)``; ``x`` (the points) is not read. ``weak_form_physics`` of it
    is the model's equation with its tangent derived."""
    return 0.0 * T, conductivity(T, k0, beta, T_ref)[..., None] * g


def _per_cell(value):
    """A per-cell field ``(n_cells,)`` (or a scalar) against ``(n_cells, n_qp)``."""
    return value[:, None] if np.ndim(value) == 1 else value
