"""Ctrl-C at unlucky moments: inside the checkpoint write, twice in quick succession."""

import signal
import subprocess
import sys
import time
import zipfile

import pytest
from cli_helpers import SMALL_MBB, edit, history, run, write_config

from fesens.opt import load_checkpoint
from fesens.opt.checkpoint import deferred_interrupts

#: ``fesens`` in a fresh process (``-c`` so that PYTHONPATH decides which fesens runs), with
#: Python's own SIGINT handler even where this process ignores SIGINT (a background job) and
#: the child would inherit that. Set in the child, not by a ``preexec_fn``: that forks this
#: process, which a multithreaded library imported by an earlier test (JAX) warns about.
FESENS = [sys.executable, "-c", "import signal; "
          "signal.signal(signal.SIGINT, signal.default_int_handler); "
          "from fesens.cli import main; main()"]


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler during the test (Ctrl-C raises KeyboardInterrupt)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_inside_the_checkpoint_write_saves_and_exits_130(tmp_path, monkeypatch,
                                                                  default_sigint):
    """The flaky test's race: SIGINT right after ``zipfile`` marked the archive as being
    written used to end in numpy's ``ValueError`` (exit 2) instead of the interrupt."""
    opened = {"checkpoints": 0, "members": 0}
    original = zipfile._ZipWriteFile.__init__

    def open_member(self, zip_file, member, *args, **kwargs):
        if member.filename == "x.npy":      # the first member of a checkpoint
            opened["checkpoints"] += 1
            opened["members"] = 0
        opened["members"] += 1
        if opened["checkpoints"] == 3 and opened["members"] == 2:   # inside the third one
            signal.raise_signal(signal.SIGINT)
        original(self, zip_file, member, *args, **kwargs)

    monkeypatch.setattr(zipfile._ZipWriteFile, "__init__", open_member)
    config = write_config(tmp_path)
    out = tmp_path / "out"
    result = run("optimize", config, "--out", out)
    assert result.exit_code == 130, result.output
    assert "error: interrupted after iteration 3; checkpoint saved" in result.output
    assert load_checkpoint(out / "checkpoint.npz")[1] == 3
    assert len(history(out)) == 3
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


def test_deferred_interrupts_deliver_one_interrupt_after_the_block(default_sigint):
    done = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupts():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        done.append("block finished")
    assert done == ["block finished"]
    with deferred_interrupts(deliver=False):
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("gap", [0.0, 0.002, 0.02])
def test_two_ctrl_c_in_quick_succession_save_and_exit_130(tmp_path, gap):
    """Two SIGINTs ``gap`` seconds apart in a real process: exit 130 with the resume line, a
    valid checkpoint, and --resume continues from it."""
    config = write_config(tmp_path, edit(SMALL_MBB, "max_iter = 6", "max_iter = 100000")
                          .replace("tol_change = 0.01", "tol_change = 0.0"))
    out = tmp_path / "out"
    command = [*FESENS, "optimize", str(config), "--out", str(out), "-q"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:  # a run left iterating would load every test after this one
        deadline = time.monotonic() + 300
        while not (out / "checkpoint.npz").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        time.sleep(gap)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=600)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130, stderr
    assert stderr.startswith("error: interrupted after iteration ") and "--resume" in stderr
    iteration = load_checkpoint(out / "checkpoint.npz")[1]
    assert len(history(out)) == iteration >= 1
    resumed = subprocess.run([*command, "--resume", "--max-iter", str(iteration + 1)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert load_checkpoint(out / "checkpoint.npz")[1] == iteration + 1


def test_a_ctrl_c_after_a_successful_command_does_not_change_its_exit(monkeypatch,
                                                                      default_sigint):
    """Found by benchmarks/reliability.py: a SIGINT landing after the results were written
    and before the process exited killed it by the signal. Once the command has succeeded,
    Ctrl-C is ignored until exit (code 0)."""
    import click

    from fesens.cli.errors import run_command

    @click.command()
    def finished() -> None:
        """Does its work and returns."""

    monkeypatch.setattr(sys, "argv", ["fesens"])
    with pytest.raises(SystemExit) as exited:
        run_command(finished)
    assert exited.value.code == 0
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    signal.raise_signal(signal.SIGINT)  # as a late Ctrl-C: nothing happens
