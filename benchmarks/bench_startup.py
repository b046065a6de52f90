"""Start-up benchmark: the wall time of ``fesens`` commands that compute nothing.

Each command runs ``--runs`` times as a fresh process (the console script next to this
Python, else ``python -c "from fesens.cli import main; main()"``), output discarded. The
table gives the median and the minimum wall time per command, and a reference row for the
bare interpreter (``python -c pass``). On a shared machine the minimum is the steadier
number: the median carries the waits for the cores. The target is 0.5 s for every command
but ``info``, which imports the solver backends to list them.

Run: ``python benchmarks/bench_startup.py [--runs 5] [--fesens PATH]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _common import load_average, load_line, seconds, table

#: The commands measured (arguments of ``fesens``).
COMMANDS = (("--version",), ("--help",), ("presets",), ("docs", "config"), ("info",))


def wall_times(argv: Sequence[str], runs: int) -> list[float]:
    """Wall time of ``argv`` as a fresh process, ``runs`` times; the command must succeed."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def fesens_command(path: str | None) -> list[str]:
    """The ``fesens`` console script: ``path``, the one next to this Python, or an
    equivalent ``python -c``."""
    script = Path(path) if path else Path(sys.executable).with_name("fesens")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from fesens.cli import main; main()"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--fesens", metavar="PATH", help="the fesens console script")
    args = parser.parse_args()
    fesens = fesens_command(args.fesens)
    loads = [load_average()]
    rows = []
    cases = [("python -c pass", [sys.executable, "-c", "pass"])]
    cases += [(" ".join(("fesens", *command)), [*fesens, *command]) for command in COMMANDS]
    for label, argv in cases:
        times = wall_times(argv, args.runs)
        rows.append([label, seconds(statistics.median(times)), seconds(min(times))])
    loads.append(load_average())
    print(f"# fesens start-up, {args.runs} runs per command ({' '.join(fesens)})\n")
    print(load_line(loads) + "\n")
    print(table(["command", "median", "min"], rows))


if __name__ == "__main__":
    main()
