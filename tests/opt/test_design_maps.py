"""Mirror symmetry and extrusion as design maps, :mod:`fesens.opt.design_maps`.

Both are fixed linear maps with one 1 per row (a cell takes its group's variable): the full
design is exactly symmetric (constant along the extrusion axis), the VJP sums each group's
cotangents, and a compliance objective through the map in a :class:`DesignProblem` has a
Taylor rate of 2 and matches central differences.
"""

import numpy as np
import pytest
from opt_helpers import mbb_problem
from scipy.spatial import Delaunay

from fesens.ad import check_grad, grad, taylor_test
from fesens.errors import MeshError
from fesens.mesh import Mesh, box, rectangle
from fesens.objectives import compliance
from fesens.opt import MMA, SIMP, DesignProblem, make_filter, optimize
from fesens.opt.design_maps import CellGroups, Extrusion, MirrorSymmetry
from fesens.physics import Elasticity


def symmetric_triangles(n_random: int = 40, seed: int = 0) -> Mesh:
    """An unstructured tri3 mesh of ``[0, 2] × [0, 1]`` symmetric about ``x = 1``: a
    Delaunay triangulation of random points of the left half and of its boundary, and its
    mirror image (the nodes on ``x = 1`` shared)."""
    rng = np.random.default_rng(seed)
    edge = np.linspace(0.0, 1.0, 6)
    boundary = np.concatenate([np.c_[edge, 0 * edge], np.c_[edge, 0 * edge + 1],
                               np.c_[0 * edge, edge], np.c_[0 * edge + 1, edge]])
    left = np.unique(np.round(np.vstack([boundary, rng.uniform(0.05, 0.95, (n_random, 2))]),
                              12), axis=0)
    triangles = Delaunay(left).simplices
    a, b, c = (left[triangles[:, k]] for k in range(3))
    u, v = b - a, c - a
    clockwise = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0] < 0
    triangles[clockwise] = triangles[clockwise][:, ::-1]
    on_plane = np.isclose(left[:, 0], 1.0)
    mirrored_id = np.where(on_plane, np.arange(len(left)),
                           len(left) + np.cumsum(~on_plane) - 1)
    right = left[~on_plane] * (-1.0, 1.0) + (2.0, 0.0)
    points = np.vstack([left, right])
    cells = np.vstack([triangles, mirrored_id[triangles][:, ::-1]])
    return Mesh(points, cells, "tri3")


def mirror_of(mesh: Mesh, axis: int, position: float) -> np.ndarray:
    """Each cell's mirror cell, by rounded reflected centroids (``(n_cells,)``)."""
    centroids = mesh.cell_centroids()
    reflected = centroids.copy()
    reflected[:, axis] = 2 * position - reflected[:, axis]
    key = {tuple(np.round(c, 8)): i for i, c in enumerate(centroids)}
    return np.array([key[tuple(np.round(c, 8))] for c in reflected])


SYMMETRIES = {
    "quad4 x": (rectangle(8, 5, 8.0, 5.0), {"x": None}),
    "quad4 x,y": (rectangle(8, 6, 8.0, 6.0), ["x", "y"]),
    "hex8 x,z": (box(4, 3, 6, 4.0, 3.0, 6.0), {"x": 2.0, "z": 3.0}),
    "tri3 unstructured x": (symmetric_triangles(), {"x": 1.0}),
}


@pytest.mark.parametrize("name", list(SYMMETRIES))
def test_mirrored_design_is_exactly_symmetric(name):
    mesh, planes = SYMMETRIES[name]
    symmetry = MirrorSymmetry(mesh, planes)
    n_planes = len(planes)
    assert symmetry.n_reduced * 2 ** n_planes >= mesh.n_cells > symmetry.n_reduced
    x = np.random.default_rng(1).uniform(size=symmetry.n_reduced)
    full = symmetry(x)
    lower, upper = mesh.bounding_box()
    for axis, position in symmetry.planes.items():
        image = mirror_of(mesh, axis, position)
        np.testing.assert_array_equal(full, full[image])
        assert position == (0.5 * (lower[axis] + upper[axis]) if not isinstance(planes, dict)
                            or planes["xyz"[axis]] is None else planes["xyz"[axis]])
    np.testing.assert_array_equal(symmetry.reduce(full), x)


