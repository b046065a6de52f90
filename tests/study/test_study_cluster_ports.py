"""The Dask cluster of the study tests takes no fixed port: two test suites at once, or a
Dask dashboard already running, must not make it fail."""

import socket

import pytest
from study_helpers import local_cluster

DASHBOARD = 8787  # Dask's default dashboard port


def test_the_test_cluster_starts_while_the_dashboard_port_is_taken():
    pytest.importorskip("distributed")
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            other.bind(("127.0.0.1", DASHBOARD))
            other.listen()
        except OSError:
            pass  # another process holds it already: the case this test is about
        with local_cluster(n_workers=0) as cluster:
            assert cluster.scheduler.http_server.port != DASHBOARD
