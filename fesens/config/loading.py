"""Reading config files: TOML text → resolved :class:`~fesens.config.schema.Config`."""

from __future__ import annotations

import tomllib
from pathlib import Path

from fesens.config.checks import ConfigError
from fesens.config.documented_keys import documented_keys
from fesens.config.schema import TOP_LEVEL, Config, resolve
from fesens.config.stray_keys import check_stray_keys
from fesens.errors import read_failure


def read_toml(text: str, *, source: str) -> dict:
    """Parse TOML text (config or study file).

    Raises
    ------
    ConfigError
        ``"<source>: not valid TOML: ..."``, with line and column, or for nesting too deep
        for the parser.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{source}: not valid TOML: {err}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid TOML: arrays or tables are nested too deeply "
                          "to read; a config or study file needs only a few levels: "
                          "remove the extra brackets") from None


def parse_config(text: str, *, source: str, base_dir: Path, default_name: str = "fesens",
                 optimize: bool = True) -> Config:
    """Parse TOML text and resolve it (see :func:`~fesens.config.schema.resolve`).

    Raises
    ------
    ConfigError
        ``"<source>: <problem>"``: invalid TOML (with line and column), a top-level key
        written after a table header (:func:`~fesens.config.stray_keys.check_stray_keys`)
        or any check.
    """
    raw = read_toml(text, source=source)
    try:
        check_stray_keys(raw, TOP_LEVEL, documented_keys())
        return resolve(raw, base_dir=base_dir, source=source, default_name=default_name,
                       optimize=optimize)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    except MemoryError as err:  # a mesh let through by mesh.allow_large
        raise MemoryError(f"{source}: {err}") from None


def load_config(path: str | Path, *, optimize: bool = True) -> Config:
    """Read and resolve a config file; mesh paths in it are relative to its folder.

    Raises
    ------
    ConfigError
        Missing or unreadable file, invalid TOML, or a failed check.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read config file {path}: {read_failure(err)}") from None
    return parse_config(text, source=str(path), base_dir=path.resolve().parent,
                        default_name=path.stem, optimize=optimize)
