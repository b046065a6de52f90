"""Small-strain J2 (von Mises) elastoplasticity: 2D plane strain and 3D, every volume cell.

At each quadrature point the small strain ``ε = sym ∇u`` (plane strain: ``ε_zz = 0``, the
out-of-plane stress and plastic strain kept in the state) goes through the return map of
:mod:`fesens.physics.j2_plasticity` from the internal variables of the *previous
increment* (plastic strain ``εᵖ``, equivalent plastic strain ``ᾱ``, back stress ``β``);
the stress ``σ`` is the flux of the residual (small strain: ``P = σ``)

    R_a(u; h_(n−1), θ, X) = Σ_e Σ_q t dΩ_q σ(ε(u_q); h_(n−1), θ) : ∇N_a − f_a,

and the consistent (algorithmic) tangent ``∂σ/∂ε`` gives ``∂R/∂u`` (Simo & Hughes 1998,
*Computational Inelasticity*, Box 3.2; de Souza Neto, Perić & Owen 2008, §7.4). The
internal variables reach the flux among its fields (:meth:`Elastoplasticity.with_history`),
so a Newton iterate within an increment always returns from the previous increment's
converged state and never updates it; :meth:`Elastoplasticity.increment` is the update
after convergence (forces, new internal variables, plastic work), one traced evaluation.
The load history and its adjoint are :class:`~fesens.fem.analysis.incremental.IncrementalAnalysis`.

**Densities.** The density ``scale`` ``ρ`` (per cell) interpolates the elastic moduli as
``ρ^p`` (``penal``) and the yield stress and hardening moduli as ``ρ^q`` (``yield_penal``)
with ``q < p``: a cell of intermediate density then yields at a strain
``ε_y ∝ ρ^(q−p)`` larger than a solid cell's, so intermediate densities are not stronger
than they are stiff in the design's eyes (Maute, Schwarz & Ramm 1998, Struct. Optim. 15,
81–91; Bendsøe & Sigmund 2003, *Topology Optimization*, §2.9).
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.mesh.mesh import Mesh
from fesens.physics.elastoplastic_config import ELASTOPLASTIC_CONFIG
from fesens.physics.elastoplastic_history import PlasticHistory
from fesens.physics.elastoplastic_points import (
    STATE_NAMES,
    column,
    derived_tangent_block,
    material_of,
    point_increment,
    small_strain,
    tangent_block,
)
from fesens.physics.j2_hardening import CONSTANT_NAMES
from fesens.physics.j2_plasticity import J2State

#: The constants the density interpolates as ``ρ^q`` (the others' ``ρ^p``: ``E``).
_YIELD_SCALED = ("yield_stress", "isotropic_modulus", "kinematic_modulus",
                 "saturation_stress")


class Increment(NamedTuple):
    """What an increment leaves at its converged state (traced when an input is)."""

    forces: object
    """``(n_dofs,)`` the internal forces ``R_int(u_n)``."""
    history: dict
    """The internal variables at ``n`` by name, ``(n_cells, n_qp, ...)`` each."""
    dissipation: object
    """The plastic work of the increment ``Σ_q t dΩ_q σ_n : (εᵖ_n − εᵖ_(n−1))``."""
    outputs: dict
    """Per-point outputs by name: ``stress`` ``(n_cells, n_qp, 3, 3)``."""
    cell_tangents: object
    """``() -> (n_cells, nd, nd)``: the cell matrices of the consistent tangent at this
    state from the same return map (plain; assembled when called)."""


class Elastoplasticity(NonlinearModel):
    """Small-strain J2 plasticity with isotropic (linear, Voce) and kinematic (linear,
    Armstrong–Frederick) hardening (:class:`~fesens.physics.j2_hardening.J2Material`).

    Parameters
    ----------
    mesh : Mesh
        2D (plane strain) or 3D volume cells.
    E, nu, yield_stress, isotropic_modulus, kinematic_modulus : float or array_like
        Scalars or per cell ``(n_cells,)``: Young's modulus, Poisson's ratio, the initial
        yield stress ``σ_y0 > 0``, the linear hardening moduli ``H, H_k ≥ 0``.
    saturation_stress : float, array_like or None
        Voce's ``σ_∞ ≥ σ_y0`` (None: linear isotropic hardening).
    saturation_rate, kinematic_recovery : float or array_like
        Voce's ``δ`` (> 0 with ``σ_∞``) and Armstrong–Frederick's ``b ≥ 0``.
    thickness : float
        2D: out-of-plane thickness.
    penal, yield_penal : float
        The exponents ``p`` and ``q`` of the density interpolation (module docstring).
    quadrature_order : int, optional

    Raises
    ------
    MaterialError
        A constant out of its range, softening (named).
    """

    name = "elastoplasticity"
    field_name = "displacement"
    path_independent = False
    definite_tangent = False  # perfect plasticity: singular at the limit load
    newton_defaults = MappingProxyType({})
    # the ranges for the config's checks; the model checks the constants first, as a
    # J2Material, so that a yield stress <= 0 or softening is a MaterialError naming it
    parameters = MappingProxyType({
        "E": Parameter("E", "Young's modulus", lower=0.0),
        "nu": Parameter("nu", "Poisson's ratio", lower=-1.0, upper=0.5),
        "yield_stress": Parameter("yield_stress", "initial uniaxial yield stress",
                                  lower=0.0),
        "isotropic_modulus": Parameter("isotropic_modulus", "linear isotropic hardening "
                                       "modulus H", lower=0.0, lower_open=False),
        "kinematic_modulus": Parameter("kinematic_modulus", "linear kinematic hardening "
                                       "modulus H_k", lower=0.0, lower_open=False),
        "saturation_stress": Parameter("saturation_stress", "Voce saturation stress",
                                       lower=0.0),
        "saturation_rate": Parameter("saturation_rate", "Voce saturation rate", lower=0.0,
                                     lower_open=False),
        "kinematic_recovery": Parameter("kinematic_recovery", "Armstrong-Frederick "
                                        "dynamic recovery b", lower=0.0, lower_open=False),
        "scale": replace(SCALE, description="density of the cell (rho^p on the elastic "
                         "moduli, rho^q on the yield stress and hardening)", lower=0.0),
    })
    config = ELASTOPLASTIC_CONFIG
    history_class = PlasticHistory

    def __init__(self, mesh: Mesh, E=200e3, nu=0.3, yield_stress=250.0, *,
                 isotropic_modulus=0.0, kinematic_modulus=0.0, saturation_stress=None,
                 saturation_rate=0.0, kinematic_recovery=0.0, thickness: float = 1.0,
                 penal: float = 3.0, yield_penal: float = 2.5,
                 quadrature_order: int | None = None):
        super().__init__(mesh, mesh.dim, thickness=thickness,
                         quadrature_order=quadrature_order)
        if not (np.isfinite(penal) and np.isfinite(yield_penal) and penal > 0
                and yield_penal > 0):
            raise ValueError(f"penal and yield_penal must be numbers > 0, got {penal!r} "
                             f"and {yield_penal!r}")
        self.penal, self.yield_penal = float(penal), float(yield_penal)
        given = {"E": E, "nu": nu, "yield_stress": yield_stress,
                 "isotropic_modulus": isotropic_modulus,
                 "kinematic_modulus": kinematic_modulus,
                 "saturation_stress": yield_stress if saturation_stress is None
                 else saturation_stress,
                 "saturation_rate": saturation_rate, "kinematic_recovery": kinematic_recovery}
        self.voce = saturation_stress is not None
        self._check_material(given)
        for key, value in given.items():
            setattr(self, key, np.asarray(self.checked(key, value), dtype=float))
        # Armstrong–Frederick's recovery turns the flow with β: no major symmetry
        self.symmetric_tangent = not np.any(self.kinematic_recovery)

    def solve(self, **options):
        """Refused: a path-dependent model's state depends on its load history, solved by
        :class:`~fesens.fem.analysis.incremental.IncrementalAnalysis` (one increment:
        ``factors=[0, 1]``)."""
        raise TypeError(
            f"{type(self).__name__} is path dependent (its internal variables carry the load "
            "history): solve it with IncrementalAnalysis(model, factors=[0, ..., 1]).solve() "
            "(fesens.fem.analysis.incremental), or [analysis] type = \"incremental\" in a "
            "config")

    # ------------------------------------------------------------ material
    def _check_material(self, constants: dict) -> None:
        """Raise :class:`~fesens.errors.MaterialError` for constants out of range."""
        plain = {key: np.asarray(getval(value), dtype=float) for key, value in constants.items()}
        for key, value in plain.items():
            if value.ndim > 1 or value.size not in (1, self.mesh.n_cells):
                raise ValueError(f"parameter {key!r} must be a scalar or have one value per "
                                 f"cell ({self.mesh.n_cells}), got shape {value.shape}")
        if not self.voce:
            plain["saturation_rate"] = np.zeros_like(plain["saturation_rate"])
        material_of(plain)

    def material_fields(self, scale=None, **constants) -> dict:
        """The per-cell constants of :data:`~fesens.physics.j2_hardening.CONSTANT_NAMES`
        ``(n_cells,)`` each, interpolated by the density: ``ρ^p E`` and ``ρ^q`` on the yield
        stress, hardening moduli and saturation stress (traced when a parameter is).

        Raises
        ------
        MaterialError
            A constant out of its range, softening.
        """
        self.check_parameters({**constants, **({} if scale is None else {"scale": scale})})
        fields = {key: getattr(self, key) if constants.get(key) is None else constants[key]
                  for key in CONSTANT_NAMES}
        if not self.voce:
            if constants.get("saturation_stress") is not None:
                raise ValueError("saturation_stress is Voce's: build the model with a "
                                 "saturation_stress and saturation_rate to vary it")
            fields["saturation_stress"] = fields["yield_stress"]
            fields["saturation_rate"] = 0.0 * fields["saturation_rate"]
        self._check_material(fields)
        fields = {key: self.checked(key, value) for key, value in fields.items()}
        if np.any(getval(fields["kinematic_recovery"])) and self.symmetric_tangent:
            raise ValueError("kinematic_recovery > 0 makes the tangent non-symmetric: build "
                             "the model with it")
        if scale is not None:
            scale = self.checked("scale", scale)
            fields["E"] = scale ** self.penal * fields["E"]
            for key in _YIELD_SCALED:
                fields[key] = scale ** self.yield_penal * fields[key]
        return fields

    # ------------------------------------------------------------ internal variables
    @property
    def n_points(self) -> int:
        """Quadrature points per cell."""
        return int(np.shape(self.geometry().N)[0])

    def history_start(self) -> dict[str, np.ndarray]:
        """The internal variables of the virgin body, ``(n_cells, n_qp, ...)`` by name."""
        virgin = J2State.virgin(self.mesh.n_cells * self.n_points)
        shape = (self.mesh.n_cells, self.n_points)
        return {name: np.reshape(value, shape + value.shape[1:])
                for name, value in virgin._asdict().items()}

    @staticmethod
    def with_history(fields: dict, history: dict) -> dict:
        """The fields of a residual evaluation within an increment: the material fields and
        the previous increment's internal variables."""
        return {**fields, **history}

    def _packed_update(self, grad_q, fields):
        """The return map's packed rows ``(n_cells·n_qp, WIDTH)`` at the displacement
        gradients ``grad_q`` ``(n_cells, n_qp, dim, dim)`` from the internal variables among
        ``fields`` (traced)."""
        n_cells, n_qp = np.shape(grad_q)[:2]
        n = n_cells * n_qp
        strain = small_strain(grad_q)  # plane strain: ε_zz = 0
        previous = [np.reshape(fields[name], (n, 3, 3) if name != STATE_NAMES[1] else (n,))
                    for name in STATE_NAMES]
        ones = np.ones((1, n_qp))
        constants = [np.reshape(np.reshape(fields[key], (-1, 1)) * ones, (n,))
                     if np.ndim(fields[key]) else fields[key] * np.ones(n)
                     for key in CONSTANT_NAMES]
        return point_increment(strain, *previous, *constants, memo={})

    def flux(self, u_q, grad_q, fields):
        """``P = σ`` ``(n_cells, n_qp, dim, dim)`` (the in-plane block in 2D) after the return
        map from the internal variables among ``fields`` (traced)."""
        n_cells, n_qp, dim = np.shape(grad_q)[:3]
        stress = column(self._packed_update(grad_q, fields), "stress", dim)
        return np.reshape(stress, (n_cells, n_qp, dim, dim))

    def flux_tangent(self, u_q, grad_q, fields) -> tuple:
        """``(∂σ/∂∇u, None)`` ``(n_cells, n_qp, dim, dim, dim, dim)``: the consistent
        tangent (Box 3.2's closed form for linear kinematic hardening; forward mode through
        the return map with Armstrong–Frederick's recovery), plain."""
        return self._tangent_of(self._packed_update(grad_q, fields), grad_q, fields), None

    def _tangent_of(self, packed, grad_q, fields) -> np.ndarray:
        """:meth:`flux_tangent` of the return map's packed rows at ``grad_q`` (plain)."""
        n_cells, n_qp, dim = np.shape(grad_q)[:3]
        n = n_cells * n_qp
        constants = {key: np.reshape(np.broadcast_to(np.reshape(fields[key], (-1, 1)),
                                                     (n_cells, n_qp)), n)
                     for key in CONSTANT_NAMES}
        if np.any(constants["kinematic_recovery"]):
            strain = np.zeros((n, 3, 3))
            grad = np.reshape(grad_q, (n, dim, dim))
            strain[:, :dim, :dim] = 0.5 * (grad + np.swapaxes(grad, 1, 2))
            state = J2State(*(np.reshape(fields[name], (n, 3, 3) if name != STATE_NAMES[1]
                                         else (n,)) for name in STATE_NAMES))
            block = derived_tangent_block(strain, state, constants, dim)
        else:
            block = tangent_block(packed, constants, dim)
        return np.reshape(block, (n_cells, n_qp) + (dim,) * 4)

    def increment(self, u, fields: dict, points=None) -> Increment:
        """The converged increment at the state ``u`` ``(n_dofs,)`` from the internal
        variables among ``fields`` (:meth:`with_history`): internal forces, new internal
        variables, plastic work and stresses, from one return map (traced)."""
        geometry, _, grad_q = self._at_quadrature(u, points)
        n_cells, n_qp, dim = np.shape(grad_q)[:3]
        packed = self._packed_update(grad_q, fields)
        stress = column(packed, "stress")
        forces = self.flux_forces(geometry, np.reshape(column(packed, "stress", dim),
                                                       (n_cells, n_qp, dim, dim)))
        shape = (n_cells, n_qp)
        history = {name: np.reshape(column(packed, name), shape + (3, 3) * (name != STATE_NAMES[1]))
                   for name in STATE_NAMES}
        flow = history["plastic_strain"] - fields["plastic_strain"]
        stress = np.reshape(stress, shape + (3, 3))
        work = np.sum(self._weights(geometry) * np.einsum("eqij,eqij->eq", stress, flow))

        def cell_tangents() -> np.ndarray:
            plain = {k: np.asarray(getval(v)) for k, v in fields.items()}
            at = self.geometry(None if points is None else np.asarray(getval(points)))
            tangent = self._tangent_of(np.asarray(getval(packed)),
                                       np.asarray(getval(grad_q)), plain)
            return self.cell_tangent_matrices(at, tangent)

        return Increment(forces, history, work, {"stress": stress}, cell_tangents)
