"""jax-fem's side of ``bench_plasticity_peers.py``: one case of :mod:`plastic_block`.

Run in the peers' environment (``make peers``), one process per case::

    .peers/bin/python benchmarks/peers/jaxfem_plasticity.py --case '{"size": "8x8x8"}'

The model is jax-fem's plasticity demo (``demos/plasticity/example.py``): a ``Problem`` whose
``get_tensor_map`` is the radial return ``σ(∇u; σ_n, ε_n)`` with the previous increment's
stress and strain as internal variables per quadrature point, jax-fem's tangent its
forward-mode derivative (the consistent tangent), the top face's prescribed ``u_z`` reset
per increment by ``update_Dirichlet_boundary_conditions`` and ``solver`` called once per
increment from the previous increment's solution; after each, the stress and strain are
advanced (the demo's ``update_stress_strain``). Changed from the demo, to solve the common
problem: linear isotropic hardening (the equivalent plastic strain ``ᾱ`` a third internal
variable, ``Δᾱ = f / (3G + H)``), ``E`` a per-cell internal variable ``θ_e E``, the bottom
clamped in all components, the demo's ``safe_sqrt``/``safe_divide`` written with a second
``where`` (a NaN-free derivative at a zero deviator, where the first increment's Newton
starts), and ``umfpack_solver`` (scipy's ``spsolve``, SuperLU without scikit-umfpack) with
``rel_tol = 0, tol = ATOL`` instead of the demo's PETSc BiCGStab(ℓ)/ILU, which its free x-y
rigid motions needed.

The reaction is ``compute_residual_vars`` (the residual without Dirichlet rows: the internal
force) on the top face's z dofs. The gradient is jax-fem's ``ad_wrapper`` per increment (its
code, keeping the solution as numbers for the next increment's guess), its parameters the
per-cell factor and the previous increment's state ``(θ, σ_n, ε_n, ᾱ_n)``: each increment's
adjoint (``implicit_vjp``: one transposed solve at the converged state, then the residual's
pullback) gives the cotangents of the previous state, and ``jax.grad`` of the loop over
increments chains them, the state update and the reactions being traced jax code.
The demo itself differentiates nothing; this is the path-dependent adjoint assembled from
jax-fem's own parts.
"""

from __future__ import annotations

import logging
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np
from plastic_block import (
    AMPLITUDE,
    ATOL,
    FACTORS,
    HARDENING,
    LENGTH,
    POISSON,
    YIELD_STRESS,
    YOUNG,
    PlasticBlock,
)
from plastic_harness import Forward, ValueAndGrad, serve

jax.config.update("jax_enable_x64", True)


def strain(u_grad: jnp.ndarray) -> jnp.ndarray:
    return 0.5 * (u_grad + u_grad.T)


