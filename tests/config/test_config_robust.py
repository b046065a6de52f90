"""``[projection] robust = true``: the robust problem built from a config, its keys' checks
(each refusal names its key; exit code 2 from the command line)."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, build_problem, parse_config, preset_text
from fesens.opt import Heaviside
from fesens.opt.robust import RobustProblem

ROBUST = preset_text("robust")


def parsed(text: str):
    return parse_config(text, source="robust", base_dir=Path("."))


def with_projection(**keys) -> str:
    """The robust preset with its ``[projection]`` keys replaced by ``keys`` (TOML values)."""
    table = "\n".join(f"{key} = {value}" for key, value in keys.items())
    return re.sub(r"\[projection\]\n(.*\n)*?\n", f"[projection]\n{table}\n\n", ROBUST)


def test_the_preset_builds_a_robust_problem_with_its_keys():
    problem = build_problem(parsed(ROBUST))
    assert isinstance(problem, RobustProblem)
    assert problem.projection.thresholds == pytest.approx((0.65, 0.5, 0.35))
    assert problem.volume_update_every == 5
    assert problem.projection.schedule.final == 64.0
    default = build_problem(parsed(with_projection(type='"heaviside"', robust="true")))
    assert default.projection.thresholds == pytest.approx((0.6, 0.5, 0.4))
    plain = build_problem(parsed(with_projection(type='"heaviside"', robust="false")))
    assert type(plain) is not RobustProblem and isinstance(plain.projection, Heaviside)


@pytest.mark.parametrize(("keys", "message"), [
    ({"delta_eta": "0.5"}, "projection.delta_eta = 0.5 is not allowed"),
    ({"delta_eta": "0.0"}, "projection.delta_eta = 0.0 is not allowed"),
    ({"delta_eta": "-0.1"}, "projection.delta_eta = -0.1 is not allowed"),
    ({"delta_eta": "0.3", "eta": "0.25"}, r"η ± Δη must lie in \(0, 1\)"),
    ({"volume_update_every": "0"}, "projection.volume_update_every"),
    ({"robust": "false", "delta_eta": "0.1"}, "applies to the robust formulation only"),
])
def test_bad_robust_keys_are_refused_naming_the_key(keys, message):
    text = with_projection(**{"type": '"heaviside"', "robust": "true", **keys})
    with pytest.raises(ConfigError, match=message):
        parsed(text)


def test_robust_needs_mma_and_exits_2_from_the_command_line(tmp_path):
    text = ROBUST.replace('type = "mma"', 'type = "oc"').replace("asyinit = 0.1\n", "") \
        .replace("asyincr = 1.05\n", "").replace("asydecr = 0.65\n", "")
    with pytest.raises(ConfigError, match='optimizer.type = "oc" cannot; use optimizer.type'):
        parsed(text)
    path = tmp_path / "bad.toml"
    path.write_text(with_projection(type='"heaviside"', robust="true", delta_eta="0.5"))
    result = CliRunner().invoke(cli, ["optimize", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "projection.delta_eta = 0.5 is not allowed" in result.output
