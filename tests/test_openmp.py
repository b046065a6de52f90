"""fesens caps OpenMP's threads at the usable cores (see fesens/openmp.py)."""

import os
import subprocess
import sys

import pytest

from fesens.openmp import (
    THREAD_LIMIT_VARIABLE,
    default_thread_limit,
    system_blas_uses_openmp,
    usable_cores,
)
from fesens.solvers import cholmod_available


def run_python(code: str, **environment: str) -> str:
    """stdout of ``code`` in a fresh interpreter whose environment lacks the thread limit
    (this process has set it on loading the CHOLMOD backend), plus ``environment``."""
    env = {k: v for k, v in os.environ.items() if k != THREAD_LIMIT_VARIABLE}
    env.update(environment)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True, timeout=600)
    return result.stdout.strip()


def test_loading_the_cholmod_backend_sets_the_default_limit():
    shown = run_python("import os, fesens.solvers.cholmod; "
                       f"print(os.environ['{THREAD_LIMIT_VARIABLE}'])")
    assert shown == str(default_thread_limit(system_blas_uses_openmp()))


def test_the_limit_is_one_unless_the_blas_may_use_openmp():
    assert default_thread_limit(False) == 1
    assert default_thread_limit(True) == usable_cores()
    assert default_thread_limit(None) == usable_cores()


def test_a_limit_set_by_the_user_is_kept():
    shown = run_python("import os, fesens.solvers.cholmod; "
                       f"print(os.environ['{THREAD_LIMIT_VARIABLE}'])",
                       **{THREAD_LIMIT_VARIABLE: "1"})
    assert shown == "1"


@pytest.mark.skipif(not cholmod_available(), reason="scikit-sparse (CHOLMOD) not installed")
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc")
def test_cholmod_runs_no_more_threads_than_the_limit():
    # A 10 000-dof Laplacian reaches the OpenMP loops of CHOLMOD's supernodal factorization,
    # which Debian's SuiteSparse 5 runs with num_threads(4) whatever OMP_NUM_THREADS says.
    code = """
import os
import numpy as np, scipy.sparse as sp
from fesens.solvers import make_solver
m = 100
T = sp.diags([-np.ones(m - 1), 4 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
S = sp.diags([-np.ones(m - 1), -np.ones(m - 1)], [-1, 1])
A = (sp.kron(sp.eye(m), T) + sp.kron(S, sp.eye(m))).tocsr()
make_solver("cholmod").factorize(A)
print(len(os.listdir("/proc/self/task")))
"""
    # The main thread, and one OpenMP worker per thread beyond the first.
    limit = default_thread_limit(system_blas_uses_openmp())
    assert int(run_python(code, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")) <= limit
