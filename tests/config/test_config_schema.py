"""Config validation: every problem is reported before any work, naming the key path, the
value and what is allowed; resolved configs round-trip through the TOML writer."""

import copy
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from fesens.config import (
    ConfigError,
    ConfigWarning,
    dumps,
    load_config,
    load_preset,
    parse_config,
    preset_names,
    preset_text,
    resolve,
)
from fesens.config.documented_keys import documented_keys

ROOT = Path(__file__).resolve().parents[2]
SMALL = tomllib.loads((ROOT / "tests" / "data" / "small_mbb.toml").read_text())
LBRACKET = ROOT / "fesens" / "data" / "meshes" / "lbracket.msh"


def check(raw: dict, *, optimize: bool = True, base_dir: Path = ROOT):
    return resolve(raw, base_dir=base_dir, source="test.toml", optimize=optimize)


def changed(edit) -> dict:
    raw = copy.deepcopy(SMALL)
    edit(raw)
    return raw


def set_key(path: str, value):
    """An edit that sets ``a.b.c`` (list indices as numbers) in the raw config."""
    def edit(raw):
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node = raw
        for part in parents:
            node = node[part]
        node[last] = value
    return edit


def delete_key(path: str):
    def edit(raw):
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node = raw
        for part in parents:
            node = node[part]
        del node[last]
    return edit


