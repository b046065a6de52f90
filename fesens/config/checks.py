"""Building blocks of config validation: value checkers, table checks, clear messages.

A *checker* is a callable ``check(path, value) -> normalised value`` with an ``expected``
attribute (what is allowed, in words: ``"a number > 0"``). It raises :class:`ConfigError`
naming the key path (``filter.radius``), the value and what is allowed. :func:`check_table`
applies a ``{key: Key}`` spec to a table: unknown keys are rejected with the nearest valid
key (:mod:`difflib`), missing required keys are named, defaults are filled in.
"""

from __future__ import annotations

import copy
import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fesens.config.toml_writer import inline
from fesens.errors import FesensError, FesensWarning

#: Marks a key without a default: it must be given.
REQUIRED = object()



class ConfigError(FesensError, ValueError):
    """An invalid configuration; the message names the key, the value and what is allowed."""


class ConfigWarning(FesensWarning):
    """A valid but doubtful configuration; the message names the file, the key and the value
    (the command line prints it as one ``warning: ...`` line)."""


@dataclass(frozen=True)
class Key:
    """One key of a table spec.

    Attributes
    ----------
    check : callable
        ``check(path, value) -> value`` (see the module docstring).
    default : object
        Filled in when the key is absent; :data:`REQUIRED` makes it mandatory, ``None``
        leaves it out.
    doc : str
        What the key means (shown when a required key is missing).
    """

    check: Callable[[str, Any], Any]
    default: Any = None
    doc: str = ""


def join(path: str, key: str | int) -> str:
    """``join("loads", 2) == "loads[2]"``, ``join("filter", "radius") == "filter.radius"``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


#: Longest value a message shows; longer ones are cut (``[[[[...``).
SHOWN_LENGTH = 80


def _nesting(value: Any, limit: int) -> int:
    """How deep lists and tables nest in ``value`` (counted up to ``limit``), iteratively."""
    depth, level = 0, [value]
    while depth < limit:
        containers = [node for node in level if isinstance(node, list | dict)]
        if not containers:
            break
        depth += 1
        level = [child for node in containers
                 for child in (node.values() if isinstance(node, dict) else node)]
    return depth


def show(value: Any) -> str:
    """A value as it is written in TOML (strings quoted, lists in brackets), cut after
    :data:`SHOWN_LENGTH` characters."""
    if _nesting(value, SHOWN_LENGTH) >= SHOWN_LENGTH:
        return "[" * SHOWN_LENGTH + "..."
    try:
        text = inline(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= SHOWN_LENGTH else text[:SHOWN_LENGTH] + "..."


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to ``word`` (difflib ratio ≥ 0.6), or None."""
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'radius'?"`` or the empty string."""
    match = nearest(word, candidates)
    return f"; did you mean {match!r}?" if match else ""


def invalid(path: str, value: Any, expected: str, hint: str = "") -> ConfigError:
    """``filter.radius = -1.0 is not allowed: expected a number > 0``."""
    return ConfigError(f"{path} = {show(value)} is not allowed: expected {expected}{hint}")


# ------------------------------------------------------------------ checkers
def _checker(expected: str):
    def decorate(function):
        function.expected = expected
        return function

    return decorate


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bounds_text(low, high, low_open, high_open) -> str:
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '≥'} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '≤'} {high:g}"
    return ""


def _in_bounds(x: float, low, high, low_open, high_open) -> bool:
    if low is not None and (x < low or (low_open and x == low)):
        return False
    return high is None or not (x > high or (high_open and x == high))


#: Largest magnitude of a config number (and 1 / it the smallest non-zero one): a few of
#: them multiplied, or squared, stay within the float range (1e±308).
LARGEST_MAGNITUDE = 1e50


def number(low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False) -> Callable:
    """A finite number (TOML integer or float) within optional bounds; returns a float."""
    expected = "a number" + _bounds_text(low, high, low_open, high_open)

    @_checker(expected)
    def check(path: str, value: Any) -> float:
        if not _is_number(value) or not math.isfinite(value):
            raise invalid(path, value, expected)
        if not _in_bounds(value, low, high, low_open, high_open):
            raise invalid(path, value, expected)
        if value != 0 and not 1.0 / LARGEST_MAGNITUDE <= abs(value) <= LARGEST_MAGNITUDE:
            raise ConfigError(
                f"{path} = {show(value)} is not allowed: a number's magnitude must lie in "
                f"[{1.0 / LARGEST_MAGNITUDE:g}, {LARGEST_MAGNITUDE:g}] (or be 0), so that the "
                "products of the parameters (E·thickness, h·area, ...) and their squares stay "
                "finite; check its units")
        return float(value)

    return check


