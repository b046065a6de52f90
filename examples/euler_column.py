"""Euler's column by linear buckling: mesh convergence of the lowest load factor.

A cantilever column (clamped at one end, free at the other) under a unit axial compressive
load buckles at Euler's critical load ``P_cr = π² E I / (K L)²`` with the effective-length
factor ``K = 2`` (Timoshenko & Gere, *Theory of Elastic Stability*, 2nd ed., 1961, §2.1);
the higher modes at ``(2n − 1)²`` times it. The lowest load factor of
:func:`fesens.physics.linear_buckling` times the load is compared with it on

* a plane-stress strip ``L/H = 20`` meshed with quad4 (and quad8) cells, refined in both
  directions: quad4 converges from above at rate 2 (its shear locking), quad8 sits at
  Euler to within the 2D model's shear deformation (``O((H/L)²)``, below Euler);
* a 3D column ``L = 4``, section ``b x h = 0.2 x 0.3`` meshed with hex8 cells: the first
  mode bends about the weak axis (``I = h b³/12``), the second about the strong one,
  ``(h/b)² = 2.25`` times higher.

Run: ``python examples/euler_column.py [--fast]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: the three coarsest meshes of each). Prints the tables.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fesens.mesh import box, rectangle
from fesens.physics import ElasticBuckling, Elasticity

E, NU = 1e3, 0.3
#: 2D strip: length, height; meshes (nx, ny) and cell types.
L2, H2 = 20.0, 1.0
MESHES_2D = ((40, 2), (80, 4), (160, 8), (320, 16))
#: 3D column: length, section b x h; hex8 meshes (nx, ny, nz).
L3, B3, H3 = 4.0, 0.2, 0.3
MESHES_3D = ((20, 2, 3), (40, 4, 6), (80, 4, 6), (80, 8, 12))


def euler_cantilever(inertia: float, length: float) -> float:
    """``P_cr = π² E I / (2 L)²`` (Euler; Timoshenko & Gere §2.1)."""
    return np.pi**2 * E * inertia / (2.0 * length) ** 2


def strip(nx: int, ny: int, cell_type: str) -> Elasticity:
    """The plane-stress strip, clamped on the left, total force 1 pushing on the right."""
    model = Elasticity(rectangle(nx, ny, L2, H2, cell_type=cell_type), E=E, nu=NU,
                       plane="stress")
    model.fix("left")
    model.traction("right", (-1.0 / H2, 0.0))
    return model


def column(nx: int, ny: int, nz: int) -> Elasticity:
    """The 3D hex8 column along x, clamped at x = 0, total force 1 pushing at x = L."""
    model = Elasticity(box(nx, ny, nz, L3, B3, H3, cell_type="hex8"), E=E, nu=NU)
    model.fix("left")
    model.traction("right", (-1.0 / (B3 * H3), 0.0, 0.0))
    return model


def run(fast: bool = False) -> dict:
    """Print the convergence tables; returns ``{label: [(mesh, dofs, μ/P_cr...), ...]}``."""
    count = 3 if fast else 4
    tables = {}
    exact_2d = euler_cantilever(H2**3 / 12, L2)
    for cell_type in ("quad4", "quad8"):
        label = f"2D {cell_type}, L/H = {L2 / H2:g}"
        print(f"\n{label}: P_cr (Euler) = {exact_2d:.6g}")
        print("  mesh        dofs   μ1/P_cr    μ2/μ1    μ3/μ1   seconds")
        rows = tables[label] = []
        for nx, ny in MESHES_2D[:count]:
            model = strip(nx, ny, cell_type)
            start = time.perf_counter()
            mu = np.asarray(ElasticBuckling(model, 3).run().load_factors)
            seconds = time.perf_counter() - start
            rows.append(((nx, ny), model.dofmap.n_dofs, *(mu / exact_2d)))
            print(f"  {nx:3d} x {ny:2d}  {model.dofmap.n_dofs:7d}  {mu[0] / exact_2d:8.5f}  "
                  f"{mu[1] / mu[0]:7.3f}  {mu[2] / mu[0]:7.3f}  {seconds:7.2f}")
    exact_3d = euler_cantilever(H3 * B3**3 / 12, L3)
    label = f"3D hex8, L = {L3:g}, b x h = {B3:g} x {H3:g}"
    print(f"\n{label}: P_cr (Euler, weak axis) = {exact_3d:.6g}")
    print("  mesh             dofs   μ1/P_cr    μ2/μ1   seconds")
    rows = tables[label] = []
    for divisions in MESHES_3D[:count]:
        model = column(*divisions)
        start = time.perf_counter()
        mu = np.asarray(ElasticBuckling(model, 2).run().load_factors)
        seconds = time.perf_counter() - start
        rows.append((divisions, model.dofmap.n_dofs, *(mu / exact_3d)))
        mesh = " x ".join(f"{n:2d}" for n in divisions)
        print(f"  {mesh}  {model.dofmap.n_dofs:7d}  {mu[0] / exact_3d:8.5f}  "
              f"{mu[1] / mu[0]:7.3f}  {seconds:7.2f}")
    return tables


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="the three coarsest meshes (also FESENS_EXAMPLES_FAST=1)")
    return run(parser.parse_args(argv).fast)


if __name__ == "__main__":
    main()
