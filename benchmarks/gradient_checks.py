"""``fesens sensitivity --check`` on every preset: is each gradient the command writes right?

For every preset of ``fesens/config/presets`` and every ``--wrt`` target its physics offers
(the density, each per-cell material parameter, the load magnitudes when it has loads, the
node coordinates), this runs ``fesens sensitivity --preset NAME --wrt WRT --check
--check-seed SEED`` in a child process and prints one Markdown row: the objective (the
preset's own where ``sensitivity`` differentiates it, else compliance), the Taylor rate (2
when the gradient is right; "-" where the objective is linear along the direction, its
remainders at round-off), the relative agreement of the gradient's directional derivative
with the central difference, and the verdict (the command's exit code 5 is a failed check).
A preset named in ``SMALLER`` runs on the coarser mesh given there (its ``[mesh] cells``
replaced), so that the whole table takes minutes; the table says which.

Run: ``.venv/bin/python benchmarks/gradient_checks.py [--presets NAME ...] [--seed N]``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fesens.config import load_preset, preset_text
from fesens.workflow.analysis import wrt_choices

ROOT = Path(__file__).resolve().parents[1]
FESENS = str(Path(sys.executable).parent / "fesens")
#: Presets checked on a coarser mesh than they ship with: ``{name: cells}``.
SMALLER: dict[str, str] = {}
#: Seconds one check may take before it is reported as such (a loaded machine included).
CHECK_TIMEOUT = 1800


def presets() -> list[str]:
    return sorted(path.stem for path in (ROOT / "fesens" / "config" / "presets").glob("*.toml"))


def objective_of(config) -> str:
    """The preset's objective where ``fesens sensitivity`` differentiates it, else
    compliance (an eigen or volume objective of an optimization)."""
    given = (config.data.get("objective") or {}).get("type", "compliance")
    return given if given in config.physics_class.config.responses else "compliance"


def targets(config) -> list[str]:
    """The ``--wrt`` targets the preset's physics offers (loads only where it has some)."""
    return [wrt for wrt in wrt_choices(config.physics_class)
            if wrt != "loads" or config.data.get("loads")]


def source(name: str, folder: Path) -> list[str]:
    """The command-line source of the preset: ``--preset NAME``, or a copy with the
    coarser mesh of ``SMALLER``."""
    if name not in SMALLER:
        return ["--preset", name]
    text, count = re.subn(r"(?m)^cells = \[[^\]]*\]", f"cells = {SMALLER[name]}",
                          preset_text(name))
    if count != 1:
        raise SystemExit(f"{name}: expected one [mesh] cells line to replace, found {count}")
    path = folder / f"{name}.toml"
    path.write_text(text)
    return [str(path)]


def check(name: str, objective: str, wrt: str, seed: int, folder: Path) -> dict:
    """One ``fesens sensitivity --check``: its exit code and the ``check`` it wrote."""
    out = folder / f"{name}-{wrt}"
    argv = [FESENS, "sensitivity", *source(name, folder), "--wrt", wrt, "--objective",
            objective, "--check-seed", str(seed), "--out", str(out), "--force", "-q"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CHECK_TIMEOUT,
                          cwd=folder)
    if done.returncode not in (0, 5):
        return {"exit": done.returncode, "message": done.stderr.strip().splitlines()[-1:]}
    found = json.loads((out / "sensitivity.json").read_text())["check"]
    return {"exit": done.returncode, **found}


def row(name: str, objective: str, wrt: str, found: dict) -> str:
    if "message" in found:
        return (f"| {name} | {objective} | {wrt} | | | exit {found['exit']}: "
                f"{' '.join(found['message'])} |")
    rate = found["taylor"]["rate"]
    verdict = "pass" if found["passed"] else "FAIL"
    return (f"| {name} | {objective} | {wrt} | {'-' if rate is None else f'{rate:.2f}'} | "
            f"{found['agreement']:.1e} | {verdict} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", choices=presets(), default=presets())
    parser.add_argument("--seed", type=int, default=0, help="--check-seed of every check")
    args = parser.parse_args(argv)
    print("# fesens sensitivity --check on every preset\n")
    print(f"seed {args.seed}; coarser meshes: " + ", ".join(
        f"{name} cells = {cells}" for name, cells in SMALLER.items()) + "\n")
    print("| preset | objective | wrt | Taylor rate | agreement | verdict |")
    print("|---|---|---|---:|---:|---|")
    failed, start = 0, time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.presets:
            config = load_preset(name, optimize=False)
            objective = objective_of(config)
            for wrt in targets(config):
                found = check(name, objective, wrt, args.seed, Path(scratch))
                failed += found.get("passed") is not True
                print(row(name, objective, wrt, found), flush=True)
    print(f"\n{failed} of the checks failed; {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
