"""``run_optimization`` with and without a results folder: one run object does the work of
both, so the two give the same iterations, design and summary (a folder adds its files)."""

import numpy as np

from fesens.config import load_preset
from fesens.workflow import run_optimization

#: Summary entries that depend on the clock or on the folder (``shape``: the final design's
#: STL or outline file, written only into a folder).
_VARYING = ("wall_time_seconds", "iteration_seconds_total", "files", "shape")


def _three_iterations():
    config = load_preset("mbb")
    config.data["stop"]["max_iter"] = 3
    return config


def test_a_run_in_memory_is_the_run_with_a_folder_without_files(tmp_path):
    in_memory = run_optimization(_three_iterations(), echo=None)
    lines: list[str] = []
    written = run_optimization(_three_iterations(), tmp_path / "out", echo=lines.append)
    assert in_memory.folder is None and written.folder == tmp_path / "out"
    columns = ("iteration", "objective", "volume", "change")
    assert [[r[k] for k in columns] for r in in_memory.history] == \
        [[r[k] for k in columns] for r in written.history]
    np.testing.assert_array_equal(in_memory.x, written.x)
    np.testing.assert_array_equal(in_memory.density, written.density)
    assert in_memory.converged == written.converged
    same = {k: v for k, v in in_memory.summary.items() if k not in _VARYING}
    assert same == {k: v for k, v in written.summary.items() if k not in _VARYING}
    assert same["resumed_from_iteration"] is None and same["iterations"] == 3
    assert "design.vtu" in written.summary["files"] and "files" not in in_memory.summary
    assert lines[-2].startswith("NOT CONVERGED after 3 iterations")
