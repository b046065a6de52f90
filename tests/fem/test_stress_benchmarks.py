"""Recovered stresses at stress concentrations against published benchmarks.

* Kirsch's plate with a circular hole under uniaxial tension ``T`` (G. Kirsch, "Die Theorie
  der Elastizität und die Bedürfnisse der Festigkeitslehre", Zeitschrift des VDI 42 (1898)
  797–807; Timoshenko & Goodier, *Theory of Elasticity*, 3rd ed., §35): ``σ_xx = 3T`` at the
  top of the hole. The quarter plate carries Kirsch's exact tractions on its outer edges
  (``solve_kirsch``), so the exact solution of the finite model is Kirsch's.
* NAFEMS LE1, the elliptic membrane (NAFEMS, "The Standard NAFEMS Benchmarks", TNSB Rev. 3,
  1990; "Background to benchmarks", 1993): ``σ_yy = 92.7 MPa`` at ``D = (2, 0)``. Meshes
  from ``meshes/le1.py``, generated at test time.

Superconvergent patch recovery: Zienkiewicz & Zhu, IJNME 33 (1992) 1331–1364. Run with
``-s`` to see the tables.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from test_elasticity_closed_form import solve_kirsch

from fesens.fem.elements import ELEMENTS
from fesens.mesh import read_mesh
from fesens.physics import Elasticity

ROOT = Path(__file__).resolve().parents[2]
LE1_REFERENCE = 92.7  # MPa, σ_yy at D


def kirsch_top_of_hole(n: int, cell_type: str, methods) -> list[float]:
    mesh, solution = solve_kirsch(n, cell_type)
    top = mesh.nearest_node((0.0, 1.0))  # a = 1, T = 1
    assert np.allclose(mesh.points[top], (0.0, 1.0))
    return [solution.nodal_stress(method)[top, 0, 0] for method in methods]


def test_kirsch_concentration_with_spr_on_a_fine_mesh_within_2_percent():
    spr, average = kirsch_top_of_hole(32, "tri6", ["spr", "average"])
    print(f"Kirsch tri6 32 x 32: σ_xx/T at the top of the hole: SPR {spr:.4f}, cell average "
          f"{average:.4f} (exact 3)")
    assert spr == pytest.approx(3.0, rel=0.02)
    assert abs(spr - 3.0) < 0.1 * abs(average - 3.0)  # 0.007 % against 1.6 %


def test_spr_converges_faster_than_cell_averaging_on_the_kirsch_plate():
    sizes = (8, 16, 32)
    values = np.array([kirsch_top_of_hole(n, "quad4", ["spr", "average"]) for n in sizes])
    errors = np.abs(values - 3.0) / 3.0  # (size, method)
    rates = np.log2(errors[:-1] / errors[1:])
    for n, (spr, average) in zip(sizes, errors, strict=True):
        print(f"Kirsch quad4 n = {n:2d}: relative error SPR {spr:.2e}, cell average {average:.2e}")
    print(f"rates on the 2 refinements: SPR {rates[:, 0].round(2)}, "
          f"cell average {rates[:, 1].round(2)}")
    assert np.all(np.diff(errors, axis=0) < 0)
    assert np.all(rates[:, 0] > rates[:, 1] + 0.5), rates
    assert rates[-1, 0] > 2.5 and errors[-1, 0] < 0.005


# ------------------------------------------------------------------ NAFEMS LE1
def le1_generator():
    pytest.importorskip("gmsh")
    spec = importlib.util.spec_from_file_location("le1", ROOT / "meshes" / "le1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


def le1_sigma_yy_at_d(tmp_path, n: int, order: int = 1, quads: bool = False,
                      method: str = "spr") -> tuple[str, float]:
    """``σ_yy`` (MPa) at D of LE1 on an ``n`` x ``n`` mapped mesh (m, MPa)."""
    mesh = read_mesh(le1_generator()(tmp_path / f"le1_{n}_{order}_{quads}.msh", n, order, quads))
    model = Elasticity(mesh, E=210e3, nu=0.3, plane="stress", thickness=0.1)
    model.fix("x_axis", components=1).fix("y_axis", components=0)
    model.pressure("outer", -10.0)  # outward 10 MPa
    d = mesh.nearest_node((2.0, 0.0))
    assert np.allclose(mesh.points[d], (2.0, 0.0))
    return mesh.cell_type, model.solve().nodal_stress(method)[d, 1, 1]


@pytest.mark.parametrize(("expected_type", "order", "quads", "n", "tolerance"),
                         [("tri6", 2, False, 32, 0.02), ("quad4", 1, True, 32, 0.10),
                          ("quad9", 2, True, 32, 0.02)])
def test_le1_sigma_yy_at_d_on_a_fine_mesh(tmp_path, expected_type, order, quads, n, tolerance):
    if expected_type not in ELEMENTS:
        pytest.skip(f"no {expected_type} element")
    cell_type, value = le1_sigma_yy_at_d(tmp_path, n, order, quads)
    assert cell_type == expected_type
    print(f"LE1 {cell_type} {n} x {n}: σ_yy(D) = {value:.2f} MPa (NAFEMS 92.7)")
    assert value == pytest.approx(LE1_REFERENCE, rel=tolerance)


def test_le1_tri3_converges_monotonically(tmp_path):
    values = np.array([le1_sigma_yy_at_d(tmp_path, n)[1] for n in (8, 16, 32, 64)])
    errors = np.abs(values - LE1_REFERENCE)
    print(f"LE1 tri3 n = 8, 16, 32, 64: σ_yy(D) = {values.round(2)} MPa (NAFEMS 92.7)")
    assert np.all(np.diff(errors) < 0), values
    assert errors[-1] < 0.01 * LE1_REFERENCE
