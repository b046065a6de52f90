"""A material law fesens does not ship, written by the user as an energy: solved,
differentiated and fitted from Python, then named in a config through an entry point.

The law is Demiray's exponential ("Fung-type") energy for soft tissue (Demiray 1972, J.
Biomech. 5, 309), made compressible with ``κ/2 (J − 1)²``:

    W = a/(2b) (exp(b (Ī₁ − 3)) − 1) + κ/2 (J − 1)²,   μ₀ = a.

Fifteen lines of numpy over the quadrature points (:func:`demiray`); fesens derives the
stress and the tangent, Newton solves, and the adjoint gives the gradient in the law's
constants. The example

1. solves a plane-strain strip pulled and sheared at its free end;
2. prints the Taylor test of the gradient of the compliance in ``(a, b, κ)`` per cell
   (rate 2);
3. fits ``(a, b)`` to the displacements of the strip made with other constants, by
   L-BFGS-B with fesens gradients, from a start 40 % off;
4. "installs" a package with the law into a temporary folder (the module and a
   ``.dist-info`` declaring the entry point ``demiray`` of the group ``fesens.laws``,
   what ``pip install`` of a package with ``[project.entry-points."fesens.laws"]`` leaves),
   and solves a config with ``[physics] law = "demiray"`` and ``[material] a, b, kappa``:
   the same displacements;
5. solves the strip with a small-strain law written as ``ψ(ε)`` (Hooke's energy with a
   hardening term, :func:`hardening`; fesens derives σ and C) and prints the Taylor test of
   the compliance in its constant ``c`` per cell.

Run: ``python examples/user_law.py [--fast]`` (``--fast``, or ``FESENS_EXAMPLES_FAST=1``:
a coarser strip).
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from fesens.ad import taylor_test, value_and_grad
from fesens.config import build_model, resolve
from fesens.mesh import rectangle
from fesens.objectives import compliance
from fesens.physics.energy_law import HyperelasticLaw
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.physics.rubber_laws import isochoric_first, volume_change
from fesens.physics.user_physics_small_strain import small_strain_physics


# ------------------------------------------------------------------ the user's law
def demiray(H, a, b, kappa):
    """Demiray's exponential law, W = a/(2b) (exp(b (Ī₁ − 3)) − 1) + κ/2 (J − 1)².

    ``H = F − I`` ``(..., d, d)`` at every quadrature point (d = 2: plane strain); the
    constants broadcast to ``H.shape[:-2]``. ``Ī₁ − 3`` and ``J − 1`` come from fesens's
    kinematics, which keep their precision at small strains.
    """
    change = volume_change(H)
    return 0.5 * a / b * np.expm1(b * isochoric_first(H)) + 0.5 * kappa * change * change


LAW = HyperelasticLaw.from_energy("demiray", "Demiray 1972, exponential in Ī₁", demiray,
                                  constants=("a", "b", "kappa"))
TRUE = {"a": 1.0, "b": 1.5, "kappa": 20.0}
LOAD = (0.3, 0.05)


def strip(cells: int) -> FiniteStrainElasticity:
    """The plane-strain strip 1 x 0.25, clamped at the left, loaded at the right."""
    model = FiniteStrainElasticity(rectangle(4 * cells, cells, 1.0, 0.25, "quad4"), law=LAW,
                                   **TRUE)
    model.fix("left").traction("right", LOAD, name="end")
    return model


def fit(model: FiniteStrainElasticity, data: np.ndarray) -> tuple:
    """``(a, b)`` minimizing ``Σ (u − data)²`` by L-BFGS-B with fesens gradients, from
    0.6 times the true constants; returns them and the iterations."""
    def misfit(x):
        u = model.solve(a=x[0], b=x[1], steps=2).displacement
        return np.sum((u - data) ** 2) / np.sum(data ** 2)

    def fun(x):
        value, gradient = value_and_grad(misfit)(x)
        return float(value), np.asarray(gradient)

    start = 0.6 * np.array([TRUE["a"], TRUE["b"]])
    result = minimize(fun, start, jac=True, method="L-BFGS-B",
                      bounds=[(0.1, 10.0), (0.1, 10.0)],
                      options={"gtol": 1e-12, "ftol": 1e-15})
    return result.x, result.nit


# ------------------------------------------------------------------ a small-strain law
def hardening(eps, lam=1.0, mu=1.0, c=50.0):
    """ψ(ε) = λ/2 tr(ε)² + μ ε:ε + c/4 (ε:ε)²: σ = λ tr(ε) I + 2μ ε + c (ε:ε) ε."""
    ee = np.sum(eps * eps, axis=(-2, -1))
    return lam / 2 * np.trace(eps, axis1=-2, axis2=-1) ** 2 + mu * ee + c / 4 * ee ** 2


Hardening = small_strain_physics(hardening)


# ------------------------------------------------------------------ the law from a config
def install(folder: Path) -> None:
    """The package ``user_law_demo`` with :func:`demiray` and its entry point, as an
    installer leaves it in ``site-packages``; ``folder`` joins ``sys.path``."""
    package = folder / "user_law_demo"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import numpy as np\n\nfrom fesens.physics.rubber_laws import isochoric_first, "
        "volume_change\n\n\n" + inspect.getsource(demiray), encoding="utf-8")
    info = folder / "user_law_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: user-law-demo\n"
                                   "Version: 1.0\n", encoding="utf-8")
    (info / "top_level.txt").write_text("user_law_demo\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[fesens.laws]\ndemiray = user_law_demo:demiray\n",
                                           encoding="utf-8")
    sys.path.insert(0, str(folder))


def config_solve(folder: Path, cells: int) -> np.ndarray:
    """The strip of a config naming the law by its entry point: its displacements."""
    raw = {"mesh": {"type": "rectangle", "size": [1.0, 0.25], "cells": [4 * cells, cells],
                    "cell_type": "quad4"},
           "physics": {"type": "hyperelasticity", "law": "demiray"},
           "material": TRUE,
           "supports": [{"group": "left"}],
           "loads": [{"type": "traction", "group": "right", "value": list(LOAD)}]}
    model = build_model(resolve(raw, base_dir=folder, source="user_law", optimize=False))
    return model.solve(steps=2).displacement


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="a coarser strip")
    args = parser.parse_args(argv)
    cells = 2 if args.fast or os.environ.get("FESENS_EXAMPLES_FAST") else 4
    model = strip(cells)
    u = model.solve(steps=2).displacement
    print(f"Demiray strip, {model.mesh.n_cells} cells: max |u| = "
          f"{np.max(np.linalg.norm(u, axis=1)):.6f}")

    n = model.mesh.n_cells
    constants = {key: value * np.ones(n) for key, value in TRUE.items()}
    print("Taylor test of d(compliance)/d(a, b, kappa per cell):")
    rate = taylor_test(lambda x: compliance(model.solve(steps=2, **x)), constants).rate

    data = strip(cells).solve(steps=2, a=1.3, b=0.8).displacement
    fitted, iterations = fit(model, data)
    print(f"fit to the strip of a = 1.3, b = 0.8: a = {fitted[0]:.6f}, b = {fitted[1]:.6f} "
          f"after {iterations} L-BFGS-B iterations")

    with tempfile.TemporaryDirectory() as folder:
        install(Path(folder))
        try:
            from_config = config_solve(Path(folder), cells)
        finally:
            sys.path.remove(folder)
            sys.modules.pop("user_law_demo", None)
    difference = float(np.max(np.abs(from_config - u)))
    print(f"config with law = \"demiray\" (entry point): max |u_config - u_python| = "
          f"{difference:.3g}")
    small_strain = Hardening(model.mesh).fix("left")
    small_strain.surface_load("right", LOAD)
    print("small-strain law psi(eps) with hardening: Taylor test of d(compliance)/d(c per "
          "cell):")
    small_rate = taylor_test(lambda c: compliance(small_strain.solve(c=c)),
                             50.0 * np.ones(n)).rate
    return {"rate": rate, "fitted": fitted, "iterations": iterations,
            "config_difference": difference, "u": u, "small_strain_rate": small_rate}


if __name__ == "__main__":
    main()
