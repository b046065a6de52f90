"""Spring supports: ``k`` on the diagonal of ``K_ff`` against the closed forms of springs in
series and in parallel with a bar, and the refusals.

A bar of length ``L`` and cross-section ``A`` under uniaxial stress (``ν = 0``; one cell
across, so each end's nodes carry equal shares of a uniform traction and the linear
displacement field is exact for quad4 and hex8) has axial stiffness ``k_bar = E A / L``.
Grounded at one end by springs of total stiffness ``k_s`` and pulled by ``F`` at the other,
the two act in series: ``u_tip = F / k_bar + F / k_s``. Clamped at one end with the springs at
the loaded end, they act in parallel: ``u_tip = F / (k_bar + k_s)`` (e.g. Hibbeler,
*Mechanics of Materials*, §4.4, statically indeterminate axial members).
"""

import numpy as np
import pytest
from fem_helpers import distorted

from fesens.errors import BoundaryConditionError, MeshError, NonFiniteError, SolverError
from fesens.fem.partition.mesh_part import partition_mesh
from fesens.fem.partition.model_part import adopt
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity, HeatConduction

E, L, H, F, K = 7.0, 4.0, 0.5, 3.0, 2.5


def bar_2d(nx: int = 6, cell_type: str = "quad4") -> Elasticity:
    model = Elasticity(rectangle(nx, 1, L, H, cell_type=cell_type), E=E, nu=0.0)
    model.traction("right", (F / H, 0.0))      # thickness 1: total force F
    return model


def tip_x(model, solution) -> float:
    right = model.mesh.nodes("right")
    return float(np.mean(solution.displacement[right, 0]))


@pytest.mark.parametrize("cell_type", ["quad4", "tri3"])
def test_springs_in_series_with_a_bar(cell_type):
    model = bar_2d(cell_type=cell_type)
    model.spring("left", K, components="x")       # two nodes: k_s = 2 K
    model.fix((0.0, 0.0), components="y")
    u = model.solve(solver="superlu")
    expected = F / (E * H / L) + F / (2 * K)
    assert tip_x(model, u) == pytest.approx(expected, rel=1e-12)
    left = model.mesh.nodes("left")
    assert np.mean(u.displacement[left, 0]) == pytest.approx(F / (2 * K), rel=1e-12)


def test_springs_in_parallel_with_a_bar():
    model = bar_2d()
    model.fix("left", components="x").fix((0.0, 0.0), components="y")
    model.spring("right", [K, 0.5], components=["x", "y"])   # per component
    u = model.solve(solver="superlu")
    assert tip_x(model, u) == pytest.approx(F / (E * H / L + 2 * K), rel=1e-12)


def test_springs_in_series_in_3d():
    model = Elasticity(box(5, 1, 1, L, H, H), E=E, nu=0.0)
    model.traction("right", (F / H**2, 0.0, 0.0))
    model.spring("left", K, components="x")      # four nodes: k_s = 4 K
    model.fix((0.0, 0.0, 0.0), components=["y", "z"]).fix((0.0, H, 0.0), components="z")
    model.fix((0.0, 0.0, H), components="y")
    u = model.solve(solver="superlu")
    assert tip_x(model, u) == pytest.approx(F / (E * H * H / L) + F / (4 * K), rel=1e-12)


def test_springs_alone_hold_the_model_and_add_in_parallel():
    # no Dirichlet condition at all: springs in x and y at the left edge remove every
    # rigid motion; two calls at the same dofs add up (k and 3k act as 4k).
    model = bar_2d()
    model.spring("left", K).spring("left", 3 * K)
    u = model.solve(solver="superlu")
    assert tip_x(model, u) == pytest.approx(F / (E * H / L) + F / (8 * K), rel=1e-12)
    assert model.springs == {d: 4 * K for d in model.dofmap.node_dofs(
        model.mesh.nodes("left")).ravel().tolist()}


def test_the_springs_enter_the_stiffness_and_the_modes():
    model = bar_2d()
    model.fix("left")
    before = model.stiffness().tocsr().toarray()
    model.spring((L, H), 5.0, components="y")
    after = model.stiffness().tocsr().toarray()
    difference = after - before
    row = int(np.searchsorted(model.free_dofs, 2 * model.mesh.nearest_node((L, H)) + 1))
    assert difference[row, row] == 5.0
    difference[row, row] = 0.0
    assert not np.any(difference)


