"""Config files for the command line: TOML in, checked models and design problems out.

>>> config = load_config("mbb.toml")                 # doctest: +SKIP
>>> problem = build_problem(config)                   # doctest: +SKIP

Parsing is safe (:mod:`tomllib`, nothing is executed) and every check runs before any
work: a bad file raises :class:`ConfigError` naming the key path, the value and what is
allowed. The format is documented in ``fesens/docs/config.md`` (``fesens docs config``).
"""

from fesens.config.build import (
    build_interpolation,
    build_model,
    build_optimizer,
    build_problem,
    response,
)
from fesens.config.checks import ConfigError, ConfigWarning
from fesens.config.loading import load_config, parse_config
from fesens.config.presets import load_preset, preset_descriptions, preset_names, preset_text
from fesens.config.schema import OPTIMIZATION_SECTIONS, Config, resolve
from fesens.config.toml_writer import dumps

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
    "preset_descriptions",
    "preset_names",
    "preset_text",
    "resolve",
    "response",
]
