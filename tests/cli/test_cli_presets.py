"""``fesens presets``: one line per preset, its name and the line generated from its keys;
the multi-material preset says the optimizer it runs (MMA), not another."""

import tomllib

from cli_helpers import run

from fesens.config import preset_names, preset_summaries
from fesens.config.presets import PRESET_DIR


def test_presets_prints_each_name_and_the_line_from_its_keys():
    result = run("presets")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    summaries = preset_summaries()
    assert [line.split(maxsplit=1) for line in lines] == [
        [name, summaries[name]] for name in preset_names()]
    width = max(map(len, summaries)) + 2  # the lines are aligned after the longest name
    assert all(line[width - 2:width] == "  " and line[width] != " " for line in lines)


def test_the_multimaterial_line_names_its_optimizer():
    line = next(line for line in run("presets").output.splitlines()
                if line.split()[0] == "multimaterial")
    optimizer = tomllib.loads((PRESET_DIR / "multimaterial.toml").read_text())["optimizer"]
    assert optimizer["type"] == "mma"
    assert line.endswith("optimizer MMA") and " OC" not in line
    assert "ordered p = 3 (2 phases: light, heavy)" in line
