"""The memory of a stepped config's run, checked with the config before anything is built:
its time levels (with the history ``fesens solve`` keeps of each) and, for the gradient of
``fesens optimize`` or where ``time.max_states`` is given, the states its discrete adjoint
keeps (:mod:`fesens.fem.transient.run_memory`). A run beyond the machine's available
memory is a :class:`~fesens.config.checks.ConfigError` naming ``time.steps`` (or
``time.step``) or ``time.max_states``, so that the command line refuses it (exit 2)
instead of allocating terabytes or growing until the system kills it.
"""

from __future__ import annotations

from fesens.config.checks import ConfigError, show
from fesens.fem.transient import DynamicProblem, TransientProblem
from fesens.fem.transient.run_memory import (
    kept_states,
    levels_bytes,
    memory_size,
    snapshot_vectors,
    states_bytes,
)
from fesens.fem.transient.time_levels import step_count
from fesens.solvers.memory import available_bytes

#: Bytes per number ``fesens solve`` keeps per time level for ``history.csv``: a float in a
#: list (32 + 8) and its text in the file (up to 25 characters), rounded up.
SOLVE_NUMBER_BYTES = 72


def check_time_memory(kind: str, time: dict, n_loads: int, n_probes: int, mesh,
                      physics: type, *, optimize: bool) -> None:
    """Refuse the run of a stepped config that does not fit in the available memory
    (nothing where the memory is unknown).

    Parameters
    ----------
    kind : str
        ``"transient"`` or ``"dynamic"``.
    time : dict
        The resolved ``[time]``.
    n_loads, n_probes : int
        The config's loads (each a time factor per level) and probes (each a number per
        level of a solve's history).
    mesh : Mesh
    physics : type
        The registered physics (a vector field has one unknown per node and dimension).
    optimize : bool
        Whether the config is read for ``fesens optimize``, whose every iteration keeps
        the states of its gradient.

    Raises
    ------
    ConfigError
        Naming ``time.steps`` or ``time.step`` (the levels), or ``time.max_states`` (the
        kept states), the estimate, the available memory and the fix.
    """
    available = available_bytes()
    if available is None:
        return
    name = "steps" if "steps" in time else "step"
    n_steps = float(time["steps"] if name == "steps"
                    else step_count(time["start"], time["end"], time["step"]))
    n_levels = n_steps + 1.0
    columns = 3 + n_probes  # with the time, the largest and the smallest field value
    levels = levels_bytes(n_levels, n_loads) + n_levels * columns * SOLVE_NUMBER_BYTES
    if levels > available:
        raise ConfigError(
            f"time.{name} = {show(time[name])} gives {n_steps:.4g} time steps, whose "
            f"levels and the history of a solve need about {memory_size(levels)}, more than "
            f"the {memory_size(available)} of memory available; give fewer steps")
    max_states = time.get("max_states")
    if not optimize and max_states is None:
        return  # a sensitivity's run refuses its kept states itself, before it steps
    problem = DynamicProblem if kind == "dynamic" else TransientProblem
    n_dofs = mesh.n_points * (mesh.dim if physics.config.vector_field else 1)
    kept = kept_states(n_levels, max_states, snapshot_vectors(time["scheme"]))
    needed = states_bytes(kept, n_dofs, problem.state_vectors) + levels_bytes(n_levels,
                                                                             n_loads)
    if needed > available:
        given = ("no time.max_states keeps every level" if max_states is None
                 else f"time.max_states = {max_states:,}")
        raise ConfigError(
            f"{given}: {kept:.4g} states of about {n_dofs:,} unknowns for the gradient need "
            f"about {memory_size(needed)}, more than the {memory_size(available)} of memory "
            "available; give a smaller time.max_states (e.g. 100: the states between its "
            "snapshots are recomputed)")
