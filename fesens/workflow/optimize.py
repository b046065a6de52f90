"""``fesens optimize``: run a design optimization from a config into a results folder.

Order of work: check the folder (nothing written), build the model and the design problem
(every input error surfaces here), then create the folder and run. Every iteration is
checkpointed; an interrupted run leaves a valid checkpoint, ``history.csv`` and
``summary.json`` and can be resumed to reproduce the uninterrupted run exactly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from fesens import __version__
from fesens.config import Config, build_optimizer, dumps
from fesens.config.fingerprint import encode
from fesens.config.initial_design import initial_design
from fesens.config.load_cases import case_names, case_report
from fesens.config.mpi_run import build_run
from fesens.errors import NewtonError
from fesens.fem import LinearModel
from fesens.fem.analysis.modal import Modes
from fesens.mesh import write_mesh
from fesens.opt import (
    MMA,
    OC,
    DesignProblem,
    Evaluation,
    load_checkpoint,
    load_evaluated_design,
    optimize,
)
from fesens.opt.checkpoint import restore_warm_start
from fesens.opt.status import Ending, decide_status
from fesens.output import ResultsFolder, ResultsFolderError
from fesens.output.folder import CHECKPOINT
from fesens.plotting import boundary_markers, plot_convergence, plot_density
from fesens.solvers import solver_class
from fesens.workflow.common import Interrupted, input_files, reported_values, silent
from fesens.workflow.design_fields import (
    design_fields,
    grayness_report,
    modal_summary,
    plot_first_mode,
    shown_quantity,
    write_shape,
)
from fesens.workflow.nonlinear import add_config_hint
from fesens.workflow.ranks import rank_output
from fesens.workflow.resume import check_same_problem, resume_point, run_fingerprint
from fesens.workflow.run_lines import describe, final_line, outcome, progress_line, shown_columns


@dataclass
class OptimizationRun:
    """What :func:`run_optimization` returns.

    Attributes
    ----------
    summary : dict
        The contents of ``summary.json`` (status, ``converged``, ``outcome``, objective,
        constraints, iterations, ...).
    x : numpy.ndarray
        ``(n_design,)`` final design variables.
    density : numpy.ndarray
        ``(n_cells,)`` physical densities of the final evaluated design.
    history : list of dict
        One record per iteration (iteration, objective, volume, change, ...).
    evaluation : Evaluation
        The final evaluation (solution in ``evaluation.state``, gradients).
    converged : bool
        Whether the status is ``converged`` (:mod:`fesens.opt.status`).
    folder : pathlib.Path or None
        The results folder; None for a run without one.
    """

    summary: dict
    x: np.ndarray
    density: np.ndarray
    history: list[dict]
    evaluation: Evaluation
    converged: bool
    folder: Path | None


def run_optimization(config: Config, out: str | Path | None = None, *, resume: bool = False,
                     force: bool = False, echo: Callable[[str], None] | None = print,
                     command: str = "fesens optimize CONFIG") -> OptimizationRun:
    """Optimize the design described by ``config``.

    Parameters
    ----------
    config : Config
        A resolved optimization config (:func:`fesens.config.load_config`,
        :func:`~fesens.config.load_preset`).
    out : path, optional
        Results folder (refused if it exists and is not empty, unless ``force`` or
        ``resume``); its ``summary.json`` holds the returned summary. None: run in memory
        and write nothing (for notebooks; no checkpoint, so no resume).
    resume : bool
        Continue the run whose checkpoint is in ``out``.
    force : bool
        Overwrite the results of a previous run in ``out``.
    echo : callable or None
        Receives the progress lines; None prints nothing.
    command : str
        The command that started the run, for the resume hint.

    Returns
    -------
    OptimizationRun
        Summary, final design and densities, history, final evaluation.

    Examples
    --------
    >>> from fesens.config import load_preset
    >>> config = load_preset("mbb")
    >>> config.data["stop"]["max_iter"] = 3
    >>> run = run_optimization(config, echo=None)
    >>> run.density.shape, len(run.history), run.converged
    ((1200,), 3, False)

    Raises
    ------
    ConfigError, ResultsFolderError, CheckpointError
        Before anything is written.
    SolverError, NonFiniteError
        Numerical failure during the run (the checkpoint holds the last good iteration).
    Interrupted
        On KeyboardInterrupt, after saving; its message says how to resume.
    """
    echo = silent if echo is None else echo
    if out is None:
        if resume or force:
            raise ValueError("resume and force apply to a results folder; give out=PATH")
        return _run_in_memory(config, echo)
    with rank_output(Path(out), force=force, resume=resume, echo=echo) as ours:
        folder = ResultsFolder(ours.out_dir, inputs=input_files(config))
        if not resume and _reads_its_config(config, folder):
            raise ResultsFolderError(
                f"CONFIG {config.source} is the config.toml of the results folder "
                f"{folder.path}, which this run would overwrite with its resolved config (your "
                "comments lost); nothing was written. Choose another --out, or copy the file "
                "elsewhere and run the copy")
        folder.check(force=ours.force, resume=resume, command=command)
        with folder.locked():
            run = _run(config, folder, resume=resume, force=ours.force, echo=ours.echo,
                       command=command)
    return run if ours.out_dir == Path(out) else replace(run, folder=Path(out))


def _run(config: Config, folder: ResultsFolder, *, resume: bool, force: bool,
         echo: Callable[[str], None], command: str) -> OptimizationRun:
    folder.check(force=force, resume=resume, command=command)  # again, now that we hold it
    tic = time.perf_counter()
    fingerprint = run_fingerprint(config)
    if resume:
        check_same_problem(folder, config)
    built = build_run(config)  # under mpirun: a rank's part of a distributed problem
    built.problem.reports["grayness"] = grayness_report(built.problem)
    start_iteration, history = 0, []
    optimizer = build_optimizer(config)
    if resume:
        start_iteration, history = resume_point(
            folder, command, fingerprint, int(built.problem.collective.sum(built.problem.n_design)),
            optimizer)
    run = _Run(config, built.model, built.problem, optimizer, echo, folder,
               tic=tic, history=history, start_iteration=start_iteration)
    folder.prepare(clear=force and not resume)
    try:  # from here on, Ctrl-C ends in interrupted(): saved, exit 130
        if not _reads_its_config(config, folder):  # a resume from it: the input stays as is
            folder.write_text("config.toml", dumps(config.data, header=(
                f"# Resolved config of this run (fesens {__version__}); defaults filled in.\n"
                f"# Re-run: fesens optimize {folder.file('config.toml')} --out DIR")))
        if resume:
            echo(f"resuming {config.name} from iteration {run.start_iteration} "
                 f"({folder.checkpoint})")
        run.announce(built.note)
        x, evaluation, ending = run.iterate(resume, encode(fingerprint))
        summary = run.finish(x, evaluation, ending)
    except KeyboardInterrupt:
        raise run.interrupted(command) from None
    except NewtonError as exc:  # as any failure below, its message naming the keys to change
        folder.remove_temporaries()
        add_config_hint(exc, design=True)
        raise
    except BaseException:
        folder.remove_temporaries()
        raise
    echo(final_line(config, summary))
    extra = "".join(f"{name}, " for name in ("mode_1.png", *SHAPE_FILES)
                    if (folder.path / name).is_file())
    echo(f"results in {folder.path}: design.png, {extra}design.vtu, convergence.png, "
         "history.csv, summary.json")
    return run.result(summary, x, evaluation, ending)


def _reads_its_config(config: Config, folder: ResultsFolder) -> bool:
    """Whether ``config`` was read from the ``config.toml`` that a run in ``folder`` writes
    (``fesens optimize config.toml --out .``, or a resume from the folder's own)."""
    source, written = Path(config.source), folder.path / "config.toml"
    return source.is_file() and written.is_file() and os.path.samefile(source, written)


#: The files of the final design's shape (:func:`~fesens.workflow.design_fields.write_shape`).
SHAPE_FILES = ("design.stl", "design_stl.png", "design_outline.svg")


def _run_in_memory(config: Config, echo: Callable[[str], None]) -> OptimizationRun:
    """The run without a results folder: nothing is written, Ctrl-C propagates."""
    tic = time.perf_counter()
    built = build_run(config)
    built.problem.reports["grayness"] = grayness_report(built.problem)
    run = _Run(config, built.model, built.problem, build_optimizer(config), echo, tic=tic)
    run.announce(built.note)
    x, evaluation, ending = run.iterate()
    summary = run.final_summary(evaluation, ending, run.fields(evaluation))
    echo(final_line(config, summary))
    return run.result(summary, x, evaluation, ending)


def _constraint_report(config: Config, problem: DesignProblem, evaluation: Evaluation) -> list:
    """Each constraint's value and limit, and whether it holds within ``stop.constraint_tol``
    (its scaled value ``g_i``, as the status decides: :mod:`fesens.opt.status`)."""
    tol = config.data["stop"]["constraint_tol"]
    g = [float(value) for value in evaluation.constraints]
    report = [{"name": "volume_fraction", "value": evaluation.volume_fraction,
               "limit": config.data["constraints"]["volume_fraction"],
               "satisfied": bool(g[0] <= tol)}]
    for constraint, scaled in zip(problem.constraints, g[1:], strict=False):
        report.append({"name": constraint.name, "value": evaluation.extras[constraint.name],
                       "limit": constraint.limit, "satisfied": bool(scaled <= tol)})
    return report


@dataclass
class _Run:
    """One optimization run of a config: what its steps share (the config, the built model
    and design problem, the optimizer, the progress sink and the results folder, None for a
    run in memory) and what it carries between iterations (history, the iteration it
    resumed from, its start time).

    Attributes
    ----------
    config : Config
    model : LinearModel
        This rank's model (the whole one in a serial run).
    problem : DesignProblem
    optimizer : OC or MMA
    echo : callable
        Receives the progress lines.
    folder : ResultsFolder or None
        Where the run writes; None: nothing is written, no checkpoint.
    tic : float
        :func:`time.perf_counter` at the run's start (the summary's wall time).
    history : list of dict
        One record per iteration so far.
    start_iteration : int
        The iteration a resumed run continues from (0: a fresh run).
    """

    config: Config
    model: LinearModel
    problem: DesignProblem
    optimizer: OC | MMA
    echo: Callable[[str], None]
    folder: ResultsFolder | None = None
    tic: float = field(default_factory=time.perf_counter)
    history: list[dict] = field(default_factory=list)
    start_iteration: int = 0

    def announce(self, note: str | None) -> None:
        """Echo the one-line description of the run and the build's ``note`` if any."""
        self.echo(describe(self.config, self.problem, self.model))
        if note:
            self.echo(note)

    def fields(self, evaluation: Evaluation) -> tuple[dict, dict]:
        """The point and cell data written of the design ``evaluation`` was made at."""
        return design_fields(self.problem, evaluation, self.config.data["objective"]["type"],
                             case_names(self.config.data))

    def iterate(self, resume: bool = False, fingerprint: str | None = None
                ) -> tuple[np.ndarray, Evaluation, Ending]:
        """Run the design loop (resumed from the folder's checkpoint with ``resume``):
        ``(x, evaluation, ending)``, the last its status (:mod:`fesens.opt.status`). With a
        folder, each iteration writes the history and, every ``[output] every`` iterations,
        the design; a resumed run that had already finished only evaluates its last design
        again."""
        config, problem, folder = self.config, self.problem, self.folder
        stop, every = config.data["stop"], config.data["output"]["every"]
        extras = shown_columns(problem)
        last = self.history[-1] if self.history else None
        stopped = last is not None and (
            last["change"] < stop["tol_change"] and problem.schedules_done(self.start_iteration)
            and problem.settled(last, stop["constraint_tol"]))  # the loop's stop rule
        if resume and last is not None and (self.start_iteration >= stop["max_iter"]
                                            or stopped):
            x = problem.design_part(load_checkpoint(folder.checkpoint)[0])
            evaluated = load_evaluated_design(folder.checkpoint)
            evaluated = None if evaluated is None else problem.design_part(evaluated)
            problem.restore(self.history)  # what the problem derived in the iterations done
            problem.update_schedules(self.start_iteration)
            # its solves start where that iteration's did: the same bits as its evaluation
            restore_warm_start(problem, folder.checkpoint, evaluated=True)
            self.echo(f"the run in {folder.path} has already finished at iteration "
                      f"{self.start_iteration}; writing its results")
            # the results of the design the last iteration evaluated, as an uninterrupted run
            evaluation = problem.evaluate(x if evaluated is None else evaluated)
            return x, evaluation, decide_status(problem, evaluation, stopped,
                                                stop["constraint_tol"])

        def callback(record: dict, evaluation: Evaluation, x_new: np.ndarray) -> None:
            self.history.append(record)
            self.echo(progress_line(record, extras))
            if folder is None:
                return
            folder.write_history(self.history)
            if every and record["iteration"] % every == 0:
                point_data, cell_data = self.fields(evaluation.on_host())
                write_mesh(folder.file(f"design_{record['iteration']:04d}.vtu"), config.mesh,
                           point_data=point_data, cell_data=cell_data)
                folder.write_collection()

        start = None if resume else initial_design(config.data["design"], config.mesh, problem)
        result = optimize(problem, self.optimizer, start, max_iter=stop["max_iter"],
                          tol_change=stop["tol_change"], callback=callback,
                          checkpoint=None if folder is None else folder.file(CHECKPOINT),
                          resume=resume, fingerprint=fingerprint,
                          constraint_tol=stop["constraint_tol"])
        self.history = result.history
        return result.x, result.evaluation, Ending(result.status, result.reason)

    def finish(self, x: np.ndarray, evaluation: Evaluation, ending: Ending) -> dict:
        """Write the final design (``design.vtu``, the last snapshot, ``design.png``, a
        frequency design's ``mode_1.png``), ``convergence.png``, ``history.csv`` and
        ``summary.json`` into the folder; the summary. A degenerate design (its status,
        ``ending``) gets no shape file: an empty ``design.stl`` is no result; its other
        files are written, and ``summary.json`` says ``degenerate``."""
        config, problem, folder, history = self.config, self.problem, self.folder, self.history
        point_data, cell_data = self.fields(evaluation)
        write_mesh(folder.file("design.vtu"), config.mesh, point_data=point_data,
                   cell_data=cell_data)
        iterations = history[-1]["iteration"] if history else 0
        if config.data["output"]["every"] and iterations:  # the final design ends the series
            final = folder.file(f"design_{iterations:04d}.vtu")
            if not final.is_file():
                write_mesh(final, config.mesh, point_data=point_data, cell_data=cell_data)
        if folder.snapshots():
            folder.write_collection()
        quantity, name, label = shown_quantity(problem, config.data["objective"])
        value = evaluation.objective if quantity == "objective" else evaluation.extras[quantity]
        phase = cell_data.get("phase")
        # with several solid phases the design variable is the density relative to the
        # densest phase's, whose "volume" is the mass
        fraction = "volume" if phase is None else "mass"
        plot_density(config.mesh, problem.whole_cells(evaluation.density),
                     folder.file("design.png"),
                     title=f"{config.name}: {name} {value:.5g}, {fraction} "
                           f"{evaluation.volume_fraction:.3f}, {iterations} iterations",
                     **boundary_markers(self.model),
                     phases=None if phase is None else (phase, problem.interpolation.labels()))
        density = problem.whole_cells(evaluation.density)
        if ending.status == "degenerate":
            shape, note = {}, f"no shape file: {ending.reason}"
        else:
            shape, note = write_shape(config.mesh, density, folder, config.name) \
                if density is not None else ({}, None)
        if note:
            self.echo(note)
        if isinstance(evaluation.state, Modes):
            frequency = modal_summary(history, evaluation.state)["frequencies"]["final"][0]
            plot_first_mode(problem, evaluation, folder.file("mode_1.png"),
                            f"{config.name}: the design on its first mode, f1 = {frequency:.5g}")
        if history:
            plot_convergence(history, folder.file("convergence.png"),
                             volume_limit=config.data["constraints"]["volume_fraction"],
                             objective=label, quantity=quantity,
                             constraints=[c.name for c in problem.constraints],
                             tol_change=config.data["stop"]["tol_change"],
                             converged=ending.converged, max_iter=config.data["stop"]["max_iter"],
                             status=None if ending.status in ("converged", "max_iter")
                             else ending.status)
        folder.write_history(history)
        summary = self.final_summary(evaluation, ending, (point_data, cell_data))
        if shape:
            summary["shape"] = shape
        summary["files"] = sorted(p.name for p in folder.path.iterdir()
                                  if not p.name.startswith("."))
        folder.write_json("summary.json", summary)
        return summary

    def final_summary(self, evaluation: Evaluation, ending: Ending,
                      fields: tuple[dict, dict]) -> dict:
        """The summary of a finished run: :meth:`summary`, its outcome sentence and the
        values the physics reports from ``fields`` (point and cell data of the final
        design)."""
        config, problem = self.config, self.problem
        summary = self.summary(evaluation, ending)
        summary["outcome"] = outcome(config, self.history, ending)
        fragment, (point_data, cell_data) = config.physics_class.config, fields
        if isinstance(evaluation.state, Modes):  # a frequency design: no static solution
            summary.update(modal_summary(self.history, evaluation.state))
            return summary
        # each case's values named <key>_<case>; from rank 0's fields in a distributed run
        for case in (case_names(config.data) or [None]) if problem.collective.rank == 0 else []:
            suffix = "" if case is None else f"_{case}"

            def own(data: dict, suffix: str = suffix) -> dict:
                return {name.removesuffix(suffix): v for name, v in data.items()
                        if name.endswith(suffix)}

            summary.update({key + suffix: value for key, value in
                            reported_values(fragment, own(point_data), own(cell_data)).items()})
        return problem.collective.bcast(summary)

    def summary(self, evaluation: Evaluation, ending: Ending) -> dict:
        """The run's summary entries at its final ``evaluation``: status (``converged``,
        ``max_iter``, ``infeasible`` or ``degenerate``: :mod:`fesens.opt.status`) and the
        reason of the last two, iterations, objective, volume, constraints, times, solver,
        mesh and config."""
        config, history = self.config, self.history
        return {
            "name": config.name,
            "status": ending.status,
            "converged": ending.converged,
            "reason": ending.reason or None,
            "iterations": history[-1]["iteration"] if history else 0,
            "resumed_from_iteration": self.start_iteration or None,
            "objective": {"type": config.data["objective"]["type"],
                          "value": evaluation.objective,
                          **case_report(config.data, evaluation.extras)},
            "volume_fraction": evaluation.volume_fraction,
            "grayness": evaluation.extras.get("grayness"),
            "constraints": _constraint_report(config, self.problem, evaluation),
            "wall_time_seconds": time.perf_counter() - self.tic,
            "iteration_seconds_total": float(sum(r.get("seconds", 0.0) for r in history)),
            # what "auto" stood for where the model chose (a nonlinear tangent: LU when
            # it is not symmetric), else the configured backend
            "solver": str(self.model.solver_choice
                          or solver_class(config.data["solver"]["backend"]).name),
            "optimizer": config.data["optimizer"]["type"],
            "mesh": {"cells": config.mesh.n_cells, "points": config.mesh.n_points,
                     "cell_type": config.mesh.cell_type, "dofs": self.model.dofmap.n_dofs},
            "fesens_version": __version__,
            "config": config.data,
        }

    def result(self, summary: dict, x: np.ndarray, evaluation: Evaluation,
               ending: Ending) -> OptimizationRun:
        """What :func:`run_optimization` returns: the whole design and densities."""
        return OptimizationRun(summary, self.problem.gather_design(x),
                               self.problem.whole_cells(evaluation.density), self.history,
                               evaluation, ending.converged,
                               None if self.folder is None else self.folder.path)

    def interrupted(self, command: str) -> Interrupted:
        """Save what a KeyboardInterrupt left (history, summary) and say how to resume; a
        second Ctrl-C meanwhile is ignored, so that the save completes."""
        from fesens.opt.checkpoint import deferred_interrupts

        config, folder = self.config, self.folder
        with deferred_interrupts(deliver=False):
            folder.remove_temporaries()
            if not folder.checkpoint.is_file():
                return Interrupted(f"interrupted before the first iteration finished; nothing "
                                   f"to resume in {folder.path} (run `{command} --out "
                                   f"{folder.path} --force` to start again)")
            self.history = load_checkpoint(folder.checkpoint)[2]
            folder.write_history(self.history)
            data = {"name": config.name, "status": "interrupted",
                    "iterations": self.history[-1]["iteration"] if self.history else 0,
                    "checkpoint": str(folder.checkpoint), "fesens_version": __version__,
                    "config": config.data}
            folder.write_json("summary.json", data)
        return Interrupted(f"interrupted after iteration {data['iterations']}; checkpoint "
                           f"saved in {folder.checkpoint}. Resume with: {command} --out "
                           f"{folder.path} --resume")


