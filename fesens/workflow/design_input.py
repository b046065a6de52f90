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
from fesens.errors import MeshError
from fesens.mesh import read_cell_field
from fesens.opt import CheckpointError, load_checkpoint, load_fingerprint

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
        density = _checkpoint_density(config, path)
    else:
        try:
            density = np.asarray(read_cell_field(path, "density", config.mesh), dtype=float)
        except MeshError as err:
            raise ConfigError(f"--design {path}: {err}") from None
    slack = 1e-9  # filters and projections round a little outside [0, 1]
    if density.ndim != 1 or not np.all(np.isfinite(density)) or density.min() < -slack \
            or density.max() > 1.0 + slack:
        raise ConfigError(f"--design {path}: the density must be one value in [0, 1] per "
                          f"cell (found {density.min():.6g} to {density.max():.6g})")
    return Design(np.clip(density, 0.0, 1.0), str(path))


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
        changed = [] if stored is None else changed_parts(
            decode(stored), problem_fingerprint(config), ("mesh", *CHECKPOINT_SECTIONS))
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
