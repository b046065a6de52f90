"""Finite-strain (hyperelastic) elasticity in the total Lagrangian form: plane strain and 3D.

The unknowns are the displacements ``u`` of the nodes from the reference configuration
``X``; the deformation gradient at a quadrature point is ``F = I + ∇_X u``. The residual
is the reference-configuration weak form of equilibrium (Bonet & Wood, *Nonlinear
Continuum Mechanics for Finite Element Analysis*, 2nd ed., 2008, §8.3)

    R_a = Σ_e Σ_q t dΩ_q P(F_q) ∇_X N_a − f_a,

with the first Piola–Kirchhoff stress ``P = s ∂W/∂F`` of the material law
(:mod:`fesens.physics.hyperelastic_law`: compressible neo-Hookean, St. Venant–Kirchhoff and
the rubber and fibre laws of :mod:`fesens.physics.rubber_laws`, or a user's energy), the
density scale ``s`` of the stored energy and the thickness ``t`` (2D). The laws of the Lamé
constants are linear in them, so ``s W(F; λ, μ) = W(F; s λ, s μ)``: the material fields of
a solve are ``s λ`` and ``s μ`` per cell, of the parameters ``E`` and ``ν``. Any other law's
constants (``c10, c01, kappa`` of Mooney–Rivlin) are the model's parameters themselves,
scalar or per cell and differentiable like ``E``; the material fields are the constants
and ``s``, which multiplies ``W``, ``P`` and the tangent.

The loads are dead loads: point forces, tractions and body forces per unit reference area
and volume, fixed in direction and size whatever the deformation (a pressure too acts
along the reference normal), except a follower pressure (``pressure(...,
follower=True)``), which acts on the deformed facet along its current normal. The tangent
``∂R/∂u`` is the law's tangent ``A = ∂P/∂F`` (hand-written, or derived from ``W``)
contracted with the shape gradients; it is symmetric (``P`` derives from an energy) unless
a follower pressure adds its load stiffness.

A state with ``det F ≤ 0`` at a quadrature point (an inverted element) is refused: Newton
backtracks, then cuts the load back, then stops naming the cells.

**Nearly void cells** of a design (a small scale ``s``) are soft, so they distort far, and
their inversion or indefinite tangent stops Newton although they carry no load. The energy
interpolation of Wang, Lazarov, Sigmund & Jensen (Comput. Methods Appl. Mech. Engrg. 276,
2014, 453–472, §3: "energy interpolation") (``void_treatment="energy_interpolation"``)
models them by linear elasticity: with the smooth step
``γ(s) = (tanh(βη) + tanh(β(s − η))) / (tanh(βη) + tanh(β(1 − η)))`` of the scale (≈ 0
below the threshold ``η``, 1 at ``s = 1``) the stored energy density is

    s [W_NL(γH) − W_L(γH) + W_L(H)] = s [W_NL(γH) + (1 − γ²) W_L(H)],

(``W_L`` the small-strain energy ``λ/2 (tr ε)² + μ ε:ε``, quadratic, so ``W_L(γH) = γ²
W_L(H)``), hence ``P = γ P_NL(γH) + (1 − γ²) P_L(H)`` and the tangent
``γ² A_NL(γH) + (1 − γ²) C``. Solid cells (``γ = 1``) keep the finite-strain law; void
cells (``γ ≈ 0``) are linear and never invert; the inversion check and the stresses read
``I + γH``.

What a solve returns, the stresses and the stored energy of a state, is
:class:`~fesens.physics.hyperelastic_solution.FiniteStrainSolution`.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.integrals.loads import FieldSpec
from fesens.fem.model.load_terms import Where
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.mesh.mesh import Mesh
from fesens.physics.elasticity import DEFAULT_THICKNESS, Elasticity
from fesens.physics.energy_law import HyperelasticLaw
from fesens.physics.hyperelastic_law import (
    DEFAULT_LAW,
    HYPERELASTIC_LAWS,
    inverted_points,
    lame_constants,
)
from fesens.physics.hyperelastic_solution import FiniteStrainSolution
from fesens.physics.law_entry_points import resolve_law
from fesens.physics.rubber_laws import domain_limit, law_parameters
from fesens.physics.spec import LoadKind, Option, PhysicsConfig, Plot, Reported
from fesens.physics.void_interpolation import (
    DEFAULT_VOID_BETA,
    DEFAULT_VOID_ETA,
    VOID_TREATMENTS,
    linear_energy,
    linear_stress,
    linear_tangent,
    void_step,
)

#: The deformation a law sees: ``I + ∇u``, or F̄ of :mod:`fesens.physics.mean_dilatation`.
FORMULATIONS = ("displacement", "mean_dilatation")
#: The constants of the laws whose parameters are ``E`` and ``nu``.
LAME_CONSTANTS = ("lam", "mu")


def law_material(law: str) -> dict[str, Parameter] | None:
    """The ``[material]`` keys of a config that names ``law``: its constants, described
    with the law's name and constants; None for a law of ``E`` and ``nu``."""
    law = resolve_law(law)
    if law.constants == LAME_CONSTANTS:
        return None
    return {key: replace(parameter, description=f"{parameter.description}: a constant of "
                                                f"law {law.name!r} ({', '.join(law.constants)})")
            for key, parameter in law_parameters(law).items()}


