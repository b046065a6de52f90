"""The registry of linear-solver backends: their names, the aliases, and making one by name.

A backend registers itself with ``@register_solver("name")``; :func:`make_solver` resolves a
name (or one of the aliases ``"auto"`` and ``"lu"``) to a configured instance, and
:func:`solver_class` to its class, whose declared capabilities callers read without
creating a solver. An alias that makes a solver of its own rather than its backend
registers that maker with :func:`register_alias_maker` (``"auto"``:
:class:`~fesens.solvers.auto.AutoSolver`, which decides at its first factorization); this
module imports no backend.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from fesens.errors import SolverError
from fesens.solvers.base import FesensPerformanceWarning, LinearSolver

CHOLMOD_FALLBACK_MESSAGE = (
    "CHOLMOD (scikit-sparse) is not installed, so solver 'auto' factorizes with SuperLU, "
    "which is slower; to install it: `apt install libsuitesparse-dev`, then "
    "`pip install scikit-sparse` (or `pip install \"fesens[cholmod]\"`)"
)

_REGISTRY: dict[str, type[LinearSolver]] = {}
#: Aliases accepted wherever a backend name is: each stands for the first installed backend
#: of its tuple (``"auto"`` says once when it factorizes without CHOLMOD:
#: :func:`warn_direct_fallback`).
SOLVER_ALIASES: dict[str, tuple[str, ...]] = {
    "auto": ("cholmod", "superlu"),
    "lu": ("umfpack", "superlu"),
}

#: What :func:`make_solver` builds for an alias instead of its backend's class.
_ALIAS_MAKERS: dict[str, Callable[..., LinearSolver]] = {}

SolverT = TypeVar("SolverT", bound=LinearSolver)


def register_solver(name: str) -> Callable[[type[SolverT]], type[SolverT]]:
    """Class decorator adding a :class:`LinearSolver` subclass to the registry.

    Parameters
    ----------
    name : str
        Name accepted by :func:`make_solver`; stored as the class attribute ``name``.

    Raises
    ------
    ValueError
        If ``name`` is already registered or is an alias (a key of :data:`SOLVER_ALIASES`).
    TypeError
        If the class does not declare the booleans ``symmetric`` and ``is_direct``.
    """

    def decorator(cls: type[SolverT]) -> type[SolverT]:
        if name in _REGISTRY or name in SOLVER_ALIASES:
            raise ValueError(f"solver name {name!r} is already taken")
        for attribute in ("symmetric", "is_direct"):
            if not isinstance(getattr(cls, attribute, None), bool):
                raise TypeError(f"solver {name!r}: {cls.__name__} must declare the class "
                                f"attribute {attribute} (True or False)")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorator


def register_alias_maker(alias: str, maker: Callable[..., LinearSolver]) -> None:
    """Let :func:`make_solver` build ``maker(**options)`` for ``alias`` (a key of
    :data:`SOLVER_ALIASES`) instead of its installed backend's class.

    Raises
    ------
    ValueError
        If ``alias`` is not an alias or already has a maker.
    """
    if alias not in SOLVER_ALIASES or alias in _ALIAS_MAKERS:
        raise ValueError(f"{alias!r} is not an alias without a maker")
    _ALIAS_MAKERS[alias] = maker


def available_solvers() -> list[str]:
    """Names of the registered backends whose dependencies are installed.

    :func:`make_solver` also accepts the aliases of :data:`SOLVER_ALIASES`, which
    resolve to one of these names.

    Returns
    -------
    list of str
        Direct backends first, e.g. ``["cholmod", "superlu", "cg", "minres", "gmres"]``.
    """
    names = [name for name, cls in _REGISTRY.items() if cls.available()]
    return sorted(names, key=lambda name: not _REGISTRY[name].is_direct)


def make_solver(name: str = "auto", **options: Any) -> LinearSolver:
    """Create a linear solver by name.

    Parameters
    ----------
    name : str, default "auto"
        A registered backend (see :func:`available_solvers`) or an alias: ``"auto"``
        (:class:`~fesens.solvers.auto.AutoSolver`) picks at ``factorize``, from the size
        and memory, CHOLMOD (else SuperLU, with a :class:`FesensPerformanceWarning`:
        :func:`warn_direct_fallback`) or CG with AMG, for symmetric positive definite
        matrices; ``"lu"`` is UMFPACK, else SuperLU. A model's ``"auto"`` knows its mesh
        (``SolverChoice.auto_solver``).
    **options
        Keyword arguments of the backend's constructor, e.g. ``rtol``, ``preconditioner``,
        ``maxiter`` (iterative), ``check_residual`` (direct; for ``"auto"`` also ``dim``).

    Returns
    -------
    LinearSolver
        A new, not yet factorized solver.

    Raises
    ------
    ValueError
        If ``name`` is unknown.
    SolverError
        If the backend's optional dependency is not installed.
    """
    cls = solver_class(name)
    if not cls.available():
        raise SolverError(f"solver {name!r} is not available: {cls.install_hint}")
    return _ALIAS_MAKERS.get(name, cls)(**options)


def solver_class(name: str) -> type[LinearSolver]:
    """The backend class a name (or alias) stands for, without instantiating it.

    Lets a caller holding only a name ask about the backend's properties
    (``solver_class("lu").is_direct``). An alias resolves to the first of its backends
    that is installed (:data:`SOLVER_ALIASES`): for ``"auto"`` the direct backend of
    :func:`make_solver`'s ``AutoSolver``. An explicit name is returned whether or not its
    dependency is installed. Issues no warning.

    Parameters
    ----------
    name : str
        A registered backend or a key of :data:`SOLVER_ALIASES`.

    Returns
    -------
    type[LinearSolver]

    Raises
    ------
    ValueError
        If ``name`` is unknown (the message lists the backends and aliases).
    """
    if name in SOLVER_ALIASES:
        name = next(n for n in SOLVER_ALIASES[name] if _REGISTRY[n].available())
    elif name not in _REGISTRY:
        known = ", ".join([*_REGISTRY, *SOLVER_ALIASES])
        raise ValueError(f"unknown solver {name!r}; known solvers: {known}")
    return _REGISTRY[name]


def warn_direct_fallback(direct: str) -> None:
    """Warn that ``auto`` factorizes with ``direct`` because CHOLMOD is missing (nothing
    when ``direct`` is CHOLMOD, the first backend of ``SOLVER_ALIASES["auto"]``).

    Called where ``auto`` has chosen a direct factorization: a model's choice
    (:meth:`fesens.fem.model.solvers.SolverChoice.auto_solver`, once per set of Dirichlet
    dofs) and a bare :class:`~fesens.solvers.auto.AutoSolver`'s (at a factorization that
    decides). The warning always comes from this one line, so Python's default warning
    filter, which shows a warning once per location, shows it once per process; fesens
    keeps no flag of its own. (A change of the warning filters, such as
    ``warnings.catch_warnings``, starts the count again.)

    Parameters
    ----------
    direct : str
        The direct backend chosen, e.g. ``"superlu"``.

    Warns
    -----
    FesensPerformanceWarning
        When ``direct`` is not CHOLMOD: what to install.
    """
    if direct != SOLVER_ALIASES["auto"][0]:
        warnings.warn(CHOLMOD_FALLBACK_MESSAGE, FesensPerformanceWarning, stacklevel=1)
