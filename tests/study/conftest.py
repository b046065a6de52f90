"""A Dask ``LocalCluster`` for the study tests: two worker processes on 127.0.0.1.

One per test module. Dask's nannies set their ``pre-spawn-environ`` variables
(``OMP_NUM_THREADS``, ``MALLOC_TRIM_THRESHOLD_``, ``PYTHONHASHSEED``, ...) in *this*
process's environment before starting a worker; the fixture puts the environment back
afterwards, so that no later test inherits them.
"""

import os

import pytest
from study_helpers import local_cluster


@pytest.fixture(scope="module")
def dask_cluster():
    pytest.importorskip("distributed")
    saved = dict(os.environ)
    cluster = local_cluster(n_workers=2)
    yield cluster
    cluster.close()
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def dask_client(dask_cluster):
    distributed = pytest.importorskip("distributed")
    with distributed.Client(dask_cluster, set_as_default=False) as client:
        yield client