#: A number > 0.
POSITIVE = number(0.0, low_open=True)


def integer(low: int | None = None, high: int | None = None) -> Callable:
    """A TOML integer ``≥ low`` (and ``≤ high``)."""
    expected = ("an integer" + ("" if low is None else f" ≥ {low}") if high is None
                else f"an integer in [{low}, {high}]")

    @_checker(expected)
    def check(path: str, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise invalid(path, value, expected)
        if not _in_bounds(value, low, high, False, False):
            raise invalid(path, value, expected)
        return value

    return check


def string() -> Callable:
    """Any string."""

    @_checker("a string")
    def check(path: str, value: Any) -> str:
        if not isinstance(value, str):
            raise invalid(path, value, "a string")
        return value

    return check


def choice(*options: str) -> Callable:
    """One of the given strings (a misspelling gets the nearest option)."""
    expected = "one of " + ", ".join(f'"{o}"' for o in options)

    @_checker(expected)
    def check(path: str, value: Any) -> str:
        if value not in options:
            hint = did_you_mean(value, options) if isinstance(value, str) else ""
            raise invalid(path, value, expected, hint)
        return value

    return check


def boolean() -> Callable:
    """``true`` or ``false``."""

    @_checker("true or false")
    def check(path: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise invalid(path, value, "true or false")
        return value

    return check


def numbers(length: int | None = None, low: float | None = None, *,
            low_open: bool = False) -> Callable:
    """A list of numbers (of a given length, each within a lower bound); floats."""
    each = "" if low is None else f", each{_bounds_text(low, None, low_open, False)}"
    expected = (f"a list of {length} numbers" if length else "a list of numbers") + each
    element = number(low, low_open=low_open)

    @_checker(expected)
    def check(path: str, value: Any) -> list[float]:
        if not isinstance(value, list) or (length is not None and len(value) != length):
            raise invalid(path, value, expected)
        try:
            return [element(path, v) for v in value]
        except ConfigError:
            raise invalid(path, value, expected) from None

    return check


def integers(length: int, low: int = 1) -> Callable:
    """A list of ``length`` integers ``≥ low``."""
    expected = f"a list of {length} integers ≥ {low}"
    element = integer(low)

    @_checker(expected)
    def check(path: str, value: Any) -> list[int]:
        if not isinstance(value, list) or len(value) != length:
            raise invalid(path, value, expected)
        try:
            return [element(path, v) for v in value]
        except ConfigError:
            raise invalid(path, value, expected) from None

    return check


def number_or_numbers(low: float | None = None, *, low_open: bool = False) -> Callable:
    """A number or a list of numbers (scalar or per-component values), each within an
    optional lower bound."""
    each = "" if low is None else f", each{_bounds_text(low, None, low_open, False)}"
    expected = f"a number or a list of numbers{each}"
    scalar, vector = number(low, low_open=low_open), numbers(None, low, low_open=low_open)

    @_checker(expected)
    def check(path: str, value: Any) -> float | list[float]:
        try:
            return vector(path, value) if isinstance(value, list) else scalar(path, value)
        except ConfigError:
            raise invalid(path, value, expected) from None

    return check


def component() -> Callable:
    """A vector component: 0, 1, 2 or "x", "y", "z" (normalised to the integer)."""
    expected = 'a component: 0, 1, 2 or "x", "y", "z"'

    @_checker(expected)
    def check(path: str, value: Any) -> int:
        # imported here: `fesens presets` reads this module without the fem package
        from fesens.fem.assembly.dofs import AXES

        if isinstance(value, str) and value in AXES:
            return AXES.index(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2:
            return value
        raise invalid(path, value, expected)

    return check


def components() -> Callable:
    """A non-empty list of distinct components (see :func:`component`)."""
    expected = 'a list of distinct components (0, 1, 2 or "x", "y", "z")'
    single = component()

    @_checker(expected)
    def check(path: str, value: Any) -> list[int]:
        if not isinstance(value, list) or not value:
            raise invalid(path, value, expected)
        try:
            result = [single(path, v) for v in value]
        except ConfigError:
            raise invalid(path, value, expected) from None
        if len(set(result)) != len(result):
            raise invalid(path, value, expected)
        return sorted(result)

    return check


def table_of_scalars() -> Callable:
    """A table of TOML scalars (passed on as keyword options)."""
    expected = "a table of numbers, strings or booleans"

    @_checker(expected)
    def check(path: str, value: Any) -> dict:
        if not isinstance(value, dict) or not all(
                isinstance(v, int | float | str | bool) for v in value.values()):
            raise invalid(path, value, expected)
        return dict(value)

    return check


def sub_table(spec: Mapping[str, Key], expected: str) -> Callable:
    """A table checked against ``spec`` (for inline tables such as ``region``)."""

    @_checker(expected)
    def check(path: str, value: Any) -> dict:
        return check_table(path, value, spec)

    return check


# ------------------------------------------------------------------ tables
def require_table(path: str, value: Any) -> dict:
    """``value`` if it is a table, else a ConfigError."""
    if not isinstance(value, dict):
        where = f"[{path}]" if path else "the top level"
        raise ConfigError(f"{path or 'the config'} must be a table ({where}), got {show(value)}")
    return value


def require_list_of_tables(path: str, value: Any) -> list[dict]:
    """``value`` if it is a list of tables (TOML ``[[path]]``), else a ConfigError."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{path} must be a list of tables (write each as [[{path}]]), "
                          f"got {show(value)}")
    return value


def unknown_key(path: str, key: str, allowed: Iterable[str],
                elsewhere: Mapping[str, str] | None = None) -> ConfigError:
    """The error for a key that is not in the spec; ``elsewhere`` explains keys that are
    valid in another variant of the table (``{"radius": "filter type 'none' has none"}``)."""
    allowed = list(allowed)
    full = join(path, key)
    if elsewhere and key in elsewhere:
        return ConfigError(f"{full} is not used here: {elsewhere[key]} "
                           f"(keys allowed here: {', '.join(allowed) or 'none'})")
    return ConfigError(f"unknown key {full!r}{did_you_mean(key, allowed)} "
                       f"(keys allowed here: {', '.join(allowed) or 'none'})")


def check_table(path: str, raw: Any, spec: Mapping[str, Key], *,
                elsewhere: Mapping[str, str] | None = None) -> dict:
    """Validate a table against ``spec``; returns the normalised table with defaults.

    Raises
    ------
    ConfigError
        Not a table, an unknown key (with the nearest valid one), a missing required key,
        or a value its checker rejects.
    """
    raw = require_table(path, raw)
    for key in raw:
        if key not in spec:
            raise unknown_key(path, key, spec, elsewhere)
    out = {}
    for key, rule in spec.items():
        if key in raw:
            out[key] = rule.check(join(path, key), raw[key])
        elif rule.default is REQUIRED:
            what = f" ({rule.doc})" if rule.doc else ""
            raise ConfigError(f"missing key {join(path, key)!r}{what}: {rule.check.expected}")
        elif rule.default is not None:
            out[key] = copy.deepcopy(rule.default)
    return out


def variants_hint(variants: Mapping[str, Mapping[str, Key]], label: str,
                  active: str) -> dict[str, str]:
    """For each key of another variant, a note like ``"used with type 'density'"``."""
    notes: dict[str, list[str]] = {}
    for name, spec in variants.items():
        if name == active:
            continue
        for key in spec:
            if key not in variants.get(active, {}):
                notes.setdefault(key, []).append(name)
    return {key: f"it applies to {label} {', '.join(repr(n) for n in names)}, "
                 f"not {active!r}" for key, names in notes.items()}


def check_typed(path: str, raw: Any, variants: Mapping[str, Mapping[str, Key]],
                default: Any = REQUIRED, label: str | None = None,
                elsewhere: Mapping[str, str] | None = None) -> dict:
    """A table whose ``type`` key selects its spec among ``variants`` (``elsewhere``: hints
    for keys that no variant takes here)."""
    raw = require_table(path, raw)
    type_check = choice(*variants)
    if "type" in raw:
        kind = type_check(join(path, "type"), raw["type"])
    elif default is REQUIRED:
        raise ConfigError(f"missing key {join(path, 'type')!r}: {type_check.expected}")
    else:
        kind = default
    spec = {"type": Key(type_check, kind), **variants[kind]}
    hint = {**(elsewhere or {}),
            **variants_hint(variants, label or f"{join(path, 'type')}", kind)}
    return check_table(path, raw, spec, elsewhere=hint)
