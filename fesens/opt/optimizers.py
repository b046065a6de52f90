"""The optimizer registry: every design optimizer by name, and the options each accepts.

Config validation reads :data:`OPTIMIZERS` and :func:`optimizer_options`, so an optimizer
added here is accepted by ``[optimizer] type = ...`` with its keyword options.
"""

from __future__ import annotations

import inspect
from typing import Any

from fesens.opt.mma import MMA
from fesens.opt.oc import OC
from fesens.opt.optimizer_base import Optimizer

#: Optimizers by name: :class:`~fesens.opt.optimizer_base.Optimizer` subclasses, whose
#: capabilities (``general_constraints``, ``bound_constraints``, ``design_sized_state``)
#: are class attributes.
OPTIMIZERS: dict[str, type[Optimizer]] = {cls.name: cls for cls in (OC, MMA)}


def capable_optimizers(flag: str) -> str:
    """The optimizers whose capability ``flag`` (``"general_constraints"``,
    ``"bound_constraints"``, a boolean class attribute of
    :class:`~fesens.opt.optimizer_base.Optimizer`) is true, quoted and joined by "or", for a
    message that names the fix: ``'"mma"'``."""
    return " or ".join(f'"{name}"' for name, cls in OPTIMIZERS.items() if getattr(cls, flag))


def optimizer_options(name: str) -> dict[str, Any]:
    """The keyword options of an optimizer and their defaults.

    Parameters
    ----------
    name : str
        A key of :data:`OPTIMIZERS`.

    Returns
    -------
    dict
        ``{option: default}`` in constructor order.

    Raises
    ------
    ValueError
        If ``name`` is not a registered optimizer (the message lists the registered ones).
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    parameters = inspect.signature(OPTIMIZERS[name]).parameters.values()
    return {p.name: p.default for p in parameters
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def make_optimizer(name: str, **options: Any) -> Optimizer:
    """An optimizer by name (a key of :data:`OPTIMIZERS`) with its keyword options.

    Raises
    ------
    ValueError
        If ``name`` is unknown, an option is not one of :func:`optimizer_options`, or the
        constructor rejects a value.

    Examples
    --------
    >>> make_optimizer("mma", move=0.2).move
    0.2
    """
    accepted = optimizer_options(name)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the {name} optimizer; "
                         f"accepted: {', '.join(sorted(accepted))}")
    return OPTIMIZERS[name](**options)
