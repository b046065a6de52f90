"""Print the size of the combination product, per command and axis; with ``--walk N``,
also walk N points drawn with a seed and print how many were refused, checked or failed.

Run from the repository root::

    .venv/bin/python tests/combinations/count.py
    .venv/bin/python tests/combinations/count.py --walk 200 --seed 1
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import axes  # noqa: E402  (the folder above is put on the path first)


def size_lines() -> list[str]:
    """The lines that give the product's size (fesens/docs/combinations.md quotes them)."""
    counts = {command: axes.count(command) for command in axes.config_commands()}
    lines = [f"axis {axis.name}: {len(axis.values)} values ({axis.source})"
             for axis in axes.axes()]
    lines.append("combinations: " + ", ".join(f"{c} {n:,}" for c, n in counts.items())
                 + f"; total {sum(counts.values()):,}")
    return lines


def walk(count: int, seed: int) -> dict[str, int]:
    """Outcomes of ``count`` points drawn uniformly, axis by axis, with ``seed``."""
    import tempfile
    import warnings

    import runner

    from fesens.errors import FesensWarning

    rng, tally = random.Random(seed), {"refused": 0, "checked": 0, "failed": 0}
    for _ in range(count):
        point: dict = {}
        for axis in axes.axes():
            point[axis.name] = (rng.choice(axis.values) if axis.name == "command"
                                or axes.applies(axis, point) else axis.values[0])
        with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
            warnings.simplefilter("ignore", FesensWarning)
            outcome = runner.outcome(point, Path(folder))
        tally[outcome.status] += 1
        if outcome.status == "failed":
            print(f"failed: {point}: {outcome.message}", flush=True)
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walk", type=int, default=0, help="points to run")
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    print("\n".join(size_lines()))
    if arguments.walk:
        tally = walk(arguments.walk, arguments.seed)
        print(f"walked {arguments.walk} (seed {arguments.seed}): " +
              ", ".join(f"{key} {value}" for key, value in tally.items()))


if __name__ == "__main__":
    main()
