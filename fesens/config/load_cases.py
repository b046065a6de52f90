"""``[[load_cases]]``: several load cases of one optimization, solved with one factorization.

Each case names the ``[[loads]]`` that act in it (each at its ``value``; loads of other
sections, such as ``[[convection]]``, act in every case) and has a weight; the objective
becomes ``Σ_i w_i J(u_i)``, the weighted sum of the objective of each case, or with
``[objective] combine = "max"`` the worst case ``max_i J(u_i)`` (min–max by the bound
formulation, :class:`~fesens.opt.minmax.MinMaxProblem`; needs MMA and at least two cases).
Without ``[[load_cases]]`` every load acts in one case, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fesens.config.checks import (
    REQUIRED,
    ConfigError,
    Key,
    check_table,
    choice,
    join,
    number,
    require_list_of_tables,
    show,
    string,
)
from fesens.opt import OPTIMIZERS, capable_optimizers, case_state


def _load_names(path: str, value) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path} = {show(value)} is not allowed: expected a non-empty list "
                          "of [[loads]] names, e.g. [\"F\"]")
    return value


_load_names.expected = "a non-empty list of [[loads]] names"

#: The keys of one ``[[load_cases]]`` table.
LOAD_CASE = {
    "name": Key(string(), REQUIRED, "the case's name (history.csv column <objective>_<name>)"),
    "weight": Key(number(0.0, low_open=True), 1.0, "weight of the case in the objective"),
    "loads": Key(_load_names, REQUIRED, "names of the [[loads]] acting in this case"),
}


#: ``[objective] combine``: how the load cases' objectives make the objective.
COMBINE = Key(choice("weighted", "max"), None,
              "with [[load_cases]]: the weighted sum (default) or the worst case")


def combination(data: dict) -> str:
    """``"weighted"`` or ``"max"``: how the load cases' objectives are combined."""
    return (data.get("objective") or {}).get("combine") or "weighted"


def check_load_cases(raw, loads: list[dict]) -> list[dict]:
    """The checked ``[[load_cases]]`` tables (``[]`` when there are none).

    Raises
    ------
    ConfigError
        A duplicate case name or load within a case, an unknown load name, a weight ≤ 0,
        or a ``[[loads]]`` entry that no case uses.
    """
    cases = require_list_of_tables("load_cases", raw)
    known = [load["name"] for load in loads]
    out, names, used = [], set(), set()
    for i, table in enumerate(cases):
        path = join("load_cases", i)
        case = check_table(path, table, LOAD_CASE)
        if case["name"] in names:
            raise ConfigError(f"{path}.name = {show(case['name'])}: another load case has "
                              "this name; give each [[load_cases]] its own name")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", case["name"]):
            raise ConfigError(f"{path}.name = {show(case['name'])}: use letters, digits, '_', "
                              "'.' and '-' only (the name is part of history.csv columns and "
                              "of field names), e.g. \"down\"")
        names.add(case["name"])
        for j, name in enumerate(case["loads"]):
            if name not in known:
                raise ConfigError(f"{join(join(path, 'loads'), j)} = {show(name)} is not the "
                                  f"name of a [[loads]] entry (names: {show(known)})")
            if name in case["loads"][:j]:
                raise ConfigError(f"{join(join(path, 'loads'), j)} = {show(name)} is listed "
                                  "twice in this case")
        used.update(case["loads"])
        out.append(case)
    unused = [(i, name) for i, name in enumerate(known) if name not in used]
    if out and unused:
        i, name = unused[0]
        raise ConfigError(f"loads[{i}].name = {show(name)} is in no load case: add it to the "
                          "loads of a [[load_cases]] table or remove it")
    return out


def check_load_case_use(data: dict) -> None:
    """Load cases weight the objective or give its worst case (``objective.combine``:
    ``max`` needs two cases or more and an optimizer with bound constraints, MMA); extra
    constraints of several cases are not offered."""
    cases, optimizer = data.get("load_cases", []), data.get("optimizer")
    if combination(data) == "max":
        if len(cases) < 2:
            raise ConfigError(
                f"objective.combine = \"max\" needs at least two [[load_cases]], the config "
                f"has {len(cases)}: the worst of one case is that case; add a second "
                "[[load_cases]] table or drop objective.combine")
        if optimizer and not OPTIMIZERS[optimizer["type"]].bound_constraints:
            capable = capable_optimizers("bound_constraints")
            raise ConfigError(
                f"objective.combine = \"max\" needs optimizer.type = {capable}: the worst "
                f"case is minimized with the bound formulation (min z s.t. each case's "
                f"objective ≤ z), which optimizer.type = {show(optimizer['type'])} cannot "
                f"solve; set optimizer.type = {capable} or objective.combine = \"weighted\"")
    constraints = data.get("constraints")
    if data.get("load_cases") and constraints and constraints["extra"]:
        raise ConfigError("[[constraints.extra]] with [[load_cases]] is not supported: the "
                          "constraint of several load cases is not defined; remove the "
                          "[[load_cases]] or the extra constraints")


def magnitudes(data: dict) -> list[dict] | None:
    """The ``load_cases=`` argument of a solve: per case, ``{load name: 1 or 0}`` for every
    ``[[loads]]`` entry; None without ``[[load_cases]]``."""
    if not data.get("load_cases"):
        return None
    names = [load["name"] for load in data["loads"]]
    return [{name: float(name in case["loads"]) for name in names}
            for case in data["load_cases"]]


def combined_value(values: list[float], cases: list[dict], combine: str) -> float:
    """The objective of per-case ``values``: their weighted sum, or their maximum."""
    if combine == "max":
        return max(values)
    return sum(case["weight"] * value for case, value in zip(cases, values, strict=True))


def weighted(response: Callable, cases: list[dict]) -> Callable:
    """``(state, ρ) ↦ Σ_i w_i response(state_i, ρ)`` over the load cases."""
    weights = [case["weight"] for case in cases]

    def total(state, rho):
        return sum(w * response(case_state(state, i), rho) for i, w in enumerate(weights))

    return total


def per_case(response: Callable, cases: list[dict], objective: str) -> dict[str, Callable]:
    """Named responses ``<objective>_<case name>``: the unweighted objective of each case."""
    def of_case(index: int) -> Callable:
        return lambda state, rho: response(case_state(state, index), rho)

    return {f"{objective}_{case['name']}": of_case(i) for i, case in enumerate(cases)}

def case_report(data: dict, values: dict) -> dict:
    """``{"combine": ..., "cases": [{name, weight, value}, ...]}`` of ``summary.json``'s
    objective, from the per-case values of an evaluation or a history record (``{}``
    without load cases)."""
    if not data.get("load_cases"):
        return {}
    objective = data["objective"]["type"]
    return {"combine": combination(data),
            "cases": [{"name": case["name"], "weight": case["weight"],
                       "value": values.get(f"{objective}_{case['name']}")}
                      for case in data["load_cases"]]}


def case_names(data: dict) -> list[str]:
    """The names of the load cases (``[]`` without ``[[load_cases]]``)."""
    return [case["name"] for case in data.get("load_cases", [])]
