"""``fesens sensitivity --check``: the gradient the command wrote, checked on the user's own
config. A right gradient passes (rate 2, exit 0); a gradient off by a percent (the sparse
solve's VJP rule scaled by 1.01) fails with exit code 5, a verdict line and the numbers
under ``check`` in sensitivity.json; the seed repeats the direction."""

import json

import pytest
from cli_helpers import ROOT, run, write_config
from gradient_faults import solve_rule_off_by_a_percent  # noqa: F401 - fixture

from fesens.cli.analysis import GRADIENT_CHECK_FAILED


def _check(folder, *options) -> tuple[int, str, dict | None]:
    """Exit code, output and the ``check`` of sensitivity.json of one small-MBB run."""
    folder.mkdir(exist_ok=True)
    out = folder / "out"
    result = run("sensitivity", write_config(folder), "--out", out, "--force", *options)
    written = out / "sensitivity.json"
    check = json.loads(written.read_text()).get("check") if written.exists() else None
    return result.exit_code, result.output, check


@pytest.mark.parametrize("wrt", ["density", "loads"])
def test_a_right_gradient_passes_with_rate_two(tmp_path, wrt):
    code, output, check = _check(tmp_path, "--wrt", wrt, "--check")
    assert code == 0, output
    assert "gradient check: pass: agreement" in output
    assert check["passed"] is True and check["wrt"] == wrt
    assert check["verdict"].startswith("gradient check: pass")
    assert check["taylor"]["rate"] == pytest.approx(2.0, abs=0.05)
    assert check["agreement"] < 1e-6


@pytest.mark.usefixtures("solve_rule_off_by_a_percent")
@pytest.mark.parametrize(("wrt", "ratio"), [
    ("density", 1.01),  # the density reaches C = f·u through the solve alone
    ("loads", 1.005),   # C = f·K⁻¹f: half of dC/df through the solve, half through f·
])
def test_a_gradient_off_by_a_percent_fails_with_exit_code_5(tmp_path, wrt, ratio):
    code, output, check = _check(tmp_path, "--wrt", wrt, "--check-seed", "4")
    assert code == GRADIENT_CHECK_FAILED == 5, output
    assert "gradient check: FAIL: agreement" in output
    assert "seed 4, the numbers in" in output and "sensitivity.json" in output
    assert check["passed"] is False and check["seed"] == 4
    assert check["directional_derivative"] == pytest.approx(ratio * check["central_difference"],
                                                            rel=1e-6)
    # relative to the larger of the two
    assert check["agreement"] == pytest.approx((ratio - 1.0) / ratio, rel=1e-4)


@pytest.mark.usefixtures("solve_rule_off_by_a_percent")
def test_without_check_the_wrong_gradient_is_written_and_exit_code_is_0(tmp_path):
    """The broken rule is caught by --check only: the plain command has no way to know."""
    code, output, check = _check(tmp_path, "--wrt", "density")
    assert code == 0, output
    assert check is None and "gradient check" not in output


def test_the_seed_repeats_the_direction_and_a_fresh_one_is_printed(tmp_path):
    first = _check(tmp_path / "a", "--wrt", "E", "--check-seed", "7")[2]
    again = _check(tmp_path / "b", "--wrt", "E", "--check-seed", "7")[2]
    assert first["seed"] == again["seed"] == 7
    assert first["directional_derivative"] == again["directional_derivative"]
    assert first["central_difference"] == again["central_difference"]
    code, output, fresh = _check(tmp_path / "c", "--wrt", "E", "--check")
    assert code == 0 and f"--check-seed {fresh['seed']} repeats it" in output
    repeated = _check(tmp_path / "d", "--wrt", "E", "--check-seed", str(fresh["seed"]))[2]
    assert repeated["directional_derivative"] == fresh["directional_derivative"]
    other = _check(tmp_path / "e", "--wrt", "E", "--check-seed", str(fresh["seed"] + 1))[2]
    assert other["directional_derivative"] != fresh["directional_derivative"]


def test_help_and_the_config_guide_document_check_and_its_exit_code():
    result = run("sensitivity", "--help")
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "--check " in text and "--check-seed N" in text
    assert "exit code 5" in text
    guide = " ".join((ROOT / "fesens" / "docs" / "config.md").read_text().split())
    for phrase in ("`--check` checks the gradient", "exits with code 5 when the check fails",
                   "`--check-seed N` repeats a direction", "5 a failed `sensitivity --check`"):
        assert phrase in guide, phrase
