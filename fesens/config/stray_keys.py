"""Top-level keys that TOML put inside a table because they were written after its header.

In TOML a key belongs to the last table header above it: ``loads = []`` written after a
``[[supports]]`` table is that support's key, and the top level has no ``loads``. The
checks of the sections would then report a missing ``loads`` or an unknown key of the
support; :func:`check_stray_keys` names what happened instead: which top-level key sits in
which table, and where to move it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from fesens.config.checks import ConfigError, join, show


def check_stray_keys(raw: Mapping[str, Any], top_level: Collection[str],
                     allowed: Mapping[str, Collection[str]]) -> None:
    """Refuse a top-level key that is missing at the top level but written inside a table.

    Parameters
    ----------
    raw : mapping
        The parsed TOML document.
    top_level : collection of str
        The keys of the top level.
    allowed : mapping of str to collection of str
        The keys each top-level table (or each table of an array of tables) takes; a key
        allowed there is never stray (``loads`` of a ``[[load_cases]]`` table).

    Raises
    ------
    ConfigError
        Naming the key, the table that holds it (``supports[1]``) and the fix: move the
        key above the first table header.
    """
    for section, value in raw.items():
        if isinstance(value, dict):
            tables = [(f"the [{section}] table", value)]
        elif isinstance(value, list) and value and all(isinstance(t, dict) for t in value):
            tables = [(f"the [[{section}]] table {join(section, i)}", table)
                      for i, table in enumerate(value)]
        else:
            continue
        takes = allowed.get(section, ())
        for where, table in tables:
            for key, stray in table.items():
                if key in top_level and key not in raw and key not in takes:
                    raise ConfigError(
                        f"{key!r} is inside {where} (TOML reads a key "
                        f"written after a table header as that table's key), so the config "
                        f"has no top-level {key!r}: move {key} = {show(stray)} above the "
                        "first table header")
