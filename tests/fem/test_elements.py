"""Reference elements: interpolation, completeness, gradients, quadrature orders, facets."""

from __future__ import annotations

from itertools import combinations, combinations_with_replacement

import numpy as np
import pytest

from fesens.errors import MeshError
from fesens.fem.elements import ELEMENTS, ReferenceElement, reference_element
from fesens.mesh.cell_types import CELL_TYPES, VOLUME_CELL_TYPES

ALL = list(ELEMENTS.values())
WITH_DIRECTIONS = [e for e in ALL if e.dim > 0]
QUADRATIC = [ELEMENTS[name]
             for name in ("line3", "tri6", "tet10", "quad8", "quad9", "hex20", "hex27")]
MULTILINEAR = [ELEMENTS[name] for name in ("line2", "quad4", "hex8")]


def _name(element: ReferenceElement) -> str:
    return element.name


def _is_simplex(element: ReferenceElement) -> bool:
    return element.dim >= 2 and CELL_TYPES[element.name].n_corners == element.dim + 1


def _random_points(element: ReferenceElement, n: int = 7) -> np.ndarray:
    """Points inside the reference domain, ``(n, dim)``."""
    rng = np.random.default_rng(len(element.name) * 31 + element.n_nodes)
    if _is_simplex(element):
        return rng.dirichlet(np.ones(element.dim + 1), size=n)[:, 1:]
    return rng.uniform(-1, 1, size=(n, element.dim))


def _high_order_rule(element: ReferenceElement):
    return element.quadrature(5 if _is_simplex(element) else 9)


def test_registry_covers_every_cell_type():
    assert set(ELEMENTS) == set(CELL_TYPES)
    for name, element in ELEMENTS.items():
        assert element.name == name
        assert element.dim == CELL_TYPES[name].dim
        assert element.n_nodes == CELL_TYPES[name].n_nodes


def test_reference_element_accepts_meshio_names():
    assert reference_element("tetra10") is ELEMENTS["tet10"]
    assert reference_element("hex8") is ELEMENTS["hex8"]


def test_unknown_element_names_the_supported_types():
    with pytest.raises(MeshError, match=r"'wedge6'.*supported: .*tri3.*hex8"):
        reference_element("wedge6")


@pytest.mark.parametrize("element", ALL, ids=_name)
def test_kronecker_delta_at_nodes(element):
    np.testing.assert_allclose(element.shape(element.nodes), np.eye(element.n_nodes), atol=1e-14)