ERRORS = [
    # unknown keys: the nearest valid key is suggested
    (set_key("filter.radus", 2.0), "unknown key 'filter.radus'; did you mean 'radius'?"),
    (set_key("filtre", {}), "unknown key 'filtre'; did you mean 'filter'?"),
    (set_key("supports.0.compnents", [0]), "unknown key 'supports[0].compnents'; did you mean "
                                          "'components'?"),
    (set_key("penalization.penalty", {"start": 1.0, "evry": 10}),
     "unknown key 'penalization.penalty.evry'; did you mean 'every'?"),
    (set_key("optimizer.mvoe", 0.1), "unknown key 'optimizer.mvoe'; did you mean 'move'?"),
    # keys of another variant
    (set_key("material.conductivity", 1.0),
     "material.conductivity is not used here: it applies to physics.type 'heat'"),
    (set_key("filter.type", "none"), "filter.radius is not used here: it applies to "
                                     "filter.type 'density', 'sensitivity', 'helmholtz'"),
    # types and ranges: path, value and what is allowed
    (set_key("filter.radius", -2.4), "filter.radius = -2.4 is not allowed: expected a number > 0"),
    (set_key("filter.radius", "big"), 'filter.radius = "big" is not allowed: expected a number'),
    (set_key("filter.type", "densty"), 'filter.type = "densty" is not allowed: expected one of '
                                       '"density", "sensitivity", "helmholtz", "none"; did you '
                                       "mean 'density'?"),
    (set_key("mesh.cells", [24.5, 8]), "mesh.cells = [24.5, 8] is not allowed: expected a list "
                                       "of 2 integers ≥ 1"),
    (set_key("mesh.cells", [True, 8]), "mesh.cells = [true, 8] is not allowed"),
    (set_key("material.nu", 0.5), "material.nu = 0.5 is not allowed: expected a number in "
                                  "(-1, 0.5)"),
    (set_key("constraints.volume_fraction", 1.5),
     "constraints.volume_fraction = 1.5 is not allowed: expected a number in (0, 1]"),
    (delete_key("constraints.volume_fraction"), "missing key 'constraints.volume_fraction'"),
    (set_key("stop.max_iter", 0), "stop.max_iter = 0 is not allowed: expected an integer ≥ 1"),
    (set_key("optimizer.move", 2.0), "optimizer.move = 2.0 is not allowed: OC move limit"),
    (set_key("solver", {"backend": "cholmd"}), "solver.backend = \"cholmd\" is not allowed"),
    (set_key("penalization.penalty", {"start": 1.0, "step": 0.5, "factor": 2.0}),
     "penalization.penalty: give either step or factor, not both"),
    (set_key("supports", {"group": "left"}), "supports must be a list of tables"),
    (set_key("supports", []), "supports is empty"),
    (delete_key("loads"), "missing 'loads'"),
    # mesh-aware checks
    (set_key("supports.0.group", "lefft"), 'supports[0].group = "lefft": the mesh (rectangle '
                                           "24x8) has no node or facet group of that name; did "
                                           "you mean 'left'? (available node or facet groups: "
                                           "bottom, left, right, top)"),
    (set_key("supports.1.point", [240.0, 0.0]), "supports[1].point = [240.0, 0.0] is outside "
                                                "the mesh"),
    (set_key("supports.0.components", ["x", "z"]), "supports[0].components = [0, 2] is not "
                                                   "allowed: this mesh is 2D"),
    (set_key("supports.0.value", [0.0, 1.0]), "supports[0].value = [0.0, 1.0] is not allowed: "
                                              "expected one value per fixed component"),
    (set_key("loads.0.value", [0.0, -1.0, 0.0]), "loads[0].value = [0.0, -1.0, 0.0] is not "
                                                 "allowed: expected a list of 2 numbers"),
    (set_key("loads.0.type", "heat_source"), 'loads[0].type = "heat_source" is not allowed'),
    (set_key("loads", [{"type": "point", "point": [0.0, 8.0], "group": "top",
                        "value": [0.0, 1.0]}]), "loads[0]: give only one of group, region, point"),
    (set_key("loads", [{"type": "traction", "value": [0.0, 1.0]}]),
     "loads[0]: missing the selection: give one of group, region"),
    (set_key("loads", [{"type": "point", "point": [0.0, 8.0], "value": [0.0, -1.0]},
                       {"type": "point", "name": "point0", "group": "top", "value": [0.0, 1.0]}]),
     'loads[1].name = "point0": another load has this name'),
    (set_key("loads", [{"type": "traction", "region": {"min": [30.0, 0.0], "max": [40.0, 1.0]},
                        "value": [0.0, 1.0]}]), "loads[0].region selects no boundary facet"),
    (set_key("supports.0", {"region": {"min": [1.0, 0.0], "max": [0.0, 8.0]}}),
     "supports[0].region: min [1.0, 0.0] must not exceed max [0.0, 8.0]"),
    (set_key("design", {"passive": [{"type": "solid", "group": "hole"}]}),
     'design.passive[0].group = "hole": the mesh (rectangle 24x8) has no cell group of that '
     "name (available cell groups: none)"),
    (set_key("objective", {"type": "displacement", "point": [0.0, 8.0]}),
     "missing key 'objective.component'"),
    (set_key("objective", {"type": "temperature", "point": [0.0, 8.0]}),
     'objective.type = "temperature" is not allowed'),
    # consistency between sections
    (set_key("constraints.extra", [{"type": "stress_pnorm", "limit": 1.0}]),
     'optimizer.type = "oc" handles the volume constraint only'),
    (set_key("objective", {"type": "volume"}), 'objective.type = "volume" needs optimizer.type '
                                               '= "mma"'),
    (set_key("constraints.volume_fraction", 1.0),
     "constraints.volume_fraction = 1.0 leaves the OC optimizer no design freedom"),
    # nothing loaded
    (set_key("loads.0.value", [0.0, 0.0]), "every load is zero (loads[0].value = [0.0, 0.0]) "
                                           "and every support value is 0: the solution is zero"),
    # a penalty that favours intermediate densities
    (set_key("penalization.penalty", 0.5), "penalization.penalty = 0.5 is not allowed: SIMP "
                                           "needs a penalty ≥ 1"),
    (set_key("penalization.penalty", {"start": 0.5, "final": 3.0}),
     "penalization.penalty.start = 0.5 is not allowed: SIMP needs a penalty ≥ 1"),
    (set_key("loads", []), "there are no loads and every support value is 0: the solution is zero"),
]


@pytest.mark.parametrize(("edit", "message"), ERRORS)
def test_invalid_configs_are_reported_with_the_key_path(edit, message):
    with pytest.raises(ConfigError) as info:
        check(changed(edit))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_weak_ramp_penalty_and_a_simp_penalty_of_one_are_accepted():
    """RAMP penalizes for every q > 0; SIMP with p = 1 is the variable-thickness sheet."""
    check(changed(set_key("penalization", {"type": "ramp", "penalty": 0.5})))
    check(changed(set_key("penalization.penalty", 1.0)))


