"""A small TOML writer for resolved configs (the standard library only reads TOML).

Handles what configs hold: strings, booleans, integers, finite floats, lists of those,
inline tables, sections (``[mesh]``) and arrays of tables (``[[loads]]``,
``[[constraints.extra]]``). ``tomllib.loads(dumps(d)) == d`` for such data.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def inline(value: Any) -> str:
    """``value`` as a TOML inline value (string, number, boolean, array, inline table)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(inline(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {inline(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write a {type(value).__name__} to TOML")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _section(lines: list[str], header: str, table: dict) -> None:
    """Append ``table``'s plain keys, then its arrays of tables as ``[[header.key]]``."""
    nested = {k: v for k, v in table.items() if _is_table_array(v)}
    for key, value in table.items():
        if key not in nested:
            lines.append(f"{_key(key)} = {inline(value)}")
    for key, items in nested.items():
        for item in items:
            lines.extend(["", f"[[{header}.{_key(key)}]]" if header else f"[[{_key(key)}]]"])
            lines.extend(f"{_key(k)} = {inline(v)}" for k, v in item.items())


def dumps(data: dict, header: str = "") -> str:
    """TOML text of ``data``: top-level scalars, then one ``[section]`` per table."""
    lines = [header.rstrip("\n")] if header else []
    plain = {k: v for k, v in data.items() if not isinstance(v, dict) and not _is_table_array(v)}
    _section(lines, "", plain)
    for key, value in data.items():
        if isinstance(value, dict):
            lines.extend(["", f"[{_key(key)}]"])
            _section(lines, _key(key), value)
        elif _is_table_array(value):
            for item in value:
                lines.extend(["", f"[[{_key(key)}]]"])
                lines.extend(f"{_key(k)} = {inline(v)}" for k, v in item.items())
    return "\n".join(lines).lstrip("\n") + "\n"
