"""Linear elasticity: plane stress, plane strain (2D, with thickness) and 3D.

Everything elasticity is here: the model, the stress recovery and the output names; its
material law and element kernels are in :mod:`fesens.physics.elastic_law`, its thermal
strains in :mod:`fesens.physics.thermal_strain`.

Stiffness per cell: ``K_e = s_e t (λ_e Kλ_e + μ_e Kμ_e)`` with the density scale ``s_e``,
thickness ``t`` (2D) and Lamé parameters from ``(E_e, ν_e)`` (:func:`lame_parameters`;
plane stress uses ``λ* = Eν/(1−ν²)``), where (Hughes, *The Finite Element Method*, 2000,
§2.7 with ``D = λ m mᵀ + μ diag(2,2,2,1,1,1)``; index ``(a, i)`` = node ``a``, component ``i``)

* ``Kλ_(ai)(bj) = ∫ ∂_i N_a ∂_j N_b dΩ``                      (``div u div v``)
* ``Kμ_(ai)(bj) = ∫ (δ_ij ∇N_a·∇N_b + ∂_j N_a ∂_i N_b) dΩ``   (``2 ε(u):ε(v)``)

Both are traced functions of the node coordinates (shape sensitivities), and so is the
stress ``σ = s (λ tr ε I + 2 μ ε)`` from the cell-averaged strain.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import NonFiniteError
from fesens.fem.integrals.loads import FieldSpec
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.load_terms import Where
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.fem.model.solution import Solution
from fesens.fem.post import fields
from fesens.mesh.mesh import Mesh
from fesens.physics import thermal_strain as thermal
from fesens.physics.elastic_law import (  # noqa: F401 - re-exported: elasticity's names
    PLANE_ASSUMPTIONS,
    _divergence,
    elasticity_matrices,
    lame_parameters,
    lame_weights,
    von_mises,
    von_mises_squared,
)
from fesens.physics.spec import (
    LoadKind,
    Option,
    PhysicsConfig,
    Plot,
    Reported,
    Section,
    SectionKey,
)

#: The 2D assumption and thickness when none is given: one rule for ``Elasticity(...)`` and
#: for config files (their ``[physics]`` defaults are these).
DEFAULT_PLANE = "stress"
DEFAULT_THICKNESS = 1.0


class ElasticSolution(Solution):
    """A solved :class:`Elasticity` model: displacements, strains, stresses.

    Every method is written in the traced numpy subset: on a traced solution (inside
    :func:`fesens.ad.grad`) the results are traced too, e.g. for stress objectives.
    """

    @property
    def displacement(self):
        """Nodal displacements, ``(n_points, dim)``."""
        return self.field

    def strain(self):
        """Cell-averaged small strain ``ε = (∇u + ∇uᵀ)/2``, ``(n_cells, dim, dim)``."""
        grad_u = self.cell_gradient()
        return 0.5 * (grad_u + np.transpose(grad_u, (0, 2, 1)))

    def _lame(self):
        """Per-cell ``(λ, μ)`` of the solve's ``E`` and ``nu``."""
        model = self.model
        return lame_parameters(self.parameters.get("E", model.E),
                               self.parameters.get("nu", model.nu), model.plane)

    def _stress_scale(self, stress_scale=None):
        return self.parameters.get("scale", 1.0) if stress_scale is None else stress_scale

    def stress(self, stress_scale=None):
        """Cell-averaged Cauchy stress ``σ = s (λ tr ε I + 2 μ ε)``, ``(n_cells, dim, dim)``
        (in-plane part in 2D), from the volume-averaged strain of each cell. Traced: the
        stress objectives (:func:`fesens.objectives.stress_pnorm`, ``stress_ks``) use this
        cell-mean stress; for accurate nodal values at peaks use :meth:`nodal_stress`.

        ``s`` is the density scale of the solve, or ``stress_scale`` (e.g. a relaxed
        ``x^q`` in stress-constrained topology optimization).
        """
        eps = self.strain()
        lam, mu = self._lame()
        s = self._stress_scale(stress_scale)
        dim, ones = self.model.mesh.dim, np.ones(self.model.mesh.n_cells)
        trace = sum(eps[:, i, i] for i in range(dim))
        pressure = s * lam * trace - self._thermal_stress(s, ones)
        return (2.0 * s * mu * ones)[:, None, None] * eps + pressure[:, None, None] * np.eye(dim)

    def _thermal_stress(self, s, ones):
        """``s β α ΔT`` per cell (``σ = λ tr ε I + 2μ ε − β α ΔT I``), or 0 without one."""
        thermal = self._thermal(mean=True)
        return 0.0 if thermal is None else s * thermal * ones

    def _thermal(self, mean: bool):
        """``β α ΔT``: cell means or at the quadrature points; None without temperature."""
        geometry = self.model.geometry(self.points)
        values = thermal.thermal_stress_at_quadrature(self.model, geometry, self.parameters)
        return values if values is None or not mean else thermal.cell_mean(geometry, values)

    def out_of_plane_stress(self, stress_scale=None):
        """``σ_zz`` per cell: 0 in plane stress, ``s λ tr ε`` in plane strain (2D only)."""
        if self.model.plane != "strain":
            return np.zeros(self.model.mesh.n_cells)
        eps = self.strain()
        lam, _ = self._lame()
        s = self._stress_scale(stress_scale)
        return (s * lam * (eps[:, 0, 0] + eps[:, 1, 1])
                - self._thermal_stress(s, np.ones(self.model.mesh.n_cells)))

    def stress_3d(self) -> np.ndarray:
        """Full 3x3 stress per cell, ``(n_cells, 3, 3)``; in 2D ``σ_zz`` from
        :meth:`out_of_plane_stress`. (Plain arrays only.)"""
        stress = np.asarray(self.stress())
        if self.model.mesh.dim == 3:
            return stress
        full = np.zeros((stress.shape[0], 3, 3))
        full[:, :2, :2] = stress
        full[:, 2, 2] = self.out_of_plane_stress()
        return full

    def von_mises_squared(self, stress_scale=None):
        """``σ_vm²`` per cell, ``(n_cells,)`` (:func:`von_mises_squared`; in 2D with the
        out-of-plane stress). Working with the square keeps aggregates differentiable where
        the stress vanishes. Single load case only."""
        if np.ndim(self.u) != 1:
            raise ValueError("stress objectives take a single load case")
        out_of_plane = (self.out_of_plane_stress(stress_scale) if self.model.mesh.dim == 2
                        else None)
        return von_mises_squared(self.stress(stress_scale), out_of_plane)

    def von_mises(self):
        """Cell von Mises stress, ``(n_cells,)``."""
        return np.sqrt(np.maximum(self.von_mises_squared(), 0.0))

    def stress_at_quadrature(self, full: bool = False) -> np.ndarray:
        """Stress ``σ = s (λ tr ε I + 2 μ ε)`` at the quadrature points of the model's rule,
        ``(n_cells, n_qp, dim, dim)``, or ``(n_cells, n_qp, 3, 3)`` with ``full`` (in 2D with
        ``σ_zz`` of :meth:`out_of_plane_stress`). Plain arrays, single load case."""
        eps = self.strain_at_quadrature()
        lam, mu = (np.broadcast_to(getval(v), (self.model.mesh.n_cells,))
                   for v in self._lame())
        s = np.broadcast_to(np.asarray(getval(self._stress_scale()), dtype=float),
                            lam.shape)
        dim = self.model.mesh.dim
        trace = np.trace(eps, axis1=-2, axis2=-1)
        thermal = self._thermal(mean=False)
        pressure = (s * lam)[:, None] * trace - (0.0 if thermal is None else
                                                  s[:, None] * np.asarray(getval(thermal)))
        stress = ((2 * s * mu)[:, None, None, None] * eps
                  + pressure[..., None, None] * np.eye(dim))
        if not full or dim == 3:
            return stress
        out = np.zeros((*stress.shape[:2], 3, 3))
        out[..., :2, :2] = stress
        if self.model.plane == "strain":
            out[..., 2, 2] = pressure
        return out

    def nodal_stress(self, method: str = "spr", full: bool = False) -> np.ndarray:
        """Recovered nodal stress, ``(n_points, dim, dim)`` (``full``: ``(n_points, 3, 3)``).

        ``method="spr"`` (default, accurate at stress peaks): superconvergent patch
        recovery (Zienkiewicz & Zhu 1992) of the quadrature-point stresses
        (:meth:`stress_at_quadrature`): around each vertex a least-squares polynomial of the
        element's degree, evaluated at the patch's nodes and averaged where patches
        overlap; ``"extrapolation"``: from each cell's quadrature points to its nodes,
        averaged; ``"average"``: volume-weighted nodal average of the cell-mean stress
        (:meth:`stress`). See
        :meth:`Solution.recovered <fesens.fem.model.solution.Solution.recovered>`.
        """
        return self.recovered(self.stress_at_quadrature(full), method)

    def nodal_strain(self, method: str = "spr", full: bool = False) -> np.ndarray:
        """Recovered nodal strain ``ε = (∇u + ∇uᵀ)/2``, ``(n_points, dim, dim)`` (``full``:
        ``(n_points, 3, 3)`` with ``ε_zz`` in 2D), recovered as in :meth:`nodal_stress`."""
        return self.recovered(self.strain_at_quadrature(full), method)

    def nodal_fields(self) -> dict:
        """:meth:`probe` fields: ``displacement``, the recovered (SPR) ``stress``,
        ``strain``, ``von_mises`` and ``principal_stresses``."""
        return {**super().nodal_fields(), "stress": self.nodal_stress,
                "strain": self.nodal_strain, "von_mises": self.nodal_von_mises,
                "principal_stresses": self.principal_stresses}

    def nodal_von_mises(self, method: str = "spr") -> np.ndarray:
        """Von Mises stress of the recovered nodal stress tensor (:meth:`nodal_stress`,
        with ``σ_zz`` in 2D), ``(n_points,)``."""
        return von_mises(self.nodal_stress(method, full=True))

    def principal_stresses(self, method: str = "spr") -> np.ndarray:
        """Principal stresses ``σ₁ ≥ σ₂ ≥ σ₃`` of the recovered nodal stress tensor
        (:meth:`nodal_stress`, 3 x 3 with ``σ_zz`` in 2D), ``(n_points, 3)``."""
        return np.linalg.eigvalsh(self.nodal_stress(method, full=True))[:, ::-1]

    def _out_of_plane_strain(self, in_plane_trace):
        """``ε_zz`` for in-plane strain traces ``(n_cells, ...)``: 0 in plane strain,
        ``−ν/(1−ν) (ε_xx + ε_yy)`` (+ ``(1+ν)/(1−ν) α ΔT``) in plane stress (``σ_zz = 0``)."""
        if self.model.plane != "stress":
            return np.zeros_like(in_plane_trace)
        nu = np.broadcast_to(np.asarray(getval(self.parameters.get("nu", self.model.nu))),
                             in_plane_trace.shape[:1])
        return (-(nu / (1 - nu)).reshape(-1, *[1] * (in_plane_trace.ndim - 1)) * in_plane_trace
                + thermal.plane_stress_zz_strain(self, in_plane_trace.ndim == 1))

    def strain_at_quadrature(self, full: bool = False) -> np.ndarray:
        """Small strain at the quadrature points, ``(n_cells, n_qp, dim, dim)``, or
        ``(n_cells, n_qp, 3, 3)`` with ``full`` (in 2D with ``ε_zz``). Plain arrays."""
        grad_u = self.gradient_at_quadrature
        eps = 0.5 * (grad_u + np.swapaxes(grad_u, -1, -2))
        if not full or self.model.mesh.dim == 3:
            return eps
        out = np.zeros((*eps.shape[:2], 3, 3))
        out[..., :2, :2] = eps
        out[..., 2, 2] = self._out_of_plane_strain(eps[..., 0, 0] + eps[..., 1, 1])
        return out

    def cell_data(self) -> dict[str, np.ndarray]:
        """Cell output, from the cell-mean strain: ``von_mises`` ``(n_cells,)``, ``stress``
        and ``strain`` ``(n_cells, 6)`` as symmetric tensors XX, YY, ZZ, XY, YZ, XZ (the order
        ParaView reads; 2D with ``σ_zz``, ``ε_zz``)."""
        strain = np.array(getval(self.strain()), dtype=float)
        if self.model.mesh.dim == 2:
            strain = np.pad(strain, ((0, 0), (0, 1), (0, 1)))
            strain[:, 2, 2] = self._out_of_plane_strain(strain[:, 0, 0] + strain[:, 1, 1])
        return {"von_mises": self.von_mises(),
                "stress": fields.symmetric_tensor_components(self.stress_3d()),
                "strain": fields.symmetric_tensor_components(strain)}

    def point_data(self) -> dict[str, np.ndarray]:
        """Nodal output: ``displacement``, and the recovered (SPR, :meth:`nodal_stress`)
        ``nodal_stress`` and ``nodal_strain`` ``(n_points, 6)`` (XX, YY, ZZ, XY, YZ, XZ)
        and ``nodal_von_mises`` ``(n_points,)``."""
        stress = self.nodal_stress(full=True)
        return {**super().point_data(),
                "nodal_stress": fields.symmetric_tensor_components(stress),
                "nodal_strain": fields.symmetric_tensor_components(
                    self.nodal_strain(full=True)),
                "nodal_von_mises": von_mises(stress)}


