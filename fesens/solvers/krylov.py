"""The Krylov pieces both multigrid-CG solvers share: preconditioned CG, the Chebyshev (or
damped-Jacobi) smoother and the power iteration that bounds its spectrum, written once
over a small set of vector operations.

The CPU ``gmg`` (:mod:`fesens.solvers.multigrid`, :mod:`fesens.solvers.grid_hierarchy`)
gives them :class:`PooledOps`: numpy vectors ``(n,)`` whose CG updates and dot products
run in pieces fixed by ``n`` on a :class:`~fesens.solvers.parallel.SlabPool`, so that its
results are bit-identical for every thread count. The device multigrid
(:mod:`fesens.solvers.device_multigrid`) gives them :class:`ArrayOps` of its array library
(numpy, CuPy, any array-API namespace) on lattice arrays of any shape.

The functions own the arrays they update in place (they copy what the caller gives them,
except the smoother's ``x``, the caller's own iterate), so both kinds of operations
compute the same values: an in-place ``y += α x`` and an out-of-place ``y + α x`` round
alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from fesens.errors import NonFiniteError, SolverError
from fesens.solvers.parallel import SlabPool

#: Smoothers of a multigrid level (:func:`smooth`).
SMOOTHERS = ("chebyshev", "jacobi")
#: Power iterations estimating the largest eigenvalue of ``D⁻¹ A`` per level.
POWER_ITERATIONS = 12
#: Chebyshev smoothing targets eigenvalues of ``D⁻¹ A`` in [λ_max / 10, 1.1 λ_max]; the upper
#: factor covers the power iteration's underestimate. The lower end is where coarsening by
#: 2 per axis hands over to the coarse correction: pyamg's λ_max / 30 (for aggregation's
#: faster coarsening) spends the polynomial on modes the coarse level represents anyway.
#: Measured, hex8 cantilever, uniform density, degree 2, rtol 1e-8: CG iterations
#: 48x24x24 16 -> 10, 96x48x48 19 -> 10 (48x24x24 with λ_max / 5: 10; with degree 3: 8, at
#: 7 operator products per iteration against degree 2's 5). On thresholded 0/1 designs the
#: coarse correction, not the smoother, sets the count (48x24x24: 68 at either bound).
CHEBYSHEV_LOWER, CHEBYSHEV_UPPER = 1.0 / 10.0, 1.1
#: Every this many CG iterations the recursive residual is replaced by the true one.
RESIDUAL_REFRESH = 50

Operator = Callable[[Any], Any]


class ArrayOps:
    """Vector operations of an array library ``xp`` on arrays of any shape.

    ``add_scaled`` and ``scale_add`` overwrite their first argument (augmented
    assignment, which the array API has); ``residual`` returns a new array.
    """

    def __init__(self, xp: ModuleType) -> None:
        self.xp = xp

    def dot(self, a, b) -> float:
        """``aᵀ b`` over all entries, as a host scalar."""
        xp = self.xp
        return float(xp.reshape(a, (-1,)) @ xp.reshape(b, (-1,)))

    def norm(self, a) -> float:
        """``||a||₂`` as a host scalar."""
        return math.sqrt(self.dot(a, a))

    def copy(self, a):
        """A copy of ``a`` that the caller may overwrite."""
        out = self.xp.empty_like(a)
        out[...] = a
        return out

    def residual(self, b, product):
        """``b − product`` (``product`` may be overwritten)."""
        return b - product

    def add_scaled(self, y, alpha: float, x):
        """``y ← y + α x``, in place; returns ``y``."""
        y += alpha * x
        return y

    def scale_add(self, y, beta: float, x):
        """``y ← β y + x``, in place; returns ``y``."""
        y *= beta
        y += x
        return y

    def all_finite(self, a) -> bool:
        """Whether ``a`` holds no NaN or infinity."""
        return bool(self.xp.all(self.xp.isfinite(a)))


class PooledOps(ArrayOps):
    """Operations on numpy vectors ``(n,)`` whose dot products and CG updates run in the
    pieces of :meth:`SlabPool.pieces <fesens.solvers.parallel.SlabPool.pieces>` (fixed by
    ``n`` alone, so the same for every thread count).

    Parameters
    ----------
    pool : SlabPool
    """

    def __init__(self, pool: SlabPool) -> None:
        super().__init__(np)
        self.pool = pool

    def dot(self, a: np.ndarray, b: np.ndarray) -> float:
        return self.pool.dot(a, b)

    def copy(self, a: np.ndarray) -> np.ndarray:
        return a.copy()

    def residual(self, b: np.ndarray, product: np.ndarray) -> np.ndarray:
        return np.subtract(b, product, out=product)  # in place: one vector fewer

    def add_scaled(self, y: np.ndarray, alpha: float, x: np.ndarray) -> np.ndarray:
        def piece(part: slice) -> None:
            y[part] += alpha * x[part]

        self.pool.pieces(piece, y.shape[0])
        return y

    def scale_add(self, y: np.ndarray, beta: float, x: np.ndarray) -> np.ndarray:
        def piece(part: slice) -> None:
            y[part] *= beta
            y[part] += x[part]

        self.pool.pieces(piece, y.shape[0])
        return y


def pcg(apply: Operator, precondition: Operator, b, x0, *, rtol: float, maxiter: int,
        ops: ArrayOps, name: str, overwrite_x0: bool = False) -> tuple[Any, int, float]:
    """Preconditioned CG for ``A x = b`` until the true relative residual
    ``||b − A x|| / ||b||`` is at most ``rtol`` or ``maxiter`` iterations.

    Parameters
    ----------
    apply, precondition : callable
        ``v ↦ A v`` and ``r ↦ M⁻¹ r``, both symmetric positive definite, returning new
        arrays of their argument's shape.
    b : array
        The right-hand side (any shape ``ops`` takes).
    x0 : array or None
        Initial guess of ``b``'s shape (not modified unless ``overwrite_x0``); ignored
        where its residual is not smaller than ``||b||``.
    rtol : float
    maxiter : int
    ops : ArrayOps
    name : str
        The solver named in errors.
    overwrite_x0 : bool, default False
        Iterate in ``x0`` itself (a contiguous array the caller gives up, like SciPy's
        ``overwrite_a``): one vector fewer than a copy, the same values.

    Returns
    -------
    x, iterations, residual
        The iterate, the iterations taken and its relative residual (the true one where
        ``rtol`` was not met). The caller decides what a miss means.

    Raises
    ------
    SolverError
        On non-positive curvature ``pᵀ A p`` (the operator is not SPD).
    NonFiniteError
        If the iterate holds NaN or infinity.
    """
    b_norm = ops.norm(b)
    if b_norm == 0.0:
        return ops.xp.zeros(b.shape, dtype=b.dtype), 0, 0.0
    x = (ops.xp.zeros(b.shape, dtype=b.dtype) if x0 is None
         else x0 if overwrite_x0 else ops.copy(x0))
    r = ops.residual(b, apply(x)) if x0 is not None else ops.copy(b)
    if x0 is not None and ops.norm(r) >= b_norm:  # the guess does not help
        if overwrite_x0:  # zeros in the given vector, which the caller still holds
            x[...] = 0.0
        else:
            x = ops.xp.zeros(b.shape, dtype=b.dtype)
        r = ops.copy(b)
    iterations, residual = 0, ops.norm(r) / b_norm
    z = precondition(r)
    p, rz = ops.copy(z), ops.dot(r, z)
    # z and q are dropped as soon as they are read: the preconditioner and the operator
    # then run without the previous iteration's two vectors (48 MB at 160x80x80 cells)
    del z
    while residual > rtol and iterations < maxiter:
        q = apply(p)
        curvature = ops.dot(p, q)
        if not curvature > 0.0:
            raise SolverError(
                f"{name}: CG met non-positive curvature pᵀAp = {curvature:.3e} after "
                f"{iterations} iterations; the operator is not symmetric positive definite")
        alpha = rz / curvature
        iterations += 1
        x = ops.add_scaled(x, alpha, p)
        if iterations % RESIDUAL_REFRESH == 0:  # drop the recursion's drift
            r = ops.residual(b, apply(x))
        else:
            r = ops.add_scaled(r, -alpha, q)
        del q
        residual = ops.norm(r) / b_norm
        if residual <= rtol:  # confirm with the true residual
            r = ops.residual(b, apply(x))
            residual = ops.norm(r) / b_norm
            if residual <= rtol:
                break
        z = precondition(r)
        rz_next = ops.dot(r, z)
        p = ops.scale_add(p, rz_next / rz, z)  # p = z + β p
        del z
        rz = rz_next
    if residual != residual or not ops.all_finite(x):
        raise NonFiniteError(f"{name}: the solution holds NaN or infinity after "
                             f"{iterations} iterations")
    if residual > rtol:  # stopped by maxiter: report the true residual
        residual = ops.norm(ops.residual(b, apply(x))) / b_norm
    return x, iterations, residual


def smooth(apply: Operator, inverse_diagonal, lambda_max: float, b, x, *, smoother: str,
           degree: int, ops: ArrayOps):
    """Smooth ``A x = b`` from ``x`` (None: from zero, saving a product).

    Chebyshev iteration of degree ``degree`` on ``D⁻¹ A`` for its eigenvalues in
    ``[CHEBYSHEV_LOWER, CHEBYSHEV_UPPER] · λ_max`` (Saad, Iterative Methods for Sparse
    Linear Systems, 2nd ed., alg. 12.1), or ``degree`` damped-Jacobi sweeps with
    ``ω = 4 / (3 λ_max)``.

    Parameters
    ----------
    apply : callable
        ``v ↦ A v``, a new array.
    inverse_diagonal : array
        ``D⁻¹``, of ``b``'s shape.
    lambda_max : float
        Estimate of the largest eigenvalue of ``D⁻¹ A`` (:func:`largest_eigenvalue`).
    b : array
    x : array or None
        The caller's own iterate, updated in place by the Chebyshev iteration.
    smoother : {"chebyshev", "jacobi"}
    degree : int
    ops : ArrayOps

    Returns
    -------
    array
        The smoothed iterate.
    """
    D = inverse_diagonal
    if smoother == "jacobi":
        omega = 4.0 / (3.0 * lambda_max)
        for _ in range(degree):
            x = omega * D * b if x is None else x + omega * D * (b - apply(x))
        return x
    upper, lower = CHEBYSHEV_UPPER * lambda_max, CHEBYSHEV_LOWER * lambda_max
    theta, delta = 0.5 * (upper + lower), 0.5 * (upper - lower)
    sigma = theta / delta
    rho = 1.0 / sigma
    if x is None:
        r = D * b
    else:
        r = ops.residual(b, apply(x))
        r *= D
    d = r / theta
    for step in range(degree):
        if x is None:
            x = ops.copy(d)
        else:
            x += d
        if step == degree - 1:
            break
        work = apply(d)
        work *= D
        r -= work
        rho_next = 1.0 / (2.0 * sigma - rho)
        d *= rho_next * rho
        d = ops.add_scaled(d, 2.0 * rho_next / delta, r)
        rho = rho_next
    return x


def largest_eigenvalue(apply: Operator, inverse_diagonal, x, ops: ArrayOps) -> float:
    """Estimate of the largest eigenvalue of ``D⁻¹ A`` by :data:`POWER_ITERATIONS` power
    iterations from ``x`` (a seeded vector of ``inverse_diagonal``'s shape); 1.0 where
    ``D⁻¹ A x`` vanishes."""
    estimate = 1.0
    for _ in range(POWER_ITERATIONS):
        y = inverse_diagonal * apply(x)
        norm = ops.norm(y)
        if norm == 0.0:
            return 1.0
        estimate = norm / ops.norm(x)
        x = y / norm
    return estimate
