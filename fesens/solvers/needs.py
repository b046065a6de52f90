"""What a solver needs of the model it solves, declared by the solver (a backend's
``model_needs``) so that a caller that knows the mesh and the supports, such as a config
check, can refuse a model before any work."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelNeeds:
    """What a solver needs of a model's mesh and supports, declared by the solver so that
    a caller that knows them (a config check) can refuse a model before any work.

    Attributes
    ----------
    purpose : str
        The solver and the option that asks for this, for messages (e.g. "the
        matrix-free multigrid").
    option : str
        The constructor option that brings these needs (e.g. ``matrix_free``).
    cell_types : tuple of str
        The cell types it solves on.
    lattice : bool
        The mesh's points must form a full tensor lattice
        (:func:`fesens.mesh.structured.lattice_of`).
    zero_prescribed : bool
        Every prescribed (Dirichlet) value must be zero.
    instead : str
        What to use instead on a structured mesh (cells or prescribed values that do not
        fit).
    instead_unstructured : str
        What to use instead on a mesh that is not a lattice.
    cells_only : bool
        The stiffness must be the cells' own matrices: no further term such as springs on
        the diagonal or a convection's boundary matrix (it applies no assembled matrix
        that they could be added to).
    diagonal : bool
        With ``cells_only``: it adds a constant diagonal (springs to the ground) to the
        cells' matrices itself, so a term that is such a diagonal (``Section.diagonal``)
        passes.
    assembled : bool
        It also solves the assembled matrices a model forms besides its stiffness (a time
        step's ``a M + b K``). False: it solves the lattice operator of the cells'
        stiffness only, so an analysis that solves another matrix is refused.
    instead_assembled : str
        What to use instead for such an analysis (where ``assembled`` is False).
    """

    purpose: str
    option: str
    cell_types: tuple[str, ...]
    lattice: bool
    zero_prescribed: bool
    instead: str
    instead_unstructured: str
    cells_only: bool = False
    diagonal: bool = False
    assembled: bool = True
    instead_assembled: str = ""
