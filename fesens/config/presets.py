"""Built-in problems: commented TOML files in ``fesens/config/presets/``.

``fesens presets`` lists them, ``fesens optimize --preset NAME`` runs one and
``--dump-config`` prints it as shipped: a preset's mesh is a generator or a packaged mesh
(``[mesh] packaged = "lbracket"``), so the printed file runs from any folder and gives the
same result.

This module reads the preset files only; :func:`load_preset` imports the checks and the
models when it is called, so that listing the presets stays quick.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from fesens.config.checks import ConfigError, did_you_mean

if TYPE_CHECKING:
    from fesens.config.schema import Config

PRESET_DIR = Path(__file__).resolve().parent / "presets"


def preset_names() -> list[str]:
    """Names of the built-in presets, sorted."""
    return sorted(path.stem for path in PRESET_DIR.glob("*.toml"))


def _path(name: str) -> Path:
    path = PRESET_DIR / f"{name}.toml"
    if name not in preset_names():
        raise ConfigError(f"unknown preset {name!r}{did_you_mean(name, preset_names())} "
                          f"(presets: {', '.join(preset_names())})")
    return path


def preset_descriptions() -> dict[str, str]:
    """``{name: description}`` of every preset."""
    return {name: tomllib.loads(_path(name).read_text(encoding="utf-8")).get("description", "")
            for name in preset_names()}


def preset_text(name: str) -> str:
    """The preset file's text, as shipped."""
    return _path(name).read_text(encoding="utf-8")


def load_preset(name: str, *, optimize: bool = True) -> Config:
    """The resolved config of a preset."""
    from fesens.config.loading import parse_config

    path = _path(name)
    return parse_config(path.read_text(encoding="utf-8"), source=f"preset {name!r}",
                        base_dir=path.parent, default_name=name, optimize=optimize)
