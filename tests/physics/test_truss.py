"""Trusses: closed-form displacements, forces and area sensitivities of textbook trusses,
Taylor tests for the areas, the moduli and the node coordinates, and the bad inputs
(mechanisms, negative or NaN areas)."""

import numpy as np
import pytest

from fesens.ad import grad
from fesens.ad.checks import taylor_test
from fesens.errors import (
    DegenerateElementError,
    MechanismError,
    MeshError,
    NonFiniteError,
)
from fesens.mesh import rectangle
from fesens.mesh.ground_structure import candidate_bars, ground_structure
from fesens.mesh.mesh import Mesh
from fesens.objectives import compliance, value_at, volume
from fesens.physics import Elasticity
from fesens.physics import truss as truss_module
from fesens.physics.truss import Truss

E, P, L = 210.0, 3.0, 2.0


def two_bar(A=(1.5, 0.7)) -> Truss:
    """A two-bar truss as in Christensen & Klarbring, *An Introduction to Structural
    Optimization* (Springer, 2009), ch. 2: a horizontal bar of length L from a wall
    support to the loaded node, and a 45° bar of length √2 L from a second wall support;
    the load P points down.

    Statically determinate: N₀ = −P, N₁ = √2 P, so u_x = −P L/(E A₀),
    u_y = −P L/(E A₀) − 2√2 P L/(E A₁), and C = P²L/E (1/A₀ + 2√2/A₁).
    """
    mesh = Mesh(np.array([[0.0, 0.0], [L, 0.0], [0.0, L]]), np.array([[0, 1], [2, 1]]),
                "line2")
    model = Truss(mesh, A=np.array(A), E=E)
    model.fix(lambda x: x[:, 0] < 0.5 * L)
    model.point_load([L, 0.0], [0.0, -P])
    return model


def three_bar(A_outer=0.8, A_middle=1.3) -> Truss:
    """The classic symmetric three-bar truss (Schmit, "Structural design by systematic
    synthesis", 1960; e.g. Haftka & Gürdal, *Elements of Structural Optimization*, 1992,
    ch. 1): supports at (−L, 0), (0, 0),
    (L, 0), the free node at (0, −L), a vertical load P down. Statically indeterminate;
    by symmetry u_x = 0 and ``u_y = −P L / (E (A_middle + A_outer/√2))``."""
    points = np.array([[-L, 0.0], [0.0, 0.0], [L, 0.0], [0.0, -L]])
    mesh = Mesh(points, np.array([[0, 3], [1, 3], [2, 3]]), "line2")
    model = Truss(mesh, A=np.array([A_outer, A_middle, A_outer]), E=E)
    model.fix(lambda x: x[:, 1] > -0.5 * L)
    model.point_load([0.0, -L], [0.0, -P])
    return model


def test_two_bar_displacements_forces_and_compliance_match_the_closed_form():
    A0, A1 = 1.5, 0.7
    solution = two_bar((A0, A1)).solve()
    ux, uy = -P * L / (E * A0), -P * L / (E * A0) - 2 * np.sqrt(2) * P * L / (E * A1)
    assert solution.displacement[1] == pytest.approx([ux, uy], rel=1e-13)
    assert solution.axial_force() == pytest.approx([-P, np.sqrt(2) * P], rel=1e-13)
    assert solution.axial_stress() == pytest.approx([-P / A0, np.sqrt(2) * P / A1], rel=1e-13)
    C = P**2 * L / E * (1 / A0 + 2 * np.sqrt(2) / A1)
    assert compliance(solution) == pytest.approx(C, rel=1e-13)


def test_two_bar_area_sensitivities_match_the_closed_form():
    A = np.array([1.5, 0.7])
    model = two_bar(A)
    dC = grad(lambda a: compliance(model.solve(A=a)))(A)
    exact = -P**2 * L / E * np.array([1 / A[0] ** 2, 2 * np.sqrt(2) / A[1] ** 2])
    assert dC == pytest.approx(exact, rel=1e-12)
    duy = grad(lambda a: value_at(model.solve(A=a), [L, 0.0], 1))(A)
    assert duy == pytest.approx(np.array([P * L / (E * A[0] ** 2),
                                          2 * np.sqrt(2) * P * L / (E * A[1] ** 2)]),
                                rel=1e-12)


def test_three_bar_displacement_and_sensitivities_match_the_closed_form():
    a, m = 0.8, 1.3
    model = three_bar(a, m)
    solution = model.solve()
    stiffness = E / L * (m + a / np.sqrt(2))
    assert solution.displacement[3] == pytest.approx([0.0, -P / stiffness], rel=1e-13,
                                                     abs=1e-15)
    u = P / stiffness
    assert solution.axial_force() == pytest.approx([E * a * u / (2 * L), E * m * u / L,
                                                    E * a * u / (2 * L)], rel=1e-13)
    # C = P²/k: dC/dA_e = −(P/k)² dk/dA_e, dk/dA_outer = E/(2√2 L) each, dk/dA_middle = E/L.
    dC = grad(lambda A: compliance(model.solve(A=A)))(np.array([a, m, a]))
    exact = -(P / stiffness) ** 2 * E / L * np.array([1 / (2 * np.sqrt(2)), 1.0,
                                                      1 / (2 * np.sqrt(2))])
    assert dC == pytest.approx(exact, rel=1e-12)


