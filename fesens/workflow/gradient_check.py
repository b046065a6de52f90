"""``fesens sensitivity --check``: the gradient the command wrote, checked on the user's own
config, so that nobody has to take it on trust.

The check is :func:`fesens.ad.check_gradient` of the very objective the command
differentiated (one code path: the same solves, the same adjoint): a central difference and
a Taylor test along one random direction of the ``--wrt`` input, seeded (``--check-seed``
repeats a direction), with its steps and tolerance from the round-off measured on the
objective itself. The direction moves each entry in proportion to its own scale (the
target's ``check_scale``, :mod:`fesens.workflow.targets`), so that no step leaves where the
objective is defined: a density or a material parameter by a fraction of its value, a
load's magnitude by a fraction of itself, a node by a fraction of the smallest cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fesens.ad import check_gradient
from fesens.config import Config
from fesens.config.load_cases import combination

if TYPE_CHECKING:
    from fesens.workflow.targets import WRT


def combined(config: Config, objective: Callable) -> Callable:
    """The scalar the command's gradient is the gradient of: ``objective`` itself, or
    with ``[[load_cases]]`` the weighted sum of the cases' values or, with ``combine =
    "max"``, their largest."""
    cases = config.data.get("load_cases") or []
    if not cases:
        return objective
    if combination(config.data) == "max":
        return lambda parameter: np.max(objective(parameter))
    weights = np.array([case["weight"] for case in cases], dtype=float)
    return lambda parameter: np.sum(weights * objective(parameter))


def check_sensitivity(config: Config, objective: Callable, at, gradient, *, wrt: WRT,
                      seed: int | None, echo: Callable[[str], None]) -> dict:
    """Check ``gradient``, the gradient of ``objective`` (per load case, if the config has
    them) at ``at`` that the command writes for the target ``wrt``, along a random
    direction of seed ``seed`` (a fresh one by default); print what was found and the
    verdict. Returns the numbers for ``sensitivity.json`` (``passed`` and the verdict
    line, the seed, both derivatives, the agreement, the Taylor remainders and rate)."""
    check = check_gradient(combined(config, objective), at, gradient=gradient,
                           scale=wrt.check_scale(config, at), seed=seed)
    echo(f"gradient check of d/d{wrt.name} along a random direction h (seed {check.seed}; "
         f"--check-seed {check.seed} repeats it):")
    for line in check.lines()[1:]:  # after the heading, which this one replaces
        echo(line)
    return {"wrt": wrt.name, "verdict": check.verdict(), **check.as_dict()}
