"""Kill or interrupt ``fesens optimize`` and ``fesens study`` at random moments, resume, and
check that the resumed result equals the uninterrupted one.

Each trial starts the command in a fresh process, sends SIGKILL or SIGINT after a random
delay, then runs it again with ``--resume`` (again and again if a resumed run is itself
interrupted: every trial interrupts up to ``--rounds`` times) and finally lets it finish.
An optimization must reproduce the reference ``history.csv`` exactly (every objective bit
for bit) and its ``summary.json`` the same iteration count, status and final objective.
A study must reproduce the reference
results table (``results.jsonl`` without timings). Usage::

    python benchmarks/reliability.py --trials 10 --seed 1 [--kind optimize|study|both]

Prints one line per trial (kind, signal, delays, resumed-ok) and exits 1 if any trial fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FESENS = [sys.executable, "-c", "from fesens.cli import main; main()"]
SMALL_MBB = (ROOT / "tests" / "data" / "small_mbb.toml").read_text()
#: ~40 iterations of the small MBB beam (no early stop), a few seconds.
OPTIMIZE_CONFIG = SMALL_MBB.replace("max_iter = 6", "max_iter = 40").replace(
    "tol_change = 0.01", "tol_change = 0.0")
STUDY_BASE = """name = "beam"
[mesh]
type = "rectangle"
size = [12.0, 4.0]
cells = [24, 8]
[physics]
plane = "stress"
[material]
E = 1.0
nu = 0.3
[[supports]]
group = "left"
[[loads]]
type = "point"
name = "F"
point = [12.0, 0.0]
value = [0.0, -1.0]
"""
STUDY = """name = "beam-study"
base = "base.toml"
[design]
type = "lhs"
samples = 12
seed = 3
[[parameters]]
target = "material.E"
range = [0.8, 1.2]
[[parameters]]
target = "loads.F.magnitude"
name = "F"
range = [1.0, 2.0]
[[outputs]]
type = "compliance"
"""
#: Keys of a study record that differ between identical runs.
TIMING_KEYS = {"seconds", "time", "wall_time", "worker", "pid", "attempts", "started",
               "finished", "host"}


def _fesens(args: list[str], folder: Path) -> subprocess.Popen:
    """Start ``fesens args`` in ``folder`` with SIGINT as at a terminal, even when this
    script runs in the background (which ignores SIGINT, and children inherit that).

    The child gets the default disposition by inheritance: it is set here around the start,
    not in a ``preexec_fn``, which would make subprocess fork the whole process (running
    the fork handlers of threaded libraries such as JAX, which warn of deadlocks).
    """
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        return subprocess.Popen([*FESENS, *args], cwd=folder, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def _job(kind: str, folder: Path) -> list[str]:
    if kind == "optimize":
        (folder / "run.toml").write_text(OPTIMIZE_CONFIG)
        return ["optimize", "run.toml", "-q"]
    (folder / "base.toml").write_text(STUDY_BASE)
    (folder / "study.toml").write_text(STUDY)
    return ["study", "study.toml", "-q", "--workers", "1"]


def _result(kind: str, out: Path):
    if kind == "optimize":
        summary = json.loads((out / "summary.json").read_text())
        return ((out / "history.csv").read_text(), summary["iterations"], summary["status"],
                summary["objective"]["value"]), None
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()
               if line.strip()]
    rows = [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]
    return sorted(json.dumps(r, sort_keys=True) for r in rows), None


def reference(kind: str, work: Path):
    """The uninterrupted run's result."""
    folder = work / f"{kind}-reference"
    folder.mkdir()
    args = _job(kind, folder)
    process = _fesens([*args, "--out", "out"], folder)
    _, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise RuntimeError(f"reference {kind} run failed: {err}")
    return _result(kind, folder / "out"), process


def trial(kind: str, sig: signal.Signals, rng: random.Random, work: Path, index: int,
          span: float, rounds: int = 2) -> tuple[list[float], bool, str]:
    """Interrupt ``kind`` up to ``rounds`` times at random moments in ``[0, span]`` s, resume
    until it finishes; ``(delays, ok, note)``, ``ok`` when the result equals the reference
    (compared by the caller)."""
    folder = work / f"{kind}-{index}"
    folder.mkdir()
    args = [*_job(kind, folder), "--out", "out"]
    delays, resume = [], []
    for _ in range(rounds + 10):
        process = _fesens(args + resume, folder)
        if len(delays) < rounds:
            delay = rng.uniform(0.0, span)
            delays.append(round(delay, 3))
            try:
                process.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                process.send_signal(sig)
        _, err = process.communicate(timeout=600)
        code = process.returncode
        if code == 0 and len(delays) >= rounds:
            return delays, True, ""
        if code not in (0, 130, -signal.SIGKILL, -signal.SIGINT):
            if code == 2 and "cannot resume: no checkpoint" in err or \
                    "nothing to resume" in err or "nothing was written" in err:
                resume = ["--force"]         # killed before its first checkpoint
                continue
            return delays, False, f"exit {code}: {err.strip()[-200:]}"
        if code == -signal.SIGINT:
            return delays, False, "killed by SIGINT instead of exit 130"
        has_state = (folder / "out" / ("checkpoint.npz" if kind == "optimize"
                                       else "results.jsonl")).exists()
        resume = ["--resume"] if has_state else ["--force"]
    return delays, False, "did not finish"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kind", choices=["optimize", "study", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=2, help="interruptions per trial")
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    kinds = ["optimize", "study"] if options.kind == "both" else [options.kind]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="fesens-reliability-") as tmp:
        work = Path(tmp)
        print(f"{'kind':9s} {'signal':8s} {'delays (s)':18s} resumed-ok  note")
        for kind in kinds:
            start = time.perf_counter()
            expected, _ = reference(kind, work)
            span = time.perf_counter() - start
            for index in range(options.trials):
                sig = rng.choice([signal.SIGKILL, signal.SIGINT])
                delays, ok, note = trial(kind, sig, rng, work, index, span,
                                          options.rounds)
                if ok:
                    got, _ = _result(kind, work / f"{kind}-{index}" / "out")
                    ok = got == expected[0]
                    note = "" if ok else "result differs from the reference"
                failures += not ok
                print(f"{kind:9s} {sig.name:8s} {str(delays):18s} {str(ok):10s}  {note}",
                      flush=True)
                shutil.rmtree(work / f"{kind}-{index}", ignore_errors=True)
    print(f"{failures} failed of {len(kinds) * options.trials}")
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
