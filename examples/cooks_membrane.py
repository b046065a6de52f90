"""Cook's membrane, nearly incompressible at finite strain: locking and the mean dilatation.

The tapered panel (0, 0)-(48, 44)-(48, 60)-(0, 44) (mm) is clamped at x = 0 and sheared
by a uniform traction of 100/16 N/mm² on x = 48 (100 N per unit thickness), plane strain.
The material is the nearly incompressible neo-Hookean solid of de Souza Neto, Perić,
Dutko & Owen (Int. J. Solids Struct. 33, 1996, 3277–3296) and Elguedj, Bazilevs, Calo &
Hughes (Comput. Methods Appl. Mech. Engrg. 197, 2008, 2732–2762):
``W = μ/2 (Ī₁ − 3) + κ/2 (J − 1)²`` with ``μ = 80.1938`` and ``κ = 40.0942·10⁴`` N/mm²
(``ν ≈ 0.4999``): fesens's Mooney–Rivlin law with ``c10 = μ/2``, ``c01 = 0``.

The example prints the vertical displacement of the top right corner (48, 60) for 2, 4, 8,
16 and 32 cells per edge: the displacement formulation's quad4 locks (its corner moves a
third of the converged value on the coarse meshes and creeps up), the mean-dilatation
formulation (:mod:`fesens.physics.mean_dilatation`) converges to the reference from
below; quad8 too. The reference is the F-bar series of the OpenGeoSys benchmark
``LargeDeformation/CooksMembrane`` (Wang & Nagel, ufz/ogs), 6.891 mm on 30 x 30 quad4, which
its authors report follows Elguedj et al. (2008).

It then checks the gradient of the corner's displacement in ``(c10, kappa)`` by a Taylor
test (rate 2).

Run: ``python examples/cooks_membrane.py [--fast]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: 2 to 16 cells per edge, no quad8).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from fesens.ad import taylor_test
from fesens.mesh import Mesh, rectangle
from fesens.physics.hyperelasticity import FiniteStrainElasticity

#: de Souza Neto et al. (1996): shear modulus and bulk modulus (N/mm²)
MU, KAPPA = 80.1938, 40.0942e4
#: the shear traction on x = 48 (N/mm²): 100 N over the 16 mm edge
TRACTION = 100.0 / 16.0
#: the top right corner
CORNER = (48.0, 60.0)
#: OpenGeoSys LargeDeformation/CooksMembrane, F-bar quad4 on 30 x 30: the corner's u_y (mm)
REFERENCE = 6.891
FORMULATIONS = ("displacement", "mean_dilatation")


def cook_mesh(n: int, cell_type: str = "quad4") -> Mesh:
    """The membrane with ``n`` cells per edge: the unit square's lattice mapped
    bilinearly onto the trapezoid (sides ``left``, ``right`` kept)."""
    mesh = rectangle(n, n, 1.0, 1.0, cell_type)
    x, y = mesh.points[:, 0], mesh.points[:, 1]
    mesh.points = np.column_stack([48.0 * x, 44.0 * x + y * (44.0 - 28.0 * x)])
    mesh.validate()
    return mesh


def cook_model(n: int, formulation: str, cell_type: str = "quad4") -> FiniteStrainElasticity:
    """The clamped, sheared membrane (load ``"shear"``)."""
    model = FiniteStrainElasticity(cook_mesh(n, cell_type), law="mooney-rivlin",
                                   c10=MU / 2, c01=0.0, kappa=KAPPA, formulation=formulation)
    model.fix("left").traction("right", (0.0, TRACTION), name="shear")
    return model


def corner_displacement(model: FiniteStrainElasticity, steps: int = 2, **parameters):
    """The vertical displacement of the top right corner after ``steps`` load steps
    (traced when a parameter is)."""
    solution = model.solve(steps=steps, warm_start=False, **parameters)
    return solution.displacement[model.mesh.nearest_node(CORNER), 1]


def convergence_table(sizes, cell_types) -> dict:
    """``{(cell_type, formulation): [u_y per size]}``."""
    return {(cell, form): [float(corner_displacement(cook_model(n, form, cell)))
                           for n in sizes]
            for cell in cell_types for form in FORMULATIONS}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FESENS_EXAMPLES_FAST") == "1"
    sizes = (2, 4, 8, 16) if fast else (2, 4, 8, 16, 32)
    cells = ("quad4",) if fast else ("quad4", "quad8")
    table = convergence_table(sizes, cells)
    print(f"Cook's membrane, u_y at (48, 60) in mm (reference {REFERENCE}: OpenGeoSys "
          "F-bar 30 x 30, after Elguedj et al. 2008)")
    print("cells/edge | " + " | ".join(f"{c} {f}" for c, f in table))
    for row, n in enumerate(sizes):
        print(f"{n:10d} | " + " | ".join(f"{values[row]:.4f}" for values in table.values()))

    model = cook_model(4, "mean_dilatation")
    rate = taylor_test(lambda x: corner_displacement(model, c10=x[0], kappa=x[1]),
                       np.array([MU / 2, KAPPA]), np.array([0.05 * MU, 0.02 * KAPPA]),
                       step=1.0, n_steps=4, verbose=False).rate
    print(f"Taylor test of d u_y / d(c10, kappa): convergence rate: {rate:.3f}")
    return {"sizes": sizes, "table": table, "rate": rate}


if __name__ == "__main__":
    main()