def test_a_filter_radius_larger_than_the_domain_warns_naming_the_key():
    with pytest.warns(ConfigWarning) as record:
        check(changed(set_key("filter.radius", 30.0)))
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("test.toml: filter.radius = 30.0 is larger than the domain's "
                              "largest extent (24)")
    assert "\n" not in message


def test_deeply_nested_arrays_are_a_clear_error_naming_the_file():
    """1000 nested levels end in the parser's recursion, 900 in the message."""
    text = "x = " + "[" * 1000 + "]" * 1000 + "\n"
    with pytest.raises(ConfigError, match="^deep.toml: not valid TOML: arrays or tables are "
                                          "nested too deeply"):
        parse_config(text, source="deep.toml", base_dir=ROOT)
    deep: list = []
    for _ in range(900):
        deep = [deep]
    with pytest.raises(ConfigError) as info:
        check(changed(set_key("loads.0.value", deep)))
    assert str(info.value).startswith("loads[0].value = [[[[")
    assert "expected a list of 2 numbers" in str(info.value)
    assert len(str(info.value)) < 200


def test_the_small_config_resolves_with_defaults_filled_in():
    data = check(copy.deepcopy(SMALL)).data
    assert data["supports"][0] == {"group": "left", "components": [0], "value": 0.0}
    assert data["loads"][0]["name"] == "F"
    assert data["projection"] == {"type": "none"}
    assert data["penalization"]["minimum"] == 1e-9
    assert data["optimizer"] == {"type": "oc", "move": 0.2, "tolerance": 1e-3, "damping": 0.5,
                                 "x_min": 1e-9, "lambda_max": 1e9}
    assert data["solver"] == {"backend": "auto", "options": {}}


def test_analysis_needs_no_optimization_sections():
    raw = {k: v for k, v in SMALL.items()
           if k in ("name", "mesh", "physics", "material", "supports", "loads")}
    data = check(raw, optimize=False).data
    assert "constraints" not in data and "optimizer" not in data
    with pytest.raises(ConfigError, match="missing key 'constraints.volume_fraction'"):
        check(raw)


def test_3d_configs_reject_plane_and_thickness():
    raw = changed(set_key("mesh", {"type": "box", "size": [3.0, 1.0, 1.0], "cells": [3, 1, 1]}))
    raw["supports"] = [{"group": "left"}]
    raw["loads"] = [{"type": "point", "point": [3.0, 0.0, 0.0], "value": [0.0, -1.0, 0.0]}]
    with pytest.raises(ConfigError, match=r"physics.plane is not used here: it applies to 2D "
                                          r"meshes only \(this mesh is 3D\)"):
        check(raw)
    del raw["physics"]["plane"]
    data = check(raw).data
    assert data["physics"] == {"type": "elasticity"}


def test_mesh_files_are_relative_to_the_config_and_their_groups_are_checked(tmp_path):
    (tmp_path / "meshes").mkdir()
    shutil.copy(LBRACKET, tmp_path / "meshes" / "bracket.msh")
    text = (Path(__file__).resolve().parents[2] / "fesens" / "config" / "presets" /
            "lbracket.toml").read_text()
    text = text.replace('packaged = "lbracket"', 'file = "meshes/bracket.msh"')
    path = tmp_path / "bracket.toml"
    path.write_text(text)
    config = load_config(path)
    assert config.data["mesh"]["file"] == str(tmp_path / "meshes" / "bracket.msh")
    assert config.name == "lbracket" and config.mesh.n_cells == 1983
    path.write_text(text.replace('group = "top"', 'group = "tpo"'))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f'{path}: supports[0].group = "tpo": the mesh (bracket.msh) has no node or facet group '
        "of that name; did you mean 'top'? (available node or facet groups: corner, domain, "
        "load, top)")
    path.write_text(text.replace("meshes/bracket.msh", "meshes/missing.msh"))
    with pytest.raises(ConfigError, match=r'mesh.file = "meshes/missing.msh": no such file \('):
        load_config(path)


LBRACKET_MODEL = """
[mesh]
{mesh}

[physics]
thickness = 10.0

[material]
E = 210e3

[[supports]]
group = "top"

[[loads]]
type = "traction"
group = "load"
value = [0.0, -10.0]
"""


