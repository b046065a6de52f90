"""Langelaar's additive-manufacturing (overhang) filter, :mod:`fesens.opt.overhang`.

References: M. Langelaar, "An additive manufacturing filter for topology optimization of
print-ready designs", Struct. Multidisc. Optim. 55 (2017) 871–883 (2D: three-cell
supporting region, ``P = 40``, ``ε = 10⁻⁴``, ``ξ_0 = 0.5``; the printed field never exceeds
the blueprint by more than the smooth minimum's ``√ε / 2``); M. Langelaar, "Topology
optimization of 3D self-supporting structures for additive manufacturing", Additive
Manufacturing 12 (2016) 60–70 (3D: five-cell supporting region). The hand-made designs are
built from the cell centroids, independently of the filter's own layer indexing.
"""

import numpy as np
import pytest
from opt_helpers import mbb_problem

from fesens.ad import check_grad, grad, jvp, taylor_test
from fesens.errors import MeshError
from fesens.mesh import Mesh, box, rectangle
from fesens.mpi import SERIAL
from fesens.objectives import compliance
from fesens.opt import (
    MMA,
    SIMP,
    DesignProblem,
    DistributedDesignProblem,
    Heaviside,
    make_filter,
    optimize,
)
from fesens.opt.overhang import OverhangFilter, build_directions
from fesens.physics import Elasticity

MESHES = {2: rectangle(9, 6, 9.0, 6.0), 3: box(7, 6, 5, 7.0, 6.0, 5.0)}
CASES = [(dim, direction) for dim in (2, 3) for direction in build_directions(dim)]
IDS = [f"{dim}D{direction}" for dim, direction in CASES]
#: The smooth minimum's largest excess over the blueprint, ``√ε / 2`` for ``ε = 10⁻⁴``.
EXCESS = 0.5 * np.sqrt(1e-4)


