"""Config checks that read what a physics, a filter or a solver declares it needs: a truss
refuses filters that need cells filling the domain, the matrix-free multigrid refuses meshes
and supports it cannot solve, and convection alone anchors a heat model."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, build_model, resolve
from fesens.config.toml_writer import dumps
from fesens.mesh import rectangle
from fesens.mesh.ground_structure import ground_structure
from fesens.objectives import thermal_compliance
from fesens.opt import DensityFilter, HelmholtzFilter
from fesens.physics import HeatConduction

TRUSS = {
    "mesh": {"type": "ground_structure", "size": [2.0, 1.0], "cells": [4, 2]},
    "physics": {"type": "truss"},
    "supports": [{"group": "left"}],
    "loads": [{"type": "point", "point": [2.0, 0.5], "value": [0.0, -1.0]}],
    "constraints": {"volume_fraction": 0.3},
    "stop": {"max_iter": 2},
}

#: A small version of examples/convective_heatsink.py: chip flux on the bottom, convection
#: on the top, no prescribed temperature.
SIZE, CELLS, KAPPA, FILM, FLUX = (60.0, 30.0), (12, 6), 0.2, 1e-3, 0.1
HEAT_SINK = {
    "mesh": {"type": "rectangle", "size": list(SIZE), "cells": list(CELLS)},
    "physics": {"type": "heat"},
    "material": {"conductivity": KAPPA},
    "supports": [],
    "loads": [{"type": "flux", "region": {"min": [25.0, 0.0], "max": [35.0, 0.0]},
               "value": FLUX}],
    "convection": [{"group": "top", "h": FILM, "ambient": 0.0}],
}


def check(raw: dict, optimize: bool = True):
    return resolve(raw, base_dir=".", source="test.toml", optimize=optimize)


def run_cli(tmp_path, raw: dict, command: str = "optimize"):
    path = tmp_path / "hostile.toml"
    path.write_text(dumps(raw))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, [command, str(path), "--out", str(out)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result, out


# ------------------------------------------------------------------ filters on bars
@pytest.mark.parametrize("kind", ["density", "helmholtz"])
def test_a_truss_refuses_filters_that_need_cells_filling_the_domain(tmp_path, kind):
    raw = {**TRUSS, "filter": {"type": kind, "radius": 0.6}}
    with pytest.raises(ConfigError, match=rf'filter.type = "{kind}" is not allowed on this '
                                          r"mesh of line2 cells.*\"sensitivity\".*\"none\""):
        check(raw)
    result, out = run_cli(tmp_path, raw)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "filter.type" in result.output
    assert not out.exists()


def test_a_truss_without_a_filter_table_is_told_the_default_does_not_fit():
    with pytest.raises(ConfigError, match=r'filter.type = "density" \(the default\)'):
        check(TRUSS)


@pytest.mark.parametrize("cls", [DensityFilter, HelmholtzFilter])
def test_filters_that_need_cells_filling_the_domain_refuse_bars_in_python_too(cls):
    with pytest.raises(ValueError, match=rf"the {cls.name} filter needs cells that fill the "
                                         r"domain.*line2.*'sensitivity' or 'none'"):
        cls(ground_structure((4, 2), (2.0, 1.0)), 0.5)


@pytest.mark.parametrize("kind", ["sensitivity", "none"])
def test_a_truss_takes_the_filters_that_work_on_bars(tmp_path, kind):
    raw = {**TRUSS, "filter": {"type": kind, **({"radius": 0.6} if kind != "none" else {})}}
    result, _ = run_cli(tmp_path, raw)
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ matrix-free multigrid
def _elastic(cell_type: str, support_value: float = 0.0) -> dict:
    return {
        "mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [8, 4],
                 "cell_type": cell_type},
        "supports": [{"group": "left", "value": support_value}],
        "loads": [{"type": "point", "point": [2.0, 0.5], "value": [0.0, -1.0]}],
        "solver": {"backend": "gmg", "options": {"matrix_free": True}},
    }


MATRIX_FREE_REFUSALS = [
    (_elastic("tri3"), r"solver.options.matrix_free = true.*tri3 cells.*quad4.*hex8"),
    (_elastic("quad4", 0.01), r"solver.options.matrix_free = true.*zero prescribed values "
                              r"only, and supports\[0\].value = 0.01"),
    ({**_elastic("quad4"), "mesh": {"type": "box", "size": [2.0, 1.0, 1.0],
                                    "cells": [4, 2, 2], "cell_type": "tet4"},
      "supports": [{"group": "left"}],
      "loads": [{"type": "point", "point": [2.0, 0.5, 0.5], "value": [0.0, -1.0, 0.0]}]},
     r"tet4 cells"),
    ({**_elastic("quad4"), "mesh": {"packaged": "lbracket"}, "supports": [{"group": "top"}],
      "loads": [{"type": "traction", "group": "load", "value": [0.0, -10.0]}]},
     r"mesh \(lbracket.msh, tri3 cells\) is not a lattice: use backend \"cg\""),
]


@pytest.mark.parametrize(("raw", "message"), MATRIX_FREE_REFUSALS)
def test_matrix_free_multigrid_refuses_what_it_cannot_solve_before_any_work(
        tmp_path, raw, message):
    with pytest.raises(ConfigError, match=message) as caught:
        check(raw, optimize=False)
    assert "matrix_free = false" in str(caught.value)
    result, out = run_cli(tmp_path, raw, "solve")
    assert result.exit_code == 2, result.output
    assert "numerical failure" not in result.output and not out.exists()


def test_matrix_free_multigrid_accepts_a_quad4_rectangle_with_zero_supports(tmp_path):
    result, _ = run_cli(tmp_path, _elastic("quad4"), "solve")
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ convection alone
def test_convection_alone_anchors_a_heat_config_and_solves_as_the_api_does(tmp_path):
    config = check(HEAT_SINK, optimize=False)
    from_config = thermal_compliance(build_model(config).solve())

    model = HeatConduction(rectangle(*CELLS, *SIZE), conductivity=KAPPA)
    model.flux(lambda x: (x[:, 1] < 1e-9) & (np.abs(x[:, 0] - 30.0) <= 5.0 + 1e-9), FLUX)
    model.convection("top", h=FILM, ambient=0.0)
    by_hand = model.solve()
    assert from_config == pytest.approx(thermal_compliance(by_hand), rel=1e-10)
    assert from_config > 0.0

    without_supports = {key: value for key, value in HEAT_SINK.items() if key != "supports"}
    result, out = run_cli(tmp_path, without_supports, "solve")
    assert result.exit_code == 0, result.output
    reported = json.loads((out / "solution.json").read_text())
    assert reported["max_temperature"] == pytest.approx(float(np.max(by_hand.temperature)),
                                                        rel=1e-8)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda raw: raw.pop("convection"), "supports is empty"),
    (lambda raw: raw["convection"][0].update(h=0.0), "supports is empty"),
    (lambda raw: raw.pop("convection") and raw.pop("supports"), "missing 'supports'"),
])
def test_a_heat_config_with_nothing_to_anchor_the_temperature_is_refused(edit, message):
    raw = {**HEAT_SINK, "convection": [dict(HEAT_SINK["convection"][0])]}
    edit(raw)
    with pytest.raises(ConfigError, match=rf"{message}.*\[\[convection\]\] table with h > 0"):
        check(raw, optimize=False)
