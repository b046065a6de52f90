"""The same study on a Dask LocalCluster (two worker processes on 127.0.0.1): identical
results to local processes, errors recorded, a killed worker's samples run elsewhere."""

import json
import os

import pytest
from study_helpers import (
    Failing,
    Killing,
    killed_pids,
    numbered_design,
    power_law,
    power_model,
    write_study,
)

from fesens.study import ParametricModel, run_study

pytest.importorskip("distributed")


def test_cluster_and_local_processes_give_identical_tables(dask_client, dask_cluster, tmp_path):
    model, design = power_model(Failing(bad=(4.0,))), numbered_design(12)
    local = run_study(model, design, workers=2, progress=False)
    on_client = run_study(model, design, scheduler=dask_client, out=tmp_path, progress=False)
    by_address = run_study(model, design, scheduler=dask_cluster.scheduler_address,
                           progress=False)
    assert local.n_errors == 1 and local.errors[0]["sample"] == 3
    assert on_client.same_values(local) and by_address.same_values(local)
    worker_pids = set(dask_client.run(os.getpid).values())
    assert {int(r["worker"].rsplit(":", 1)[1]) for r in on_client.records} <= worker_pids
    assert (tmp_path / "results.jsonl").is_file() and (tmp_path / "results.csv").is_file()


def test_worker_setup_runs_once_per_worker(dask_client):
    model = ParametricModel(os.getpid, lambda pid, p: {"y": power_law(2.0, p)["y"],
                                                       "pid": 0.0 * p["a"] + pid})
    results = run_study(model, numbered_design(16), scheduler=dask_client, progress=False)
    setup_pids = {int(v) for v in results.value("pid")}
    worker_pids = {int(r["worker"].rsplit(":", 1)[1]) for r in results.records}
    assert setup_pids == worker_pids and 1 <= len(worker_pids) <= 2


def test_killed_dask_worker_samples_run_exactly_once(dask_client, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    design = numbered_design(10)
    results = run_study(power_model(Killing(str(markers), victim=6.0)), design,
                        scheduler=dask_client, out=tmp_path / "study", progress=False)
    (killed,) = killed_pids(markers)
    assert results.n_errors == 0 and [r["sample"] for r in results.records] == list(range(10))
    lines = (tmp_path / "study" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 10
    assert not results.records[5]["worker"].endswith(f":{killed}")
    assert results.same_values(run_study(power_model(), design, workers=0, progress=False))


def test_cli_runs_on_the_cluster(dask_cluster, tmp_path):
    from click.testing import CliRunner

    from fesens.cli.study import study_command
    from fesens.study import read_results

    out = tmp_path / "out"
    result = CliRunner().invoke(study_command, [str(write_study(tmp_path)), "--out", str(out),
                                                "--scheduler", dask_cluster.scheduler_address,
                                                "-q"])
    assert result.exit_code == 0, result.output
    results = read_results(out / "results.parquet")
    assert len(results) == 4 and results.n_errors == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["where"] == f"the Dask cluster at {dask_cluster.scheduler_address}"

