"""Design problems of time-dependent analyses: a time aggregate of a transient or dynamic
run (e.g. the peak temperature under a pulsed heat load), and the dynamic compliance of a
harmonic response (N. Olhoff and J. Du, "Generalized incremental frequency method for
topological design of continuum structures for minimum dynamic compliance subject to
forced vibration at a prescribed low or high value of the excitation frequency", Struct.
Multidisc. Optim. 54, 2016, 1113–1141).

Both are :class:`~fesens.opt.problem.DesignProblem` subclasses whose traced "solve" is the
run's one primitive (:meth:`~fesens.fem.transient.TransientProblem.values`, its VJP the
discrete adjoint) or :class:`~fesens.fem.transient.HarmonicAnalysis`, so the same loop,
filters, optimizers and checkpoints run them. The stiffness is the interpolation ``s(ρ)``;
the coefficient of the time derivative (heat capacity or mass) is the interpolation's
``mass(ρ)`` where it has one (Du & Olhoff, Pedersen), else linear in ``ρ``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.solution import Solution
from fesens.fem.transient import HarmonicAnalysis, TransientProblem
from fesens.opt.interpolation import Interpolation
from fesens.opt.problem import DesignProblem


def mass_factor(interpolation: Interpolation | None, rho):
    """The mass factor of densities ``rho`` ``(n_cells,)`` (traced): the interpolation's
    :meth:`~fesens.opt.interpolation.Interpolation.mass` (``ρ`` itself unless it
    ``interpolates_mass``), ``ρ`` without an interpolation."""
    return rho if interpolation is None else interpolation.mass(rho)


@dataclass
class TimeState:
    """What a time-dependent design's solve gives its objective.

    Attributes
    ----------
    values : array
        The traced per-level values ``(N + 1,)`` of a run, or the per-frequency values
        ``(n_omegas,)`` of a harmonic response.
    field : callable
        ``field() -> u`` ``(n_dofs,)``: the plain field shown for the design (the last
        level, or the real part of the response at the first frequency).
    model : LinearModel or NonlinearModel
    scale : array
        The stiffness scale of the solve ``(n_cells,)``.
    """

    values: object
    field: Callable[[], np.ndarray]
    model: object
    scale: object

    def detached(self) -> Solution:
        """The physics' solution of :attr:`field` at the design's stiffness (for output)."""
        model = self.model
        scale = getval(self.scale)
        u = np.asarray(self.field(), dtype=float)
        f = np.asarray(getval(model.load_vector(None, None)), dtype=float)
        if isinstance(model, NonlinearModel):
            # a nonlinear solution's coefficients are its material fields (the flux reads
            # them by name), which the run built from the same stiffness scale
            fields = model.material_fields(scale=scale)
            return model.solution_class(model, u, f, list(fields.values()),
                                        {"scale": scale}, fields=fields)
        return model.solution_class(model, u, f, model.coefficients(scale=scale),
                                    {"scale": scale})


class TransientDesignProblem(DesignProblem):
    """Density-based design of a time aggregate of a transient or dynamic run.

    Parameters
    ----------
    model : LinearModel or NonlinearModel
        A nonlinear model's run steps by Newton; the stiffness scale enters its material
        fields as the ``scale`` of its solve.
    run : TransientProblem
        The run (a :class:`~fesens.fem.transient.DynamicProblem` for a second time
        derivative) of ``model``.
    step_term : callable
        ``j(u, t, *term_args)`` of :meth:`TransientProblem.values`.
    aggregate : callable
        ``aggregate(values) -> float``: the objective over the levels ``(N + 1,)``
        (traced), minimized.
    run_inputs : callable
        ``run_inputs(mass) -> dict``: the keywords of ``run.values`` besides the step term
        and the stiffness scale, given the per-cell mass factor ``m(ρ)`` ``(n_cells,)``.
    term_args : tuple or callable
        Further arguments of ``step_term``: constant, or ``term_args(scale, ρ) -> tuple``
        of the stiffness scale ``(n_cells,)`` and the densities ``(n_cells,)`` of each
        solve (traced: e.g. the stress of a level, which reads the scale).
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (no ``constraints``, ``load_cases``).
    """

    def __init__(self, model, run: TransientProblem, step_term: Callable,
                 aggregate: Callable, run_inputs: Callable, *,
                 term_args: tuple | Callable = (), **options):
        for key in ("constraints", "load_cases"):
            if options.get(key):
                raise ValueError(f"a time-dependent design takes no {key}")
        super().__init__(model, lambda state, rho: aggregate(state.values), **options)
        self.run, self.step_term, self.run_inputs = run, step_term, run_inputs
        self.term_args = term_args if callable(term_args) else tuple(term_args)

    def solve(self, rho) -> TimeState:
        """The per-level values of the run at densities ``ρ`` (one traced primitive)."""
        scale = self.interpolation(rho)
        last = float(self.run.times[-1])
        kept = {}

        def term(u, t, *args):
            if t == last:  # the field shown for the design
                kept["u"] = getval(u)
            return self.step_term(u, t, *args)

        args = (self.term_args(scale, rho) if callable(self.term_args)
                else self.term_args)
        values = self.run.values(term, term_args=args, scale=scale,
                                 **self.run_inputs(mass_factor(self.interpolation, rho)))
        return TimeState(values, lambda: kept["u"], self.model, scale)


class HarmonicDesignProblem(DesignProblem):
    """Density-based design of the response to a harmonic load: the objective is
    ``w Σ_ω |j(u(ω))|`` for a functional ``j`` linear in the field (the dynamic compliance
    ``|f · u|`` of Olhoff & Du, or an amplitude ``|u_d|``) and a weight ``w``, minimized
    (``w < 0`` maximizes the response).

    Parameters
    ----------
    model : LinearModel
        Its supports fixed at 0 and its loads (the amplitude ``f``).
    omegas : array_like
        Angular driving frequencies ``(n_omegas,)``.
    functional : callable
        ``j(u) -> float`` of a real field ``(n_dofs,)``, linear in ``u``; applied to the
        real and imaginary parts.
    weight : float
        ``w``, applied outside the magnitude (inside, its sign would vanish in ``|·|``).
    density : float
        The solid's mass density (times ``m(ρ)``).
    damping : (float, float)
        Rayleigh ``(c_M, c_K)``.
    lumped : bool
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (no ``constraints``, ``load_cases``).
    """

    def __init__(self, model, omegas, functional: Callable, *, weight: float = 1.0,
                 density: float = 1.0, damping=(0.0, 0.0), lumped: bool = False,
                 **options):
        for key in ("constraints", "load_cases"):
            if options.get(key):
                raise ValueError(f"a harmonic design takes no {key}")
        super().__init__(model, lambda state, rho: np.sum(state.values), **options)
        self.omegas = np.asarray(omegas, dtype=float)
        self.functional, self.weight = functional, float(weight)
        self.material_density = float(density)
        self.damping, self.lumped = tuple(damping), bool(lumped)

    def solve(self, rho) -> TimeState:
        """``w |j(u(ω))|`` per driving frequency at densities ``ρ`` (traced)."""
        scale = self.interpolation(rho)
        response = HarmonicAnalysis(self.model, lumped=self.lumped).run(
            self.omegas, scale=scale, damping=self.damping,
            density=self.material_density * mass_factor(self.interpolation, rho))
        values = self.weight * response.magnitudes(self.functional)
        return TimeState(values, lambda: getval(response.real[0]), self.model, scale)
