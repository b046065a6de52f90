"""`fesens study` under stress: a second study on a folder in use, a full disk, Ctrl-C
outside the sample loop, a scheduler that does not answer, stale temporary files."""

import errno
import os
import socket
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from study_helpers import write_study as write

from fesens.cli.study import study_command
from fesens.errors import WriteError
from fesens.output.folder import ResultsFolder
from fesens.study.journal import Journal
from fesens.study.tablefiles import write_table


def invoke(*args):
    return CliRunner().invoke(study_command, [str(a) for a in args])


def full_disk(name: str):
    """A ``Path.write_text`` that writes half of the text of files named ``*name*`` (their
    hidden temporary siblings) and then fails as a full disk does."""
    original = Path.write_text

    def write_text(self, data, *args, **kwargs):
        if name in self.name:
            original(self, data[: len(data) // 2], *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return original(self, data, *args, **kwargs)

    return write_text


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------ item 5: the lock
def test_a_second_study_on_a_folder_in_use_is_refused(tmp_path):
    study, out = write(tmp_path), tmp_path / "out"
    with ResultsFolder(out).locked():  # another run holds the folder
        for extra in ((), ("--force",)):
            result = invoke(study, "--out", out, "--workers", 0, "-q", *extra)
            assert result.exit_code == 2, result.output
            assert "is in use by another fesens run" in result.output
            assert [p.name for p in out.iterdir()] == [".fesens.lock"]
    assert not out.exists()  # nothing was written
    first = invoke(study, "--out", out, "--workers", 0, "-q")
    assert first.exit_code == 0, first.output
    assert not (out / ".fesens.lock").exists()
    with ResultsFolder(out).locked():
        resumed = invoke(study, "--out", out, "--workers", 0, "-q", "--resume")
    assert resumed.exit_code == 2 and "in use by another fesens run" in resumed.output


# ------------------------------------------------------------------ item 6: a full disk
def test_table_writer_names_the_file_on_a_full_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "write_text", full_disk("table.csv"))
    with pytest.raises(WriteError, match="cannot write .*table.csv: No space left on device"):
        write_table(tmp_path / "table.csv", {"a": [1.0, 2.0]}, {"a": "float"})
    assert list(tmp_path.iterdir()) == []


def test_journal_names_the_file_on_a_full_disk(tmp_path, monkeypatch):
    results = tmp_path / "results.jsonl"
    journal = Journal(results)
    journal.open(resume=False)

    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)
    entry = {"sample": 0, "inputs": {"a": 1.0}, "outputs": {"y": 1.0}, "gradients": {},
             "wall_time": 0.1, "status": "ok", "error": "", "worker": "here"}
    with pytest.raises(WriteError, match=f"cannot write {results}: No space left on device"):
        journal.append(entry)
    journal.close()


def test_full_disk_in_a_study_names_the_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    study, out = write(tmp_path), tmp_path / "out"
    monkeypatch.setattr(Path, "write_text", full_disk("results.csv"))
    result = invoke(study, "--out", out, "--workers", 0, "-q")
    assert result.exit_code == 2, result.output
    assert f"error: cannot write {out / 'results.csv'}: No space left on device" \
        in result.output
    assert hidden(out) == []


def test_stale_temporary_files_are_removed_on_start(tmp_path):
    study, out = write(tmp_path), tmp_path / "out"
    assert invoke(study, "--out", out, "--workers", 0, "-q").exit_code == 0
    stale = [".results.csv.1234abcd.tmp", ".tornado.png.tmp.png", ".summary.json.feedbeef.tmp"]
    for args in (("--resume",), ("--force",)):
        for name in stale:
            (out / name).write_text("left by a killed run")
        result = invoke(study, "--out", out, "--workers", 0, "-q", *args)
        assert result.exit_code == 0, result.output
        assert hidden(out) == []


# ------------------------------------------------------------------ item 7: Ctrl-C
@pytest.mark.parametrize("where", ["fesens.study.report.write_report",
                                   "fesens.study.runner.Progress.update"])
def test_ctrl_c_anywhere_prints_the_resume_command(tmp_path, monkeypatch, where):
    study, out = write(tmp_path), tmp_path / "out"

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(where, interrupt)
    result = invoke(study, "--out", out, "--workers", 0, "-q")
    assert result.exit_code == 130, result.output
    assert f"Resume with: fesens study {study} --out {out} --resume" in result.output
    assert hidden(out) == []


# ------------------------------------------------------------------ item 8: no answer
def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_scheduler_that_does_not_answer_times_out_with_one_line(tmp_path):
    pytest.importorskip("distributed")
    study, out = write(tmp_path), tmp_path / "out"
    address = f"tcp://127.0.0.1:{unused_port()}"
    # the message names the 1 s it waited; the elapsed time is not asserted (a loaded
    # machine stretches it at will)
    result = invoke(study, "--out", out, "--scheduler", address, "--scheduler-timeout", 1,
                    "-q")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: the Dask scheduler at {address} did not answer "
                               "within 1 s")
    assert "Traceback" not in result.output
    assert not out.exists()  # nothing written


def test_scheduler_timeout_must_be_positive(tmp_path):
    study = write(tmp_path)
    result = invoke(study, "--scheduler", "tcp://127.0.0.1:1", "--scheduler-timeout", 0)
    assert result.exit_code == 2 and "--scheduler-timeout" in result.output


def test_a_scheduler_address_that_answers_garbage_is_one_line(tmp_path):
    """Something that is not a Dask scheduler answers (a proxy, another service): distributed
    reads a frame length of 2**62 from it and fails with a MemoryError."""
    pytest.importorskip("distributed")
    study, out = write(tmp_path), tmp_path / "out"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        connections = []

        def answer():
            for _ in range(3):
                try:
                    connection, _ = server.accept()
                except OSError:
                    return
                connection.sendall(b"\x7f" * 64)
                connections.append(connection)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        result = invoke(study, "--out", out, "--scheduler", address, "--scheduler-timeout", 2,
                        "-q")
        for connection in connections:
            connection.close()
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: the Dask scheduler at {address} did not answer")
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not out.exists()


def test_an_interrupted_local_study_stops_its_workers_at_once(tmp_path, monkeypatch):
    """Ctrl-C while run_study records a sample: the workers are gone when it returns, not
    when the garbage collector gets to the interrupted generator."""
    import multiprocessing

    from study_helpers import numbered_design, power_model

    from fesens.study import run_study

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("fesens.study.runner.Progress.update", interrupt)
    before = set(multiprocessing.active_children())
    with pytest.raises(KeyboardInterrupt) as interrupted:
        run_study(power_model(), numbered_design(20), out=tmp_path, workers=2, progress=False)
    left = [p for p in multiprocessing.active_children() if p not in before]
    del interrupted
    assert left == []
    assert len(Journal(tmp_path / "results.jsonl").read()) == 1
