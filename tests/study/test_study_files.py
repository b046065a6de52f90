"""The results table: CSV, JSON and Parquet round trips, the DataFrame, the journal."""

import json
import math

import numpy as np
import pytest
from study_helpers import Failing, numbered_design, power_model

from fesens.study import StudyResults, read_results, run_study
from fesens.study.journal import Journal, JournalError
from fesens.study.results import from_columns


@pytest.fixture(scope="module")
def results():
    """Six samples, two of them failed (messages with commas, quotes)."""
    return run_study(power_model(Failing(bad=(2.0, 5.0))), numbered_design(6), workers=0,
                     progress=False)


def test_columns_are_tidy(results):
    columns = list(results.columns())
    assert columns == ["sample", "a", "b", "y", "z", "d(y)/d(a)", "d(y)/d(b)", "d(z)/d(a)",
                       "d(z)/d(b)", "wall_time", "status", "error", "worker"]
    table = results.columns()
    assert table["status"] == ["ok", "error", "ok", "ok", "error", "ok"]
    assert table["error"][1] == ('ValueError: a = 2: rejected, as asked (with a comma, '
                                 '"quotes")')
    assert math.isnan(table["y"][1]) and math.isnan(table["d(y)/d(a)"][4])
    assert all(t > 0 for t in table["wall_time"])


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_files_round_trip(results, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    path = results.write(tmp_path / f"results{suffix}")
    back = read_results(path)
    assert back.parameters == results.parameters and back.outputs == results.outputs
    assert back.same_values(results)
    assert back.columns()["wall_time"] == results.columns()["wall_time"]
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_dataframe(results):
    pytest.importorskip("pandas")
    frame = results.to_dataframe()
    assert frame.shape == (6, 13)
    assert frame["sample"].tolist() == list(range(6))
    np.testing.assert_array_equal(frame["d(y)/d(a)"].to_numpy(), results.gradient("y", "a"))
    assert frame.loc[frame.status == "error", "sample"].tolist() == [1, 4]


def test_pandas_reads_the_csv(results, tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(results.write(tmp_path / "results.csv"))
    np.testing.assert_array_equal(frame["y"].to_numpy(), results.value("y"))


def test_sensitivity_table_file(results, tmp_path):
    path = results.sensitivities().write(tmp_path / "sensitivities.json")
    rows = json.loads(path.read_text())
    assert {(r["output"], r["parameter"]) for r in rows} == {
        ("y", "a"), ("y", "b"), ("z", "a"), ("z", "b")}
    assert next(r for r in rows if r["output"] == "y" and r["parameter"] == "a")["mean"] == \
        pytest.approx(2.0)


def test_journal_ignores_a_cut_last_line_and_keeps_samples_unique(tmp_path, results):
    journal = Journal(tmp_path / "results.jsonl")
    journal.open(resume=False)
    assert journal.append(results.records[0]) and not journal.append(results.records[0])
    journal.append(results.records[1])
    journal.close()
    with journal.path.open("a") as handle:
        handle.write('{"sample": 2, "inpu')  # a crash in the middle of a write
    assert [r["sample"] for r in journal.read()] == [0, 1]
    again = Journal(journal.path)
    assert [r["sample"] for r in again.open(resume=True)] == [0, 1]
    again.append(results.records[2])
    again.close()
    assert [r["sample"] for r in Journal(journal.path).read()] == [0, 1, 2]
    rebuilt = StudyResults(Journal(journal.path).read(), results.parameters, results.outputs)
    assert math.isnan(rebuilt.records[1]["outputs"].get("y", math.nan))
    with pytest.raises(JournalError, match="earlier run"):
        Journal(journal.path).open(resume=False)


def test_not_a_results_table():
    with pytest.raises(ValueError, match="no column"):
        from_columns({"sample": [1], "a": [2.0]})
