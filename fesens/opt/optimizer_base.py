"""What every design optimizer is: its update, its checkpointed state and its capabilities.

An optimizer subclasses :class:`Optimizer`, writes :meth:`~Optimizer.step`,
:meth:`~Optimizer.state` and :meth:`~Optimizer.load_state`, and declares what it can do
as class attributes (each has its default here, so the loop and the config read them
directly); :data:`fesens.opt.optimizers.OPTIMIZERS` registers it by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fesens.opt.responses import Evaluation


class Optimizer(ABC):
    """A design optimizer: the next design from the current one and its evaluation."""

    name: str = ""
    """The optimizer's name in :data:`~fesens.opt.optimizers.OPTIMIZERS` (the config's
    ``[optimizer] type``), shown in messages."""
    general_constraints: bool = False
    """True when it handles constraints besides the volume (``[[constraints.extra]]``)."""
    bound_constraints: bool = False
    """True when it minimizes the largest of several functions (the bound formulation of a
    min–max problem, :attr:`Evaluation.bounds <fesens.opt.problem.Evaluation.bounds>`)."""
    design_sized_state: tuple[str, ...] = ()
    """The :meth:`state` entries with one value per design variable: a distributed
    checkpoint gathers exactly these into the whole design's."""

    def start(self, x):
        """The design a run starts from when asked to start at ``x`` ``(n,)``, within the
        optimizer's bounds: ``x`` itself here."""
        return x

    @abstractmethod
    def step(self, x, evaluation: Evaluation, volume_excess: Callable | None,
             iteration: int):
        """The next design ``(n,)`` from ``x`` ``(n,)`` and its ``evaluation``;
        ``volume_excess`` is ``x' ↦ V(ρ(x'))/V_Ω − f`` around ``x``, ``iteration`` 1-based
        (``iteration <= 1`` starts afresh)."""

    @abstractmethod
    def state(self) -> dict:
        """What the next :meth:`step` depends on besides its arguments, as arrays for the
        checkpoint (a resumed run then reproduces the uninterrupted one)."""

    @abstractmethod
    def load_state(self, state: dict) -> None:
        """Restore :meth:`state` (an empty dict starts afresh); raises ValueError for a state
        this optimizer cannot have left."""
