"""The names of the fields fesens writes into VTU files, one scheme for the CLI and the
examples.

==================================  ==============================================================
name                                meaning
==================================  ==============================================================
``density``                         physical density ρ per cell (after filter and projection)
the physics' fields                 e.g. ``displacement``, ``stress``, ``von_mises``,
                                    ``temperature``, ``heat_flux`` (the physics module names them)
``d_<response>_d_<parameter>``      exact derivative of a response with respect to a per-cell
                                    parameter, e.g. ``d_compliance_d_density``,
                                    ``d_compliance_d_E``, ``d_stress_pnorm_d_design``
``<that>_relative``                 the same times ``parameter / response``: the relative change
                                    of the response per relative change of the parameter
``<that>_per_volume``               divided by the cell's volume (area in 2D): a density that
                                    does not depend on the cell size
``<field>@<design>``                one of several designs in one file, e.g. ``density@stress``,
                                    ``von_mises@compliance``
==================================  ==============================================================

``design`` as a parameter means the optimizer's design variables (before filter and
projection), mapped to their cells (passive cells hold 0).
"""

from __future__ import annotations

__all__ = ["of_design", "per_volume", "relative_sensitivity_name", "sensitivity_name"]


def _check(kind: str, name: str) -> str:
    if not name or any(ch.isspace() or ch == "@" for ch in name):
        raise ValueError(f"{kind} name {name!r} must be non-empty, without spaces or '@'")
    return name


def sensitivity_name(response: str, parameter: str) -> str:
    """``d_<response>_d_<parameter>``, e.g. ``sensitivity_name("compliance", "E")`` is
    ``"d_compliance_d_E"``."""
    return f"d_{_check('response', response)}_d_{_check('parameter', parameter)}"


def relative_sensitivity_name(response: str, parameter: str) -> str:
    """``d_<response>_d_<parameter>_relative``: ``(∂J/∂p) · p / J`` per cell."""
    return f"{sensitivity_name(response, parameter)}_relative"


def of_design(field: str, design: str) -> str:
    """``<field>@<design>``: a field of one of several designs written into one file."""
    return f"{_check('field', field)}@{_check('design', design)}"


def per_volume(name: str) -> str:
    """``<name>_per_volume``: a per-cell quantity divided by the cell's volume (area)."""
    return f"{_check('field', name)}_per_volume"
