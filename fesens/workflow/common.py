"""What the workflows share: the interruption signal and the solver's real name."""

from __future__ import annotations


class Interrupted(Exception):  # noqa: N818 - it is a signal, not an error
    """A run stopped by Ctrl-C after saving its state; the message says how to resume."""

    exit_code = 130


def solver_name(backend: str) -> str:
    """The backend an alias resolves to (``auto`` → ``cholmod`` when installed)."""
    from fesens.solvers import UmfpackSolver, cholmod_available

    if backend == "auto":
        return "cholmod" if cholmod_available() else "superlu"
    if backend == "lu":
        return "umfpack" if UmfpackSolver.available() else "superlu"
    return backend
