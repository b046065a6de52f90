"""A design read back from an optimization's results, for ``fesens sensitivity --design``.

Accepted: the results folder of ``fesens optimize`` (its ``design.vtu``), a VTU (or any
mesh file meshio reads) with the cell field ``density`` on the config's mesh, or the run's
``checkpoint.npz``, whose design variables become densities through the config's
``[filter]``, ``[projection]`` and passive cells (give the run's ``config.toml`` as
CONFIG for that).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fesens.config import Config, ConfigError, build_problem
from fesens.config.fingerprint import changed_parts, decode, problem_fingerprint
from fesens.config.initial_design import checked_density, read_density
from fesens.opt import CheckpointError, load_checkpoint, load_fingerprint
from fesens.opt.checkpoint import missing_fingerprint

#: Sections a checkpoint's design variables need to become densities.
CHECKPOINT_SECTIONS = ("penalization", "filter", "projection", "constraints", "design",
                       "objective")


@dataclass(frozen=True)
class Design:
    """Physical densities ``(n_cells,)`` and where they came from."""

    density: np.ndarray
    source: str


def full_material(config: Config) -> Design:
    """ρ = 1 in every cell."""
    return Design(np.ones(config.mesh.n_cells), "full material (density 1)")


def read_design(config: Config, path: str | Path) -> Design:
    """The densities of ``path`` (folder, VTU or checkpoint) on ``config``'s mesh.

    Raises
    ------
    ConfigError
        The file does not exist, is not a design of this mesh, or holds densities outside
        [0, 1]; the message names the file and what to give instead.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "design.vtu"
    if not path.is_file():
        raise ConfigError(f"--design {path}: no such file (give a results folder of "
                          "`fesens optimize`, its design.vtu or its checkpoint.npz)")
    if path.suffix == ".npz":
        density = checked_density(_checkpoint_density(config, path), f"--design {path}")
    else:
        density = read_density(path, config.mesh, f"--design {path}")
    return Design(density, str(path))


def _checkpoint_density(config: Config, path: Path) -> np.ndarray:
    missing = [name for name in CHECKPOINT_SECTIONS if name not in config.data]
    if missing:
        raise ConfigError(f"--design {path}: a checkpoint holds design variables, which "
                          f"become densities through the run's [{'], ['.join(missing)}]; "
                          f"give the run's config.toml as CONFIG, or --design its design.vtu")
    fix = "give --design the checkpoint of a run of this config, or CONFIG that run's config.toml"
    try:
        x, iteration, _, _ = load_checkpoint(path)
        stored = load_fingerprint(path)
        if stored is None:  # without it nothing shows which problem x belongs to
            raise CheckpointError(missing_fingerprint(path))
        changed = changed_parts(decode(stored), problem_fingerprint(config),
                                ("mesh", *CHECKPOINT_SECTIONS))
    except (CheckpointError, ValueError) as exc:
        raise ConfigError(f"--design {path}: {exc}; {fix}") from None
    if changed:
        raise ConfigError(f"--design {path}: the checkpoint was written for another problem "
                          f"(its {', '.join(changed)} differ from the config's); {fix}")
    problem = build_problem(config)
    if x.shape != (problem.n_design,):
        raise ConfigError(f"--design {path}: {x.size} design variables, but the config's "
                          f"problem has {problem.n_design}; give the config of that run")
    problem.update_schedules(iteration + 1)  # the schedule of the next evaluation of x
    return np.asarray(problem.density(x), dtype=float)
