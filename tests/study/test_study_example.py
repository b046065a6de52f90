"""examples/bracket_study.py (scikit-fem's examples-are-tests): the bracket study gives the
same table in local processes and on a Dask LocalCluster, reproduces the closed-form
sensitivities of linear elasticity, writes its tornado chart, and agrees with
`fesens study examples/bracket_study.toml`."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from fesens.cli.study import study_command
from fesens.study import read_results
from fesens.study.report import write_report

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAMPLES = 8


@pytest.fixture(scope="module")
def example():
    """The example module, pickled by value (workers cannot import it by name)."""
    cloudpickle = pytest.importorskip("cloudpickle")
    spec = importlib.util.spec_from_file_location("bracket_study", EXAMPLES / "bracket_study.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bracket_study"] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    yield module
    cloudpickle.unregister_pickle_by_value(module)
    del sys.modules["bracket_study"]


@pytest.fixture(scope="module")
def local(example, tmp_path_factory):
    out = tmp_path_factory.mktemp("bracket")
    return example.run(SAMPLES, out=out, workers=2), out


def test_example_closed_forms_and_tornado(example, local):
    results, out = local
    assert len(results) == SAMPLES and results.n_errors == 0
    assert len(results.parameters) == 4 and len(results.outputs) == 3
    for name, error in example.closed_form_errors(results).items():
        assert error < 1e-10, name
    paths = write_report(results, out, title="bracket3d")
    with Image.open(out / "tornado.png") as image:
        assert image.size[0] > 400 and image.size[1] > 300
    assert {p.name for p in paths} >= {"tornado.png", "sweeps.png", "scatter.png",
                                      "sensitivities.csv", "results.json"}
    stress = results.value("stress")
    assert stress.min() > 20.0 and stress.max() < 120.0  # MPa, for loads of 0.5..1.5 MPa


def test_example_on_local_cluster_is_identical(example, local, dask_client):
    results, _ = local
    remote = example.run(SAMPLES, scheduler=dask_client)
    assert remote.same_values(results)


def test_cli_study_file_agrees_with_the_example(local, tmp_path):
    results, _ = local
    text = (EXAMPLES / "bracket_study.toml").read_text()
    text = text.replace('base = "bracket.toml"', f'base = "{EXAMPLES / "bracket.toml"}"')
    text = text.replace("samples = 64", f"samples = {SAMPLES}")
    study = tmp_path / "study.toml"
    study.write_text(text)
    out = tmp_path / "out"
    run = CliRunner().invoke(study_command, [str(study), "--out", str(out), "--workers", "0",
                                             "--quiet"])
    assert run.exit_code == 0, run.output
    cli = read_results(out / "results.csv")
    assert cli.parameters == results.parameters and cli.outputs == results.outputs
    table, expected = cli.columns(), results.columns()
    for name in table:
        if name not in ("wall_time", "worker", "status", "error"):
            np.testing.assert_allclose(table[name], expected[name], rtol=1e-9, atol=1e-12,
                                       err_msg=name)
