"""Small test matrices for the solver tests: Laplacians, a convection-diffusion operator and
elasticity stiffness matrices (plain and SIMP) made with fesens' model API."""

import numpy as np
import scipy.sparse as sp

from fesens.fem.model.rigid_modes import rigid_body_modes
from fesens.mesh import box, rectangle
from fesens.physics import Elasticity

#: Young's modulus of void cells in :func:`simp_cantilever` (relative to solid).
E_MIN = 1e-9


def laplacian_1d(n: int, dirichlet: bool = True) -> sp.csr_matrix:
    """Finite-difference ``-u''`` on ``n`` nodes, shape (n, n).

    With ``dirichlet`` the end nodes are eliminated (SPD); without, both ends are natural
    boundaries (pure Neumann: singular, constants in the null space).
    """
    diagonal = np.full(n, 2.0)
    if not dirichlet:
        diagonal[[0, -1]] = 1.0
    off = -np.ones(n - 1)
    return sp.diags([off, diagonal, off], [-1, 0, 1], format="csr")


def laplacian_2d(m: int, dirichlet: bool = True) -> sp.csr_matrix:
    """Five-point ``-Δu`` on an ``m x m`` grid, shape (m², m²): ``L ⊗ I + I ⊗ L``."""
    return sp.kronsum(laplacian_1d(m, dirichlet), laplacian_1d(m, dirichlet), format="csr")


def convection_diffusion_2d(m: int, velocity: float = 0.5) -> sp.csr_matrix:
    """``laplacian_2d(m)`` plus upwind convection in x: non-symmetric, non-singular."""
    upwind = sp.diags([-np.ones(m - 1), np.ones(m)], [-1, 0])
    return (laplacian_2d(m) + velocity * sp.kron(sp.eye(m), upwind)).tocsr()


def random_rhs(n: int, k: int | None = None, seed: int = 0) -> np.ndarray:
    """Standard-normal right-hand side(s), shape (n,) or (n, k)."""
    shape = (n,) if k is None else (n, k)
    return np.random.default_rng(seed).standard_normal(shape)


def relative_error(x: np.ndarray, reference: np.ndarray) -> float:
    """``||x - reference|| / ||reference||`` (Frobenius for several columns)."""
    return float(np.linalg.norm(x - reference) / np.linalg.norm(reference))


def clamped_cantilever(dim: int) -> Elasticity:
    """A cantilever clamped on ``left``: 40 x 10 quad4 (plane stress) on 4 x 1 in 2D,
    12 x 4 x 4 hex8 on 3 x 1 x 1 in 3D."""
    if dim == 2:
        return Elasticity(rectangle(40, 10, 4.0, 1.0), E=1.0, nu=0.3, plane="stress").fix("left")
    return Elasticity(box(12, 4, 4, 3.0, 1.0, 1.0), E=1.0, nu=0.3).fix("left")


def elasticity_stiffness(dim: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """``K_ff`` of :func:`clamped_cantilever` and its rigid-body modes on the free dofs.

    Returns
    -------
    K : scipy.sparse.csr_matrix, shape (n_free, n_free)
    modes : numpy.ndarray, shape (n_free, 3) in 2D, (n_free, 6) in 3D
    """
    model = clamped_cantilever(dim)
    free = model.assembler.free
    points = model.mesh.points
    modes = rigid_body_modes(points, points.mean(axis=0))[0][free]
    return model.assembler.stiffness(model.coefficients()), modes


def simp_cantilever() -> tuple[sp.csr_matrix, np.ndarray]:
    """``K_ff`` and ``f_f`` of a SIMP design: a 2 x 1 cantilever (20 x 10 quad4) whose
    upper half is void.

    Densities are 1 (lower half) and 1e-3 (upper half) with the penalised modulus
    ``E = E_min + ρ³ (1 − E_min)``, so void cells have ``E ≈ 2e-9``; a tip load and a body
    force on every cell make the void displacements about a million times the solid ones.
    """
    mesh = rectangle(20, 10, 2.0, 1.0)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress").fix("left")
    model.point_load((2.0, 0.0), (0.0, -1.0), name="tip")
    model.body_force((0.0, -1.0), name="weight")
    centres = mesh.points[mesh.cells].mean(axis=1)
    density = np.where(centres[:, 1] > 0.5, 1e-3, 1.0)
    E = E_MIN + density**3 * (1.0 - E_MIN)
    free = model.assembler.free
    return model.assembler.stiffness(model.coefficients(E=E)), model.load_vector()[free]
