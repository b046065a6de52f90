"""Factorizations of indefinite symmetric tangents: what ``cholmod_lu`` can fall back to.

The tangents are those of jax-fem's hyperelasticity example as fesens solves it
(``bench_jaxfem_example.py``'s model on ``fesens.mesh.box(n, n, n)``: neo-Hookean hex8,
one face twisted by 60°): the first ``--count`` Newton iterates of ``solver="cholmod_lu"``
whose tangent CHOLMOD's supernodal ``L L^T`` finds not positive definite. Each is factorized
by CHOLMOD's simplicial ``L D L^T`` (no pivoting), SuperLU with fesens's ordering and with
COLAMD, and MUMPS' ``L D L^T`` with pivoting through PETSc where petsc4py is installed; the
table gives the time, the factor's entries and the backward error ``||A x - b|| / ||b||``
of a random right-hand side, and the time of a successful ``L L^T`` of the same pattern
(``A + c I``, definite) for scale.

    python benchmarks/bench_indefinite_tangent.py [--n 16] [--count 2] [--record]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from _common import load_average, load_line, machine_lines, record, table
from bench_jaxfem_example import ATOL, fesens_model
from scipy.sparse.linalg import splu

from fesens.mesh.generators import box
from fesens.solvers.cholmod import SimplicialLDLt, _cholmod
from fesens.solvers.lu import SYMMETRIC_PATTERN_ORDERING, CholeskyLUSolver


def indefinite_tangents(n: int, count: int) -> list[sp.csc_matrix]:
    """The first ``count`` tangents that ``cholmod_lu`` did not factorize by Cholesky."""
    found, factorize = [], CholeskyLUSolver._factorize

    def spy(solver, A):
        factorize(solver, A)
        if solver.stats["factorized_by"] != "cholesky":
            found.append(A.tocsc(copy=True))
            if len(found) == count:
                raise StopIteration

    CholeskyLUSolver._factorize = spy
    mesh = box(n, n, n)
    try:
        fesens_model(mesh.points, mesh.cells).solve(
            newton={"rtol": 0.0, "atol": ATOL, "stol": 0.0}, warm_start=False,
            solver="cholmod_lu")
    except StopIteration:
        pass
    finally:
        CholeskyLUSolver._factorize = factorize
    return found


def timed(factorize):
    start = time.perf_counter()
    out = factorize()
    return out, time.perf_counter() - start


def mumps(A: sp.csc_matrix):
    """MUMPS' L D L^T with pivoting, or None without petsc4py: (solve, seconds)."""
    try:
        from petsc4py import PETSc
    except ImportError:
        return None
    csr = A.tocsr()
    M = PETSc.Mat().createAIJ(size=A.shape, csr=(csr.indptr, csr.indices, csr.data))
    M.setOption(PETSc.Mat.Option.SYMMETRIC, True)
    ksp = PETSc.KSP().create()
    ksp.setOperators(M)
    ksp.setType("preonly")
    ksp.getPC().setType("cholesky")
    ksp.getPC().setFactorSolverType("mumps")
    _, seconds = timed(ksp.setUp)

    def solve(b):
        rhs, x = M.createVecLeft(), M.createVecRight()
        rhs.setArray(b)
        ksp.solve(rhs, x)
        return x.getArray().copy()
    return solve, seconds


def rows(A: sp.csc_matrix) -> list[list[str]]:
    b = np.random.default_rng(0).standard_normal(A.shape[0])

    def error(x):
        return f"{np.linalg.norm(A @ x - b) / np.linalg.norm(b):.1e}"

    out = []
    ldlt = SimplicialLDLt()
    _, seconds = timed(lambda: ldlt.factorize(A))
    out.append(["CHOLMOD simplicial L D L^T (with its analysis)", f"{seconds:.2f} s",
                f"{ldlt._factor.LD().nnz / 1e6:.1f} M", error(ldlt(b))])
    for ordering in (SYMMETRIC_PATTERN_ORDERING, "COLAMD"):
        lu, seconds = timed(lambda o=ordering: splu(A, permc_spec=o))
        out.append([f"SuperLU, {ordering}", f"{seconds:.2f} s",
                    f"{(lu.L.nnz + lu.U.nnz) / 1e6:.1f} M", error(lu.solve(b))])
    done = mumps(A)
    if done is not None:
        solve, seconds = done
        out.append(["MUMPS L D L^T with pivoting (PETSc)", f"{seconds:.2f} s", "", error(solve(b))])
    factor = _cholmod.analyze(A, mode="supernodal")
    definite = A + 1e3 * sp.identity(A.shape[0], format="csc")
    _, seconds = timed(lambda: factor.cholesky_inplace(definite))
    out.append(["CHOLMOD supernodal L L^T of A + 1e3 I (definite)", f"{seconds:.2f} s",
                f"{factor.L().nnz / 1e6:.1f} M", ""])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=16, help="cells per edge")
    parser.add_argument("--count", type=int, default=2, help="indefinite tangents")
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    loads = [load_average()]
    lines = []
    for k, A in enumerate(indefinite_tangents(args.n, args.count)):
        lines += ["", f"tangent {k + 1}: {A.shape[0]} unknowns, {A.nnz} entries", "",
                  table(["factorization", "time", "factor entries", "backward error"],
                        rows(A))]
    loads.append(load_average())
    title = (f"## bench_indefinite_tangent.py: indefinite tangents of the twisted cube "
             f"({args.n}³ hex8)")
    record("\n".join([title, "", *machine_lines(("numpy", "scipy", "scikit-sparse")),
                      load_line(loads), *lines]), args.record)


if __name__ == "__main__":
    main()
