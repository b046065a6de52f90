"""Small test matrices for the solver tests: Laplacians and a convection-diffusion operator."""

import numpy as np
import scipy.sparse as sp


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
