"""A checkpoint edited by hand is refused on ``--resume`` and by ``sensitivity --design``:
an optimizer state of the wrong length or outside its bounds, design variables outside
[0, 1], a fingerprint removed (with the config changed behind a deleted ``config.toml``).
Each refusal is one ``error:`` line, exit 2, naming the checkpoint file and the entry, and
leaves the results folder as it was."""

import shutil

import numpy as np
import pytest
from cli_helpers import SMALL_MBB, edit, listing, run, write_config

MMA_MBB = edit(SMALL_MBB, 'type = "oc"\nmove = 0.2', 'type = "mma"')


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two resumable folders of the small MBB beam after 2 iterations: OC and MMA."""
    folder = tmp_path_factory.mktemp("runs")
    outs = {}
    for name, text in (("oc", SMALL_MBB), ("mma", MMA_MBB)):
        config = write_config(folder, text, f"{name}.toml")
        result = run("optimize", config, "--out", folder / name, "--max-iter", 2, "-q")
        assert result.exit_code == 0, result.output
        outs[name] = folder / name
    return outs


def tamper(path, **entries) -> None:
    """Rewrite the checkpoint at ``path`` with ``entries`` replaced (None: removed)."""
    with np.load(path, allow_pickle=False) as data:
        stored = {name: data[name] for name in data.files}
    for name, value in entries.items():
        if value is None:
            del stored[name]
        else:
            stored[name] = value
    np.savez(path.with_suffix(".tmp.npz"), **stored)
    path.with_suffix(".tmp.npz").replace(path)


def one_line_error(result, *phrases: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


N_DESIGN = 24 * 8
#: Hand edits of an MMA checkpoint and the words that name what is wrong.
MMA_EDITS = {
    "state cut to 3 entries": ({"optimizer_xold1": np.full(3, 0.5),
                                "optimizer_xold2": np.full(3, 0.5),
                                "optimizer_low": np.zeros(3), "optimizer_upp": np.ones(3)},
                               "'optimizer_xold1' holds 3 values"),
    "one state entry cut": ({"optimizer_low": np.zeros(3)}, "'optimizer_low' holds 3 values"),
    "previous design outside": ({"optimizer_xold2": np.full(N_DESIGN, 7.5)},
                                "'xold2' holds values outside the bounds [0, 1]"),
    "asymptotes crossed": ({"optimizer_low": np.full(N_DESIGN, 2.0)},
                           "'low' and 'upp' do not enclose"),
    "negative scale": ({"optimizer_scale": np.array(-1.0)}, "'scale' must be one positive"),
    "state entry removed": ({"optimizer_steps": None}, "not an MMA state"),
    "x outside [0, 1]": ({"x": np.full(N_DESIGN, 7.5)}, "'x' holds values outside [0, 1]"),
}


@pytest.mark.parametrize("how", list(MMA_EDITS))
def test_resume_refuses_a_tampered_mma_checkpoint(runs, tmp_path, how):
    out = tmp_path / "out"
    shutil.copytree(runs["mma"], out)
    entries, phrase = MMA_EDITS[how]
    tamper(out / "checkpoint.npz", **entries)
    before = listing(out)
    result = run("optimize", out / "config.toml", "--out", out, "--resume", "--max-iter", 4)
    one_line_error(result, f"checkpoint {out / 'checkpoint.npz'}", phrase, "--force")
    assert listing(out) == before


@pytest.mark.parametrize("entry", ["x", "evaluated"])
def test_resume_refuses_design_variables_outside_0_1(runs, tmp_path, entry):
    out = tmp_path / "out"
    shutil.copytree(runs["mma"], out)
    tamper(out / "checkpoint.npz", **{entry: np.full(N_DESIGN, 7.5)})
    before = listing(out)
    result = run("optimize", out / "config.toml", "--out", out, "--resume", "--max-iter", 4)
    one_line_error(result, f"checkpoint {out / 'checkpoint.npz'}",
                   f"'{entry}' holds values outside [0, 1]", "--force")
    assert listing(out) == before


def test_resume_refuses_a_state_an_oc_run_never_writes(runs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(runs["oc"], out)
    tamper(out / "checkpoint.npz", optimizer_xold1=np.full(N_DESIGN, 0.5))
    result = run("optimize", out / "config.toml", "--out", out, "--resume", "--max-iter", 4)
    one_line_error(result, f"checkpoint {out / 'checkpoint.npz'}",
                   "OC keeps no state, found the entries xold1")


@pytest.mark.parametrize("config_toml", ["kept", "deleted"])
def test_resume_refuses_a_checkpoint_without_its_fingerprint(runs, tmp_path, config_toml):
    """With ``config.toml`` deleted and the fingerprint removed, nothing else could tell
    that the config changed (here the filter radius)."""
    out = tmp_path / "out"
    shutil.copytree(runs["mma"], out)
    tamper(out / "checkpoint.npz", fingerprint=None)
    if config_toml == "deleted":
        (out / "config.toml").unlink()
        config = write_config(tmp_path, edit(MMA_MBB, "radius = 1.5", "radius = 2.0"))
    else:
        config = out / "config.toml"
    before = listing(out)
    result = run("optimize", config, "--out", out, "--resume", "--max-iter", 4)
    one_line_error(result, f"checkpoint {out / 'checkpoint.npz'}", "no 'fingerprint' entry",
                   "--force")
    assert listing(out) == before


@pytest.mark.parametrize(("entries", "phrase"), [
    ({"x": np.full(N_DESIGN, 7.5)}, "'x' holds values outside [0, 1]"),
    ({"fingerprint": None}, "no 'fingerprint' entry"),
])
def test_sensitivity_refuses_a_tampered_checkpoint(runs, tmp_path, entries, phrase):
    out = tmp_path / "out"
    shutil.copytree(runs["mma"], out)
    tamper(out / "checkpoint.npz", **entries)
    result = run("sensitivity", out / "config.toml", "--wrt", "density", "--design",
                 out / "checkpoint.npz", "--out", tmp_path / "sens")
    one_line_error(result, f"--design {out / 'checkpoint.npz'}", phrase)
    assert not (tmp_path / "sens").exists()
