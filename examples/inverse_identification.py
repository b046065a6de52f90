"""Identify a stiffness field from noisy displacements: L-BFGS-B driven by adjoint gradients.

A 2 x 1 plate (plane stress, ``ν = 0.3``), clamped on its left edge, has a smoothly
varying Young's modulus with a stiff circular inclusion (``E = 3``). Three load cases —
a pull and a shear on the right edge, a shear on the top edge — give the "measured"
displacements at every node, to which seeded Gaussian noise is added (standard deviation
0.1 % of each case's largest displacement, as from digital image correlation).

The unknowns are the log-moduli ``m_e = log E_e`` of all cells (bounded to
``0.1 ≤ E ≤ 10``); the objective is the weighted least-squares misfit per datum plus a
Tikhonov penalty on the jumps of ``m`` between neighbouring cells:

    J(m) = (1/n) Σ_i ½ (u_i(m) − d_i)² / s_i²  +  (β/n) Σ_(e,f neighbours) ½ (m_e − m_f)²

``J`` and its exact gradient come from one factorization per call (three load cases,
one adjoint solve each, all with the same factor); ``scipy.optimize.minimize`` (L-BFGS-B)
does the rest. With the true field the misfit term is about ½ (the noise level); a fit with
``k`` free parameters reaches about ½ (1 − k/n) (least squares absorbs that much noise).
L-BFGS-B stops after 300 iterations (150 with ``--fast``): the misfit is at the noise level
by then, and further iterations only fit the noise.

Run: ``python examples/inverse_identification.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: a coarser grid). Writes ``identification.png`` (truth,
recovered, error) to ``results/examples/inverse_identification``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from fesens.ad import value_and_grad
from fesens.mesh import Mesh, rectangle
from fesens.objectives import Differentiable, misfit
from fesens.physics import Elasticity
from fesens.plotting import new_figure, save_figure

LENGTH, HEIGHT = 2.0, 1.0
INCLUSION = ((1.3, 0.55), 0.2, 3.0)  # centre, radius, modulus
CASES = [{"pull": 1.0, "shear": 0.0, "top": 0.0},
         {"pull": 0.0, "shear": 1.0, "top": 0.0},
         {"pull": 0.0, "shear": 0.0, "top": 1.0}]
NOISE = 1e-3  # standard deviation / largest displacement of each load case
BOUNDS = (0.1, 10.0)  # on E
BETA = 3.0  # regularisation weight, chosen by hand for this noise level


def true_modulus(centroids: np.ndarray) -> np.ndarray:
    """A smooth field around 1 with a stiff circular inclusion, ``(n_cells,)``."""
    x, y = centroids.T
    E = 1.0 + 0.3 * np.sin(np.pi * x / LENGTH) * np.cos(np.pi * y / HEIGHT)
    (cx, cy), radius, stiff = INCLUSION
    return np.where(np.hypot(x - cx, y - cy) < radius, stiff, E)


def neighbours(mesh: Mesh) -> np.ndarray:
    """Pairs of cells sharing a facet, ``(n_pairs, 2)`` (any mesh, not only grids)."""
    facets, owners = mesh.all_facets()
    keys = np.sort(facets, axis=1)
    order = np.lexsort(keys.T[::-1])
    keys, owners = keys[order], owners[order]
    shared = np.flatnonzero(np.all(keys[1:] == keys[:-1], axis=1))
    return np.column_stack([owners[shared], owners[shared + 1]])


def build(nx: int) -> Differentiable:
    """The clamped plate with the three named tractions, on an ``nx`` x ``nx/2`` grid."""
    mesh = rectangle(nx, nx // 2, LENGTH, HEIGHT, cell_type="quad4")
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.traction("right", (1.0, 0.0), name="pull")
    model.traction("right", (0.0, 0.2), name="shear")
    model.traction("top", (0.0, 0.2), name="top")
    return Differentiable(model)


def run(fast: bool = False, out: Path = Path("results/examples/inverse_identification"),
        seed: int = 0) -> dict:
    """Synthesise the data, recover the field, write the picture; returns the key numbers."""
    start = time.perf_counter()
    nx = 24 if fast else 40
    problem = build(nx)
    mesh = problem.model.mesh
    E_true = true_modulus(mesh.cell_centroids())
    u_true = problem.solve(E=E_true, load_cases=CASES).u  # (n_dofs, n_cases)
    noise = NOISE * np.abs(u_true).max(axis=0)  # one standard deviation per case
    measured = u_true + np.random.default_rng(seed).standard_normal(u_true.shape) * noise
    nodes = np.arange(mesh.n_points)
    data = [measured[nodes * 2 + c] for c in range(2)]  # (n_points, n_cases) per component
    n_data = measured.size
    pairs = neighbours(mesh)

    def data_misfit(m):
        state = problem.solve(E=np.exp(m), load_cases=CASES)
        return sum(misfit(state, nodes, data[c], component=c, weights=noise**-2)
                   for c in range(2)) / n_data

    def objective(m):
        jumps = m[pairs[:, 0]] - m[pairs[:, 1]]
        return data_misfit(m) + BETA * 0.5 * np.sum(jumps * jumps) / n_data

    m0 = np.zeros(mesh.n_cells)  # the nominal E = 1 everywhere
    print(f"plate: {mesh.n_cells} cells (unknowns), {n_data} measured displacements "
          f"({len(CASES)} load cases), noise {NOISE:.1%} of the peak displacement")
    initial = float(data_misfit(m0))
    result = minimize(value_and_grad(objective), m0, jac=True,
                      method="L-BFGS-B", bounds=[np.log(BOUNDS)] * mesh.n_cells,
                      options={"maxiter": 150 if fast else 300})
    E = np.exp(result.x)
    final = float(data_misfit(result.x))
    inclusion = np.hypot(*(mesh.cell_centroids() - INCLUSION[0]).T) < INCLUSION[1]
    numbers = {
        "error": float(np.linalg.norm(E - E_true) / np.linalg.norm(E_true)),
        "initial_error": float(np.linalg.norm(1.0 - E_true) / np.linalg.norm(E_true)),
        "initial_misfit": initial, "misfit": final,
        "truth_misfit": float(data_misfit(np.log(E_true))),
        "least_squares_floor": 0.5 * (1 - mesh.n_cells / n_data),
        "iterations": int(result.nit), "evaluations": int(result.nfev),
        "inclusion_modulus": float(E[inclusion].mean()),
        "n_cells": mesh.n_cells, "n_data": n_data, "E": E, "E_true": E_true,
    }
    print(f"L-BFGS-B: {result.nit} iterations, {result.nfev} gradient evaluations "
          f"({result.message})")
    print(f"misfit per datum: start {initial:.4g}, end {final:.4f} (reduced "
          f"{initial / final:.3g}x); true field {numbers['truth_misfit']:.4f}, noise level "
          f"0.5, least-squares floor ½(1 − k/n) = {numbers['least_squares_floor']:.4f}")
    print(f"relative L2 error of E: {numbers['error']:.1%} (start {numbers['initial_error']:.1%})"
          f"; mean E in the inclusion {numbers['inclusion_modulus']:.3f} (true "
          f"{INCLUSION[2]})")
    numbers["png"] = plot_fields(E_true, E, (nx // 2, nx), Path(out) / "identification.png")
    numbers["seconds"] = time.perf_counter() - start
    print(f"wrote {numbers['png']}; {numbers['seconds']:.1f} s")
    return numbers


def plot_fields(E_true: np.ndarray, E: np.ndarray, shape: tuple[int, int], path: Path) -> Path:
    """Truth, recovered field and error on the ``(ny, nx)`` grid (cells numbered x fastest)."""
    extent = (0.0, LENGTH, 0.0, HEIGHT)
    fig = new_figure(figsize=(14, 3.4))
    axes = fig.subplots(1, 3)
    vmin, vmax = E_true.min(), E_true.max()
    limit = float(np.abs(E - E_true).max())
    panels = [("true E", E_true, dict(cmap="viridis", vmin=vmin, vmax=vmax)),
              ("recovered E", E, dict(cmap="viridis", vmin=vmin, vmax=vmax)),
              ("recovered − true", E - E_true, dict(cmap="RdBu_r", vmin=-limit, vmax=limit))]
    for ax, (title, values, style) in zip(axes, panels, strict=True):
        image = ax.imshow(values.reshape(shape), origin="lower", extent=extent, **style)
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(image, ax=ax, orientation="horizontal", pad=0.05, shrink=0.9)
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser grid (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise")
    parser.add_argument("--out", type=Path,
                        default=Path("results/examples/inverse_identification"))
    args = parser.parse_args(argv)
    return run(args.fast, args.out, args.seed)


if __name__ == "__main__":
    main()
