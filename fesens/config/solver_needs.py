"""Whether the config's ``[solver]`` can solve its model, checked before any work: what the
solver declares it needs (:class:`fesens.solvers.needs.ModelNeeds`, e.g. the matrix-free
multigrid's lattice of quad4 or hex8 cells and zero prescribed values) against the mesh and
the ``[[supports]]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fesens.config.checks import ConfigError, show
from fesens.errors import FesensError
from fesens.mesh import Mesh
from fesens.mesh.structured import lattice_of
from fesens.physics.spec import Section
from fesens.solvers import make_solver
from fesens.solvers.needs import ModelNeeds


def check_solver_needs(solver: dict, supports: list[dict], mesh: Mesh, label: str,
                       sections: Sequence[Section] = ()) -> None:
    """Refuse a model that the checked ``[solver]`` table's backend cannot solve.

    Parameters
    ----------
    solver : dict
        The checked ``[solver]`` table.
    supports : list of dict
        The checked ``[[supports]]``.
    mesh : Mesh
    label : str
        The mesh's source for messages (file name or generator).
    sections : sequence of Section
        The physics sections the config has (their terms may add stiffness).

    Raises
    ------
    ConfigError
        Naming the solver option, what of the mesh or the supports does not fit, and what
        to use instead.
    """
    needs = _needs(solver)
    if needs is None:
        return
    key = f"solver.options.{needs.option} = true"
    if needs.lattice and lattice_of(mesh) is None:
        raise ConfigError(
            f"{key}: {needs.purpose} needs a structured mesh (its points a full tensor "
            "lattice, as mesh.type = \"rectangle\" or \"box\" make); the mesh "
            f"({label}, {mesh.cell_type} cells) is not a lattice: {needs.instead_unstructured}")
    if mesh.cell_type not in needs.cell_types:
        cells = " or ".join(needs.cell_types)
        raise ConfigError(
            f"{key}: {needs.purpose} needs {cells} cells; the mesh ({label}) has "
            f"{mesh.cell_type} cells: {needs.instead}, or give the rectangle or box mesh "
            f"{cells} cells (mesh.cell_type)")
    if needs.cells_only:
        for section in sections:
            if section.stiffness and not (section.diagonal and needs.diagonal):
                table = f"[[{section.name}]]" if section.many else f"[{section.name}]"
                raise ConfigError(
                    f"{key}: {needs.purpose} applies the cells' own matrices only, and the "
                    f"config's {table} adds to the stiffness matrix: {needs.instead}, or "
                    f"remove {table}")
    if needs.zero_prescribed:
        for i, item in enumerate(supports):
            value = item["value"]
            if any(value) if isinstance(value, list) else value != 0:
                raise ConfigError(
                    f"{key}: {needs.purpose} solves with zero prescribed values only, and "
                    f"supports[{i}].value = {show(value)}: {needs.instead}")


def check_assembled_system(solver: dict, analysis: str, system: str) -> None:
    """Refuse a solver that solves the lattice operator of the cells' stiffness only
    (:attr:`ModelNeeds.assembled` false) for an analysis that gives it another matrix.

    Parameters
    ----------
    solver : dict
        The checked ``[solver]`` table.
    analysis : str
        The key and value that choose the analysis, for messages (e.g.
        ``analysis.type = "dynamic"``).
    system : str
        The matrix that analysis solves, for messages (e.g. ``a M + b K``).

    Raises
    ------
    ConfigError
        Naming the solver option, the analysis and what to use instead.
    """
    needs = _needs(solver)
    if needs is None or needs.assembled:
        return
    raise ConfigError(
        f"solver.options.{needs.option} = true: {needs.purpose} solves the lattice operator "
        f"of the cells' stiffness only, and {analysis} solves {system}: "
        f"{needs.instead_assembled}, or change analysis.type")


def _needs(solver: dict) -> ModelNeeds | None:
    """The needs of the checked ``[solver]`` table's backend; a backend's needs come with
    one of its options (:attr:`ModelNeeds.option`), so without options there are none."""
    if not solver["options"]:
        return None
    try:
        backend = make_solver(solver["backend"], **solver["options"])
    except (TypeError, ValueError, FesensError):  # refused by the [solver] check already
        return None
    return backend.model_needs