def heights(mesh: Mesh, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """Layer number of each cell counted from the build plate ``(n_cells,)`` and its lateral
    lattice coordinates ``(n_cells, dim − 1)``, from the unit-cell centroids."""
    axis, sign = "xyz".index(direction[1]), 1 if direction[0] == "+" else -1
    centroids = mesh.cell_centroids()
    height = sign * centroids[:, axis]
    layer = np.rint(height - height.min()).astype(int)
    lateral = np.delete(centroids, axis, axis=1) - 0.5
    return layer, np.rint(lateral).astype(int)


@pytest.mark.parametrize(("dim", "direction"), CASES, ids=IDS)
def test_gradient_taylor_and_central_differences(dim, direction):
    mesh = MESHES[dim]
    overhang = OverhangFilter(mesh, direction)
    rng = np.random.default_rng(dim)
    x = rng.uniform(0.0, 1.0, mesh.n_cells)
    weights = rng.standard_normal(mesh.n_cells)

    def f(x):
        return np.sum(weights * overhang(x) ** 2)

    # The smooth max with P = 40 bends sharply: steps of 1e-3 are in the Taylor regime.
    result = taylor_test(f, x, step=1e-3, verbose=False)
    assert result.rate == pytest.approx(2.0, abs=0.1)
    assert check_grad(f, x) < 1e-6


@pytest.mark.parametrize(("dim", "direction"), CASES, ids=IDS)
def test_forward_mode_agrees_with_the_adjoint_recursion(dim, direction):
    mesh = MESHES[dim]
    overhang = OverhangFilter(mesh, direction)
    rng = np.random.default_rng(7)
    x, v, w = (rng.uniform(0.0, 1.0, mesh.n_cells), rng.standard_normal(mesh.n_cells),
               rng.standard_normal(mesh.n_cells))
    value, tangent = jvp(overhang, (x,), (v,))
    np.testing.assert_array_equal(value, overhang(x))
    assert tangent @ w == pytest.approx(grad(lambda x: np.sum(w * overhang(x)))(x) @ v,
                                        rel=1e-12)


@pytest.mark.parametrize(("dim", "direction"), CASES, ids=IDS)
def test_printed_field_never_exceeds_the_blueprint(dim, direction):
    """The paper's property ``ξ ≤ x`` (to the smooth minimum's ``√ε / 2``), the base layer
    printed as it is, and densities in ``[0, 1 + √ε / 2]``."""
    mesh = MESHES[dim]
    overhang = OverhangFilter(mesh, direction)
    layer, _ = heights(mesh, direction)
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(0.0, 1.0, mesh.n_cells)
        printed = overhang(x)
        assert np.all(printed <= x + EXCESS)
        assert np.all(printed >= 0.0)
        np.testing.assert_array_equal(printed[layer == 0], x[layer == 0])


@pytest.mark.parametrize(("dim", "direction"), CASES, ids=IDS)
def test_a_self_supporting_design_is_printed_unchanged(dim, direction):
    """A pyramid widening at 45° away from the plate (each layer one cell wider per lateral
    direction) and a solid slab on the plate: every cell is supported."""
    mesh = MESHES[dim]
    layer, lateral = heights(mesh, direction)
    centre = np.median(lateral, axis=0).astype(int)
    pyramid = np.abs(lateral - centre).sum(axis=1) <= layer
    slab = layer <= 1
    overhang = OverhangFilter(mesh, direction)
    for blueprint in (pyramid, slab):
        x = blueprint.astype(float)
        assert not overhang.unsupported(x).any()
        assert np.abs(overhang(x) - x).max() < 0.01


@pytest.mark.parametrize(("dim", "direction"), CASES, ids=IDS)
def test_an_unsupported_overhang_is_cut(dim, direction):
    """A ledge: a one-cell column from the plate with a full layer on top; the ledge's cells
    more than one cell away (one layer down) from the column have no support and vanish, as
    does a block floating above void."""
    mesh = MESHES[dim]
    layer, lateral = heights(mesh, direction)
    top = layer.max()
    column = np.all(lateral == 0, axis=1)
    ledge = column | (layer == top)
    overhang = OverhangFilter(mesh, direction)
    printed = overhang(ledge.astype(float))
    reach = np.abs(lateral).sum(axis=1)  # L1 distance from the column, within a layer
    assert printed[column].min() > 0.99
    cut = (layer == top) & (reach >= 2)
    assert cut.any() and printed[cut].max() < 0.05
    assert printed[(layer == top) & (reach == 1)].min() > 0.99  # the 45° corner stays
    assert overhang.unsupported(ledge.astype(float))[cut].all()
    floating = (layer >= 2).astype(float) * (reach <= 1)
    assert overhang(floating).max() < 0.05


def test_compliance_through_the_overhang_filter():
    """Compliance of a small MBB beam through density filter → overhang filter → SIMP:
    Taylor rate 2 and central differences of the design problem's chain."""
    problem = mbb_problem(12, 6, 1.5, "density",
                          overhang=OverhangFilter(rectangle(12, 6, 12.0, 6.0), "+y"))
    x = np.random.default_rng(3).uniform(0.3, 0.9, problem.n_design)

    def f(x):
        return compliance(problem.solve(problem.density(x)))

    assert taylor_test(f, x, step=1e-3, verbose=False).rate == pytest.approx(2.0, abs=0.1)
    assert check_grad(f, x) < 1e-6
    evaluation = problem.evaluate(x)
    np.testing.assert_allclose(evaluation.gradient, grad(f)(x), rtol=1e-12)
    # the volume is that of the printed field, not the affine shortcut of a linear chain
    excess = problem.volume_excess(x, evaluation)
    y = np.clip(x + 0.1, 0.0, 1.0)
    assert excess(y) == pytest.approx(problem.volume_fraction_of(y) - 0.5, abs=1e-14)


@pytest.mark.parametrize("direction", ["+y", "-y", "+x"])
def test_optimized_mbb_beam_is_self_supporting(direction):
    """60x20 MBB beam (top88's, density filter 2.4), 40 MMA iterations. With the filter no
    solid cell (ρ > 0.5) lacks support; the same run without it violates the 45° rule for
    the vertical build directions (measured: 29 cells for +y, 44 for -y of ~600), so the
    measure bites."""
    mesh = rectangle(60, 20, 60.0, 20.0)
    overhang = OverhangFilter(mesh, direction)
    problem = mbb_problem(60, 20, 2.4, "density", overhang=overhang)
    result = optimize(problem, MMA(), max_iter=40, tol_change=0.0)
    rho = problem.density(result.x)
    solid = rho > 0.5
    assert overhang.unsupported(rho).sum() / solid.sum() < 0.005
    assert result.history[-1]["volume"] == pytest.approx(0.5, abs=0.01)
    assert result.history[-1]["objective"] < 0.5 * result.history[0]["objective"]
    if direction[1] == "y":
        plain = mbb_problem(60, 20, 2.4, "density")
        rho_plain = plain.density(optimize(plain, MMA(), max_iter=40, tol_change=0.0).x)
        assert overhang.unsupported(rho_plain).sum() / (rho_plain > 0.5).sum() > 0.02


def test_refuses_meshes_that_are_not_lattices_of_cells():
    with pytest.raises(MeshError, match="layer by layer"):
        OverhangFilter(rectangle(4, 3, 4.0, 3.0, cell_type="tri3"), "+y")
    mesh = rectangle(4, 3, 4.0, 3.0)
    points = mesh.points.copy()
    inner = np.flatnonzero((points[:, 0] > 0) & (points[:, 0] < 4) & (points[:, 1] > 0)
                           & (points[:, 1] < 3))
    points[inner[0]] += (0.1, 0.05)
    with pytest.raises(MeshError, match="unstructured"):
        OverhangFilter(Mesh(points, mesh.cells, "quad4"), "+y")


@pytest.mark.parametrize("direction", ["+z", "z", "up", "-w", None, 1])
def test_refuses_unknown_directions(direction):
    mesh = rectangle(4, 3, 4.0, 3.0)
    if direction is None:  # the default is up the last axis
        assert OverhangFilter(mesh).direction == "+y"
        return
    with pytest.raises(ValueError, match="unknown build direction"):
        OverhangFilter(mesh, direction)


@pytest.mark.parametrize("name", ["overhang", "design_map"])
def test_a_design_split_among_ranks_refuses_whole_mesh_maps(name):
    """Layers below, mirror images and columns span the ranks' parts: refused, not applied
    per part."""
    mesh = rectangle(4, 3, 4.0, 3.0)
    model = mbb_problem(4, 3, 1.5, "density").model
    with pytest.raises(ValueError, match="split among MPI ranks"):
        DistributedDesignProblem(model, lambda state, rho: compliance(state),
                                 volume_fraction=0.5, part=None, whole_model=model,
                                 collective=SERIAL, **{name: OverhangFilter(mesh)})


def test_optimized_3d_cantilever_is_self_supporting():
    """A 16x4x8 hex8 cantilever (clamped at x = 0, a downward load at the free end's bottom
    edge, volume 0.3, density filter 1.5), 30 MMA iterations, built up the z axis: with the
    filter no solid cell lacks its five-cell support; without it some do (measured 22 of
    150), so the measure bites in 3D too."""
    nx, ny, nz = 16, 4, 8
    mesh = box(nx, ny, nz, float(nx), float(ny), float(nz))
    overhang = OverhangFilter(mesh, "+z")

    def designed(overhang):
        model = Elasticity(mesh, E=1.0, nu=0.3)
        model.fix(lambda p: np.isclose(p[:, 0], 0.0))
        model.point_load((float(nx), ny / 2, 0.0), (0.0, 0.0, -1.0), name="F")
        problem = DesignProblem(model, lambda state, rho: compliance(state),
                                volume_fraction=0.3, interpolation=SIMP(3.0, 1e-9),
                                filter=make_filter("density", mesh, 1.5), overhang=overhang)
        return problem.density(optimize(problem, MMA(), max_iter=30, tol_change=0.0).x)

    rho = designed(overhang)
    assert overhang.unsupported(rho).sum() / (rho > 0.5).sum() < 0.005
    plain = designed(None)
    assert overhang.unsupported(plain).sum() / (plain > 0.5).sum() > 0.05


def test_compliance_through_projection_and_overhang():
    """The chain density filter → Heaviside projection → overhang filter → SIMP, 3D."""
    mesh = box(6, 4, 4, 6.0, 4.0, 4.0)
    model = Elasticity(mesh, E=1.0, nu=0.3)
    model.fix(lambda p: np.isclose(p[:, 0], 0.0))
    model.point_load((6.0, 2.0, 0.0), (0.0, 0.0, -1.0), name="F")
    problem = DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.4,
                            interpolation=SIMP(3.0, 1e-9), filter=make_filter("density", mesh,
                                                                               1.3),
                            projection=Heaviside(beta=4.0), overhang=OverhangFilter(mesh, "-x"))
    x = np.random.default_rng(8).uniform(0.3, 0.9, problem.n_design)

    def f(x):
        return compliance(problem.solve(problem.density(x)))

    assert taylor_test(f, x, step=1e-3, verbose=False).rate == pytest.approx(2.0, abs=0.1)
    assert check_grad(f, x) < 1e-6
