"""A design config on several MPI ranks: one problem split among them (a distributed model),
or, for what that cannot do yet, the whole model on every rank with distributed solves.

Under ``mpirun -n N`` (N > 1) :func:`build_run` partitions the mesh
(:func:`fesens.fem.partition.cells.cell_ranks`: PETSc DMDA blocks on a structured grid,
PT-Scotch otherwise), builds each rank's model of its cells
(:func:`fesens.fem.partition.model_part.adopt`) and a
:class:`~fesens.opt.rank_problem.DistributedDesignProblem` with a distributed filter. A config
that needs what the distributed model does not offer (:func:`distributed_refusal` says what)
runs replicated as before: every rank builds the whole model, PETSc solves across the ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from fesens.config.build import (
    adaptive_tolerance,
    build_model,
    build_problem,
    case_options,
    design_options,
    new_model,
    objective_of,
)
from fesens.config.frequency import eigen_kind
from fesens.config.increments import offers_increments
from fesens.config.objectives import additive, response_kind, static_kind
from fesens.config.resolved import Config
from fesens.fem import LinearModel
from fesens.fem.partition.model_part import split_model
from fesens.mpi import collective, launched
from fesens.opt import DesignProblem
from fesens.opt.filters import NoFilter
from fesens.opt.rank_filters import COUNTERPARTS, make_distributed_filter
from fesens.opt.rank_problem import DistributedDesignProblem, DistributedMinMaxProblem


@dataclass
class Run:
    """What a design run works on.

    Attributes
    ----------
    model : LinearModel
        The model of the whole mesh (supports, loads; what the outputs describe).
    problem : DesignProblem
        The design problem (a rank's part of it in a distributed run).
    note : str
        How the ranks share the work (empty in a serial run).
    """

    model: LinearModel
    problem: DesignProblem
    note: str = ""


def distributed_refusal(config: Config) -> str | None:
    """Why ``config`` cannot run as a distributed model (the first reason), or None."""
    data = config.data
    physics = config.physics_class
    reasons = [
        (physics.bars, f"the {config.physics} physics discretises bars"),
        (offers_increments(physics), f"the load history of the path-dependent "
                                     f"{config.physics} physics"),
        (eigen_kind(data, config.physics) is not None, "an eigen objective"),
        (static_kind(response_kind(config.physics, data["objective"]["type"]))
         not in additive(),
         f"the objective {data['objective']['type']!r} "
         f"({', '.join(kind.name for kind in additive())} only)"),
        (bool(data["constraints"]["extra"]), "extra constraints"),
        (bool(data["constraints"].get("stress")), "local stress constraints"),
        (bool(data.get("projection", {}).get("robust")), "the robust formulation"),
        (data["filter"]["type"] not in (*COUNTERPARTS, NoFilter.name),
         f"the {data['filter']['type']} filter"),
        (any(section.name in data for section in physics.config.sections),
         f"the sections {[s.name for s in physics.config.sections if s.name in data]}"),
    ]
    return next((why for refused, why in reasons if refused), None)


def build_run(config: Config) -> Run:
    """The model and design problem of ``config``: serial, distributed (under ``mpirun`` when
    :func:`distributed_refusal` allows) or replicated (every rank the whole model)."""
    ranks = launched()
    refusal = distributed_refusal(config) if ranks.distributed else None
    if not ranks.distributed or refusal is not None:
        model = build_model(config)
        note = "" if not ranks.distributed else (
            f"replicated on {ranks.size} MPI ranks (each builds the whole model; PETSc solves "
            f"across them): the distributed model does not offer {refusal}")
        return Run(model, build_problem(config, model), note)
    return _distributed(config)


def _distributed(config: Config) -> Run:
    """Each rank's part of the mesh, its model and its part of the design problem."""
    ranks = collective()
    mesh = config.mesh
    whole = build_model(config)
    part, model = split_model(whole, lambda submesh: new_model(config, submesh))
    spec = config.data["filter"]
    density_filter = make_distributed_filter(spec["type"], mesh, part, spec.get("radius"))
    worst, objective = objective_of(config)
    problem = (DistributedMinMaxProblem if worst else DistributedDesignProblem)(
        model, objective, part=part, whole_model=whole, collective=ranks,
        **design_options(config, density_filter), **case_options(config, objective),
        adaptive_tolerance=adaptive_tolerance(config))
    counts = part.cell_counts
    note = (f"distributed on {ranks.size} MPI ranks: each builds, assembles and designs its "
            f"own {int(counts.min())}–{int(counts.max())} cells")
    return Run(whole, problem, note)