# ------------------------------------------------------------------ the model
class Elasticity(LinearModel):
    """Small-strain isotropic linear elasticity.

    Parameters
    ----------
    mesh : Mesh
    E : float or array_like
        Young's modulus, scalar or per cell ``(n_cells,)``.
    nu : float or array_like
        Poisson's ratio, scalar or per cell.
    plane : {"stress", "strain"}, optional
        2D assumption: plane stress (the default, as in config files) or plane strain.
        Not allowed in 3D.
    thickness : float
        Out-of-plane thickness (2D; default 1, as in config files).
    quadrature_order : int, optional

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> model = Elasticity(rectangle(40, 10, 4.0, 1.0), E=210e9, nu=0.3)  # plane stress
    >>> model.fix("left").traction("right", (0.0, -1e6))
    'surface0'
    >>> u = model.solve().displacement   # (n_points, 2)
    """

    name = "elasticity"
    field_name = "displacement"
    parameters = {
        "E": Parameter("E", "Young's modulus", lower=0.0),
        "nu": Parameter("nu", "Poisson's ratio", lower=-1.0, upper=0.5),
        "scale": SCALE,
        "alpha": Parameter("alpha", "thermal expansion coefficient", lower=0.0,
                           lower_open=False),
        "temperature": Parameter("temperature", "nodal temperature field of the thermal "
                                 "strain, one value per node", per_cell=False),
    }
    solution_class = ElasticSolution
    config = PhysicsConfig(
        options=(
            Option("plane", "2D only: plane stress or strain", DEFAULT_PLANE,
                   choices=PLANE_ASSUMPTIONS, dims=(2,)),
            Option("thickness", "2D only: out-of-plane thickness", DEFAULT_THICKNESS,
                   dims=(2,)),
        ),
        material=("E", "nu", "alpha"),
        vector_field=True,
        loads=(
            LoadKind("point", "point_load", "nodes", True, "force vector"),
            LoadKind("traction", "traction", "facets", True, "force vector"),
            LoadKind("pressure", "pressure", "facets", False, "normal pressure"),
            LoadKind("body_force", "body_force", "cells", True, "force vector"),
        ),
        responses={"compliance": "compliance", "displacement": "value",
                   "stress_pnorm": "stress_pnorm", "stress_ks": "stress_ks"},
        mass="density",
        inertia="density",
        time_order=2,
        eigen_responses={"eigenvalue": "eigenvalue", "frequency": "frequency",
                         "eigenvalue_sum": "eigenvalue_sum", "eigenvalue_ks": "eigenvalue_ks"},
        plot=Plot("nodal_von_mises", "von Mises (recovered at the nodes)", "von Mises stress",
                  deformed=True, clip_percentile=99.0),
        reported=(Reported("max_displacement", "displacement", "max_norm", "max |u|"),
                  Reported("max_von_mises", "von_mises", "max", "max von Mises")),
        sections=(Section("thermal", "thermal_strain", doc="thermal strain α (T − T_ref)",
                          keys=(SectionKey("temperature", "temperature: a number, or a file of "
                                           "nodal values (.npy or text)", file=True),
                                SectionKey("reference", "reference temperature T_ref",
                                           default=0.0))),
                  Section("springs", "spring", many=True, on="nodes", loads=False,
                          stiffness=True, diagonal=True,
                          doc="spring supports: stiffness k to the ground at each selected "
                              "node (compliant mechanisms' input and output springs)",
                          keys=(SectionKey("stiffness", "k > 0: one number, or one per "
                                           "component", lower=0.0, lower_open=True,
                                           value="numbers"),
                                SectionKey("components", "components held (default: all)",
                                           value="components", optional=True)))),
    )

    def __init__(
        self,
        mesh: Mesh,
        E=1.0,
        nu=0.3,
        *,
        plane: str | None = None,
        thickness: float = DEFAULT_THICKNESS,
        quadrature_order: int | None = None,
        alpha=0.0,
    ):
        if mesh.dim == 3 and plane is not None:
            raise ValueError(f"plane={plane!r} applies to 2D meshes only; this mesh is 3D")
        if mesh.dim == 2:
            plane = DEFAULT_PLANE if plane is None else plane
            if plane not in PLANE_ASSUMPTIONS:
                raise ValueError(f"plane={plane!r} is not a 2D assumption: give plane='stress' "
                                 "(the default) or plane='strain'")
        super().__init__(mesh, mesh.dim, thickness=thickness, quadrature_order=quadrature_order)
        self.plane = plane
        self.E = np.asarray(self.checked("E", E), dtype=float)
        self.nu = np.asarray(self.checked("nu", nu), dtype=float)
        self.alpha = np.asarray(self.checked("alpha", alpha), dtype=float)
        self.temperature: np.ndarray | None = None
        self.reference_temperature = 0.0

    def cell_matrices(self, points=None) -> list:
        """``[Kλ, Kμ]`` (see the module docstring), for ``points`` (default: the mesh's)."""
        return list(elasticity_matrices(self.geometry(points)))

    def integrand_values(self, grad_a, grad_b) -> list:
        """``[div a div b, ∇a:(∇b + ∇bᵀ)]`` at the quadrature points: the integrands of
        ``aᵀKλb`` and ``aᵀKμb``, each ``(n_cells, n_qp)``."""
        n_cells, n_qp = np.shape(grad_a)[:2]
        products = grad_a * (grad_b + np.transpose(grad_b, (0, 1, 3, 2, 4)))
        return [np.sum(_divergence(grad_a) * _divergence(grad_b), axis=-1),
                np.sum(np.reshape(products, (n_cells, n_qp, -1)), axis=2)]

    def integrand_fluxes(self, grad_a, grad_b, coefficients) -> tuple:
        """``∂F/∂∇a = c_λ div b I + c_μ (∇b + ∇bᵀ)`` and the same with ``a`` and ``b``
        swapped, for ``F = c_λ div a div b + c_μ ∇a:(∇b + ∇bᵀ)``."""
        c_lambda, c_mu = (c[:, None, None, None, None] for c in coefficients)
        identity = np.eye(self.mesh.dim)[None, None, :, :, None]

        def flux(other):
            divergence = _divergence(other)[:, :, None, None, :]
            return (c_lambda * divergence * identity
                    + c_mu * (other + np.transpose(other, (0, 1, 3, 2, 4))))

        return flux(grad_b), flux(grad_a)

    def lame(self, E=None, nu=None) -> tuple:
        """Per-cell ``(λ, μ)`` for the given (or the model's) ``E`` and ``nu``."""
        E = self.E if E is None else self.checked("E", E)
        nu = self.nu if nu is None else self.checked("nu", nu)
        return lame_parameters(E, nu, self.plane)

    def stiffness_fields(self, E=None, nu=None, scale=None, alpha=None,
                         temperature=None) -> tuple:
        """``((w_λ, w_μ), [s t E])`` when the model's ``ν`` (``nu`` not given) is the same in
        every cell (see :func:`lame_weights`), else ``(None, [s t λ, s t μ])``.

        ``alpha`` and ``temperature`` load the model only (:meth:`parameter_load`).
        A ``nu`` passed here is a parameter (traced, in :func:`fesens.ad.grad`): it is
        never folded, so traced and untraced evaluations assemble the very same matrix.
        """
        factor = self.scaled_thickness(scale)
        E = self.E if E is None else self.checked("E", E)
        weights = None if nu is not None else lame_weights(self.nu, self.plane)
        if weights is not None:
            return weights, [factor * E]
        lam, mu = lame_parameters(E, self.nu if nu is None else self.checked("nu", nu),
                                  self.plane)
        return None, [factor * lam, factor * mu]

    # ------------------------------------------------------------ loads (named for the physics)
    def traction(self, where: Where, vector: FieldSpec, *, name: str | None = None) -> str:
        """Traction vector per unit area (2D: per unit length) on a facet set."""
        return self.surface_load(where, vector, name=name)

    def pressure(self, where: Where, p: FieldSpec, *, name: str | None = None) -> str:
        """Normal pressure on a facet set; positive pushes into the body (``t = −p n``)."""
        return self.surface_load(where, pressure=p, name=name, kind="pressure")

    def body_force(self, vector: FieldSpec, *, cells: Where | None = None,
                   name: str | None = None) -> str:
        """Body force per unit volume (e.g. ``(0, -ρ g)``)."""
        return self.volume_load(vector, cells=cells, name=name)

    def thermal_strain(self, temperature: thermal.TemperatureSpec, *, reference: float = 0.0,
                       alpha=None) -> Elasticity:
        """Load by the thermal strain ``α (T − T_ref) I`` (:mod:`fesens.physics.thermal_strain`);
        stresses become ``D (ε − ε_th)``. Returns ``self``.

        ``temperature``: nodal values ``(n_points,)``, a number, ``f(points) -> (n,)``, a file
        or a heat solution; ``alpha`` (``>= 0``, scalar or per cell) replaces the constructor's.
        ``solve(temperature=..., alpha=...)`` override both (differentiable)."""
        if not np.isfinite(reference):
            raise NonFiniteError(f"the reference temperature is {reference}; give a number")
        if alpha is not None:
            self.alpha = np.asarray(self.checked("alpha", alpha), dtype=float)
        self.temperature = thermal.nodal_temperature(temperature, self.mesh.points)
        self.reference_temperature = float(reference)
        return self

    def parameter_load(self, points=None, **parameters):
        """The thermal load ``∫ Bᵀ D ε_th dΩ`` ``(n_dofs,)``, or None without temperature."""
        return thermal.thermal_load_vector(self, parameters, points)