def test_scalar_field_springs_are_robin_conditions_at_nodes():
    # heat conduction in a 1D rod: T = Q/(k_s) + Q L/(k A) at the heated end, grounded by
    # a "spring" (a nodal conductance to T = 0) at the other end
    model = HeatConduction(rectangle(4, 1, L, H), conductivity=E)
    model.point_load("right", F / 2)
    model.spring("left", K)
    T = model.solve(solver="superlu").field
    assert float(np.mean(T[model.mesh.nodes("right")])) == pytest.approx(
        F / (2 * K) + F * L / (E * H), rel=1e-12)


def test_a_spring_on_a_fixed_dof_is_refused_whichever_comes_first():
    model = bar_2d()
    model.fix("left")
    with pytest.raises(BoundaryConditionError, match="Dirichlet conditions prescribe"):
        model.spring("left", K, components="x")
    other = bar_2d()
    other.spring("left", K).fix((0.0, 0.0), components="y")
    with pytest.raises(BoundaryConditionError, match="remove the spring or the support"):
        other.solve(solver="superlu")


@pytest.mark.parametrize(("stiffness", "error", "match"), [
    (0.0, BoundaryConditionError, "must be > 0"),
    (-1.0, BoundaryConditionError, "must be > 0"),
    ([1.0, 2.0, 3.0], BoundaryConditionError, "one number or 2"),
    (np.nan, NonFiniteError, "finite"),
])
def test_bad_stiffness_is_refused(stiffness, error, match):
    with pytest.raises(error, match=match):
        bar_2d().spring("left", stiffness)


def test_an_empty_selection_is_refused():
    with pytest.raises(MeshError, match="matched nothing"):
        bar_2d().spring(lambda p: p[:, 0] > 2 * L, K)


def test_the_device_multigrid_refuses_springs():
    """Its levels are rediscretized from the cells alone; the CPU's matrix-free operator
    adds the springs (tests/solvers/test_matrix_free_springs.py)."""
    model = Elasticity(box(4, 4, 4), E=1.0, nu=0.3)
    model.fix("left").spring("right", 1.0).point_load((1.0, 1.0, 1.0), (0.0, 0.0, -1.0))
    with pytest.raises(SolverError, match="springs"):
        model.solve(solver="gmg", solver_options={"matrix_free": True, "device": "numpy"})


def test_auto_may_choose_the_matrix_free_solve_for_springs():
    model = Elasticity(box(4, 4, 4), E=1.0, nu=0.3)
    model.fix("left").spring("right", 1.0)
    assert model._matrix_free_refusal() is None


def test_a_model_with_springs_is_not_split_among_ranks():
    model = bar_2d()
    model.fix("left", components="x").fix((0.0, 0.0), components="y").spring("right", K)
    ranks = (model.mesh.cells[:, 0] % 2).astype(int)
    part = partition_mesh(model.mesh, ranks, 0, 2)
    with pytest.raises(BoundaryConditionError, match="not split among MPI ranks"):
        adopt(Elasticity(part.mesh, E=E, nu=0.0), model, part)


@pytest.mark.parametrize("cell_type", ["quad4", "tri3"])
def test_springs_in_series_on_a_distorted_mesh(cell_type):
    # Interior nodes moved at random: the uniaxial stress field is still linear in the
    # displacement, which linear cells represent exactly, when each edge node's spring is k
    # per unit length times its share of the edge (half a cell at the corners).
    model = Elasticity(distorted(rectangle(8, 3, L, H, cell_type=cell_type), 0.05), E=E,
                       nu=0.0)
    model.traction("right", (F / H, 0.0))
    per_length = K
    for y in np.linspace(0.0, H, 4):
        share = H / 6 if y in (0.0, H) else H / 3
        model.spring((0.0, y), per_length * share, components="x")
    model.fix((0.0, 0.0), components="y")
    u = model.solve(solver="superlu")
    expected = F / (E * H / L) + F / (per_length * H)
    assert np.allclose(u.displacement[model.mesh.nodes("right"), 0], expected, rtol=1e-10)