@pytest.mark.parametrize(("mesh", "axis"), [(rectangle(7, 4, 7.0, 4.0), "x"),
                                            (rectangle(7, 4, 7.0, 4.0), 1),
                                            (box(4, 3, 5, 4.0, 3.0, 5.0), "z"),
                                            (box(4, 3, 5, 4.0, 3.0, 5.0), "x")],
                         ids=["2D x", "2D y", "3D z", "3D x"])
def test_extruded_design_is_exactly_constant_along_the_axis(mesh, axis):
    extrusion = Extrusion(mesh, axis)
    index = "xyz".index(axis) if isinstance(axis, str) else axis
    centroids = mesh.cell_centroids()
    section = np.delete(centroids, index, axis=1)
    assert extrusion.n_reduced == len(np.unique(section, axis=0))
    full = extrusion(np.random.default_rng(2).uniform(size=extrusion.n_reduced))
    for key in np.unique(section, axis=0):
        column = np.all(section == key, axis=1)
        assert column.sum() == mesh.n_cells // extrusion.n_reduced
        assert np.ptp(full[column]) == 0.0


@pytest.mark.parametrize("make", [lambda m: MirrorSymmetry(m, ["x", "y"]),
                                  lambda m: Extrusion(m, "y")], ids=["symmetry", "extrusion"])
def test_map_gradient_taylor_and_central_differences(make):
    mesh = rectangle(8, 6, 8.0, 6.0)
    groups = make(mesh)
    rng = np.random.default_rng(4)
    x = rng.uniform(0.2, 0.8, groups.n_reduced)
    weights = rng.standard_normal(mesh.n_cells)

    def f(x):
        return np.sum(weights * groups(x) ** 3)

    assert taylor_test(f, x, verbose=False).rate == pytest.approx(2.0, abs=0.05)
    assert check_grad(f, x) < 1e-8
    expected = np.bincount(groups.owner, weights=3 * weights * groups.apply(x) ** 2)
    np.testing.assert_allclose(grad(f)(x), expected, rtol=1e-13)


@pytest.mark.parametrize("kind", ["symmetry", "extrusion"])
def test_compliance_through_a_design_map(kind):
    mesh = rectangle(12, 6, 12.0, 6.0)
    design_map = MirrorSymmetry(mesh, "y") if kind == "symmetry" else Extrusion(mesh, "y")
    # passive sets the map takes onto themselves: the groups of cells 0 and 5 (an extruded
    # void column would cut the beam in two: none there)
    solid, void = (np.flatnonzero(design_map.owner == design_map.owner[c]) for c in (0, 5))
    if kind == "extrusion":
        void = void[:0]
    problem = mbb_problem(12, 6, 1.5, "density", design_map=design_map,
                          passive_solid=solid, passive_void=void)
    assert problem.n_design == design_map.n_reduced
    x = np.random.default_rng(5).uniform(0.3, 0.9, problem.n_design)

    def f(x):
        return compliance(problem.solve(problem.density(x)))

    assert taylor_test(f, x, verbose=False).rate == pytest.approx(2.0, abs=0.1)
    assert check_grad(f, x) < 1e-6
    evaluation = problem.evaluate(x)
    np.testing.assert_allclose(evaluation.gradient, grad(f)(x), rtol=1e-12)
    assert np.all(evaluation.density[solid] == 1.0) and np.all(evaluation.density[void] == 0.0)
    # a linear chain: the optimizer's affine volume shortcut is exact
    y = np.clip(x + 0.05, 0.0, 1.0)
    assert problem.volume_excess(x, evaluation)(y) == pytest.approx(
        problem.volume_fraction_of(y) - 0.5, abs=1e-12)


