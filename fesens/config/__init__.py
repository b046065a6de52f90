"""Config files for the command line: TOML in, checked models and design problems out.

>>> config = load_config("mbb.toml")                 # doctest: +SKIP
>>> problem = build_problem(config)                   # doctest: +SKIP

Parsing is safe (:mod:`tomllib`, nothing is executed) and every check runs before any
work: a bad file raises :class:`ConfigError` naming the key path, the value and what is
allowed. The format is documented in ``fesens/docs/config.md`` (``fesens docs config``).

The names below are imported on first use (PEP 562 ``__getattr__``): ``fesens presets``
reads the preset files through :mod:`fesens.config.presets` without importing the models,
solvers and design problems that :mod:`fesens.config.build` needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fesens.config.build import (
        build_interpolation,
        build_model,
        build_optimizer,
        build_problem,
        response,
    )
    from fesens.config.checks import ConfigError, ConfigWarning
    from fesens.config.loading import load_config, parse_config
    from fesens.config.presets import (
        load_preset,
        preset_names,
        preset_summaries,
        preset_text,
    )
    from fesens.config.schema import OPTIMIZATION_SECTIONS, Config, resolve
    from fesens.config.toml_writer import dumps

#: The module of each public name.
_HOMES = {
    "build_interpolation": "build", "build_model": "build", "build_optimizer": "build",
    "build_problem": "build", "response": "build",
    "ConfigError": "checks", "ConfigWarning": "checks",
    "load_config": "loading", "parse_config": "loading",
    "load_preset": "presets", "preset_summaries": "presets", "preset_names": "presets",
    "preset_text": "presets",
    "OPTIMIZATION_SECTIONS": "schema", "Config": "schema", "resolve": "schema",
    "dumps": "toml_writer",
}

__all__ = [
    "OPTIMIZATION_SECTIONS",
    "Config",
    "ConfigError",
    "ConfigWarning",
    "build_interpolation",
    "build_model",
    "build_optimizer",
    "build_problem",
    "dumps",
    "load_config",
    "load_preset",
    "parse_config",
    "preset_names",
    "preset_summaries",
    "preset_text",
    "resolve",
    "response",
]


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(import_module(f"fesens.config.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'fesens.config' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