@pytest.mark.parametrize("element", ALL, ids=_name)
def test_partition_of_unity_and_gradients_sum_to_zero(element):
    xi = _random_points(element)
    assert element.shape(xi).shape == (len(xi), element.n_nodes)
    assert element.shape_gradients(xi).shape == (len(xi), element.n_nodes, element.dim)
    np.testing.assert_allclose(element.shape(xi).sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(element.shape_gradients(xi).sum(axis=1), 0.0, atol=1e-14)


@pytest.mark.parametrize("element", WITH_DIRECTIONS, ids=_name)
def test_gradients_match_central_differences(element):
    xi = _random_points(element)
    h = 1e-6
    for k in range(element.dim):
        step = np.zeros(element.dim)
        step[k] = h
        fd = (element.shape(xi + step) - element.shape(xi - step)) / (2 * h)
        np.testing.assert_allclose(element.shape_gradients(xi)[:, :, k], fd, atol=1e-9)


@pytest.mark.parametrize("element", WITH_DIRECTIONS, ids=_name)
def test_linear_completeness(element):
    xi = _random_points(element)
    np.testing.assert_allclose(element.shape(xi) @ element.nodes, xi, atol=1e-14)
    jacobian = np.einsum("ai,paj->pij", element.nodes, element.shape_gradients(xi))
    identity = np.broadcast_to(np.eye(element.dim), jacobian.shape)
    np.testing.assert_allclose(jacobian, identity, atol=1e-14)


@pytest.mark.parametrize("element", QUADRATIC, ids=_name)
def test_quadratic_completeness(element):
    xi = _random_points(element)
    N, dN = element.shape(xi), element.shape_gradients(xi)
    for i, j in combinations_with_replacement(range(element.dim), 2):
        values = element.nodes[:, i] * element.nodes[:, j]
        np.testing.assert_allclose(N @ values, xi[:, i] * xi[:, j], atol=1e-14)
        expected = np.zeros_like(xi)
        expected[:, i] += xi[:, j]
        expected[:, j] += xi[:, i]
        np.testing.assert_allclose(np.einsum("a,pak->pk", values, dN), expected, atol=1e-13)


@pytest.mark.parametrize("element", MULTILINEAR, ids=_name)
def test_multilinear_completeness_including_cross_terms(element):
    """Q1 reproduces every product of distinct coordinates: ξη on quad4, ξη, ηζ, ξηζ on hex8."""
    xi = _random_points(element)
    N, dN = element.shape(xi), element.shape_gradients(xi)
    for size in range(1, element.dim + 1):
        for subset in combinations(range(element.dim), size):
            values = element.nodes[:, subset].prod(axis=1)
            np.testing.assert_allclose(N @ values, xi[:, subset].prod(axis=1), atol=1e-14)
            for k in range(element.dim):
                others = [d for d in subset if d != k]
                expected = xi[:, others].prod(axis=1) if k in subset else 0.0
                np.testing.assert_allclose(dN[:, :, k] @ values, expected, atol=1e-14)


@pytest.mark.parametrize("element", WITH_DIRECTIONS, ids=_name)
def test_default_order_integrates_stiffness_and_constant_load_exactly(element):
    def integrals(rule):
        xi, w = rule
        dN = element.shape_gradients(xi)
        return np.einsum("q,qak,qbk->ab", w, dN, dN), w @ element.shape(xi)

    stiffness, load = integrals(element.quadrature())
    exact_stiffness, exact_load = integrals(_high_order_rule(element))
    np.testing.assert_allclose(stiffness, exact_stiffness, atol=1e-13)
    np.testing.assert_allclose(load, exact_load, atol=1e-14)


@pytest.mark.parametrize("element", ALL, ids=_name)
def test_mass_order_integrates_mass_and_linear_loads_exactly(element):
    """``N_a N_b`` exact implies ``∫ N_a f`` exact for any ``f = Σ f_b N_b``, e.g. linear."""

    def mass(rule):
        xi, w = rule
        N = element.shape(xi)
        return np.einsum("q,qa,qb->ab", w, N, N)

    np.testing.assert_allclose(
        mass(element.quadrature(element.mass_order)), mass(_high_order_rule(element)), atol=1e-14
    )
    assert element.mass_order >= element.default_order


@pytest.mark.parametrize("element", ALL, ids=_name)
def test_quadrature_default_is_the_stiffness_rule(element):
    points, weights = element.quadrature()
    expected_points, expected_weights = element.quadrature(element.default_order)
    np.testing.assert_array_equal(points, expected_points)
    np.testing.assert_array_equal(weights, expected_weights)
    assert points.shape == (len(weights), element.dim)
    assert (weights > 0).all()


@pytest.mark.parametrize("element", ALL, ids=_name)
def test_nodes_are_read_only(element):
    with pytest.raises(ValueError, match="read-only"):
        element.nodes[0] = 0.5


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((2, 3)), np.zeros((2, 2, 2))])
def test_points_of_the_wrong_shape_are_rejected(bad):
    with pytest.raises(ValueError, match=r"tri3: reference points must have shape \(n_points, 2\)"):
        ELEMENTS["tri3"].shape(bad)
    with pytest.raises(ValueError, match="tri3"):
        ELEMENTS["tri3"].shape_gradients(bad)


def _facet_frame(cell: ReferenceElement, facet_nodes: tuple[int, ...]):
    """The facet element, its node coordinates in the cell's reference frame ``(n_fn, dim)``,
    its centroid there and its normal (2D: tangent turned clockwise; 3D: ``t_1 × t_2``)."""
    facet = reference_element(CELL_TYPES[cell.name].facet_type)
    coords = cell.nodes[list(facet_nodes)]
    n_corners = CELL_TYPES[facet.name].n_corners
    reference_centroid = facet.nodes[:n_corners].mean(axis=0, keepdims=True)
    tangents = np.einsum("ai,aj->ij", coords, facet.shape_gradients(reference_centroid)[0])
    if cell.dim == 2:
        normal = np.array([tangents[1, 0], -tangents[0, 0]])
    else:
        normal = np.cross(tangents[:, 0], tangents[:, 1])
    return facet, coords, coords[:n_corners].mean(axis=0), normal


@pytest.mark.parametrize("name", VOLUME_CELL_TYPES)
def test_local_facets_are_affine_images_of_the_facet_element_with_outward_normals(name):
    """cell_types' facet tables, the facet node order and the element nodes agree."""
    cell = ELEMENTS[name]
    n_corners = CELL_TYPES[name].n_corners
    cell_centroid = cell.nodes[:n_corners].mean(axis=0)
    for facet_nodes in CELL_TYPES[name].local_facets:
        facet, coords, facet_centroid, normal = _facet_frame(cell, facet_nodes)
        # coords = [ξ_facet, 1] @ A exactly: mid-edge nodes sit where the facet element puts them
        design = np.column_stack([facet.nodes, np.ones(facet.n_nodes)])
        affine, *_ = np.linalg.lstsq(design, coords, rcond=None)
        np.testing.assert_allclose(design @ affine, coords, atol=1e-14)
        assert normal @ (facet_centroid - cell_centroid) > 0, (name, facet_nodes)
