"""Continuation tables (``penalization.penalty``, ``projection.beta``): their keys, and the
refusal of a schedule that cannot end within ``stop.max_iter``
(:class:`~fesens.opt.Continuation`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fesens.config.checks import (
    POSITIVE,
    REQUIRED,
    ConfigError,
    Key,
    check_table,
    integer,
    invalid,
    number,
    show,
)
from fesens.opt.interpolation import Continuation

#: Default of a continuation's ``final_iterations``
FINAL_ITERATIONS = Continuation.final_iterations


def schedule() -> Callable:
    """A positive number, or a continuation table ``{ start, final, every, step | factor,
    final_iterations }`` (:class:`~fesens.opt.Continuation`): ``final`` is the cap the raises
    stop at, ``final_iterations`` how many iterations the loop runs at it at least."""
    spec = {
        "start": Key(POSITIVE, REQUIRED, "value at iteration 1"),
        "final": Key(POSITIVE, None, "value reached at the end of the continuation (the cap)"),
        "every": Key(integer(1), 20, "iterations between two raises"),
        "step": Key(POSITIVE, None, "added every `every` iterations (default 1)"),
        "factor": Key(number(1.0, low_open=True), None, "multiplier instead of a step"),
        "final_iterations": Key(integer(1), FINAL_ITERATIONS,
                                "iterations at the final value after the one that reached "
                                "it, before the loop may stop"),
    }
    expected = ("a number > 0 or a table { start, final, every, step or factor, "
                "final_iterations }")

    def check(path: str, value: Any):
        if not isinstance(value, dict):
            try:
                return POSITIVE(path, value)
            except ConfigError:
                raise invalid(path, value, expected) from None
        table = check_table(path, value, spec)
        if "step" in table and "factor" in table:
            raise ConfigError(f"{path}: give either step or factor, not both")
        if "final" in table and table["final"] < table["start"]:
            raise ConfigError(f"{path}.final = {show(table['final'])} is below {path}.start = "
                              f"{show(table['start'])}: a continuation only raises its value "
                              "(by step or factor), so it never reaches it; give final ≥ start")
        return table

    check.expected = expected
    return check


def check_schedules(data: dict) -> None:
    """Refuse a continuation (``penalization.penalty``, ``projection.beta``) that does not
    reach its ``final`` value and hold it for its ``final_iterations`` within
    ``stop.max_iter``: such a run could only end ``max_iter``. ``fesens optimize`` asks it
    of a fresh run under the config's own limit (a ``--max-iter`` given for the run, a
    resumed run, a results folder's config of a shortened run and the Python API's
    ``config.data["stop"]["max_iter"] = 3`` ask for that limit knowingly).

    Raises
    ------
    ConfigError
        Naming the schedule's keys, ``stop.max_iter`` and the iteration count it needs.
    """
    if "stop" not in data:  # not an optimization: no loop to stop
        return
    max_iter = data["stop"]["max_iter"]
    for section, key in (("penalization", "penalty"), ("projection", "beta")):
        table = (data.get(section) or {}).get(key)
        if not isinstance(table, dict) or "final" not in table:
            continue
        path = f"{section}.{key}"
        schedule = Continuation(table["start"], table["final"], table["every"],
                                factor=table.get("factor"), step=table.get("step"),
                                final_iterations=table["final_iterations"])
        needed = schedule.iterations_needed()  # never None: final ≥ start, checked above
        if needed > max_iter:
            raise ConfigError(f"{path} reaches final = {show(table['final'])} at iteration "
                              f"{schedule.first_final_iteration()} (every = {table['every']}) "
                              f"and holds it for final_iterations = "
                              f"{table['final_iterations']} more, so the run needs "
                              f"stop.max_iter ≥ {needed}, but stop.max_iter = {max_iter}: give "
                              f"stop.max_iter = {needed} or more, or a smaller {path}.every")


SCHEDULE = schedule()
