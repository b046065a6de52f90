"""Identify a stiffness field with a Newton–Krylov method: Hessian-vector products of fesens.

The problem of ``inverse_identification.py`` (a clamped 2 x 1 plate, three load cases,
noisy displacements at every node, unknowns ``m_e = log E_e``, least-squares misfit per
datum plus a Tikhonov penalty on the jumps of ``m``), imported from it, here without the
bounds on ``E`` (a Newton–Krylov method takes none; the identified field stays well inside
them). Both methods solve it to the same gradient tolerance from ``m = 0``:

* **trust-krylov** (``scipy.optimize.minimize``): ``fun``, ``jac`` and ``hessp`` from
  :func:`fesens.ad.value_grad_hvp`. At each iterate one trace gives ``J``, ``∇J`` and a
  kept second-order sweep; every Krylov iteration is one more product ``∇²J v`` (the two
  solves of the second-order adjoint per load case), with the iterate's one factorization;
* **L-BFGS-B** with :func:`fesens.ad.value_and_grad`.

Printed: iterations, evaluations of ``J`` and ``∇J``, Hessian-vector products, numeric
factorizations, time, the final gradient norm and objective, and the difference between
the two identified fields.

Run: ``python examples/newton_identification.py [--fast]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: the 24 x 12 grid of the identification example's fast mode;
otherwise 40 x 20).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from fesens.ad import value_and_grad, value_grad_hvp
from fesens.objectives import misfit

GTOL = 1e-7  # on ‖∇J‖₂, relative to ‖∇J(0)‖₂
MAX_ITERATIONS = {"trust-krylov": 200, "L-BFGS-B": 20000}


def _identification_example():
    """``inverse_identification.py`` (its problem: build, true field, neighbours, data)."""
    path = Path(__file__).with_name("inverse_identification.py")
    spec = importlib.util.spec_from_file_location("inverse_identification_setup", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Evaluations:
    """``fun``, ``jac`` and ``hessp`` for scipy, from one trace per iterate.

    ``value_grad_hvp`` runs once per new ``x``; scipy's calls at the same ``x`` reuse it.
    Counts traces (evaluations of ``J`` with ``∇J``) and Hessian-vector products.
    """

    def __init__(self, objective):
        self.at = value_grad_hvp(objective)
        self.x = None
        self.point = None
        self.n_evaluations = 0
        self.n_products = 0

    def _at(self, x: np.ndarray) -> tuple:
        if self.x is None or not np.array_equal(x, self.x):
            self.x, self.point = np.array(x), self.at(x)
            self.n_evaluations += 1
        return self.point

    def fun(self, x: np.ndarray) -> float:
        return float(self._at(x)[0])

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self._at(x)[1]

    def hessp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        self.n_products += 1
        return self._at(x)[2](v)


def setup(fast: bool, seed: int = 0) -> dict:
    """The identification problem of ``inverse_identification.py``: objective and truth."""
    example = _identification_example()
    problem = example.build(24 if fast else 40)
    mesh = problem.model.mesh
    E_true = example.true_modulus(mesh.cell_centroids())
    u_true = problem.solve(E=E_true, load_cases=example.CASES).u  # (n_dofs, n_cases)
    noise = example.NOISE * np.abs(u_true).max(axis=0)
    measured = u_true + np.random.default_rng(seed).standard_normal(u_true.shape) * noise
    nodes = np.arange(mesh.n_points)
    data = [measured[nodes * 2 + c] for c in range(2)]
    n_data = measured.size
    pairs = example.neighbours(mesh)

    def objective(m):
        state = problem.solve(E=np.exp(m), load_cases=example.CASES)
        fit = sum(misfit(state, nodes, data[c], component=c, weights=noise**-2)
                  for c in range(2)) / n_data
        jumps = m[pairs[:, 0]] - m[pairs[:, 1]]
        return fit + example.BETA * 0.5 * np.sum(jumps * jumps) / n_data

    return {"objective": objective, "problem": problem, "E_true": E_true,
            "n_cells": mesh.n_cells, "n_data": n_data, "bounds": example.BOUNDS}


def identify(method: str, objective, m0: np.ndarray, gtol: float, solver) -> dict:
    """Minimize with ``method``; iterations, counts, time, the result."""
    factorizations = solver.stats["n_numeric"]
    start = time.perf_counter()
    if method == "trust-krylov":
        evaluations = Evaluations(objective)
        result = minimize(evaluations.fun, m0, jac=evaluations.jac, hessp=evaluations.hessp,
                          method=method,
                          options={"gtol": gtol, "maxiter": MAX_ITERATIONS[method]})
        counts = {"evaluations": evaluations.n_evaluations, "products": evaluations.n_products}
    else:
        # L-BFGS-B's gtol is on the largest gradient entry: ‖g‖∞ ≤ gtol / √n keeps ‖g‖₂ ≤ gtol
        result = minimize(value_and_grad(objective), m0, jac=True, method=method,
                          options={"gtol": gtol / np.sqrt(m0.size), "ftol": 0.0,
                                   "maxiter": MAX_ITERATIONS[method],
                                   "maxfun": 2 * MAX_ITERATIONS[method]})
        counts = {"evaluations": int(result.nfev), "products": 0}
    seconds = time.perf_counter() - start
    factorizations = solver.stats["n_numeric"] - factorizations
    gradient = value_and_grad(objective)(result.x)[1]
    return {"method": method, "iterations": int(result.nit), **counts,
            "factorizations": factorizations,
            "seconds": seconds, "value": float(result.fun),
            "gradient_norm": float(np.linalg.norm(gradient)), "m": result.x,
            "success": bool(result.success), "message": str(result.message)}


def run(fast: bool = False, seed: int = 0) -> dict:
    """Both methods on one problem; prints the comparison, returns the key numbers."""
    case = setup(fast, seed)
    objective, solver = case["objective"], case["problem"].solver
    m0 = np.zeros(case["n_cells"])
    gtol = GTOL * float(np.linalg.norm(value_and_grad(objective)(m0)[1]))
    print(f"plate: {case['n_cells']} cells (unknowns), {case['n_data']} measured "
          f"displacements; both stop at ‖∇J‖₂ ≤ {gtol:.3g} (1e-7 of ‖∇J(0)‖₂)")
    runs = {method: identify(method, objective, m0, gtol, solver)
            for method in ("trust-krylov", "L-BFGS-B")}
    header = (f"{'method':>12} | {'iterations':>10} | {'J, ∇J evals':>11} | {'H v':>5} | "
              f"{'factorizations':>14} | {'time':>8} | {'‖∇J‖₂':>9} | {'J':>12}")
    print(header)
    print("-" * len(header))
    for r in runs.values():
        print(f"{r['method']:>12} | {r['iterations']:>10d} | {r['evaluations']:>11d} | "
              f"{r['products']:>5d} | {r['factorizations']:>14d} | {r['seconds']:>6.2f} s | "
              f"{r['gradient_norm']:>9.3g} | {r['value']:>12.10f}")
    newton, lbfgs = runs["trust-krylov"], runs["L-BFGS-B"]
    E_newton, E_lbfgs = np.exp(newton["m"]), np.exp(lbfgs["m"])
    difference = float(np.linalg.norm(E_newton - E_lbfgs) / np.linalg.norm(E_lbfgs))
    error = float(np.linalg.norm(E_newton - case["E_true"]) / np.linalg.norm(case["E_true"]))
    low, high = case["bounds"]
    print(f"identified fields: relative L2 difference {difference:.2e}; E in "
          f"[{E_newton.min():.3f}, {E_newton.max():.3f}] (the bounds {low}, {high} of "
          f"inverse_identification.py are inactive); error against the truth {error:.1%}")
    print(f"trust-krylov: {lbfgs['iterations'] / newton['iterations']:.1f}x fewer iterations, "
          f"{lbfgs['seconds'] / newton['seconds']:.2f}x the speed of L-BFGS-B")
    return {"runs": runs, "difference": difference, "error": error, "gtol": gtol,
            "E_range": (float(E_newton.min()), float(E_newton.max()))}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser grid (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise")
    args = parser.parse_args(argv)
    return run(args.fast, args.seed)


if __name__ == "__main__":
    main()