def test_symmetric_optimization_keeps_the_design_symmetric():
    """A beam on two supports under a central load, half-symmetric about its middle; 15 MMA
    iterations on the symmetric design: the full design exactly symmetric, the densities to
    round-off of the filter."""
    mesh = rectangle(24, 8, 24.0, 8.0)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix(lambda p: np.isclose(p[:, 1], 0.0) & (np.isclose(p[:, 0], 0.0)
                                                     | np.isclose(p[:, 0], 24.0)))
    model.point_load((12.0, 8.0), (0.0, -1.0), name="F")
    symmetry = MirrorSymmetry(mesh, "x")
    problem = DesignProblem(model, lambda state, rho: compliance(state), volume_fraction=0.4,
                            interpolation=SIMP(3.0, 1e-9),
                            filter=make_filter("density", mesh, 1.5), design_map=symmetry)
    result = optimize(problem, MMA(), max_iter=15, tol_change=0.0)
    image = mirror_of(mesh, 0, 12.0)
    full = symmetry.apply(result.x)
    np.testing.assert_array_equal(full, full[image])
    rho = problem.density(result.x)
    np.testing.assert_allclose(rho, rho[image], atol=1e-12)
    assert result.history[-1]["objective"] < 0.5 * result.history[0]["objective"]


def test_refuses_a_cell_without_mirror_image():
    mesh = rectangle(6, 4, 6.0, 4.0)
    points = mesh.points.copy()
    node = int(np.flatnonzero(np.isclose(points[:, 0], 1.0) & np.isclose(points[:, 1], 1.0))[0])
    points[node] += (0.2, 0.1)
    with pytest.raises(MeshError, match="no mirror image"):
        MirrorSymmetry(Mesh(points, mesh.cells, "quad4"), "x")
    with pytest.raises(MeshError, match="no mirror image"):
        MirrorSymmetry(mesh, {"x": 2.5})  # a plane off the middle
    with pytest.raises(MeshError, match="no mirror image"):
        MirrorSymmetry(symmetric_triangles(), "y")


def test_refuses_bad_axes_and_combinations():
    mesh = rectangle(6, 4, 6.0, 4.0)
    for axis in ("z", "w", 2, "xy"):
        with pytest.raises(ValueError, match="unknown axis"):
            MirrorSymmetry(mesh, [axis])
        with pytest.raises(ValueError, match="unknown axis"):
            Extrusion(mesh, axis)
    with pytest.raises(ValueError, match="two symmetry planes"):
        MirrorSymmetry(mesh, ["x", 0])
    with pytest.raises(MeshError, match="column by column"):
        Extrusion(rectangle(6, 4, 6.0, 4.0, cell_type="tri3"), "x")
    with pytest.raises(ValueError, match="replaces the gradient"):
        mbb_problem(6, 4, 1.5, "sensitivity", design_map=Extrusion(rectangle(6, 4, 6.0, 4.0),
                                                                   "y"))


def test_combined_symmetry_and_extrusion_hold_both():
    """A 3D design symmetric about x = 2 and extruded along z: exactly both."""
    mesh = box(4, 3, 5, 4.0, 3.0, 5.0)
    symmetry, extrusion = MirrorSymmetry(mesh, "x"), Extrusion(mesh, "z")
    both = CellGroups.combine(symmetry, extrusion)
    assert both.n_reduced == 2 * 3  # half of the 4 x-columns, 3 in y
    full = both(np.random.default_rng(6).uniform(size=both.n_reduced))
    np.testing.assert_array_equal(full, full[mirror_of(mesh, 0, 2.0)])
    np.testing.assert_array_equal(full, symmetry.apply(symmetry.reduce(full)))
    np.testing.assert_array_equal(full, extrusion.apply(extrusion.reduce(full)))
    with pytest.raises(ValueError, match="one mesh"):
        CellGroups.combine(symmetry, Extrusion(rectangle(4, 3, 4.0, 3.0), "x"))
