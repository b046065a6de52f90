"""Follower pressure on finite-strain elasticity: its load stiffness against central
differences of the residual, a block under hydrostatic follower (and dead) pressure in
closed form, Newton's quadratic convergence with the consistent tangent, and gradients
through the Newton solve."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from fesens.ad import check_grad, taylor_test
from fesens.config import build_model, resolve
from fesens.config.nonlinear import newton_options
from fesens.errors import BoundaryConditionError, SolverError
from fesens.mesh.generators import box, rectangle
from fesens.physics.hyperelastic_law import lame_constants
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.solvers.policy import tangent_choice
from tests.physics.test_hyperelasticity import distorted

E, NU = 1.0, 0.3


def jittered(mesh, amount: float, seed: int = 0):
    """``mesh`` with every node (boundary ones too, so that loaded facets tilt and 3D faces
    warp) moved at random by up to ``amount``; changed in place and returned."""
    rng = np.random.default_rng(seed)
    mesh.points[:] += amount * rng.uniform(-1, 1, mesh.points.shape)
    return mesh


TANGENT_MESHES = {
    "quad4": lambda: rectangle(3, 2, 1.0, 0.5, "quad4"),
    "quad9": lambda: rectangle(2, 2, 1.0, 0.5, "quad9"),
    "quad8": lambda: rectangle(2, 2, 1.0, 0.5, "quad8"),
    "hex8": lambda: box(2, 2, 2, 1.0, 1.0, 1.0, "hex8"),
    "hex20": lambda: box(1, 1, 1, 1.0, 1.0, 1.0, "hex20"),
}


def _loaded(mesh, p: float = 0.7) -> FiniteStrainElasticity:
    """Clamped on the left, follower pressure on the open top and right faces."""
    model = FiniteStrainElasticity(mesh, E=10.0, nu=NU)
    model.fix("left")
    model.pressure("top", p, follower=True, name="top")
    model.pressure("right", -0.4 * p, follower=True, name="right")
    return model


@pytest.mark.parametrize("cell", list(TANGENT_MESHES))
def test_tangent_with_load_stiffness_equals_central_differences(cell):
    """The assembled tangent, load stiffness included, is the derivative of the residual
    (central differences, step 1e-6) to 1e-7 relative on a distorted mesh whose loaded
    facets are tilted (3D: warped); it is not symmetric (an open surface, Bonet & Wood,
    Nonlinear Continuum Mechanics for FEA, 2nd ed., §8.4.1), and the transposed action the
    adjoint refines with is its transpose."""
    mesh = jittered(TANGENT_MESHES[cell](), 0.02)
    model = _loaded(mesh)
    fields = {**model.material_fields(), **model.follower_fields({"top": 1.3})}
    rng = np.random.default_rng(1)
    u = 0.01 * rng.standard_normal(model.dofmap.n_dofs)
    u[model.constrained_dofs] = 0.0
    free, f = model.free_dofs, np.zeros(model.dofmap.n_dofs)
    K = model.tangent(u, fields).tocsr().toarray()
    eps = 1e-6
    K_fd = np.empty_like(K)
    for j, dof in enumerate(free):
        step = np.zeros_like(u)
        step[dof] = eps
        K_fd[:, j] = (model.residual(u + step, fields, f)
                      - model.residual(u - step, fields, f)) / (2 * eps)
    scale = np.abs(K).max()
    assert np.abs(K - K_fd).max() <= 1e-7 * scale
    assert np.abs(K - K.T).max() > 1e-3 * scale  # the load stiffness is not symmetric
    unloaded = {**model.material_fields(),
                **{key: 0.0 * p for key, p in model.follower_fields().items()}}
    without = model.tangent(u, unloaded).tocsr().toarray()
    assert np.abs(K - without).max() > 1e-3 * scale  # ... and it is there
    with pytest.raises(BoundaryConditionError, match="not among the fields"):
        model.internal_forces(u, model.material_fields())  # never left out silently

    v = np.zeros(model.dofmap.n_dofs)
    v[free] = rng.standard_normal(free.size)
    cells = np.reshape(v[model.dofmap.cell_dofs], (mesh.n_cells, -1, mesh.dim))
    product = model.transposed_tangent(u, fields)(cells)
    summed = np.bincount(model.dofmap.cell_dofs.ravel(), product.ravel(),
                         minlength=model.dofmap.n_dofs)[free]
    assert np.allclose(summed, K.T @ v[free], rtol=0, atol=1e-12 * scale)


# ------------------------------------------------------------ closed form
def _hydrostatic_stretch(p: float, dim: int, follower: bool) -> float:
    """The stretch ``λ`` of ``F = λ I`` (plane strain: in-plane, ``F_zz = 1``) of a
    compressible neo-Hookean block (``P = μ (F − F⁻ᵀ) + λ_L ln J F⁻ᵀ``, Bonet & Wood 2008,
    eq. 6.27) under a hydrostatic pressure ``p`` on every face, by brentq on the closed
    form: a follower pressure acts on the current area, ``σ = J⁻¹ P Fᵀ = −p I``, i.e.
    ``[μ (λ² − 1) + d λ_L ln λ] / λ^d = −p``; a dead pressure on the reference area,
    ``P = −p I``, i.e. ``[μ (λ² − 1) + d λ_L ln λ] / λ = −p`` (Bonet & Wood 2008, §8.4.1:
    the two differ by the factor ``J F⁻ᵀ`` of Nanson's formula ``n da = J F⁻ᵀ N dA``)."""
    lam_l, mu = (float(c) for c in lame_constants(E, NU, "strain" if dim == 2 else None))
    power = dim if follower else 1

    def balance(stretch):
        return (mu * (stretch ** 2 - 1) + dim * lam_l * np.log(stretch)) / stretch ** power + p

    return brentq(balance, 0.2, 1.0, xtol=1e-15, rtol=1e-15)


def _hydrostatic_block(dim: int, follower: bool, p: float):
    """A unit block on symmetry supports (``u_x = 0`` on the left, ``u_y`` on the bottom,
    ``u_z`` on the back) with the pressure ``p`` on its other faces; interior nodes moved."""
    if dim == 2:
        mesh, loaded = distorted(rectangle(3, 3, 1.0, 1.0, "quad8"), 0.08), ("right", "top")
    else:
        mesh = distorted(box(2, 2, 2, 1.0, 1.0, 1.0, "hex8"), 0.1)
        loaded = ("right", "top", "front")
    model = FiniteStrainElasticity(mesh, E=E, nu=NU)
    for side, component in zip(("left", "bottom", "back"), "xyz"[:dim], strict=False):
        model.fix(side, components=component)
    for side in loaded:
        model.pressure(side, p, follower=follower, name=side)
    return model


@pytest.mark.parametrize("dim", [2, 3])
def test_hydrostatic_follower_pressure_in_closed_form(dim):
    """A block under hydrostatic follower pressure deforms homogeneously, ``F = λ I`` with
    ``σ = −p I`` (Bonet & Wood, Nonlinear Continuum Mechanics for FEA, 2nd ed., §8.4.1,
    follower pressure ``n da = J F⁻ᵀ N dA``; the law's W of §6.4.3): ``u = (λ − 1) X`` to
    1e-9 with ``λ`` from brentq on the closed form; a dead pressure of the same size gives
    the other closed-form stretch (``P = −p I``), visibly different."""
    p = 0.3
    stretches = {}
    for follower in (True, False):
        model = _hydrostatic_block(dim, follower, p)
        solution = model.solve(newton={"rtol": 1e-13})
        stretch = _hydrostatic_stretch(p, dim, follower)
        expected = (stretch - 1.0) * model.mesh.points
        assert np.abs(solution.displacement - expected).max() < 1e-9
        sigma = solution.cauchy()
        if follower:
            assert np.allclose(sigma, -p * np.eye(dim), rtol=0, atol=1e-9)
        stretches[follower] = stretch
    assert abs(stretches[True] - stretches[False]) > 1e-3


def test_a_follower_load_makes_auto_lu_and_refuses_a_symmetric_backend():
    """The tangent with a follower load is not symmetric: ``auto`` is LU for this instance
    (not for the class), and Cholesky is refused with a message that names the fix; what a
    follower load cannot do is refused by name."""
    model = _loaded(rectangle(3, 2, 1.0, 0.5, "quad4"), p=0.05)
    assert model.symmetric_tangent is False and FiniteStrainElasticity.symmetric_tangent
    model.solve()
    assert model.solver_choice == tangent_choice(symmetric=False, definite=False)
    with pytest.raises(SolverError, match="not symmetric"):
        model.solve(solver="cholmod")
    # the energy leaves out the follower load's work: the search is on the residual
    assert model.solve(newton={"line_search": "energy"}).report.cutbacks == []
    with pytest.raises(ValueError, match="full magnitude"):
        model.solve(at_load_factors=[0.5, 1.0])
    with pytest.raises(BoundaryConditionError, match="one per facet"):
        model.pressure("top", [1.0, 2.0], follower=True)


# ------------------------------------------------------------ Newton
def test_newton_converges_quadratically_with_the_follower_tangent():
    """With the consistent tangent (load stiffness included) Newton's residual falls
    quadratically near the solution, ``r_{k+1} ≤ C r_k²`` (Nocedal & Wright, Numerical
    Optimization, 2nd ed., Thm. 3.5); with the load stiffness left out (the dead-load
    tangent substituted) it converges linearly, a fixed factor per iteration, in visibly
    more iterations (a cantilever under a follower pressure on its top face)."""
    def model():
        return _loaded_cantilever(rectangle(8, 2, 1.0, 0.25, "quad8"))

    history = model().solve(newton={"rtol": 1e-13}).report.history[-1]
    relative = history / history[0]
    near = [(a, b) for a, b in zip(relative[:-1], relative[1:], strict=True)
            if a < 1e-2 and b > 1e-12]  # near the solution, above round-off
    assert near and all(b <= 10.0 * a * a for a, b in near), relative
    assert relative[-1] < 1e-12, relative

    dead = model()
    dead._follower_matrices = lambda *args: []  # the tangent without the load stiffness
    slow = dead.solve(newton={"rtol": 1e-13, "stol": 0.0, "max_iterations": 60}).report.history[-1]
    slow = slow / slow[0]
    tail, fast_tail = slow[np.argmax(slow < 1e-3):], relative[np.argmax(relative < 1e-3):]
    assert len(tail) >= len(fast_tail) + 3, (slow, relative)
    ratios = tail[1:] / tail[:-1]
    assert np.all((ratios > 1e-3) & (ratios < 0.5)), ratios  # linear convergence


def _loaded_cantilever(mesh, p: float = 0.005) -> FiniteStrainElasticity:
    """A cantilever (``E = 10``) clamped on the left under a follower pressure on its top
    face: its tip deflects by about a fifth of its depth."""
    model = FiniteStrainElasticity(mesh, E=10.0, nu=NU)
    model.fix("left")
    model.pressure("top", p, follower=True, name="p")
    return model


# ------------------------------------------------------------ gradients
@pytest.fixture(scope="module")
def plate():
    return _loaded_cantilever(jittered(rectangle(6, 2, 1.0, 0.3, "quad4"), 0.01), p=0.01)


def _objective(plate):
    weights = np.random.default_rng(3).standard_normal(plate.dofmap.n_dofs)
    return lambda solution: np.sum(weights * solution.u)


def _cases(plate) -> dict:
    J = _objective(plate)
    n = plate.mesh.n_cells
    rng = np.random.default_rng(4)
    return {
        "pressure": (lambda m: J(plate.solve(loads={"p": m})), 1.2),
        "E": (lambda E: J(plate.solve(E=E)), 10.0 * (1 + 0.3 * rng.random(n))),
        "points": (lambda X: J(plate.solve(points=X)),
                   plate.mesh.points + 0.003 * rng.standard_normal(plate.mesh.points.shape)),
    }


@pytest.mark.parametrize("name", ["pressure", "E", "points"])
def test_gradient_through_newton_with_a_follower_load(plate, name):
    """Taylor remainders of the gradient through the Newton solve with a follower load
    fall at rate 2 (Farrell et al., SIAM J. Sci. Comput. 35, 2013: the pressure reaches
    the gradient through the traced residual, the adjoint solves with the non-symmetric
    converged tangent), and central differences agree."""
    fun, x = _cases(plate)[name]
    result = taylor_test(fun, x, verbose=False)
    assert result.rate > 1.9, result.table()
    assert check_grad(fun, x, rtol=1e-5) < 1e-5


def test_a_config_pressure_with_follower_true(tmp_path):
    """``[[loads]] type = "pressure"``, ``follower = true`` builds the follower load (the
    default, false, the dead one): the config's model solves to the hydrostatic closed form
    (Bonet & Wood 2008, §8.4.1) of :func:`_hydrostatic_stretch`."""
    supports = [{"group": side, "components": [c]}
                for side, c in (("left", "x"), ("bottom", "y"))]
    raw = {
        "mesh": {"type": "rectangle", "size": [1.0, 1.0], "cells": [2, 2]},
        "physics": {"type": "hyperelasticity"},
        "material": {"E": E, "nu": NU},
        "supports": supports,
        "loads": [{"type": "pressure", "group": side, "value": 0.3, "follower": True}
                  for side in ("right", "top")],
    }
    config = resolve(raw, base_dir=tmp_path, source="test", optimize=False)
    model = build_model(config)
    assert set(model.followers) == {"pressure0", "pressure1"}
    solution = model.solve(newton=newton_options(config.data))
    stretch = _hydrostatic_stretch(0.3, 2, follower=True)
    assert np.abs(solution.displacement - (stretch - 1) * model.mesh.points).max() < 1e-9
    raw["loads"][0]["follower"] = raw["loads"][1]["follower"] = False
    dead = build_model(resolve(raw, base_dir=tmp_path, source="test", optimize=False))
    assert not dead.followers and dead.symmetric_tangent
