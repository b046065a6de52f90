"""A Dask ``LocalCluster`` for the study tests: two worker processes on 127.0.0.1.

One per test module. Dask's nannies set their ``pre-spawn-environ`` variables
(``OMP_NUM_THREADS``, ``MALLOC_TRIM_THRESHOLD_``, ``PYTHONHASHSEED``, ...) in *this*
process's environment before starting a worker; the fixture puts the environment back
afterwards, so that no later test inherits them.
"""

import os

import pytest


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    saved = dict(os.environ)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       memory_limit="1GiB", silence_logs=50)
    yield cluster
    cluster.close()
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def dask_client(dask_cluster):
    distributed = pytest.importorskip("distributed")
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        yield client
