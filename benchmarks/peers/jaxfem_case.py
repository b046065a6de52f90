"""jax-fem's side of ``bench_nonlinear_peers.py``: one case of :mod:`cantilever`.

Run in the peers' environment (``make peers``), one process per case::

    .peers/bin/python benchmarks/peers/jaxfem_case.py --case '{"size": "16x8x8"}'

The model follows jax-fem's hyperelasticity example (``demos/hyperelasticity``, the
documentation's ``learn/hyperelasticity/example.ipynb``): a ``Problem`` whose
``get_tensor_map`` returns ``P = jax.grad(psi)`` at ``F = I + ∇u``, HEX8 cells with jax-fem's
default 2x2x2 Gauss points. That example's ``psi`` is the isochoric/volumetric split
``μ/2 (J^(-2/3) I_C − 3) + κ/2 (J − 1)²``; torch-fem has no such example, so both codes are
given the same compressible neo-Hookean ``psi`` of :mod:`cantilever` instead (jax-fem takes
any ``psi``), with ``θ_e`` a per-quadrature-point internal variable (``set_params``), as in
jax-fem's inverse-problem demos. The traction is a surface map on ``x = L`` whose load factor
is a surface internal variable (jax-fem's residual is ``∫ P : ∇v + ∫ s · v``, so the map
returns ``s = −t``). Load steps: ``solver`` once per step from the previous step's solution
(``initial_guess``); Newton with ``rel_tol = RTOL, tol = ATOL``; linear solves by
``umfpack_solver``, which is scipy's ``spsolve`` (SuperLU without scikit-umfpack, as in
torch-fem's direct method). The gradient is jax-fem's own ``ad_wrapper`` (one adjoint solve
at the converged state, then a VJP of the residual in the parameters) around the last load
step: a hyperelastic equilibrium does not depend on the path to it, so the gradient of the
last step's solution is the gradient of the load-stepped one.
"""

from __future__ import annotations

import logging
from importlib.metadata import version

import jax
import jax.numpy as jnp
import numpy as np
from cantilever import ATOL, LAMBDA, MU, RTOL, STEPS, TRACTION, Cantilever
from harness import Forward, ValueAndGrad, serve


def psi(F: jnp.ndarray, theta: jnp.ndarray) -> jnp.ndarray:
    """Compressible neo-Hookean ``W(F)`` of one point scaled by ``theta``."""
    log_J = jnp.log(jnp.linalg.det(F))
    return theta * (MU / 2 * (jnp.trace(F.T @ F) - 3.0) - MU * log_J
                    + LAMBDA / 2 * log_J**2)


def build(problem: Cantilever) -> tuple[Forward, ValueAndGrad]:
    """The forward and gradient functions of jax-fem's model of ``problem``."""
    from jax_fem import logger
    from jax_fem.generate_mesh import Mesh
    from jax_fem.problem import Problem
    from jax_fem.solver import ad_wrapper, solver

    logger.setLevel(logging.WARNING)  # jax-fem logs every Newton iteration at INFO
    length = problem.lengths[0]

    class NeoHookean(Problem):
        load_factor = 1.0

        def get_tensor_map(self):
            first_piola = jax.grad(psi)

            def stress(u_grad, theta):
                return first_piola(u_grad + jnp.eye(self.dim), theta)

            return stress

        def get_surface_maps(self):
            def minus_traction(u, x, factor):
                return jnp.array([0.0, TRACTION * factor, 0.0])

            return [minus_traction]

        def set_params(self, theta):
            fe = self.fes[0]
            self.internal_vars = [theta[:, None] * jnp.ones((1, fe.num_quads))]
            faces = self.boundary_inds_list[0].shape[0]
            self.internal_vars_surfaces = [[self.load_factor
                                            * jnp.ones((faces, fe.num_face_quads))]]

    def clamped(point):
        return jnp.isclose(point[0], 0.0, atol=1e-8)

    def loaded(point):
        return jnp.isclose(point[0], length, atol=1e-8)

    def zero(point):
        return 0.0

    points = problem.points()
    model = NeoHookean(Mesh(points, problem.cells(), ele_type="HEX8"), vec=3, dim=3,
                       ele_type="HEX8", dirichlet_bc_info=[[clamped] * 3, [0, 1, 2], [zero] * 3],
                       location_fns=[loaded])
    load = jnp.asarray(problem.nodal_load(points))
    options = {"umfpack_solver": {}, "rel_tol": RTOL, "tol": ATOL}

    def solve_steps(theta: jnp.ndarray, steps: int) -> list | None:
        """Solutions after load steps 1..steps (None for none)."""
        solution = None
        for step in range(1, steps + 1):
            model.load_factor = step / STEPS
            model.set_params(theta)
            guess = {} if solution is None else {"initial_guess": solution}
            solution = solver(model, {**options, **guess})
        return solution

    def forward(theta: np.ndarray) -> float:
        solution = solve_steps(jnp.asarray(theta), STEPS)
        return float(jnp.sum(load * solution[0]))

    def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        theta = jnp.asarray(theta)
        previous = solve_steps(theta, STEPS - 1)
        model.load_factor = 1.0
        guess = {} if previous is None else {"initial_guess": previous}
        last_step = ad_wrapper(model, {**options, **guess}, {"umfpack_solver": {}})
        value, gradient = jax.value_and_grad(
            lambda th: jnp.sum(load * last_step(th)[0]))(theta)
        return float(value), np.asarray(gradient)

    return forward, value_and_grad


if __name__ == "__main__":
    serve("jax-fem", {"jax-fem": version("jax-fem"), "jax": jax.__version__}, build)
