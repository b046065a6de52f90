"""Finite-strain gradient: fesens against a hand-written jitted JAX + CHOLMOD implementation.

The discrete problem both solve: a plane-strain cantilever ``[0, nx/ny] x [0, 1]`` of
``nx x ny`` square quad4 cells (2x2 Gauss points), compressible neo-Hookean
``W = θ_e (μ/2 (I_C − 3) − μ ln J + λ/2 (ln J)²)`` (Bonet & Wood 2008, eq. 6.27; ``E = 1``,
``ν = 0.3``; plane strain: ``I_C = tr C + 1``), clamped at ``x = 0``, a downward dead
traction ``p`` per unit reference length on ``x = L``, ``STEPS`` equal load steps of full
Newton steps to ``‖R_free‖₂ < atol`` (``atol = 1e-9 ‖f‖``: tighter stalls at round-off at
400x80; ``rtol = 0``), and
``J = f · u`` with its gradient in the load magnitude ``p`` and every cell's density scale
``θ`` (shape ``(n_cells,)``).

* **fesens**: ``FiniteStrainElasticity`` (``solver="cholmod"``, no warm start: every call
  follows the whole load path) and ``fesens.ad.value_and_grad``; no compile step.
* **jax**: the residual jitted by ``jax.jit`` (cell forces from ``P`` at the Gauss points,
  scattered by ``.at[].add``), the cell tangents by ``jax.vmap(jax.jacfwd)`` of the per-cell
  residual (jitted), summed onto the CSC pattern of the free dofs by ``numpy.bincount``,
  factorized by CHOLMOD (``sksparse.cholmod``, one symbolic analysis, ``cholesky_inplace``
  per iteration), the same Newton; the adjoint: one transposed solve with Newton's last
  factorization, refined by products ``Kᵀλ`` (``jax.vjp`` of the residual in ``u``) to
  ``1e-12``, and ``jax.vjp`` of the residual in ``θ`` (``∂J/∂p = f̂·u + λ·f̂``). Its mesh,
  clamped dofs and load vector are read from fesens's model (set-up, not timed): the two
  discretize the same problem node for node.

Each case runs in its own process (``_common.run_case``) on one core; one BLAS thread. Times are
CPU time (``time.process_time``), minimum over ``--repeats`` calls, each with new inputs
(``p`` and ``θ`` change per call); the first call (JAX: tracing and compiling) is reported
apart. The values are compared (the ratio of ``J`` and the gradients' relative difference,
both at the Newton tolerance).

    python benchmarks/bench_hyper_jax.py [--sizes 100x20 200x40 400x80] [--quick] [--append]
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import (
    load_average,
    load_line,
    machine_lines,
    ratio,
    record,
    run_case,
    seconds,
    serve_case,
    set_child_threads,
    size_arguments,
    table,
)

SIZES = ("100x20", "200x40", "400x80")
QUICK_SIZES = ("40x8",)
STEPS = 5
#: Traction per unit reference length: the tip moves by about a tenth of the length.
TRACTION = 2e-3
YOUNG, POISSON = 1.0, 0.3
MU = YOUNG / (2.0 * (1.0 + POISSON))
LAMBDA = YOUNG * POISSON / ((1.0 + POISSON) * (1.0 - 2.0 * POISSON))


def inputs(call: int, n_cells: int) -> tuple[float, np.ndarray]:
    """The load magnitude and density scales of timed call ``call`` (new every call)."""
    rng = np.random.default_rng(call)
    return TRACTION * (1.0 + 0.01 * call), rng.uniform(0.9, 1.1, n_cells)


def fesens_model(size: str):
    """The cantilever in fesens, its unit load vector ``f̂`` ``(n_dofs,)`` and Newton
    options."""
    from fesens.mesh import rectangle
    from fesens.physics.hyperelasticity import FiniteStrainElasticity

    nx, ny = (int(n) for n in size.split("x"))
    model = FiniteStrainElasticity(rectangle(nx, ny, nx / ny, 1.0, cell_type="quad4"),
                                   E=YOUNG, nu=POISSON, law="neo-hookean")
    model.fix("left")
    model.traction("right", (0.0, -1.0), name="tip")
    unit_load = np.asarray(model.load_vector())
    atol = 1e-9 * TRACTION * np.linalg.norm(unit_load)
    newton = {"rtol": 0.0, "atol": atol, "stol": 0.0, "line_search": None,
              "adaptive": False, "steps": STEPS}
    return model, unit_load, newton


def fesens_gradient(size: str) -> Callable:
    """``(p, θ) -> (J, (∂J/∂p, ∂J/∂θ))`` by fesens."""
    from fesens.ad import value_and_grad

    model, _, newton = fesens_model(size)

    def compliance(p, theta):
        solution = model.solve(loads={"tip": p}, scale=theta, solver="cholmod",
                               newton=newton, warm_start=False)
        return np.sum(model.load_vector({"tip": p}) * solution.u)

    gradient = value_and_grad(compliance, argnums=(0, 1))
    return lambda p, theta: gradient(p, theta)


def jax_gradient(size: str) -> Callable:
    """``(p, θ) -> (J, (∂J/∂p, ∂J/∂θ))`` by the hand-written JAX + CHOLMOD code."""
    import jax
    import jax.numpy as jnp
    import scipy.sparse as sp
    from sksparse.cholmod import analyze

    jax.config.update("jax_enable_x64", True)
    model, unit_load, newton = fesens_model(size)
    points, cells = np.asarray(model.mesh.points), np.asarray(model.mesh.cells)
    n_cells, n_dofs = len(cells), 2 * len(points)
    # quad4 shape gradients at the 2x2 Gauss points (nodes counter-clockwise)
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], float)
    gauss = np.array([[a, b] for b in (-1, 1) for a in (-1, 1)]) / np.sqrt(3.0)
    dN = 0.25 * corners[None] * (1 + gauss[:, None, ::-1] * corners[None, :, ::-1])  # (q,a,i)
    jac = np.einsum("qai,eaj->eqji", dN, points[cells])  # dX_j/dξ_i
    dNdX = np.einsum("qai,eqij->eqaj", dN, np.linalg.inv(jac))  # (e, q, a, j)
    weights = np.linalg.det(jac)  # unit Gauss weights
    cell_dofs = (2 * cells[:, :, None] + np.arange(2)).reshape(n_cells, 8)
    fixed = np.asarray(model.constrained_dofs)
    free = np.setdiff1d(np.arange(n_dofs), fixed)
    # the CSC pattern of K_ff and where each cell-matrix entry goes in it
    number = np.full(n_dofs, -1)
    number[free] = np.arange(len(free))
    rows = np.repeat(number[cell_dofs], 8, axis=1).ravel()
    cols = np.tile(number[cell_dofs], (1, 8)).ravel()
    keep = (rows >= 0) & (cols >= 0)
    keys = cols[keep] * len(free) + rows[keep]
    unique, slot = np.unique(keys, return_inverse=True)
    pattern = sp.csc_matrix((np.ones(len(unique)), (unique % len(free), unique // len(free))),
                            shape=(len(free),) * 2)
    pattern.sort_indices()
    dNdX_j, weights_j, cell_dofs_j = jnp.asarray(dNdX), jnp.asarray(weights), jnp.asarray(cell_dofs)

    def cell_forces(u_cell, theta_e, G, w):  # (8,), (), (q, 4, 2), (q,)
        F = jnp.eye(2) + jnp.einsum("ai,qaj->qij", u_cell.reshape(4, 2), G)
        log_J = jnp.log(jnp.linalg.det(F))
        F_inv_T = jnp.swapaxes(jnp.linalg.inv(F), 1, 2)
        P = theta_e * (MU * (F - F_inv_T) + LAMBDA * log_J[:, None, None] * F_inv_T)
        return jnp.einsum("q,qij,qaj->ai", w, P, G).reshape(8)

    per_cell = jax.vmap(cell_forces)

    @jax.jit
    def internal(u, theta):
        forces = per_cell(u[cell_dofs_j], theta, dNdX_j, weights_j)
        return jnp.zeros(n_dofs).at[cell_dofs_j].add(forces)

    cell_tangents = jax.jit(jax.vmap(jax.jacfwd(cell_forces)))
    transposed = jax.jit(lambda u, theta, v: jax.vjp(lambda w: internal(w, theta), u)[1](v)[0])
    theta_vjp = jax.jit(lambda u, theta, v: jax.vjp(lambda t: internal(u, t), theta)[1](v)[0])
    factor = analyze(pattern)

    def tangent(u, theta):
        Ke = np.asarray(cell_tangents(jnp.asarray(u)[cell_dofs_j], theta, dNdX_j, weights_j))
        data = np.bincount(slot, weights=Ke.reshape(n_cells, 64).ravel()[keep],
                           minlength=len(unique))
        return sp.csc_matrix((data, pattern.indices, pattern.indptr), shape=pattern.shape)

    def value_and_grad(p, theta):
        theta = jnp.asarray(theta)
        u = np.zeros(n_dofs)
        for step in range(1, STEPS + 1):
            f = p * step / STEPS * unit_load
            for _ in range(50):
                R = (np.asarray(internal(u, theta)) - f)[free]
                if np.linalg.norm(R) < newton["atol"]:
                    break
                factor.cholesky_inplace(tangent(u, theta))
                u[free] -= factor(R)
            else:
                raise RuntimeError(f"Newton did not converge in load step {step}")
        f = p * unit_load
        adjoint = np.zeros(n_dofs)  # Kᵀλ = ∂J/∂u = f on the free dofs, refined
        for _ in range(20):
            misfit = f[free] - np.asarray(transposed(u, theta, adjoint))[free]
            if np.linalg.norm(misfit) <= 1e-12 * np.linalg.norm(f[free]):
                break
            adjoint[free] += factor(misfit)
        d_theta = -np.asarray(theta_vjp(u, theta, adjoint))
        return float(f @ u), (float(unit_load @ u + adjoint @ unit_load), d_theta)

    return value_and_grad


CODES = {"fesens": fesens_gradient, "jax": jax_gradient}


def measure(code: str, size: str, repeats: int) -> dict[str, Any]:
    """One code at one size: the first call and the minimum over ``repeats`` new-input calls
    (CPU seconds), and the values of the last call (its inputs: :func:`inputs` of
    ``repeats``). The process runs on one core: XLA sizes its thread pools by the cores it
    may use (the XLA flags that disable them instead deadlocked at 200x40)."""
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])
    start = time.process_time()
    gradient = CODES[code](size)
    setup = time.process_time() - start
    n_cells = int(np.prod([int(n) for n in size.split("x")]))
    times = []
    for call in range(repeats + 1):
        p, theta = inputs(call, n_cells)
        start = time.process_time()
        value, (d_load, d_theta) = gradient(p, theta)
        times.append(time.process_time() - start)
    return {"setup_s": setup, "first_s": times[0], "time_s": min(times[1:]),
            "value": float(value), "d_load": float(d_load),
            "d_theta": np.asarray(d_theta).tolist()}


def report(results: dict[tuple[str, str], dict[str, Any]], sizes: list[str]) -> str:
    """The times, the ratio fesens / JAX and the agreement, one row per size."""
    rows = []
    for size in sizes:
        ours, theirs = results["fesens", size], results["jax", size]
        failed = [f"{c}: {r['error']}" for c, r in (("fesens", ours), ("jax", theirs))
                  if "error" in r]
        if failed:
            rows.append([size, "; ".join(failed), *[""] * 7])
            continue
        d_theta = np.asarray(ours["d_theta"]), np.asarray(theirs["d_theta"])
        rows.append([
            size, seconds(ours["time_s"]), seconds(theirs["time_s"]),
            ratio(ours["time_s"], theirs["time_s"]), seconds(ours["first_s"]),
            seconds(theirs["first_s"] - theirs["time_s"]),
            f"{abs(ours['value'] / theirs['value'] - 1):.1e}",
            f"{abs(ours['d_load'] / theirs['d_load'] - 1):.1e}",
            f"{np.linalg.norm(d_theta[0] - d_theta[1]) / np.linalg.norm(d_theta[1]):.1e}"])
    return table(["size", "fesens", "jax", "fesens / jax", "fesens 1st call",
                  "jax compile (1st - min)", "J rel. diff", "dJ/dp rel. diff",
                  "dJ/dθ rel. diff"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = size_arguments(__doc__, SIZES, repeats=3)
    parser.add_argument("--quick", action="store_true", help=f"sizes {' '.join(QUICK_SIZES)}")
    parser.add_argument("--append", action="store_true",
                        help="append the record to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.case:
        serve_case({"case": measure}, json.loads(args.case))
        return 0
    sizes = list(QUICK_SIZES) if args.quick else args.sizes
    set_child_threads(args.threads)
    loads, results = [load_average()], {}
    for size in sizes:
        for code in CODES:
            results[code, size] = run_case(__file__, "case", code, size, args.repeats,
                                           timeout=1800)
            print(f"  {code} {size}: done", file=sys.stderr, flush=True)
    loads.append(load_average())
    record("\n".join([
        "## `bench_hyper_jax.py`: the finite-strain gradient, fesens against jitted JAX + "
        "CHOLMOD", "", *machine_lines(["numpy", "scipy", "scikit-sparse", "jax"]),
        load_line(loads), "",
        f"CPU seconds of value and gradient in (p, θ), minimum of {args.repeats} calls with "
        f"new inputs; {STEPS} load steps, full Newton steps, CHOLMOD in both", "",
        report(results, sizes)]), args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
