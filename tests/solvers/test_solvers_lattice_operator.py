"""The matrix-free lattice operator: the products, diagonal and cell
energies equal those of the assembled ``K_ff`` of a model, the cell-by-cell Galerkin
coarse level equals the sparse ``Pᵀ K P``, and bad input is refused.

The references are the assembler's matrix and cell energies (an independent code path:
a gather matrix over the element matrices in the mesh's own node order) and the sparse
product with the prolongation of ``grid_hierarchy``."""

import numpy as np
import pytest

from fesens.errors import NonFiniteError
from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity, HeatConduction
from fesens.solvers.grid_hierarchy import StructuredGrid, _lattice_prolongation
from fesens.solvers.lattice_operator import LatticeStructure


def elasticity(mesh) -> Elasticity:
    plane = {"plane": "stress"} if mesh.dim == 2 else {}
    return Elasticity(mesh, E=1.0, nu=0.3, **plane).fix("left")


def heat(mesh) -> HeatConduction:
    return HeatConduction(mesh, conductivity=1.0).fix("left", value=0.0)


CASES = {
    "quad4 odd 7x5": lambda: elasticity(rectangle(7, 5, 1.4, 1.0)),
    "quad4 8x4": lambda: elasticity(rectangle(8, 4, 2.0, 1.0)),
    "hex8 odd 5x3x3": lambda: elasticity(box(5, 3, 3, 5.0, 3.0, 3.0)),
    "hex8 4x4x2 stretched": lambda: elasticity(box(4, 4, 2, 1.0, 2.0, 0.5)),
    "heat hex8 6x3x2": lambda: heat(box(6, 3, 2)),
}


def assembled(model, s):
    weights, _ = model.stiffness_fields()
    return model.assembler.stiffness([s], weights)  # heat: weights None, one component


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request):
    model = CASES[request.param]()
    system = lattice_system(model, model.stiffness_fields()[0])
    s = np.random.default_rng(3).uniform(1e-3, 1.0, model.mesh.n_cells)
    return model, system, s


def test_product_diagonal_and_matrix_equal_the_assembled_stiffness(case):
    model, system, s = case
    K = assembled(model, s)
    operator = system.operator(s)
    x = np.random.default_rng(0).standard_normal((K.shape[0], 2))
    scale = np.abs(K).max()
    assert np.abs(operator @ x[:, 0] - K @ x[:, 0]).max() < 1e-13 * scale * 10
    assert np.abs(operator @ x - K @ x).max() < 1e-12 * scale
    assert np.abs(operator.diagonal() - K.diagonal()).max() < 1e-13 * scale
    assert abs(operator.tocsr() - K).max() < 1e-13 * scale


def test_cell_energies_equal_the_assemblers(case):
    model, system, s = case
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, model.free_dofs.size))
    weights, _ = model.stiffness_fields()
    full = np.zeros((2, model.dofmap.n_dofs))
    full[0, model.free_dofs], full[1, model.free_dofs] = a, b
    weights = (1.0,) if weights is None else weights  # heat: one component
    reference = np.asarray(weights) @ model.assembler.cell_energies(full[0], full[1])
    ours = system.in_caller_order(system.structure.cell_bilinear(a, b))
    assert np.abs(ours - reference).max() < 1e-12 * np.abs(reference).max()


def test_galerkin_coarse_level_equals_the_sparse_product(case):
    model, system, s = case
    K = assembled(model, s)
    grid = system.structure.grid
    P, _, _ = _lattice_prolongation(grid.shape, grid.rows >= 0)
    P = P[np.argsort(grid.rows[grid.rows >= 0])]  # rows in K_ff's order
    reference = (P.T @ K @ P).tocsr()
    coarse = system.operator(s).galerkin()
    assert coarse.shape == reference.shape
    assert abs(coarse - reference).max() < 1e-13 * abs(reference).max()


def small_structure(nc=1):
    grid = StructuredGrid((3, 3), np.arange(9 * nc).reshape(9, nc))
    return grid, np.eye(4 * nc)


def test_reference_matrix_of_the_wrong_shape_is_refused():
    grid, _ = small_structure()
    with pytest.raises(ValueError, match=r"must be \(4, 4\)"):
        LatticeStructure(grid, np.eye(8))


def test_non_symmetric_reference_matrix_is_refused():
    grid, element = small_structure()
    element[0, 1] = 1.0
    with pytest.raises(ValueError, match="not symmetric"):
        LatticeStructure(grid, element)


def test_non_finite_reference_matrix_and_coefficients_are_refused():
    grid, element = small_structure()
    bad = element.copy()
    bad[0, 0] = np.nan
    with pytest.raises(NonFiniteError, match="reference cell matrix"):
        LatticeStructure(grid, bad)
    structure = LatticeStructure(grid, element)
    with pytest.raises(NonFiniteError, match="coefficients"):
        structure.operator(np.array([1.0, np.inf, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        structure.operator(np.ones(3))


class Device(np.ndarray):
    """An array of a stand-in array library (as a CuPy array would be): numpy's values,
    its own type and namespace, so a kernel that allocates with numpy is seen."""

    def __array_namespace__(self):
        return DEVICE


class _DeviceLibrary:
    """The stand-in library: numpy's functions returning :class:`Device` arrays, counting
    the host arrays copied to it."""

    __name__ = "device"

    def __init__(self):
        self.copies = 0

    def asarray(self, a):
        self.copies += 1
        return np.asarray(a).view(Device)

    def __getattr__(self, name):
        function = getattr(np, name)
        return lambda *args, **kwargs: np.asarray(function(*args, **kwargs)).view(Device)


DEVICE = _DeviceLibrary()


def test_the_kernels_run_in_the_library_of_their_inputs(case):
    model, system, s = case
    structure = system.structure
    rng = np.random.default_rng(1)
    x = rng.standard_normal((structure.n, 2))
    on_host = (structure.apply(s, x), structure.diagonal(s),
               structure.cell_bilinear(x, x[::-1].copy()))
    before = DEVICE.copies
    on_device = (structure.apply(s.view(Device), x.view(Device)),
                 structure.diagonal(s.view(Device)),
                 structure.cell_bilinear(x.view(Device), x[::-1].copy().view(Device)))
    for host, device in zip(on_host, on_device, strict=True):
        assert type(device) is Device  # never brought back to numpy
        assert np.array_equal(np.asarray(device), host)  # the same arithmetic
    assert DEVICE.copies - before == 2  # the reference matrix and positions, copied once
