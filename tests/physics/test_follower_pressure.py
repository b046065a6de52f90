"""Follower pressure on finite-strain elasticity: its load stiffness against central
differences of the residual, a block under hydrostatic follower (and dead) pressure in
closed form, Newton's quadratic convergence with the consistent tangent, the load factor
ramping the pressure (load steps, states at load factors), and gradients through the
Newton solve."""

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


# ------------------------------------------------------------ load ramping
def test_a_large_follower_load_converges_through_load_steps():
    """A cantilever under a follower pressure 8 times that of
    :func:`test_newton_converges_quadratically_with_the_follower_tangent` (tip deflection
    about 1.5 depths): the load factor ramps the pressure, so the solve converges through
    load steps (at full size in every step, Newton failed after 8 cut-backs), its state
    equals a fine-step reference (32 equal steps, no adaptive growth) and a solve reached
    in one step from the state at a nearby pressure (a warm start) to 1e-9, and every
    state of its load–displacement curve is the equilibrium under that fraction of the
    pressure (residual ≤ 1e-9 of the load)."""
    def model():
        return _loaded_cantilever(rectangle(8, 2, 1.0, 0.25, "quad8"), p=0.04)

    tight = {"rtol": 1e-12}
    stepped = model()
    solution = stepped.solve(steps=4, newton=tight)
    assert solution.report.load_factors[-1] == 1.0
    reference = model().solve(newton={**tight, "steps": 32, "adaptive": False})
    assert len(reference.report.load_factors) == 33
    assert np.abs(solution.u - reference.u).max() < 1e-9
    assert np.abs(solution.displacement[:, 1]).max() > 0.3  # a large deflection

    warm = model()
    warm.solve(loads={"p": 0.95}, steps=4, newton=tight)
    again = warm.solve(newton=tight)
    assert again.report.warm_start and len(again.report.load_factors) == 2
    assert np.abs(again.u - solution.u).max() < 1e-9

    factors, tip = solution.load_path(dof=int(np.argmin(solution.u)))
    assert factors[0] == 0.0 and np.all(np.diff(factors) > 0) and len(factors) > 2
    assert np.all(np.diff(tip) < 0)  # deflects further at every larger load factor
    material = stepped.material_fields()
    for t, x in zip(factors[1:], solution.report.states[1:], strict=True):
        u = stepped.state(x, stepped.prescribed_values())
        at_t = {**material, **stepped.follower_fields({"p": t})}
        forces = stepped.internal_forces(u, at_t)[stepped.free_dofs]
        load = stepped.internal_forces(u, {**material, **stepped.follower_fields(
            {"p": 0.0})})[stepped.free_dofs] - forces
        assert np.linalg.norm(forces) <= 1e-9 * np.linalg.norm(load), t


def _ramped(mesh) -> FiniteStrainElasticity:
    """The model of :func:`_loaded` with a dead traction on the right end too."""
    model = _loaded(mesh, p=0.05)
    model.surface_load("right", [0.0, -0.01], name="dead")
    return model


def test_the_state_at_half_the_load_factor_is_the_solve_at_half_the_loads():
    """The state at ``t = 0.5`` of a stepped solve with follower pressures and a dead load
    equals a separate solve at half of every load to 1e-9 (the pressures ride along the
    load factor like the dead load), and its solution (``at``) carries the halved
    pressures: its reactions balance them."""
    mesh = rectangle(6, 2, 1.0, 0.3, "quad4")
    model = _ramped(mesh)
    loads = {"top": 1.5, "right": 1.0, "dead": 1.0}
    tight = {"rtol": 1e-12}
    solution = model.solve(loads=loads, at_load_factors=[0.25, 0.5], newton=tight)
    half = _ramped(mesh).solve(loads={k: 0.5 * v for k, v in loads.items()},
                               newton=tight, warm_start=False)
    assert np.abs(solution.at(1).u - half.u).max() < 1e-9
    assert np.abs(solution.u - _ramped(mesh).solve(loads=loads, newton=tight).u).max() < 1e-9
    assert np.abs(solution.at(1).u - solution.u).max() > 1e-3  # the load did grow
    for key, p in half.fields.items():
        assert np.allclose(solution.at(1).fields[key], p, rtol=0, atol=1e-15), key
    assert np.abs(solution.at(1).reactions() - half.reactions()).max() < 1e-9


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


def test_gradient_of_states_at_load_factors_with_a_follower_load(plate):
    """An objective of the states at ``t = 0.5`` and ``1`` of one stepped solve with a
    follower load: Taylor remainders fall at rate 2 (Farrell et al., SIAM J. Sci. Comput.
    35, 2013), in the pressure's magnitude (which reaches each state through its own load
    factor) and in E, and central differences agree."""
    weights = np.random.default_rng(5).standard_normal((2, plate.dofmap.n_dofs))

    def J(solution):
        return (np.sum(weights[0] * solution.at(0).u)
                + np.sum(weights[1] * solution.at(1).u))

    rng = np.random.default_rng(6)
    cases = [(lambda m: J(plate.solve(loads={"p": m}, at_load_factors=[0.5, 1.0])), 1.2),
             (lambda E: J(plate.solve(E=E, at_load_factors=[0.5, 1.0])),
              10.0 * (1 + 0.3 * rng.random(plate.mesh.n_cells)))]
    for fun, x in cases:
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
