"""``fesens sensitivity --check`` on every preset: is each gradient the command writes right?

For every preset of ``fesens/config/presets`` and every ``--wrt`` target its physics offers
(the density, each per-cell material parameter, the load magnitudes when it has loads, the
node coordinates), this runs ``fesens sensitivity --preset NAME --wrt WRT --objective OBJ
--check-seed SEED`` in a child process (the command a user runs, the same code path) and
prints one Markdown row: the preset, its analysis, the objective (the preset's own where
``sensitivity`` differentiates it, else compliance), the target, the Taylor rate (2 when
the gradient is right; "-" where the objective is linear along the direction, its
remainders at round-off), the relative agreement of the gradient's directional derivative
with the central difference, the verdict (the command's exit code 5 is a failed check) and
the child's wall time. A preset the command refuses (exit 2: an objective only `fesens
optimize` runs) gets one row with the command's message.

Run: ``nice .venv/bin/python benchmarks/gradient_checks.py [--presets NAME ...] [--seed N]``
(exit 1 if any check failed or a command ended otherwise than 0 or 5).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import load_average, load_line, machine_lines

from fesens.config import ConfigError, load_preset
from fesens.config.time_sections import analysis_type
from fesens.workflow.analysis import wrt_choices
from fesens.workflow.targets import chosen_parameters

ROOT = Path(__file__).resolve().parents[1]
FESENS = str(Path(sys.executable).parent / "fesens")
#: Seconds one check may take before it is reported as such (a loaded machine included).
CHECK_TIMEOUT = 1800
HEADERS = ("preset", "analysis", "objective", "wrt", "Taylor rate", "CD rel. error",
           "verdict", "seconds")


def presets() -> list[str]:
    return sorted(path.stem for path in (ROOT / "fesens" / "config" / "presets").glob("*.toml"))


def objective_of(config) -> str:
    """The preset's objective where ``fesens sensitivity`` differentiates it, else
    compliance (a volume objective of an optimization)."""
    given = (config.data.get("objective") or {}).get("type", "compliance")
    return given if given in config.physics_class.config.responses else "compliance"


def targets(config) -> list[str]:
    """The ``--wrt`` targets the preset's physics offers (loads only where it has some), of
    the parameters its options may choose (a law's constants) only the preset's own."""
    physics = config.physics_class
    material_of = physics.config.material_of
    options = {option.name: option.default for option in physics.config.options}
    options.update(config.data.get("physics") or {})
    own = (material_of(options) if material_of is not None else None) or {}
    return [wrt for wrt in wrt_choices(physics)
            if (wrt != "loads" or config.data.get("loads"))
            and (wrt not in chosen_parameters(physics) or wrt in own)]


def check(name: str, wrt: str, objective: str | None, seed: int, folder: Path) -> dict:
    """One ``fesens sensitivity --check``: its exit code, wall time and the ``check`` it
    wrote (or the last line of its message)."""
    out = folder / f"{name}-{wrt}"
    argv = [FESENS, "sensitivity", "--preset", name, "--wrt", wrt, "--check-seed", str(seed),
            "--out", str(out), "--force", "-q"]
    argv += ["--objective", objective] if objective else []
    start = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CHECK_TIMEOUT,
                              cwd=folder)
    except subprocess.TimeoutExpired:
        return {"exit": None, "seconds": time.monotonic() - start,
                "message": [f"timed out after {CHECK_TIMEOUT} s"]}
    seconds = time.monotonic() - start
    if done.returncode not in (0, 5):
        return {"exit": done.returncode, "seconds": seconds,
                "message": done.stderr.strip().splitlines()[-1:]}
    found = json.loads((out / "sensitivity.json").read_text())["check"]
    return {"exit": done.returncode, "seconds": seconds, **found}


def row(cells: tuple[str, ...], found: dict) -> str:
    """One Markdown row: ``cells`` (preset, analysis, objective, wrt), then the check's."""
    if "message" in found:
        message = " ".join(found["message"]).replace("|", "/")
        end = ("", "", f"exit {found['exit']}: {message}", f"{found['seconds']:.1f}")
    else:
        rate = found["taylor"]["rate"]
        end = ("-" if rate is None else f"{rate:.2f}", f"{found['agreement']:.1e}",
               "pass" if found["passed"] else "FAIL", f"{found['seconds']:.1f}")
    return "| " + " | ".join((*cells, *end)) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", choices=presets(), default=presets())
    parser.add_argument("--seed", type=int, default=0, help="--check-seed of every check")
    args = parser.parse_args(argv)
    loads = [load_average()]
    print("# fesens sensitivity --check on every preset\n")
    print("\n".join(machine_lines(["numpy", "scipy", "scikit-sparse"])))
    print(f"seed {args.seed}\n")
    print("| " + " | ".join(HEADERS) + " |")
    print("|---|---|---|---|---:|---:|---|---:|")
    failed, checks, start = 0, 0, time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.presets:
            try:
                config = load_preset(name, optimize=False)
            except ConfigError:  # the command's own refusal is what the row shows
                found = check(name, "density", None, args.seed, Path(scratch))
                print(row((name, "-", "-", "density"), found), flush=True)
                failed += found["exit"] != 2
                continue
            objective = objective_of(config)
            for wrt in targets(config):
                found = check(name, wrt, objective, args.seed, Path(scratch))
                checks += 1
                failed += found.get("passed") is not True
                print(row((name, analysis_type(config.data), objective, wrt), found),
                      flush=True)
    loads.append(load_average())
    print(f"\n{failed} of {checks} checks failed; {time.monotonic() - start:.0f} s")
    print(load_line(loads))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