def test_a_3d_tripod_matches_the_closed_form():
    """Three equal bars from the corners of an equilateral triangle (radius R) to the apex
    at height H; a vertical load P: ``u_z = −P L / (3 E A sin²θ)``, ``sin θ = H / L``."""
    R, H, A = 1.0, 1.5, 0.4
    angles = 2 * np.pi * np.arange(3) / 3
    points = np.vstack([np.c_[R * np.cos(angles), R * np.sin(angles), np.zeros(3)],
                        [0.0, 0.0, H]])
    model = Truss(Mesh(points, np.array([[0, 3], [1, 3], [2, 3]]), "line2"), A=A, E=E)
    model.fix(lambda x: x[:, 2] < 0.5 * H)
    model.point_load([0.0, 0.0, H], [0.0, 0.0, -P])
    length = np.hypot(R, H)
    uz = -P * length / (3 * E * A * (H / length) ** 2)
    assert model.solve().displacement[3] == pytest.approx([0.0, 0.0, uz], rel=1e-13,
                                                          abs=1e-14)


@pytest.mark.parametrize("parameter", ["A", "E"])
def test_compliance_gradient_in_areas_and_moduli_passes_the_taylor_test(parameter):
    model = truss_on_a_grid()
    at = np.linspace(0.5, 1.5, model.mesh.n_cells)
    result = taylor_test(lambda p: compliance(model.solve(**{parameter: p})), at,
                         verbose=False)
    assert result.rate == pytest.approx(2.0, abs=0.1)


def test_displacement_gradient_in_node_coordinates_passes_the_taylor_test():
    model = truss_on_a_grid()
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(model.mesh.points.shape)
    result = taylor_test(lambda X: value_at(model.solve(points=X), [3.0, 0.0], 1),
                         model.mesh.points, direction, step=1e-2, verbose=False)
    assert result.rate == pytest.approx(2.0, abs=0.1)
    volume_rate = taylor_test(lambda X: volume(model, points=X), model.mesh.points,
                              direction, step=1e-2, verbose=False).rate
    assert volume_rate == pytest.approx(2.0, abs=0.1)


def truss_on_a_grid() -> Truss:
    """A 3 x 1 ground structure (reach √2), pinned at the left, loaded at the lower right."""
    model = Truss(ground_structure((3, 1), (3.0, 1.0), reach=1.5),
                  A=np.linspace(1.0, 2.0, 16), E=E)
    model.fix("left")
    model.point_load([3.0, 0.0], [0.5, -P])
    return model


def test_the_ground_structure_has_no_overlapping_bars():
    mesh = ground_structure((4, 2), (4.0, 2.0))
    d = mesh.points[mesh.cells[:, 1]] - mesh.points[mesh.cells[:, 0]]
    steps = np.rint(np.abs(d)).astype(int)   # unit grid steps
    assert all(np.gcd(*row) == 1 for row in steps)
    n = mesh.n_points
    assert mesh.n_cells < n * (n - 1) // 2
    pairs = {tuple(sorted(bar)) for bar in mesh.cells.tolist()}
    assert len(pairs) == mesh.n_cells
    # (4, 2): 15 nodes; 2D offsets of the 4 x 2 grid with coprime components.
    assert mesh.n_cells == 15 * 14 // 2 - sum(  # pairs minus those with a node between
        1 for i in range(n) for j in range(i + 1, n)
        if np.gcd(*np.rint(np.abs(mesh.points[j] - mesh.points[i])).astype(int)) > 1)
    assert ground_structure((2, 2, 1), (1.0, 1.0, 1.0), reach=2.0).dim == 3


@pytest.mark.parametrize(("divisions", "reach"), [
    ((4, 2), None), ((6, 3), 1.5), ((10, 4), 3.3), ((4, 3, 2), None), ((5, 5, 5), 2.0),
    ((3, 2), 1e6)])
def test_candidate_bars_counts_the_bars_without_building_them(divisions, reach):
    """A reach far beyond the grid once built an offset grid of (2 reach + 1)² points;
    offsets longer than the grid join no nodes."""
    mesh = ground_structure(divisions, [1.0] * len(divisions), reach=reach)
    assert candidate_bars(divisions, reach) == mesh.n_cells
    if reach is not None and reach > 100:
        assert mesh.n_cells == ground_structure(divisions, [1.0] * len(divisions)).n_cells


def test_a_full_ground_structure_is_counted_at_once():
    # 201 x 101 nodes, every pair without a node between them: 125 million bars
    assert candidate_bars((200, 100)) == 125_265_288


