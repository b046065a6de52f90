"""A finite-strain law by name: a registered one, or a user's from an installed package.

A law is named in three ways (:func:`resolve_law`):

* a key of :data:`~fesens.physics.hyperelastic_law.HYPERELASTIC_LAWS`
  (``"mooney-rivlin"``);
* the name of an entry point of the group :data:`ENTRY_POINT_GROUP` that an installed
  distribution declares (``[project.entry-points."fesens.laws"] my-law =
  "mypackage:my_energy"`` in its ``pyproject.toml``), read with :mod:`importlib.metadata`;
* ``"module:attribute"``, where the top-level package of ``module`` belongs to an
  installed distribution (:func:`importlib.metadata.packages_distributions`).

The object found is a :class:`~fesens.physics.energy_law.HyperelasticLaw`, used as is, or
an energy ``W(H, *constants)`` (numpy over the points, ``H = F − I``), made a law by
:meth:`~fesens.physics.energy_law.HyperelasticLaw.from_energy`, whose constants are its
parameters after ``H`` and whose checks (objectivity, shape, finiteness) apply. A name is
never a file path: a value with ``/``, ``\\`` or ``.py`` is refused, so a config file
cannot make fesens run a script, only code of a package that was installed.
"""

from __future__ import annotations

import importlib
import inspect
import re
from importlib import metadata

from fesens.physics.energy_law import HyperelasticLaw
from fesens.physics.hyperelastic_law import HYPERELASTIC_LAWS

#: The entry-point group of the laws that installed packages offer.
ENTRY_POINT_GROUP = "fesens.laws"

_REFERENCE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _as_law(name: str, target) -> HyperelasticLaw:
    """The law of what an entry point or reference names (a law, or an energy)."""
    if isinstance(target, HyperelasticLaw):
        return target
    if not callable(target):
        raise ValueError(f"law {name!r} names {type(target).__name__} {target!r}, neither a "
                         "HyperelasticLaw nor an energy function W(H, *constants)")
    constants = tuple(inspect.signature(target).parameters)[1:]
    doc = (inspect.getdoc(target) or f"user law {name}").splitlines()[0]
    return HyperelasticLaw.from_energy(name, doc, target, constants)


def entry_point(name: str, group: str = ENTRY_POINT_GROUP) -> metadata.EntryPoint | None:
    """The entry point of ``group`` named ``name`` or whose value is ``name``, if an
    installed distribution declares one."""
    for entry in metadata.entry_points(group=group):
        if name in (entry.name, entry.value.replace(" ", "")):
            return entry
    return None


def installed_laws() -> tuple[str, ...]:
    """The names of the entry points of :data:`ENTRY_POINT_GROUP` of installed packages."""
    return tuple(sorted({entry.name for entry in
                         metadata.entry_points(group=ENTRY_POINT_GROUP)}))


def check_law_name(name: str) -> None:
    """Refuse a law name that is no registered law, installed entry point or
    ``module:attribute`` of an installed distribution, without importing anything.

    Raises
    ------
    ValueError
        A file path, a malformed name, or a package that is not installed; the message
        lists the registered and installed laws.
    """
    if name in HYPERELASTIC_LAWS:
        return
    check_reference(name, ENTRY_POINT_GROUP, "law", "hyperelastic law",
                    f"choose one of {sorted(HYPERELASTIC_LAWS) + list(installed_laws())}")


def check_reference(name: str, group: str, what: str, kind: str, known: str) -> None:
    """Refuse ``name`` unless it is an entry point of ``group`` or a ``module:attribute``
    of an installed distribution, without importing anything; ``what`` (``law``) and
    ``kind`` (``hyperelastic law``) name the thing in messages, ``known`` the choices.

    Raises
    ------
    ValueError
        A file path, a malformed name, or a package that is not installed.
    """
    if entry_point(name, group) is not None:
        return
    if "/" in name or "\\" in name or name.endswith(".py") or ".py:" in name:
        raise ValueError(f"{what} {name!r} looks like a file path; a {what} is never loaded "
                         f"from a file: install the package that defines it and name it "
                         f"'package.module:function', or {known}")
    if not _REFERENCE.fullmatch(name):
        raise ValueError(f"unknown {kind} {name!r}; {known}, or name a {what} of an "
                         "installed package as 'package.module:function'")
    top = name.split(".", 1)[0].split(":", 1)[0]
    if top not in metadata.packages_distributions():
        raise ValueError(f"{what} {name!r}: no installed distribution provides the package "
                         f"{top!r}; install it (pip install ...), or {known}")


def load_reference(name: str, group: str, what: str = "law"):
    """The object an entry point of ``group`` or ``module:attribute`` names (checked by
    :func:`check_reference` first)."""
    entry = entry_point(name, group)
    if entry is not None:
        return entry.load()
    module, attribute = name.split(":")
    target = importlib.import_module(module)
    try:
        for part in attribute.split("."):
            target = getattr(target, part)
    except AttributeError:
        raise ValueError(f"{what} {name!r}: module {module!r} has no {attribute!r}") from None
    return target


def resolve_law(law: str | HyperelasticLaw) -> HyperelasticLaw:
    """The law ``law`` names (see the module docstring); a law object is returned as is.

    Raises
    ------
    ValueError
        What :func:`check_law_name` refuses, or a name that does not import to a law or an
        energy function.
    """
    if isinstance(law, HyperelasticLaw):
        return law
    if law in HYPERELASTIC_LAWS:
        return HYPERELASTIC_LAWS[law]
    check_law_name(law)
    return _as_law(law, load_reference(law, ENTRY_POINT_GROUP))
