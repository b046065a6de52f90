"""What a design run writes of one evaluated design: the point and cell data of its VTU
(the physics' output, the density, the sensitivities the optimizer used), the grayness
report of its history, the shape of the final design (an STL surface or an SVG outline:
:func:`write_shape`) and, for a frequency design (an eigen objective,
:mod:`fesens.config.frequency`), its modes: the first mode shape as the physics' field,
every mode as ``mode_<i>``, the picture of the design on its first mode, and the
eigenvalues and frequencies before and after.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fesens.arrays import namespace
from fesens.errors import MeshError
from fesens.fem.analysis.modal import Modes
from fesens.mesh import Mesh
from fesens.objectives.static import volume
from fesens.opt import DesignProblem, Evaluation, case_state
from fesens.opt.resident import DensityReport
from fesens.output import ResultsFolder, sensitivity_name
from fesens.output.design_export import (
    LEVEL,
    ExportUnavailableError,
    enclosed_area,
    enclosed_volume,
    isosurface,
    outline,
    outline_length,
    write_outline_svg,
    write_stl,
)
from fesens.plotting import plot_cell_field
from fesens.plotting.surface import plot_surface


def design_fields(problem: DesignProblem, evaluation: Evaluation, objective: str,
                  cases: list[str] | tuple = ()) -> tuple[dict, dict]:
    """Point and cell data of an evaluated design: the physics' output (e.g. displacement,
    von Mises and stress; temperature, heat flux) at the interpolated stiffness, the
    density, and the sensitivities the optimizer used (:func:`design_sensitivities`).
    ``evaluation.state`` is a plain solution of the physics' ``solution_class``; with load
    ``cases`` (their names), the output of each case is named ``<field>_<case>``, and the
    worst-case objective (``evaluation.bounds``) gives each case's sensitivity,
    ``d_<objective>_<case>_d_design``. A frequency design's state is its
    :class:`~fesens.fem.analysis.modal.Modes` (:func:`modal_fields`)."""
    solution = evaluation.state
    if isinstance(solution, Modes):
        return modal_fields(problem, evaluation, objective)
    # a distributed problem's ranks hold their cells: the fields of the whole mesh, which
    # rank 0 computes (the other ranks write the design's fields only)
    solution = problem.whole_state(solution)
    point_data, cell_data = {}, {}
    for i, case in enumerate((cases or [None]) if solution is not None else []):
        single = solution if case is None else case_state(solution, i)
        suffix = "" if case is None else f"_{case}"
        point_data.update({name + suffix: v for name, v in single.point_data().items()})
        cell_data.update({name + suffix: v for name, v in single.cell_data().items()})
    sensitivities = design_sensitivities(problem, evaluation, objective, cases) if (
        evaluation.bounds is not None and cases) else {}
    sensitivities.update(design_sensitivities(problem, evaluation, objective))
    whole = problem.whole_cells  # the design's cells: this rank's in a distributed problem
    return point_data, {"density": whole(evaluation.density),
                        **{name: whole(values) for name, values in
                           phase_fields(problem, evaluation.density).items()},
                        **cell_data,
                        **{name: whole(values) for name, values in sensitivities.items()}}


def phase_fields(problem: DesignProblem, density: np.ndarray) -> dict[str, np.ndarray]:
    """The ``phase`` of each cell (0 void, ``i`` the ``i``-th solid phase) and its
    ``mass_density`` ``(n_cells,)`` when the problem's interpolation has several solid
    phases (:class:`~fesens.opt.interpolation.OrderedSIMP`); nothing otherwise."""
    interpolation = problem.interpolation
    if not interpolation.multiphase or np.ndim(density) != 1:
        return {}
    return {"phase": interpolation.phases(density).astype(np.int32),
            "mass_density": interpolation.mass_density(density)}


def design_sensitivities(problem: DesignProblem, evaluation: Evaluation,
                         objective: str, cases: list[str] | tuple = ()) -> dict[str, np.ndarray]:
    """Per-cell derivatives of the objective, the volume fraction and each extra constraint's
    response with respect to the design variables (``d_<response>_d_design``, passive cells
    0), as the optimizer received them (with a sensitivity filter: the filtered ones); with
    ``cases``, those of the objective of each case of a worst-case evaluation instead
    (``d_<objective>_<case>_d_design``, from ``evaluation.bound_gradients``)."""
    def per_cell(values: np.ndarray) -> np.ndarray:
        return design_on_cells(problem, values)

    if cases:
        return {sensitivity_name(f"{objective}_{case}", "design"): per_cell(gradient)
                for case, gradient in zip(cases, evaluation.bound_gradients, strict=True)}

    gradients = evaluation.constraint_gradients
    fields = {sensitivity_name(objective, "design"): per_cell(evaluation.gradient),
              sensitivity_name("volume_fraction", "design"): per_cell(gradients[0])}
    for i, constraint in enumerate(problem.constraints):  # g = r / limit − 1
        fields[sensitivity_name(constraint.name, "design")] = per_cell(
            gradients[1 + i] * constraint.limit)
    return fields


def design_on_cells(problem: DesignProblem, values: np.ndarray) -> np.ndarray:
    """Per-design-variable ``values`` ``(n_design,)`` on the cells ``(n_cells,)``: each on the
    cell it belongs to or, with a design map (symmetry, extrusion), on every cell of its
    group of tied cells; passive cells 0."""
    if problem.design_map is None:
        full = np.zeros(problem.mesh.n_cells)
        full[problem.design] = values
        return full
    full = np.asarray(problem.design_map.apply(values), dtype=float).copy()
    full[problem.solid | problem.void] = 0.0
    return full


def grayness_report(problem: DesignProblem) -> DensityReport:
    """The report ``f(state, ρ)`` of the grayness of the physical densities, in percent,
    ``M = Σ_e g(ρ_e) v_e / Σ_e v_e · 100`` over the whole mesh, ``g`` the problem's
    interpolation's measure of a cell's distance to the nearest crisp value
    (:meth:`~fesens.opt.interpolation.SIMP.grayness`): 0 for a design of admissible values
    only (void and solid, or void and the phases of a multi-material design), 100 for one
    midway between two adjacent values everywhere. With void and solid it is Sigmund's
    measure of non-discreteness ``M_nd`` (``g = 4 ρ (1 − ρ)``).

    O. Sigmund, "Morphology-based black and white filters for topology optimization",
    Struct. Multidisc. Optim. 33 (2007) 401–424.

    A problem adds its reports' values over the ranks of a distributed run: each rank gives
    its cells' share of the whole mesh's measure. ``ρ`` is ``(n_cells,)``, or a robust
    problem's designs ``(3, n_cells)`` (eroded, intermediate, dilated: the intermediate one
    counts).

    It reads the densities only (a :class:`~fesens.opt.resident.DensityReport`): a design
    resident on a device calls it with ``state`` None and ``ρ`` ``(n_cells,)`` in the
    device's array library, where it keeps a copy of the cell volumes.
    """
    model, interpolation = problem.model, problem.interpolation
    whole = problem.collective.sum(float(volume(model, 1.0)))
    copies: dict[int, object] = {}  # the cell volumes in another array library

    def share(state, density) -> float:
        xp = namespace(density)
        if xp is not np:
            if id(xp) not in copies:
                copies[id(xp)] = xp.asarray(np.broadcast_to(
                    np.asarray(model.cell_volumes(), dtype=float), (model.mesh.n_cells,)))
            return 100.0 * float(xp.sum(interpolation.grayness(density)
                                        * copies[id(xp)])) / whole
        rho = np.asarray(density, dtype=float)
        if rho.ndim == 2:
            rho = rho[rho.shape[0] // 2]
        return 100.0 * float(volume(model, interpolation.grayness(rho))) / whole

    return DensityReport(share)


def mode_shape(problem: DesignProblem, modes: Modes, index: int = 0) -> np.ndarray:
    """Mode ``index`` (mass-normalized) as a nodal field, ``(n_points, n_components)``
    (``(n_points,)`` for a scalar field)."""
    model = problem.model
    shape = (model.mesh.n_points, model.n_components) if model.n_components > 1 \
        else (model.mesh.n_points,)
    return np.reshape(modes.vectors[:, index], shape)


def modal_fields(problem: DesignProblem, evaluation: Evaluation,
                 objective: str) -> tuple[dict, dict]:
    """Point and cell data of a frequency design: the first mode under the physics' field
    name (e.g. ``displacement``), every mode as ``mode_<i>`` (``i`` from 1), the density
    and the sensitivities; ``d_<objective>_d_design`` is that of the eigen objective
    itself (the optimizer minimized its negative)."""
    modes = evaluation.state
    point_data = {problem.model.field_name: mode_shape(problem, modes)}
    point_data.update({f"mode_{i + 1}": mode_shape(problem, modes, i)
                       for i in range(modes.vectors.shape[1])})
    sensitivities = design_sensitivities(problem, evaluation, objective)
    name = sensitivity_name(objective, "design")
    sensitivities[name] = -sensitivities[name]
    return point_data, {"density": evaluation.density, **sensitivities}


def modal_summary(history: list[dict], modes: Modes) -> dict:
    """``eigenvalues`` and ``frequencies`` of the first evaluated design (``initial``, from
    the history) and of the final one (``final``), for ``summary.json``."""
    final = np.asarray(modes.values, dtype=float)
    first = history[0] if history else {}
    count = len(final)
    initial = [first.get(f"eigenvalue_{i + 1}") for i in range(count)]
    return {"eigenvalues": {"initial": initial, "final": final.tolist()},
            "frequencies": {"initial": [None if value is None else
                                        float(np.sqrt(max(value, 0.0)) / (2 * np.pi))
                                        for value in initial],
                            "final": (np.sqrt(np.maximum(final, 0.0)) / (2 * np.pi)).tolist()}}


def shown_quantity(problem: DesignProblem, objective: dict) -> tuple[str, str, str]:
    """What titles and the convergence picture show for the run's ``[objective]`` table:
    ``(history column, name, axis label)``.

    The objective (``("objective", type, type)``), or for a frequency design, whose
    objective is the negative of an eigen quantity (minimized), the frequency it raises:
    ``f_k = √λ_k / 2π`` of the objective's ``index`` (the first for an eigenvalue sum or
    bound), in the reciprocal of the config's unit of time (fesens knows no units).
    """
    column = f"frequency_{objective.get('index', 0) + 1}"
    if column not in problem.reports:
        return "objective", objective["type"], objective["type"]
    k = column.rsplit("_", 1)[1]
    return column, f"f{k}", f"f{k} = √λ{k} / 2π (maximized)"


def plot_first_mode(problem: DesignProblem, evaluation: Evaluation, path: Path,
                    title: str) -> Path | None:
    """The design (density, grey) drawn on its first mode shape; None when the mesh or the
    field is not 2D (nothing drawn)."""
    model = problem.model
    if model.mesh.dim != 2 or model.n_components != 2:
        return None
    return plot_cell_field(model.mesh, evaluation.density, path, cmap="gray_r",
                           displacement=mode_shape(problem, evaluation.state),
                           label="density", title=title)


def write_shape(mesh: Mesh, density: np.ndarray, folder: ResultsFolder,
                title: str) -> tuple[dict, str | None]:
    """Write the 0.5 level of the final physical ``density`` ``(n_cells,)``
    (:mod:`fesens.output.design_export`): a 3D design's closed surface as ``design.stl`` and
    its picture ``design_stl.png``, a 2D design's outline as ``design_outline.svg``.

    Returns
    -------
    tuple
        The ``shape`` entry of ``summary.json`` (file, and the STL's triangles, whether it is
        watertight and its enclosed volume; the outline's curves, length and enclosed area),
        and None; or ``({}, note)`` with the reason nothing was written (a mesh that is not
        a lattice of quad4/hex8 cells, a missing library, no cell at the level: an empty
        file is no shape), which the run reports without failing: the design itself is in
        ``design.vtu``.
    """
    name = "design.stl" if mesh.dim == 3 else "design_outline.svg"
    if not np.any(density > LEVEL):
        return {}, (f"no {name}: no cell's physical density exceeds {LEVEL:g} (the largest is "
                    f"{float(np.max(density, initial=0.0)):.3g}), so the design has no shape yet")
    try:
        if mesh.dim == 3:
            surface = isosurface(mesh, density)
            write_stl(surface, folder.file("design.stl"))
            low, high = mesh.bounding_box()
            plot_surface(surface.vertices, surface.faces, folder.file("design_stl.png"),
                         low=low, high=high,
                         title=f"{title}\ndesign.stl: where the physical density is {LEVEL:g}")
            return {"file": "design.stl", "triangles": len(surface.faces),
                    "watertight": bool(surface.is_watertight),
                    "volume": enclosed_volume(surface)}, None
        polygons = outline(mesh, density)
        write_outline_svg(polygons, mesh, folder.file("design_outline.svg"))
        return {"file": "design_outline.svg", "curves": len(polygons),
                "length": outline_length(polygons), "area": enclosed_area(polygons)}, None
    except (MeshError, ExportUnavailableError) as err:
        return {}, f"no {name}: {err}"
