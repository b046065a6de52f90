"""Models, parameter points and the gradient assertion shared by the adjoint tests.

Every gradient check is a pair: the Taylor remainder
``|J(x + εh) − J(x) − ε ∇J·h|`` converges at rate 2 (within :data:`RATE_TOLERANCE`) and
the gradient agrees with central differences (:func:`fesens.ad.check_grad` raises
otherwise). A function that is affine along the direction has no rate (its remainders
are round-off); there the remainders themselves must vanish: ``J(x + εh) = J(x) + ε ∇J·h``.
"""

import numpy as np

from fesens.ad import check_grad, taylor_test
from fesens.mesh import Mesh, box, rectangle
from fesens.physics import Elasticity, HeatConduction

RATE_TOLERANCE = 0.1
#: Remainders of an affine function, relative to ``|J(x)|``: round-off only.
AFFINE_RTOL = 1e-9
#: Central-difference step: solves carry ~1e-13 relative round-off (condition number of
#: K), which a step of 1e-6 along a short random direction amplifies to ~1e-6; at 1e-5 the
#: truncation error (~ε²) is still far below check_grad's tolerance of 1e-5.
FD_STEP = 1e-5

CELL_TYPES_2D = ("tri3", "tri6", "quad4")
CELL_TYPES_3D = ("tet4", "tet10", "hex8")

#: Cantilever tip (bottom-right corner) and top-right corner of :func:`cantilever`.
TIP = (2.0, 0.0)
CORNER = (2.0, 1.0)


def assert_gradient(fun, x, *, affine: bool = False, step: float | None = None) -> None:
    """Taylor test (rate 2, or exact first-order expansion when ``affine``) and FD check.

    ``step`` is the first Taylor step ``ε_0`` (default: taylor_test's, a change of about
    1e-2 in the largest entry).
    """
    result = taylor_test(fun, x, step=step, verbose=False)
    if affine:
        bound = AFFINE_RTOL * abs(float(fun(x)))
        message = f"remainders above round-off ({bound:.1e}):\n{result.table()}"
        assert np.all(result.residuals <= bound), message
    else:
        assert abs(result.rate - 2.0) < RATE_TOLERANCE, result.table()
    check_grad(fun, x, eps=FD_STEP)


def relative_difference(a, b) -> float:
    """``‖a − b‖ / ‖b‖``."""
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(b))


def densities(n_cells: int, seed: int = 0) -> np.ndarray:
    """Seeded densities in ``[0.3, 1]``, ``(n_cells,)`` (away from the void limit)."""
    return np.random.default_rng(seed).uniform(0.3, 1.0, n_cells)


def left_edge_motion(points: np.ndarray) -> np.ndarray:
    """A non-rigid prescribed displacement of the clamped edge, ``(n, 2)``."""
    y = points[:, 1]
    return np.column_stack([0.2 * y**2 - 0.1, 0.1 * y])


def cantilever(cell_type: str = "quad4", plane: str = "stress", *, prescribed: bool = True,
               thickness: float = 1.0, nx: int = 6, ny: int = 3) -> Elasticity:
    """A 2 x 1 cantilever clamped on ``left`` with three named loads.

    ``tip`` (point load at :data:`TIP`), ``traction`` (on ``top``) and ``gravity`` (body
    force). With ``prescribed`` the clamp moves the edge by :func:`left_edge_motion`
    (non-zero ``g``, so every parameter enters every objective nonlinearly), else it is
    fixed at zero.
    """
    mesh = rectangle(nx, ny, 2.0, 1.0, cell_type=cell_type)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane=plane, thickness=thickness)
    model.fix("left", value=left_edge_motion if prescribed else 0.0)
    model.point_load(TIP, (0.005, -0.015), name="tip")
    model.traction("top", (0.0, -0.008), name="traction")
    model.body_force((0.0015, -0.003), name="gravity")
    return model


def distort(mesh: Mesh, amount: float = 0.2, seed: int = 0) -> Mesh:
    """The mesh with its interior nodes moved randomly (linear cell types only): cells are
    no longer translates of each other, nor affine images of the reference cell."""
    boundary = np.unique(mesh.boundary_facets().facets)
    interior = np.setdiff1d(np.arange(mesh.n_points), boundary)
    spacing = np.ptp(mesh.points, axis=0) / mesh.n_cells ** (1.0 / mesh.dim)  # typical
    points = mesh.points.copy()
    shift = np.random.default_rng(seed).uniform(-amount, amount, (interior.size, mesh.dim))
    points[interior] += shift * spacing
    return Mesh(points, mesh.cells, mesh.cell_type, mesh.node_sets, mesh.facet_sets,
                mesh.cell_sets)


def beam(cell_type: str, plane: str | None = None, *, distorted: bool = False) -> Elasticity:
    """A small clamped beam of any cell type with a traction on ``right`` (zero ``g``)."""
    if cell_type in CELL_TYPES_2D:
        mesh = rectangle(4, 2, 2.0, 1.0, cell_type=cell_type)
        model = Elasticity(distort(mesh) if distorted else mesh, E=1.0, nu=0.3, plane=plane)
        model.fix("left")
        model.traction("right", (0.2, -1.0), name="shear")
    else:
        mesh = box(3, 2, 2, 3.0, 1.0, 1.0, cell_type=cell_type)
        model = Elasticity(distort(mesh) if distorted else mesh, E=1.0, nu=0.3)
        model.fix("left")
        model.traction("right", (0.2, -1.0, 0.5), name="shear")
    return model


def prescribed_temperature(points: np.ndarray) -> np.ndarray:
    """Non-uniform prescribed temperature on the cooled edge, ``(n,)``."""
    return 1.0 + 0.5 * points[:, 1]


def plate(*, thickness: float = 1.0) -> HeatConduction:
    """A 2 x 1 conducting plate: prescribed temperature on ``left``, a heat ``source``
    everywhere and a ``flux`` into ``right``."""
    mesh = rectangle(6, 3, 2.0, 1.0, cell_type="quad4")
    model = HeatConduction(mesh, conductivity=1.0, thickness=thickness)
    model.fix("left", value=prescribed_temperature)
    model.heat_source(1.0, name="source")
    model.flux("right", 0.5, name="flux")
    return model
