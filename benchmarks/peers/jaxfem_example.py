"""jax-fem's own hyperelasticity example, run as jax-fem ships it (``bench_jaxfem_example.py``).

Run in the peers' environment (``make peers``), one fresh process::

    .peers/bin/python benchmarks/peers/jaxfem_example.py --out /tmp/jaxfem.npz [--n 20]

The problem is the example of jax-fem's documentation (``learn/hyperelasticity``, the
``demos/hyperelasticity/example.py`` of jax-fem 0.0.7 to 0.0.11), unchanged: a unit cube of
``n³ = 20³`` HEX8 cells meshed by ``box_mesh_gmsh``, the energy
``ψ(F) = μ/2 (J^(-2/3) I_C − 3) + κ/2 (J − 1)²`` with ``E = 10, ν = 0.3`` (``μ = E/(2(1 + ν))``,
``κ = E/(3(1 − 2ν))``), ``P = jax.grad(ψ)``; ``u = 0`` on ``x = 0`` and on ``x = 1``
``u_x = 0`` with ``(u_y, u_z)`` half the displacement of a rotation by ``π/3`` about the
face's centre; one ``solver(problem, {'petsc_solver': {}})`` call (Newton from ``u = 0``
to ``‖R‖ < 1e-6`` or ``‖R‖ < 1e-8 ‖R₀‖``, PETSc BiCGStab(ℓ) with ILU(0) at PETSc's default
``rtol = 1e-5`` for each linear solve).

The example computes no gradient; the gradient measured here is jax-fem's own
``ad_wrapper`` (its forward solve with the example's solver options, one adjoint solve with
the same linear solver, a VJP of the residual) of ``J = ½ Σ u²`` (every nodal
displacement) with respect to a per-cell factor ``θ`` of ``ψ`` at ``θ = 1`` (jax-fem's
internal variables, as in its inverse-problem demos): at ``θ = 1`` the same problem.

Measured: the set-up (mesh and ``Problem``), a cold and ``--repeats`` warm forward solves
and gradients (medians; JAX compiles in the cold ones), the peak resident memory of the
warm ones above what is resident before them, and the process's peak. Prints one
``BENCH-RESULT`` line of JSON; ``--out`` receives the mesh, the solution and the gradient.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import (  # noqa: E402  (the benchmarks folder is put on the path just above)
    RESULT_PREFIX,
    peak_rss_mb,
    resident_mb,
    timed_warm,
)

jax.config.update("jax_enable_x64", True)  # jax-fem's own setting, made on its import too

#: The example's constants.
E, NU = 10.0, 0.3
MU, KAPPA = E / (2.0 * (1.0 + NU)), E / (3.0 * (1.0 - 2.0 * NU))
LENGTH = 1.0
TWIST = np.pi / 3.0


def psi(F):
    """The example's energy of one point (verbatim but for the names)."""
    J = jnp.linalg.det(F)
    return MU / 2.0 * (J ** (-2.0 / 3.0) * jnp.trace(F.T @ F) - 3.0) + KAPPA / 2.0 * (J - 1.0) ** 2


def dirichlet_bc_info():
    """The example's supports: clamped at ``x = 0``, the twisted face at ``x = 1``."""
    def left(point):
        return jnp.isclose(point[0], 0.0, atol=1e-5)

    def right(point):
        return jnp.isclose(point[0], LENGTH, atol=1e-5)

    def zero(point):
        return 0.0

    def twist_y(point):
        return (0.5 + (point[1] - 0.5) * jnp.cos(TWIST) - (point[2] - 0.5) * jnp.sin(TWIST)
                - point[1]) / 2.0

    def twist_z(point):
        return (0.5 + (point[1] - 0.5) * jnp.sin(TWIST) + (point[2] - 0.5) * jnp.cos(TWIST)
                - point[2]) / 2.0

    return [[left] * 3 + [right] * 3, [0, 1, 2] * 2, [zero, twist_y, twist_z] + [zero] * 3]


def build(n: int, data_dir: str):
    """The example's ``Problem`` and a twin whose ``ψ`` carries a per-cell factor ``θ``."""
    from jax_fem.generate_mesh import Mesh, box_mesh_gmsh, get_meshio_cell_type
    from jax_fem.problem import Problem

    class HyperElasticity(Problem):
        def get_tensor_map(self):
            first_piola = jax.grad(psi)

            def stress(u_grad):
                return first_piola(u_grad + jnp.eye(self.dim))

            return stress

    class ScaledHyperElasticity(Problem):
        def get_tensor_map(self):
            first_piola = jax.grad(lambda F, theta: theta * psi(F))

            def stress(u_grad, theta):
                return first_piola(u_grad + jnp.eye(self.dim), theta)

            return stress

        def set_params(self, theta):
            self.internal_vars = [theta[:, None] * jnp.ones((1, self.fes[0].num_quads))]

    meshio_mesh = box_mesh_gmsh(Nx=n, Ny=n, Nz=n, domain_x=LENGTH, domain_y=LENGTH,
                                domain_z=LENGTH, data_dir=data_dir, ele_type="HEX8")
    mesh = Mesh(meshio_mesh.points, meshio_mesh.cells_dict[get_meshio_cell_type("HEX8")])
    kwargs = {"vec": 3, "dim": 3, "ele_type": "HEX8", "dirichlet_bc_info": dirichlet_bc_info()}
    return mesh, HyperElasticity(mesh, **kwargs), ScaledHyperElasticity(mesh, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="cells per edge (the example: 20)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="npz of mesh and results")
    args = parser.parse_args()

    from jax_fem import logger
    from jax_fem.solver import ad_wrapper, solver

    logger.setLevel(logging.WARNING)  # jax-fem logs every Newton iteration at INFO
    options = {"petsc_solver": {}}    # the example's
    result = {"code": "jax-fem", "n": args.n,
              "versions": {name: version(name) for name in ("jax-fem", "jax", "petsc4py")}}
    with tempfile.TemporaryDirectory() as data_dir:
        start = time.perf_counter()
        mesh, problem, scaled = build(args.n, data_dir)
        result["setup_s"] = time.perf_counter() - start
    theta = jnp.ones(len(mesh.cells))
    gradient_of = jax.value_and_grad(
        lambda th: 0.5 * jnp.sum(ad_wrapper(scaled, options, options)(th)[0] ** 2))

    def forward():
        return np.asarray(solver(problem, options)[0])

    def value_and_grad():
        value, gradient = gradient_of(theta)
        return float(value), np.asarray(gradient)

    start = time.perf_counter()
    forward()
    result["forward_cold_s"] = time.perf_counter() - start
    start = time.perf_counter()
    value_and_grad()
    result["gradient_cold_s"] = time.perf_counter() - start
    peaks = [peak_rss_mb()]
    result["resident_mb"] = resident_mb()
    result["forward_s"], result["forward_peak_mb"], peak, u = timed_warm(forward, args.repeats)
    peaks.append(peak)
    result["gradient_s"], result["gradient_peak_mb"], peak, (value, gradient) = timed_warm(
        value_and_grad, args.repeats)
    peaks.append(peak)
    result["process_peak_mb"] = max(*peaks, peak_rss_mb())
    result["objective"] = value
    np.savez(args.out, points=np.asarray(mesh.points), cells=np.asarray(mesh.cells),
             u=u, gradient=gradient)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