def return_map(u_grad: jnp.ndarray, theta: jnp.ndarray, sigma_old: jnp.ndarray,
               epsilon_old: jnp.ndarray, alpha_old: jnp.ndarray
               ) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The stress and equivalent plastic strain after the increment to ``∇u`` (the demo's
    ``stress_return_map`` with linear isotropic hardening): radial return of the trial
    stress ``σ_n + C : Δε`` to ``q = σ_y + H ᾱ``."""
    young = theta * YOUNG
    shear = young / (2.0 * (1.0 + POISSON))
    lame = young * POISSON / ((1.0 + POISSON) * (1.0 - 2.0 * POISSON))
    increment = strain(u_grad) - epsilon_old
    trial = sigma_old + lame * jnp.trace(increment) * jnp.eye(3) + 2.0 * shear * increment
    deviator = trial - jnp.trace(trial) / 3.0 * jnp.eye(3)
    squared = 1.5 * jnp.sum(deviator * deviator)
    positive = squared > 0.0
    mises = jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0)
    excess = mises - (YIELD_STRESS + HARDENING * alpha_old)
    plastic = excess > 0.0
    d_alpha = jnp.where(plastic, excess, 0.0) / (3.0 * shear + HARDENING)
    factor = jnp.where(plastic, 3.0 * shear * d_alpha / jnp.where(plastic, mises, 1.0), 0.0)
    return trial - factor * deviator, alpha_old + d_alpha


def build(problem: PlasticBlock) -> tuple[Forward, ValueAndGrad]:
    """The forward and gradient functions of jax-fem's model of ``problem``."""
    from jax_fem import logger
    from jax_fem.generate_mesh import Mesh
    from jax_fem.problem import Problem
    from jax_fem.solver import implicit_vjp, solver

    logger.setLevel(logging.WARNING)  # jax-fem logs every Newton iteration at INFO

    class Plasticity(Problem):
        def get_tensor_map(self):
            def stress(u_grad, theta, sigma_old, epsilon_old, alpha_old):
                return return_map(u_grad, theta, sigma_old, epsilon_old, alpha_old)[0]

            return stress

        def set_params(self, params):
            self.internal_vars = list(params)

    def bottom(point):
        return jnp.isclose(point[2], 0.0, atol=1e-8)

    def top(point):
        return jnp.isclose(point[2], LENGTH, atol=1e-8)

    def zero(point):
        return 0.0

    def dirichlet(factor: float) -> list:
        def lift(point):
            return factor * AMPLITUDE

        return [[bottom] * 3 + [top], [0, 1, 2, 2], [zero] * 3 + [lift]]

    points = problem.points()
    model = Plasticity(Mesh(points, problem.cells(), ele_type="HEX8"), vec=3, dim=3,
                       ele_type="HEX8", dirichlet_bc_info=dirichlet(0.0))
    fe = model.fes[0]
    n_quads = fe.num_quads
    top_nodes = jnp.asarray(np.flatnonzero(problem.top(points)))
    options = {"umfpack_solver": {}, "rel_tol": 0.0, "tol": ATOL}
    adjoint_options = {"umfpack_solver": {}}
    last = {}  # the last increment's solution as numbers: the next increment's guess

    # jax-fem's ad_wrapper with one change: it also keeps the solution it computed, as
    # numbers, for the next increment's initial guess (the traced solution a loop under
    # jax.grad holds cannot be given to solver as its guess: it would escape the trace).
    @jax.custom_vjp
    def solve_increment(params):
        model.set_params(params)
        last["initial_guess"] = solver(model, {**options, **last})
        return last["initial_guess"]

    def solve_forward(params):
        solution = solve_increment(params)
        return solution, (params, solution)

    def solve_backward(saved, cotangent):
        params, solution = saved
        return (implicit_vjp(model, solution, params, cotangent, adjoint_options),)

    solve_increment.defvjp(solve_forward, solve_backward)
    point_map = jax.vmap(jax.vmap(return_map))

    @jax.jit
    def advance(solution, theta_q, sigma, epsilon, alpha):
        """The state after an increment's solution and the top face's reaction."""
        u_grads = fe.sol_to_grad(solution)
        internal = [theta_q, sigma, epsilon, alpha]
        force = model.compute_residual_vars([solution], internal, model.internal_vars_surfaces)
        new_sigma, new_alpha = point_map(u_grads, theta_q, sigma, epsilon, alpha)
        return new_sigma, jax.vmap(jax.vmap(strain))(u_grads), new_alpha, \
            jnp.sum(force[0][top_nodes, 2])

    def history(theta, differentiable: bool):
        theta_q = theta[:, None] * jnp.ones((1, n_quads))
        sigma = jnp.zeros((problem.n_cells, n_quads, 3, 3))
        epsilon, alpha = jnp.zeros_like(sigma), jnp.zeros((problem.n_cells, n_quads))
        reactions = [jnp.zeros(())]
        last.clear()
        for factor in FACTORS[1:]:
            fe.update_Dirichlet_boundary_conditions(dirichlet(float(factor)))
            params = (theta_q, sigma, epsilon, alpha)
            if differentiable:
                solution = solve_increment(params)[0]
            else:
                model.set_params(params)
                last["initial_guess"] = solver(model, {**options, **last})
                solution = last["initial_guess"][0]
            sigma, epsilon, alpha, reaction = advance(solution, *params)
            reactions.append(reaction)
        return jnp.stack(reactions)

    def forward(theta: np.ndarray) -> np.ndarray:
        return np.asarray(history(jnp.asarray(theta), False))

    def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = jax.value_and_grad(lambda th: history(th, True)[-1])(
            jnp.asarray(theta))
        return float(value), np.asarray(gradient)

    return forward, value_and_grad


if __name__ == "__main__":
    serve("jax-fem", {"jax-fem": version("jax-fem"), "jax": jax.__version__}, build)