def test_a_packaged_mesh_is_named_and_resolves_from_any_folder(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    path = tmp_path / "a" / "bracket.toml"
    path.write_text(LBRACKET_MODEL.format(mesh='packaged = "lbracket"'))
    monkeypatch.chdir(tmp_path / "b")
    config = load_config(path, optimize=False)
    assert config.mesh.n_cells == 1983 and config.label == "lbracket.msh"
    assert config.data["mesh"] == {"type": "file", "packaged": "lbracket"}  # no path
    assert check(tomllib.loads(config.toml()), optimize=False, base_dir=tmp_path).data == \
        config.data


@pytest.mark.parametrize(("mesh", "message"), [
    ('packaged = "lbraket"', 'mesh.packaged = "lbraket" is not allowed: expected one of '
                             '"lbracket"; did you mean \'lbracket\'?'),
    ('packaged = "lbracket"\nfile = "x.msh"', 'mesh.file = "x.msh" and mesh.packaged = '
                                              '"lbracket" name two meshes: keep one of them'),
    ('type = "file"', "missing key 'mesh.file' or 'mesh.packaged': give file = \"PATH\" (a mesh "
                      "file, relative to the config file) or packaged = \"NAME\" (a mesh "
                      "shipped with fesens: lbracket)"),
    ('type = "rectangle"\nsize = [1.0, 1.0]\ncells = [2, 2]\npackaged = "lbracket"',
     "mesh.packaged is not used here: it applies to mesh.type 'file', not 'rectangle'"),
])
def test_packaged_mesh_errors_name_the_key_and_the_fix(mesh, message):
    raw = tomllib.loads(LBRACKET_MODEL.format(mesh=mesh))
    with pytest.raises(ConfigError) as info:
        check(raw, optimize=False)
    assert str(info.value).startswith(message)


def test_a_dumped_mesh_file_is_absolute_and_says_so(tmp_path, monkeypatch):
    (tmp_path / "a" / "meshes").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    shutil.copy(LBRACKET, tmp_path / "a" / "meshes" / "bracket.msh")
    (tmp_path / "a" / "bracket.toml").write_text(
        LBRACKET_MODEL.format(mesh='file = "meshes/bracket.msh"'))
    text = load_config(tmp_path / "a" / "bracket.toml", optimize=False).toml("# mine")
    assert text.startswith("# mine\n# mesh.file is an absolute path, so this file runs from "
                           "any folder")
    (tmp_path / "b" / "dumped.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert load_config("b/dumped.toml", optimize=False).mesh.n_cells == 1983


def test_presets_name_no_mesh_file():
    """A preset's mesh is generated or packaged: a path would depend on where fesens is."""
    for name in preset_names():
        assert "file" not in tomllib.loads(preset_text(name)).get("mesh", {}), name


def test_toml_syntax_errors_name_the_line():
    with pytest.raises(ConfigError, match=r"^x.toml: not valid TOML: .*line 2"):
        parse_config('name = "a"\nmesh = [1, =\n', source="x.toml", base_dir=ROOT)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize("name", preset_names())
def test_presets_resolve_and_their_resolved_config_round_trips(name):
    data = load_preset(name).data
    text = dumps(data)
    assert check(tomllib.loads(text)).data == data


def test_unknown_preset_suggests_the_nearest():
    with pytest.raises(ConfigError, match="unknown preset 'mbbb'; did you mean 'mbb'"):
        load_preset("mbbb")


def test_toml_writer_round_trips_awkward_values():
    data = {"name": 'a "quoted" \\ name\n', "x": 1e-9, "n": -3, "flag": False,
            "table": {"list": [1.5, 2.0], "inline": {"k y": "v"}},
            "items": [{"a": 1}, {"a": 2, "b": [0.1]}], "empty": []}
    assert tomllib.loads(dumps(data)) == data


def test_docs_example_is_valid_and_documents_every_key():
    text = (ROOT / "fesens" / "docs" / "config.md").read_text()
    block = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    check(tomllib.loads(block))
    for section, keys in documented_keys().items():
        for key in keys:
            assert re.search(rf"(^|[\s\[{{.#`]){re.escape(key)}( =|\]|`)", text, re.M), \
                f"fesens/docs/config.md does not document {section}.{key}"


def test_readme_config_example_is_valid():
    text = (ROOT / "README.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", text, re.S)
    config = resolve(tomllib.loads(block), base_dir=ROOT, source="README.md")
    assert config.mesh.n_cells == 1983