class FiniteStrainElasticity(NonlinearModel):
    """Finite-strain isotropic hyperelasticity, total Lagrangian, plane strain (2D) or 3D.

    Parameters
    ----------
    mesh : Mesh
        Any volume cell type (tri3/6, quad4/8/9, tet4/10, hex8/20/27).
    E : float or array_like
        Young's modulus at small strain, scalar or per cell ``(n_cells,)`` (the laws of the
        Lamé constants only).
    nu : float or array_like
        Poisson's ratio at small strain, in ``(−1, 0.5)``, scalar or per cell.
    law : str or HyperelasticLaw
        The material law: a name of
        :data:`~fesens.physics.hyperelastic_law.HYPERELASTIC_LAWS` (``"neo-hookean"``, the
        default, ``"saint-venant-kirchhoff"``, ``"mooney-rivlin"``, ...), an installed
        package's law (:func:`~fesens.physics.law_entry_points.resolve_law`), or a law
        object (:meth:`HyperelasticLaw.from_energy
        <fesens.physics.energy_law.HyperelasticLaw.from_energy>`).
    **constants : float or array_like
        A law of other constants than ``λ, μ``: each of its constants by name, scalar or
        per cell (``c10=0.3, c01=0.05, kappa=100.0``); they are the model's parameters
        (:meth:`solve` and :func:`fesens.ad.grad` take them like ``E``).
    thickness : float
        Out-of-plane thickness (2D: plane strain).
    void_treatment : {"none", "energy_interpolation"}
        ``"energy_interpolation"``: cells of a small ``scale`` are modelled by linear
        elasticity, as Wang et al. (2014) propose (see the module docstring), so that
        nearly void cells of a design do not stop Newton; it acts on solves given a
        ``scale`` (without one every cell is solid).
    void_beta, void_eta : float
        β > 0 (sharpness) and η in (0, 1) (threshold on the scale) of the smooth step
        :func:`void_step`; void cells should have ``s`` well below ``η``: with a SIMP
        floor ``s_min``, choose ``η`` above it (``γ(η) ≈ 1/2``).
    formulation : {"displacement", "mean_dilatation"}
        ``"mean_dilatation"``: no volumetric locking of nearly incompressible laws (a
        :class:`~fesens.physics.mean_dilatation.MeanDilatationElasticity`).
    quadrature_order : int, optional

    Notes
    -----
    The Lamé constants are those of the small-strain ``E, ν`` (3D and plane strain:
    ``λ = Eν/((1+ν)(1−2ν))``, ``μ = E/(2(1+ν))``), so at small loads the solution is that of
    :class:`~fesens.physics.elasticity.Elasticity` in plane strain. Loads are dead loads
    (see the module docstring).

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> model = FiniteStrainElasticity(rectangle(20, 2, 1.0, 0.1, "quad8"), E=1e3, nu=0.3)
    >>> model.fix("left").point_load("right", (0.0, -0.01))
    'point0'
    >>> u = model.solve(steps=4).displacement   # (n_points, 2)
    """

    name = "hyperelasticity"
    field_name = "displacement"
    parameters = {
        "E": Elasticity.parameters["E"],
        "nu": Elasticity.parameters["nu"],
        # a positive scale only: a zero or negative one leaves no stable energy
        "scale": replace(SCALE, description="density scale of the stored energy (e.g. "
                                            "SIMP x^p)", lower=0.0),
    }
    solution_class = FiniteStrainSolution
    # the tangent is symmetric but often indefinite away from equilibrium (a Newton
    # predictor that compresses a fibre, a slender beam's first iterate), where a Cholesky
    # factorization fails and would cut the load back: auto (the default, and a config's)
    # is CHOLMOD with LU for each factorization that finds it not positive definite
    definite_tangent = False
    config = PhysicsConfig(
        options=(
            Option("law", "finite-strain material law (or 'package.module:function' of an "
                   "installed package)", DEFAULT_LAW, choices=tuple(HYPERELASTIC_LAWS),
                   extends=resolve_law),
            Option("thickness", "2D only: out-of-plane thickness (plane strain)",
                   DEFAULT_THICKNESS, dims=(2,)),
            Option("void_treatment", "nearly void cells: by the law, or linear by the "
                   "energy interpolation of Wang et al. 2014", "none",
                   choices=VOID_TREATMENTS),
            Option("formulation", "the deformation a law sees: I + grad u, or with the "
                   "cell's mean dilatation (no locking)", FORMULATIONS[0], choices=FORMULATIONS),
            Option("void_beta", "energy interpolation: sharpness beta of the step in the "
                   "scale", DEFAULT_VOID_BETA),
            Option("void_eta", "energy interpolation: threshold eta (in (0, 1)) of the "
                   "step in the scale", DEFAULT_VOID_ETA),
        ),
        material=("E", "nu"),
        vector_field=True,
        loads=(
            LoadKind("point", "point_load", "nodes", True, "force vector"),
            LoadKind("traction", "traction", "facets", True,
                     "force vector per unit reference area"),
            LoadKind("pressure", "pressure", "facets", False,
                     "pressure along the reference normal (follower: per unit current "
                     "area along the deformed normal)",
                     flags=(("follower", "the pressure follows the deformed facet's normal "
                                         "(a gas or fluid pressure)"),),
                     unsymmetric=("follower",)),
            LoadKind("body_force", "body_force", "cells", True,
                     "force vector per unit reference volume"),
        ),
        responses={"compliance": "compliance", "displacement": "value",
                   "strain_energy": "strain_energy", "stress_pnorm": "stress_pnorm",
                   "stress_ks": "stress_ks"},
        compliance_name="external work f·u",
        plot=Plot("nodal_von_mises", "von Mises (Cauchy, recovered at the nodes)",
                  "von Mises stress", deformed=True, clip_percentile=99.0),
        reported=(Reported("max_displacement", "displacement", "max_norm", "max |u|"),
                  Reported("max_von_mises", "von_mises", "max", "max von Mises"),
                  Reported("min_jacobian", "jacobian", "min", "min det F")),
        material_of=lambda options: law_material(options["law"]),
    )

    # The equilibria are stationary points of the potential energy, and the first Newton
    # iterates of a bending-dominated body stretch it far (a slender beam's axis by θ²/2):
    # the residual norm then rises along a step that lowers the energy, and a residual line
    # search stalls (a 24-cell hex20 cantilever: 496 iterations and 34 cut-backs with it,
    # 20 iterations without a cut-back on the energy). "auto" takes full steps first and
    # searches on the energy only where they fail: the energy search too cuts the steps
    # of a slender beam that full Newton steps solve in a few iterations
    newton_defaults = MappingProxyType({"line_search": "auto"})
    #: the formulation this class solves (a subclass per other of :data:`FORMULATIONS`)
    formulation_name = FORMULATIONS[0]

    def __new__(cls, *args, formulation: str = FORMULATIONS[0], **options):
        if formulation not in FORMULATIONS:  # the mean dilatation's model: its subclass
            raise ValueError(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
        if cls is FiniteStrainElasticity and formulation != cls.formulation_name:
            # its subclass, which the package fesens.physics imports with this module
            cls = next(sub for sub in cls.__subclasses__()
                       if sub.formulation_name == formulation)
        return super().__new__(cls)

    def __init__(self, mesh: Mesh, E=1.0, nu=0.3, *, law: str | HyperelasticLaw = DEFAULT_LAW,
                 thickness: float = DEFAULT_THICKNESS, void_treatment: str = "none",
                 void_beta: float = DEFAULT_VOID_BETA, void_eta: float = DEFAULT_VOID_ETA,
                 formulation: str = FORMULATIONS[0], quadrature_order: int | None = None,
                 **constants):
        super().__init__(mesh, mesh.dim, thickness=thickness,
                         quadrature_order=quadrature_order)
        self.formulation = formulation
        self.law = resolve_law(law)
        self.plane = "strain" if mesh.dim == 2 else None
        #: the law's own constants (empty for a law of E and nu), ``(n_cells,)`` each
        self.constants: dict[str, np.ndarray] = {}
        if self.law.constants == LAME_CONSTANTS:
            if constants:
                raise TypeError(f"law {self.law.name!r} takes E and nu; unknown keyword(s) "
                                f"{sorted(constants)}")
            self.E = np.asarray(self.checked("E", E), dtype=float)
            self.nu = np.asarray(self.checked("nu", nu), dtype=float)
        else:
            self._take_constants(E, nu, constants, void_treatment)
        if void_treatment not in VOID_TREATMENTS:
            raise ValueError(f"void_treatment must be one of {VOID_TREATMENTS}, got "
                             f"{void_treatment!r}")
        if not (np.isfinite(void_beta) and void_beta > 0):
            raise ValueError(f"void_beta (the sharpness of the energy interpolation's step) "
                             f"must be a finite number > 0, got {void_beta!r}")
        if not 0.0 < void_eta < 1.0:
            raise ValueError(f"void_eta (the energy interpolation's threshold on the scale) "
                             f"must lie in (0, 1), got {void_eta!r}")
        self.void_treatment = void_treatment
        self.void_beta, self.void_eta = float(void_beta), float(void_eta)

    def _take_constants(self, E, nu, constants: dict, void_treatment: str) -> None:
        """The parameters of a law of other constants than ``λ, μ``: its constants and the
        scale, instead of ``E`` and ``nu``."""
        name, wanted = self.law.name, self.law.constants
        if (np.any(np.asarray(E) != 1.0) or np.any(np.asarray(nu) != 0.3)
                or set(constants) != set(wanted)):
            given = sorted(constants) + [k for k, v, default in (("E", E, 1.0), ("nu", nu, 0.3))
                                         if np.any(np.asarray(v) != default)]
            raise TypeError(f"law {name!r} takes the constants {', '.join(wanted)} (not E, "
                            f"nu); got {', '.join(given) or 'none'}")
        if "scale" in wanted:
            raise ValueError(f"law {name!r} names a constant 'scale', the model's density "
                             "scale: rename it")
        if void_treatment != "none":
            raise ValueError(f"void_treatment={void_treatment!r} models void cells by linear "
                             f"elasticity of λ and μ, which law {name!r} does not have")
        self.parameters = MappingProxyType({**law_parameters(self.law),
                                            "scale": type(self).parameters["scale"]})
        self.constants = {key: np.asarray(self.checked(key, value), dtype=float)
                          for key, value in constants.items()}
        self.law.check_constants_of(*(self.constants[key] for key in wanted))

    def __getattr__(self, name: str):
        """A law's constant ``(n_cells,)`` under its name, as ``E`` and ``nu`` are kept
        (what ``fesens sensitivity --wrt c10`` reads); only names no attribute has."""
        constants = self.__dict__.get("constants", {})
        if name in constants:
            return constants[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def check_parameters(self, parameters) -> None:
        """Raise TypeError naming the unknown parameter names and this model's (its law's
        constants, or ``E`` and ``nu``, and ``scale``)."""
        unknown = set(parameters) - set(self.parameters)
        if unknown:
            raise TypeError(f"unknown parameter(s) {sorted(unknown)}; this "
                            f"{type(self).__name__} (law {self.law.name!r}) accepts "
                            f"{', '.join(self.parameters)} (and loads, dirichlet, points)")

    # ------------------------------------------------------------ physics hooks
    def lame(self, E=None, nu=None) -> tuple:
        """Per-cell ``(λ, μ)`` ``(n_cells,)`` of the given (or the model's) ``E`` and ``nu``
        (3D or plane strain); traced when they are."""
        E = self.E if E is None else self.checked("E", E)
        nu = self.nu if nu is None else self.checked("nu", nu)
        return lame_constants(E, nu, self.plane)

    def material_fields(self, E=None, nu=None, scale=None, **constants) -> dict:
        """``{"lam": s λ, "mu": s μ}``, ``(n_cells,)`` each: the Lamé constants scaled by the
        density scale (those laws are linear in them), and under the energy interpolation
        with a scale ``"gamma"``, the step ``γ(s)`` ``(n_cells,)``; traced when a parameter
        is. A law of other constants: each constant (given, or the model's) and, with a
        scale, ``"scale"``.

        Raises
        ------
        ValueError
            ``E ≤ 0``, ``ν`` outside ``(−1, 0.5)``, ``scale ≤ 0`` or a constant outside its
            range, naming the parameter.
        """
        if self.constants:
            fields = {key: self.checked(key, constants.get(key, value))
                      for key, value in self.constants.items()}
            self.law.check_constants_of(*(fields[key] for key in self.law.constants))
            if scale is not None:
                fields["scale"] = self.checked("scale", scale)
            return fields
        lam, mu = self.lame(E, nu)
        if scale is None:
            return {"lam": lam, "mu": mu}
        scale = self.checked("scale", scale)
        fields = {"lam": scale * lam, "mu": scale * mu}
        if self.void_treatment == "energy_interpolation":
            fields["gamma"] = void_step(scale, self.void_beta, self.void_eta)
        return fields

    def _constants(self, fields) -> tuple:
        """The law's constants (the scaled Lamé constants) as ``(n_cells, 1)`` each against
        ``(n_cells, n_qp)``."""
        if self.constants:
            return tuple(fields[key][:, None] for key in self.law.constants)
        return fields["lam"][:, None], fields["mu"][:, None]

    @staticmethod
    def _scaled(values, fields):
        """``s values`` of a law of other constants than ``λ, μ`` given a scale, else
        ``values`` (``(n_cells, n_qp, ...)``)."""
        scale = fields.get("scale")
        if scale is None:
            return values
        return np.reshape(scale, (-1,) + (1,) * (np.ndim(values) - 1)) * values

    def law_cauchy(self, H, fields) -> tuple:
        """``(σ, σ_zz)`` of the law at ``H`` ``(n_cells, n_qp, dim, dim)`` with the fields'
        constants, scaled by ``s`` (:meth:`HyperelasticLaw.cauchy
        <fesens.physics.energy_law.HyperelasticLaw.cauchy>`; traced)."""
        sigma, sigma_zz = self.law.cauchy(H, *self._constants(fields))
        if not self.constants:
            return sigma, sigma_zz
        return (self._scaled(sigma, fields),
                None if sigma_zz is None else self._scaled(sigma_zz, fields))

    def _gamma(self, fields):
        """``γ`` as ``(n_cells, 1, 1, 1)`` against ``(n_cells, n_qp, dim, dim)``, or None
        without the energy interpolation."""
        gamma = fields.get("gamma")
        return None if gamma is None else np.reshape(gamma, (-1, 1, 1, 1))

    def _law_gradient(self, grad_q, fields):
        """The displacement gradient the finite-strain law sees: ``γ H`` under the energy
        interpolation, else ``H`` (``(n_cells, n_qp, dim, dim)``)."""
        gamma = self._gamma(fields)
        return grad_q if gamma is None else gamma * grad_q

    def flux(self, u_q, grad_q, fields):
        """``P = ∂(s W)/∂F`` ``(n_cells, n_qp, dim, dim)`` at ``F = I + grad_q``; under the
        energy interpolation ``γ P_NL(γH) + (1 − γ²) P_L(H)``."""
        if self.constants:
            return self._scaled(self.law.first_piola_of(grad_q, *self._constants(fields)),
                                fields)
        lam, mu = self._constants(fields)
        gamma = self._gamma(fields)
        if gamma is None:
            return self.law.first_piola_of(grad_q, lam, mu)
        return (gamma * self.law.first_piola_of(gamma * grad_q, lam, mu)
                + (1.0 - gamma * gamma) * linear_stress(grad_q, lam, mu))

    def flux_tangent(self, u_q, grad_q, fields) -> tuple:
        """``(A, None)``: ``A_iJkL = ∂P_iJ/∂F_kL`` ``(n_cells, n_qp, dim, dim, dim, dim)``
        (the law's hand-derived tangent; under the energy interpolation
        ``γ² A_NL(γH) + (1 − γ²) C``); ``P`` does not depend on ``u`` itself."""
        if self.constants:
            return self._scaled(self.law.tangent_of(grad_q, *self._constants(fields)),
                                _plain_fields(fields)), None
        lam, mu = self._constants(fields)
        gamma = self._gamma(fields)
        if gamma is None:
            return self.law.tangent_of(grad_q, lam, mu), None
        gamma = np.asarray(gamma)
        solid = gamma[..., None, None] ** 2
        C = linear_tangent(np.broadcast_to(lam, np.shape(grad_q)[:2]),
                            np.broadcast_to(mu, np.shape(grad_q)[:2]), np.shape(grad_q)[-1])
        return (solid * self.law.tangent_of(gamma * grad_q, lam, mu)
                + (1.0 - solid) * C), None

    def energy(self, u_q, grad_q, fields):
        """Stored energy density ``s W`` ``(n_cells, n_qp)`` per unit reference volume;
        under the energy interpolation ``s [W_NL(γH) + (1 − γ²) W_L(H)]``."""
        if self.constants:
            return self._scaled(self.law.energy_of(grad_q, *self._constants(fields)), fields)
        lam, mu = self._constants(fields)
        gamma = self._gamma(fields)
        if gamma is None:
            return self.law.energy_of(grad_q, lam, mu)
        return (self.law.energy_of(gamma * grad_q, lam, mu)
                + (1.0 - gamma[..., 0, 0] ** 2) * linear_energy(grad_q, lam, mu))

    def inadmissible(self, u_q, grad_q, fields) -> str | None:
        """Names the inverted cells: ``det F ≤ 0`` at one of their quadrature points (of
        ``F = I + γH`` under the energy interpolation); else the cells beyond the limit of
        the law's domain (Gent's ``Ī₁ − 3 < J_m``, :func:`~fesens.physics.rubber_laws.
        domain_limit`), naming the first point."""
        grad_q = self._law_gradient(np.asarray(grad_q), fields)
        bad = np.flatnonzero(inverted_points(grad_q).any(axis=1))
        if bad.size == 0:
            return self._beyond_limit(grad_q, fields)
        J = np.linalg.det(grad_q + np.eye(np.shape(grad_q)[-1]))
        return (f"det F <= 0 (down to {J.min():.3g}): {bad.size} inverted element(s) "
                f"{bad[:10].tolist()}{' ...' if bad.size > 10 else ''}; the deformation "
                "turns them inside out, which no hyperelastic law allows: check the loads "
                "and supports, or use more load steps or a finer mesh there")

    def _beyond_limit(self, grad_q, fields) -> str | None:
        limit = domain_limit(self.law)
        if limit is None:
            return None
        mask, value, bound = limit.beyond(grad_q, *self._constants(fields))
        if not mask.any():
            return None
        cells = np.flatnonzero(mask.any(axis=1))
        cell, point = (int(i) for i in np.argwhere(mask)[0])
        return (f"law {self.law.name!r} is defined for {limit.statement} only: beyond it at "
                f"{int(mask.sum())} quadrature point(s) of {cells.size} cell(s) "
                f"{cells[:10].tolist()}{' ...' if cells.size > 10 else ''}, the first at cell "
                f"{cell}, point {point}, with {value[cell, point]:.6g} against "
                f"{bound[cell, point]:.6g}: the deformation stretches the chains past their "
                "limit; check the loads and prescribed values, or use more load steps")

    # ------------------------------------------------------------ loads (named as in elasticity)
    traction = Elasticity.traction
    body_force = Elasticity.body_force

    def pressure(self, where: Where, p: FieldSpec, *, name: str | None = None,
                 follower: bool = False) -> str:
        """Normal pressure on a facet set; positive pushes into the body.

        Parameters
        ----------
        where : str or callable
            A facet-set name or a predicate of the boundary facets' nodes.
        p : float, callable or array_like
            Dead: per unit reference area, a number or a function of the coordinates.
            Follower: per unit current area, a number or one per facet ``(n_facets,)``.
        name : str, optional
            Name of the load (default: generated); returned.
        follower : bool
            False: a dead load along the reference outward normal, ``t = −p N`` per unit
            reference area (it does not follow the deformation). True: the pressure acts
            on the deformed facet along its current normal, ``f = −∫ p n da = −∫ p J F⁻ᵀ N
            dA`` (Bonet & Wood 2008, §8.4.1): a gas or fluid pressure. Its load stiffness
            joins the tangent, which is then not symmetric (``auto``: LU); the load factor
            ramps it like a dead load, in the load steps and ``at_load_factors`` (see
            :class:`~fesens.fem.model.nonlinear.NonlinearModel`).
        """
        if follower:
            return self.follower_surface_load(where, p, name=name, kind="pressure")
        return self.surface_load(where, pressure=p, name=name, kind="pressure")


FiniteStrainElasticity.__signature__ = inspect.Signature(  # __init__'s keywords, not __new__'s
    list(inspect.signature(FiniteStrainElasticity.__init__).parameters.values())[1:])


def _plain_fields(fields: dict) -> dict:
    """The fields' raw values (the tangent is plain numpy)."""
    return {key: getval(value) for key, value in fields.items()}
