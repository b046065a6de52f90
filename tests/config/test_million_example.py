"""``examples/cantilever3d_million.toml`` (the million-element run quoted in the
README) is a valid config on this machine: its mesh passes the memory check with the
matrix-free multigrid it names, and its load selects the 81 nodes of the edge."""

from pathlib import Path

import numpy as np

from fesens.config import load_config
from fesens.config.build import build_model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cantilever3d_million.toml"


def test_the_million_element_example_config_is_valid():
    config = load_config(EXAMPLE)
    assert config.mesh.n_cells == 1_024_000 and config.mesh.cell_type == "hex8"
    assert config.data["solver"]["backend"] == "gmg"
    assert config.data["solver"]["options"]["matrix_free"] is True
    model = build_model(config)
    load = model.load_vector()
    assert np.count_nonzero(load) == 81 and np.isclose(load.sum(), -8.1)