# ------------------------------------------------------------------ bad input
def test_a_node_without_bars_is_a_mechanism_naming_it():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    model = Truss(Mesh(points, np.array([[0, 1], [2, 1]]), "line2"))
    model.fix(lambda x: x[:, 0] < 0.5)
    with pytest.raises(MechanismError, match=r"3 at \(5, 5\)") as info:
        model.solve()
    assert info.value.nodes.tolist() == [3]


def test_a_node_held_by_collinear_bars_only_is_a_mechanism_naming_it():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    model = Truss(Mesh(points, np.array([[0, 1], [1, 2]]), "line2"))
    model.fix(lambda x: x[:, 0] != 1.0)
    with pytest.raises(MechanismError, match=r"1 at \(1, 0\)"):
        model.solve()


def test_a_collapsible_frame_is_a_mechanism_naming_its_nodes():
    """A square of four bars on two supports: every node has two non-collinear bars, but
    the square shears."""
    points = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    bars = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    model = Truss(Mesh(points, bars, "line2"))
    model.fix(lambda x: x[:, 1] < 0.5)
    with pytest.raises(MechanismError, match="mechanism") as info:
        model.solve()
    assert info.value.nodes.tolist() == [2, 3]
    braced = Truss(Mesh(points, np.vstack([bars, [[0, 2]]]), "line2"))
    braced.fix(lambda x: x[:, 1] < 0.5)
    braced.point_load([1.0, 1.0], [1.0, 0.0])
    assert np.isfinite(braced.solve().u).all()


def test_a_mechanism_found_by_the_solver_is_analysed_and_named(monkeypatch):
    """Above DENSE_CHECK_LIMIT free dofs only free nodes are checked before the solve; the
    solver's singular matrix is then analysed."""
    monkeypatch.setattr(truss_module, "DENSE_CHECK_LIMIT", 0)
    points = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    model = Truss(Mesh(points, np.array([[0, 1], [1, 2], [2, 3], [3, 0]]), "line2"))
    model.fix(lambda x: x[:, 1] < 0.5)
    model.point_load([1.0, 1.0], [1.0, 0.0])
    with pytest.raises(MechanismError, match=r"2 node\(s\) can move.*2 at \(1, 1\)"):
        model.solve()


def test_a_free_rigid_motion_is_named():
    model = Truss(two_bar().mesh)
    model.fix([0.0, 0.0])
    with pytest.raises(MechanismError, match="rotation about z"):
        model.solve()


@pytest.mark.parametrize(("value", "error", "message"), [
    (np.array([1.0, -0.5]), ValueError, r"cross-section area A must be > 0; bar\(s\) \[1\]"),
    (np.array([0.0, 1.0]), ValueError, r"bar\(s\) \[0\] have 0"),
    (np.array([np.nan, 1.0]), NonFiniteError, r"A is NaN or infinite for bar\(s\) \[0\]"),
    (-1.0, ValueError, "cross-section area A must be > 0; got -1"),
])
def test_negative_zero_or_nan_areas_are_refused_naming_the_bars(value, error, message):
    with pytest.raises(error, match=message):
        two_bar().solve(A=value)
    with pytest.raises(error, match=message):
        two_bar(A=value)


def test_a_truss_needs_bars_and_bars_need_length():
    with pytest.raises(MeshError, match=r"Truss needs a mesh of bars \(line2 cells\), got "
                                        "quad4"):
        Truss(rectangle(2, 1))
    with pytest.raises(MeshError, match="Elasticity needs a mesh of volume cells, got line2"):
        Elasticity(ground_structure((2, 1), (2.0, 1.0)), plane="stress")
    with pytest.raises(DegenerateElementError, match=r"zero length.*ids \[1\]"):
        Mesh(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[0, 1], [1, 1]]), "line2")
    with pytest.raises(MeshError, match="reach"):
        ground_structure((2, 2), (1.0, 1.0), reach=1.0)


def test_a_truss_config_solves_like_the_python_model_and_refuses_volume_meshes():
    from fesens.config.build import build_model
    from fesens.config.checks import ConfigError
    from fesens.config.schema import resolve

    raw = {"mesh": {"type": "ground_structure", "size": [3.0, 1.0], "cells": [3, 1],
                    "reach": 1.5},
           "physics": {"type": "truss"}, "material": {"A": 1.5, "E": E},
           "supports": [{"group": "left"}],
           "loads": [{"type": "point", "point": [3.0, 0.0], "value": [0.5, -P]}]}
    model = build_model(resolve(raw, base_dir=".", source="test.toml", optimize=False))
    reference = truss_on_a_grid()
    assert compliance(model.solve()) == pytest.approx(
        compliance(reference.solve(A=np.full(16, 1.5))), rel=1e-12)
    raw["mesh"] = {"type": "rectangle", "size": [3.0, 1.0], "cells": [3, 1]}
    # refused by the config check, before a model is built
    with pytest.raises(ConfigError, match='physics.type = "truss" needs a mesh of bars'):
        resolve(raw, base_dir=".", source="test.toml", optimize=False)
