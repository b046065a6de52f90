"""Run under ``mpirun -n N``: a PETSc solve of a matrix whose rows are split over the ranks
equals the serial scipy solve (tests/solvers/test_solvers_petsc.py runs it on 2 ranks).

Every rank builds the same 2D Laplacian and right-hand side, keeps the rows PETSc's layout
gives it, and the solution is gathered on rank 0, which prints ``ranks N error E``.
"""

import sys

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from petsc4py import PETSc


def laplacian_2d(m: int) -> sp.csr_matrix:
    """Five-point ``-Δu`` on an ``m x m`` grid with Dirichlet ends, shape (m², m²)."""
    L = sp.diags([-np.ones(m - 1), np.full(m, 2.0), -np.ones(m - 1)], [-1, 0, 1])
    return sp.kronsum(L, L, format="csr")


def main(m: int = 40) -> None:
    comm = PETSc.COMM_WORLD
    A = laplacian_2d(m)
    n = A.shape[0]
    b = np.random.default_rng(0).standard_normal(n)
    matrix = PETSc.Mat().createAIJ(size=((PETSc.DECIDE, n), (PETSc.DECIDE, n)), comm=comm)
    matrix.setPreallocationNNZ(5)
    start, end = matrix.getOwnershipRange()
    rows = A[start:end]  # this rank's rows, global column indices
    matrix.setValuesCSR(rows.indptr.astype(PETSc.IntType), rows.indices.astype(PETSc.IntType),
                        rows.data)
    matrix.assemble()
    rhs = matrix.createVecLeft()
    rhs.setArray(b[start:end])
    x = matrix.createVecRight()
    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(matrix)
    ksp.setType("cg")
    ksp.getPC().setType("gamg")
    ksp.setTolerances(rtol=1e-12, atol=0.0, max_it=500)
    ksp.solve(rhs, x)
    scatter, gathered = PETSc.Scatter.toZero(x)
    scatter.scatter(x, gathered)
    if comm.getRank() == 0:
        error = np.linalg.norm(gathered.getArray() - spla.spsolve(A.tocsc(), b)) / np.linalg.norm(b)
        print(f"ranks {comm.getSize()} error {error:.3e} reason {ksp.getConvergedReason()}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
