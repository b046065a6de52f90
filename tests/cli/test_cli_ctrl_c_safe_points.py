"""Ctrl-C is never lost: one that lands where Python swallows exceptions (a finalizer) still
ends the command at its next safe point, and a real run interrupted at random moments always
saves and exits 130, with SIGINT never ignored while it runs."""

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import numpy as np
import pytest
import scipy.sparse as sp
from cli_helpers import SMALL_MBB, edit, history, write_config

import fesens.opt.loop as loop
from fesens.cli import cli
from fesens.cli.errors import run_command
from fesens.opt import load_checkpoint
from fesens.solvers.registry import make_solver

#: ``fesens`` in a fresh process with Python's own SIGINT handler, even where this process
#: ignores SIGINT (a background job) and the child would inherit that.
FESENS = [sys.executable, "-c", "import signal; "
          "signal.signal(signal.SIGINT, signal.default_int_handler); "
          "from fesens.cli import main; main()"]
#: Bit of SIGINT (signal 2) in the hexadecimal masks of ``/proc/PID/status``.
SIGINT_BIT = 1 << (signal.SIGINT - 1)


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler during the test, as a fresh ``fesens`` process has it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class _CtrlCWhenCollected:
    """A finalizer that receives a Ctrl-C: an exception raised in it is dropped."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


def test_a_ctrl_c_in_a_finalizer_still_ends_the_command(monkeypatch, capsys, default_sigint):
    """The observed hang: the KeyboardInterrupt raised inside a finalizer was dropped, SIGINT
    was left ignored, and the command ran on (here: 200 solves, then exit 0)."""
    solves = []

    @click.command()
    def solves_in_a_loop() -> None:
        """Receives a Ctrl-C inside a finalizer, then solves."""
        _CtrlCWhenCollected()
        solver = make_solver("superlu")
        solver.factorize(sp.csr_matrix(np.array([[2.0, 1.0], [1.0, 3.0]])))
        for _ in range(200):
            solver.solve(np.array([1.0, 2.0]))
            solves.append(1)

    monkeypatch.setattr(sys, "argv", ["fesens"])
    with pytest.raises(SystemExit) as exited:
        run_command(solves_in_a_loop)
    assert exited.value.code == 130, capsys.readouterr().err
    assert capsys.readouterr().err.strip() == "aborted"
    assert solves == []  # the first solve's return was the safe point


def _in_a_finalizer_after(save):
    """``save``, then on iteration 3 a Ctrl-C inside a finalizer."""

    def variant(path, x, iteration, *args):
        save(path, x, iteration, *args)
        if iteration == 3:
            _CtrlCWhenCollected()

    return variant


def _inside_the_write_of(save):
    """``save``, on iteration 3 with a Ctrl-C inside its ``np.savez`` (held back there)."""

    def variant(path, x, iteration, *args):
        if iteration != 3:
            return save(path, x, iteration, *args)
        savez = np.savez

        def savez_after_a_ctrl_c(*write_args, **write_kwargs):
            signal.raise_signal(signal.SIGINT)
            savez(*write_args, **write_kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(np, "savez", savez_after_a_ctrl_c)
            return save(path, x, iteration, *args)

    return variant


@pytest.mark.parametrize("ctrl_c", [_in_a_finalizer_after, _inside_the_write_of])
def test_an_optimization_stops_at_the_iteration_boundary_after_a_ctrl_c(
        tmp_path, monkeypatch, capsys, default_sigint, ctrl_c):
    """A Ctrl-C inside a finalizer right after iteration 3's checkpoint (once dropped there,
    the run went on to its end with Ctrl-C ignored), or inside that checkpoint's write: the
    run ends at the start of iteration 4 with the checkpoint of iteration 3."""
    monkeypatch.setattr(loop, "save_checkpoint", ctrl_c(loop.save_checkpoint))
    config = write_config(tmp_path)
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["fesens", "optimize", str(config), "--out", str(out),
                                      "-q"])
    with pytest.raises(SystemExit) as exited:
        run_command(cli)
    stderr = capsys.readouterr().err
    assert exited.value.code == 130, stderr
    assert stderr.startswith("error: interrupted after iteration 3; checkpoint saved")
    assert load_checkpoint(out / "checkpoint.npz")[1] == 3
    assert len(history(out)) == 3


def _sigint_ignored(pid: int) -> bool:
    """Whether ``/proc/PID/status`` shows SIGINT in ``SigIgn`` (False once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask, 16) & SIGINT_BIT)


def _watch(process: subprocess.Popen, until: float) -> bool:
    """Read the process's ``SigIgn`` until the monotonic time ``until``; whether SIGINT was
    ever ignored meanwhile."""
    ignored = False
    while time.monotonic() < until:
        ignored |= _sigint_ignored(process.pid)
        time.sleep(0.005)
    return ignored


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc (Linux)")
def test_ctrl_c_at_random_moments_always_saves_and_exits_130(tmp_path):
    """Six runs, each sent one SIGINT at a seeded random moment of its iterations (inside a
    solve, a checkpoint write, the progress output): each exits 130 with a valid checkpoint
    and its history, and SIGINT is never ignored before it."""
    config = write_config(tmp_path, edit(SMALL_MBB, "max_iter = 6", "max_iter = 100000")
                          .replace("tol_change = 0.01", "tol_change = 0.0"))
    rng = random.Random(9037)
    for trial in range(6):
        out = tmp_path / f"out{trial}"
        process = subprocess.Popen([*FESENS, "optimize", str(config), "--out", str(out), "-q"],
                                   cwd=tmp_path, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        # generous waits for a loaded machine, and the run killed whatever happens: one left
        # iterating would load the machine for the tests after this one
        try:
            deadline = time.monotonic() + 300
            while not (out / "checkpoint.npz").exists() and time.monotonic() < deadline:
                ignored = _sigint_ignored(process.pid)
                assert not ignored, f"trial {trial}: SIGINT ignored while starting"
                time.sleep(0.01)
            ignored = _watch(process, time.monotonic() + rng.uniform(0.0, 0.4))
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=300)
        finally:
            process.kill()
            process.wait()
        assert not ignored, f"trial {trial}: SIGINT ignored while the run iterated"
        assert process.returncode == 130, f"trial {trial}: {stderr}"
        assert stderr.startswith("error: interrupted after iteration "), stderr
        assert f"--out {out} --resume" in stderr and "Traceback" not in stderr
        iteration = load_checkpoint(out / "checkpoint.npz")[1]
        assert len(history(out)) == iteration >= 1
