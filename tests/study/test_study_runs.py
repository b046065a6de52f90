"""Running studies in local worker processes: errors are recorded and the study goes on,
nothing is lost (journal, resume), and a killed worker's samples run again, exactly once."""

import json

import pytest
from study_helpers import (
    Failing,
    Interrupting,
    Killing,
    Logged,
    killed_pids,
    logged_values,
    numbered_design,
    power_model,
)

from fesens.study import Design, JournalError, ParametricModel, read_results, run_study
from fesens.study.journal import JOURNAL


def journal_samples(out) -> list[int]:
    lines = (out / JOURNAL).read_text().splitlines()
    return [json.loads(line)["sample"] for line in lines]


def test_errors_are_recorded_and_the_study_goes_on(tmp_path):
    results = run_study(power_model(Failing(bad=(3.0,))), numbered_design(8), workers=2,
                        out=tmp_path, progress=False)
    assert len(results) == 8 and results.n_errors == 1
    (failed,) = results.errors
    assert failed["sample"] == 2 and failed["error"].startswith("ValueError: a = 3: rejected")
    assert all(r["status"] == "ok" for r in results.records if r["sample"] != 2)
    assert len({r["worker"] for r in results.records}) <= 2
    assert sorted(journal_samples(tmp_path)) == list(range(8))
    assert read_results(tmp_path / "results.csv").same_values(results)


def test_setup_failure_is_every_sample_s_error():
    def broken_setup():
        raise OSError("mesh file is gone")

    model = ParametricModel(broken_setup, lambda c, p: {"y": p["a"]})
    results = run_study(model, numbered_design(3), workers=0, progress=False)
    assert [r["error"] for r in results.records] == ["setup failed: OSError: mesh file is gone"] * 3


def test_resume_runs_only_the_missing_samples(tmp_path):
    log = tmp_path / "evaluations.txt"
    out = tmp_path / "study"
    design = numbered_design(10)
    with pytest.raises(KeyboardInterrupt):
        run_study(power_model(Interrupting(stop=5.0)), design, workers=0, out=out,
                  progress=False)
    assert sorted(journal_samples(out)) == [0, 1, 2, 3]
    with pytest.raises(JournalError, match="resume it"):
        run_study(power_model(), design, workers=0, out=out, progress=False)
    resumed = run_study(power_model(Logged(str(log))), design, workers=2, out=out,
                        resume=True, progress=False)
    assert sorted(logged_values(log)) == [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert sorted(journal_samples(out)) == list(range(10))
    uninterrupted = run_study(power_model(), design, workers=0, progress=False)
    assert resumed.same_values(uninterrupted)
    again = run_study(power_model(Logged(str(log))), design, workers=2, out=out, resume=True,
                      progress=False)
    assert len(logged_values(log)) == 6 and again.same_values(uninterrupted)


def test_resume_refuses_another_design(tmp_path):
    run_study(power_model(), numbered_design(3), workers=0, out=tmp_path, progress=False)
    other = Design(["a", "b"], [[9.0, 9.0], [2.0, 1.2], [3.0, 1.3]])
    with pytest.raises(JournalError, match="sample 0 was run with .* another study"):
        run_study(power_model(), other, workers=0, out=tmp_path, resume=True, progress=False)


def test_killed_worker_samples_run_again_exactly_once(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    out = tmp_path / "study"
    results = run_study(power_model(Killing(str(markers), victim=3.0)), numbered_design(10),
                        workers=2, out=out, progress=False)
    (killed,) = killed_pids(markers)
    assert results.n_errors == 0 and [r["sample"] for r in results.records] == list(range(10))
    assert sorted(journal_samples(out)) == list(range(10))  # each sample once
    victim = results.records[2]
    assert victim["outputs"]["y"] == pytest.approx(2.0 * 9.0 / 1.3)
    assert not victim["worker"].endswith(f":{killed}")


def test_a_sample_that_always_kills_its_worker_becomes_an_error(tmp_path):
    results = run_study(power_model(Killing(str(tmp_path), victim=2.0, always=True)),
                        numbered_design(4), workers=2, max_attempts=2, progress=False)
    assert len(killed_pids(tmp_path)) == 3  # in a batch, then max_attempts times alone
    assert [r["status"] for r in results.records] == ["ok", "error", "ok", "ok"]
    assert results.records[1]["error"] == ("the worker process died while running this "
                                           "sample, 2 times")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"workers": 2, "scheduler": "tcp://127.0.0.1:1"}, ValueError, "not both"),
    ({"workers": -1}, ValueError, "integer ≥ 0"),
    ({"resume": True}, ValueError, "results folder"),
])
def test_invalid_run_options(kwargs, error, message):
    with pytest.raises(error, match=message):
        run_study(power_model(), numbered_design(2), progress=False, **kwargs)


def test_progress_line_without_tqdm(capsys):
    from fesens.study.progress import Progress

    progress = Progress(3, 1, enabled=True, interval=0.0)
    progress._bar = None  # as without tqdm
    progress.update("ok")
    progress.update("error")
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("study: 3/3 samples, 1 error, ")


def test_a_model_that_cannot_be_pickled_is_refused_clearly():
    import threading

    lock = threading.Lock()
    model = ParametricModel(lambda: lock, lambda c, p: {"y": p["a"]})
    with pytest.raises(TypeError, match="cannot be sent to worker processes.*workers=0"):
        run_study(model, numbered_design(2), workers=2, progress=False)
    assert run_study(model, numbered_design(2), workers=0, progress=False).n_errors == 0
