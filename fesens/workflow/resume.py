"""Whether a results folder's run may be resumed under a config: the config it wrote and its
checkpoint's problem fingerprint must be those of the same problem (only the stopping rule,
the output and the names may change)."""

from __future__ import annotations

import tomllib

from fesens.config import Config, ConfigError
from fesens.config.fingerprint import changed_parts, decode, problem_fingerprint
from fesens.opt import CheckpointError, load_checkpoint, load_fingerprint
from fesens.opt.checkpoint import check_optimizer_state, missing_fingerprint
from fesens.output import ResultsFolder

#: Sections a resumed run may change (iteration limit, tolerance, output frequency).
RESUMABLE_CHANGES = ("stop", "output", "name", "description")


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(old) | set(new))
    out = []
    for key in keys:
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
            out += _differences(old[key], new[key], path)
        elif old.get(key) != new.get(key):
            out.append(path)
    return out


def check_same_problem(folder: ResultsFolder, config: Config) -> None:
    """Refuse a resume whose config differs from the ``config.toml`` the run in ``folder``
    wrote, outside :data:`RESUMABLE_CHANGES` (nothing to compare when it is missing: the
    checkpoint's fingerprint is checked by :func:`resume_point`)."""
    stored = folder.path / "config.toml"
    if not stored.is_file():
        return
    old = tomllib.loads(stored.read_text(encoding="utf-8"))
    strip = [{k: v for k, v in d.items() if k not in RESUMABLE_CHANGES}
             for d in (old, config.data)]
    changed = _differences(*strip)
    if changed:
        raise ConfigError(f"cannot resume: the config differs from the one of the run in "
                          f"{folder.path} (changed: {', '.join(changed)}); only [stop] and "
                          "[output] may change on --resume")


def run_fingerprint(config: Config) -> dict[str, str]:
    """The parts of ``config``'s problem fingerprint a resumed run must keep (all but
    :data:`RESUMABLE_CHANGES`)."""
    return {part: digest for part, digest in problem_fingerprint(config).items()
            if part not in RESUMABLE_CHANGES}


def resume_point(folder: ResultsFolder, command: str, fingerprint: dict[str, str],
                 n_design: int, optimizer) -> tuple[int, list[dict]]:
    """Iteration and history of the checkpoint in ``folder``; a damaged one (an entry of the
    wrong shape or outside its bounds, ``optimizer``'s state included, or no fingerprint), or
    one of another problem (its fingerprint), is refused with the way out (``--force``)."""
    fix = (f"it cannot be resumed. Start the run again with: {command} --out {folder.path} "
           "--force, or give the --out folder of this config's run")
    try:
        _, iteration, history, state = load_checkpoint(folder.checkpoint, n_design)
        stored = load_fingerprint(folder.checkpoint)
        if stored is None:
            raise CheckpointError(missing_fingerprint(folder.checkpoint))
        try:
            changed = changed_parts(decode(stored), fingerprint)
        except ValueError as exc:
            raise CheckpointError(f"checkpoint {folder.checkpoint} is damaged "
                                  f"({exc})") from None
        if changed:
            raise CheckpointError(
                f"checkpoint {folder.checkpoint} was written for another problem (changed "
                f"since: {', '.join(changed)}; only [stop] and [output] may change on "
                "--resume)")
        check_optimizer_state(folder.checkpoint, optimizer, state, n_design)
    except CheckpointError as exc:
        raise CheckpointError(f"{exc}; {fix}") from None
    return iteration, history
