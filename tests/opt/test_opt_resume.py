"""A run resumed from its checkpoint reproduces the uninterrupted run."""

import re

import numpy as np
import pytest
from opt_helpers import mbb_problem

from fesens.opt import MMA, OC, CheckpointError, load_checkpoint, optimize

COLUMNS = ("iteration", "objective", "volume", "change")


def table(history) -> np.ndarray:
    return np.array([[record[k] for k in COLUMNS] for record in history])


@pytest.mark.parametrize("optimizer", [OC, MMA])
def test_resume_reproduces_uninterrupted_run(optimizer, tmp_path):
    checkpoint = tmp_path / "run.npz"
    uninterrupted = optimize(mbb_problem(30, 10, 1.5, "density"), optimizer(), max_iter=20,
                             tol_change=0.0)
    first = optimize(mbb_problem(30, 10, 1.5, "density"), optimizer(), max_iter=10,
                     tol_change=0.0, checkpoint=checkpoint)
    assert len(first.history) == 10
    x, iteration, history, _ = load_checkpoint(checkpoint)
    assert iteration == 10 and len(history) == 10
    resumed = optimize(mbb_problem(30, 10, 1.5, "density"), optimizer(), max_iter=20,
                       tol_change=0.0, checkpoint=checkpoint, resume=True)
    assert len(resumed.history) == 20
    np.testing.assert_allclose(table(resumed.history), table(uninterrupted.history),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(resumed.x, uninterrupted.x, rtol=1e-12, atol=1e-14)


def test_resume_without_checkpoint_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        optimize(mbb_problem(6, 2, 1.5, "density"), OC(), checkpoint=tmp_path / "none.npz",
                 resume=True)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 cut", b"\x93NUMPY random"])
def test_a_damaged_checkpoint_raises_checkpoint_error_naming_the_file(content, tmp_path):
    checkpoint = tmp_path / "run.npz"
    checkpoint.write_bytes(content)
    with pytest.raises(CheckpointError, match=re.escape(f"checkpoint {checkpoint} is damaged")):
        load_checkpoint(checkpoint)
