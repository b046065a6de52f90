"""The BLAS threads of each solve are chosen by a documented rule, not inherited."""

import numpy as np
import pytest
from click.testing import CliRunner

from fesens import openmp
from fesens.cli import cli
from fesens.mesh import rectangle
from fesens.openmp import ThreadSettingError, blas_threads
from fesens.physics import Elasticity


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(openmp, "usable_cores", lambda: 2)
    for name in (openmp.THREADS_VARIABLE, *openmp.BLAS_VARIABLES):
        monkeypatch.delenv(name, raising=False)


def test_without_work_the_rule_picks_one_thread_for_small_problems_all_cores_for_large_3d(
        two_cores):
    # a direct backend that reports no factorization work (SuperLU, UMFPACK)
    assert blas_threads(5_000, 5_000 * 81, direct=True)[0] == 1  # small
    assert blas_threads(161_202, 161_202 * 18, direct=True)[0] == 1  # 2D sparsity (400x200)
    count, reason = blas_threads(200_000, 200_000 * 81, direct=True)  # 3D
    assert count == 2 and "all usable cores" in reason
    assert blas_threads(5_000, 5_000 * 18, direct=False)[0] == 2  # iterative


def test_override_and_environment_cap(two_cores, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    assert blas_threads(200_000, 200_000 * 81, direct=True) == (
        1, "direct solve (no factorization work known): all usable cores, capped by the "
        "environment at 1")
    monkeypatch.setenv("FESENS_THREADS", "3")
    assert blas_threads(5_000, 5_000, direct=True) == (3, "FESENS_THREADS=3")
    monkeypatch.setenv("FESENS_THREADS", "two")
    with pytest.raises(ThreadSettingError, match="FESENS_THREADS='two'"):
        blas_threads(5_000, 5_000, direct=True)


def test_a_small_model_solves_on_one_blas_thread(two_cores):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    model = Elasticity(rectangle(8, 4), plane="stress").fix("left")
    model.point_load((1.0, 0.0), (0.0, -1.0))
    pattern = model.operator("ff").pattern
    backend = pattern.solver("cholmod")
    original, seen = backend.solve, []

    def spy(*args, **kwargs):
        seen.append({i["num_threads"] for i in threadpoolctl.threadpool_info()
                     if i["user_api"] == "blas"})
        return original(*args, **kwargs)

    backend.solve = spy
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        model.solve(scale=np.ones(model.mesh.n_cells), solver="cholmod")
    assert seen == [{1}]
    count, reason = pattern.threads(direct=True)  # from CHOLMOD's analysis
    assert count == 1 and reason.startswith("direct solve of 1.39e+04 flops")


def test_fesens_info_shows_the_threads(two_cores):
    result = CliRunner().invoke(cli, ["info"])
    assert result.exit_code == 0, result.output
    assert f"BLAS threads per solve: {openmp.THREAD_RULE}" in result.output
    assert "threads chosen: small direct solve 1, large 3D direct solve 2" in result.output
