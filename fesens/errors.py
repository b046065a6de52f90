"""Exceptions raised by fesens.

Every numerical or input failure raises one of these; none is ever silent.
All derive from :class:`FesensError` so callers can catch the whole family.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class FesensError(Exception):
    """Base class of every fesens error."""


class FesensWarning(UserWarning):
    """Base class of every fesens warning: a valid but doubtful input or a slower path taken.

    The command line prints each one as a single ``warning: ...`` line on stderr."""


class MeshError(FesensError, ValueError):
    """A mesh is malformed: empty, unknown cell type, mixed dimensions, bad elements."""


class DegenerateElementError(MeshError):
    """Elements with zero or negative Jacobian determinant (degenerate or inverted).

    Attributes
    ----------
    cell_ids : numpy.ndarray
        Ids of the offending cells.
    """

    def __init__(self, message: str, cell_ids=None):
        super().__init__(message)
        self.cell_ids = cell_ids


class PointOutsideMeshError(MeshError):
    """Points given to a probe lie in no cell of the mesh (the message lists them)."""


class UnknownGroupError(FesensError, KeyError):
    """A named node, facet or cell set does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class MaterialError(FesensError, ValueError):
    """Material constants outside their range (a yield stress <= 0, a softening hardening
    law without a regularization); the message names the constant and its range."""


class BoundaryConditionError(FesensError, ValueError):
    """A boundary condition or load is inconsistent (bad component, empty selection, ...)."""


class ArgumentTypeError(FesensError, TypeError):
    """An argument of the wrong kind, such as a string where numbers are expected; the
    message names the argument and what it takes."""


class LevelIndexError(FesensError, IndexError):
    """An index of the levels a result holds (its states at load factors) out of range;
    the message names the index and the number of levels."""


class SolverError(FesensError, RuntimeError):
    """Base class of linear-solver failures."""


class SingularMatrixError(SolverError):
    """The system matrix is singular (typically: missing Dirichlet conditions)."""


class MechanismError(SingularMatrixError):
    """A truss is a mechanism: nodes can move without stretching a bar.

    Attributes
    ----------
    nodes : numpy.ndarray
        Ids of the free nodes (the message lists the first ones with their coordinates).
    """

    def __init__(self, message: str, nodes=None):
        super().__init__(message)
        self.nodes = nodes


class ModeCountError(FesensError, ValueError):
    """More eigenpairs were asked for than the problem has (free dofs)."""


class ZeroModeError(SingularMatrixError):
    """An eigen solve found zero-energy modes (rigid-body motions or mechanisms).

    Attributes
    ----------
    values : numpy.ndarray
        The eigenvalues found at zero (relative to the spectrum's scale).
    """

    def __init__(self, message: str, values=None):
        super().__init__(message)
        self.values = values


class ResonanceError(SingularMatrixError):
    """A driving frequency at a resonance of a model without (enough) damping: the
    dynamic stiffness ``K − ω² M + i ω C`` is singular or nearly so.

    Attributes
    ----------
    omega : float
        The angular driving frequency refused.
    index : int
        Its position among the driving frequencies.
    eigenfrequency : float
        The nearest undamped eigenfrequency in Hz (cycles per unit time).
    """

    def __init__(self, message: str, *, omega: float = 0.0, index: int = 0,
                 eigenfrequency: float = 0.0):
        super().__init__(message)
        self.omega = omega
        self.index = index
        self.eigenfrequency = eigenfrequency


class SingularMassError(SingularMatrixError):
    """A mass matrix is singular: dofs without mass (e.g. lumped mass, empty cells)."""


class NoBucklingError(FesensError, ValueError):
    """A buckling analysis found fewer positive load factors than asked for: the load puts
    (too little of) the structure in compression (e.g. pure tension)."""


class PassiveRegionError(FesensError, ValueError):
    """A design map (mirror symmetry, extrusion) ties cells that passive regions hold at
    different values (solid, void or designed), so the design could not keep the map."""


class NotPositiveDefiniteError(SolverError):
    """A Cholesky factorization met a matrix that is not symmetric positive definite."""


class ConvergenceError(SolverError):
    """An iterative solver stopped before reaching its tolerance.

    Attributes
    ----------
    iterations : int
    residual : float
        Relative residual ``||b - A x|| / ||b||`` reached.
    tolerance : float
    """

    def __init__(self, message: str, iterations: int, residual: float, tolerance: float):
        super().__init__(message)
        self.iterations = iterations
        self.residual = residual
        self.tolerance = tolerance


class NewtonError(SolverError):
    """A nonlinear (Newton) solve did not converge, even after cutting its load steps back.

    Attributes
    ----------
    reason : str
        Why the last attempt failed (residual stalled, NaN, an inadmissible state, ...).
    history : list of numpy.ndarray
        The residual norms of every Newton attempt, in order (converged steps and failed
        attempts alike).
    load_factor : float
        The load factor of the last converged step (0: none converged).
    state : numpy.ndarray or None
        The last converged state (the model's dof vector ``(n_dofs,)``), which a caller
        may keep.
    increment, last_converged : int or None
        Of a run over a table of increments: the increment that failed and the last one
        that converged (None for a single solve).
    partial : object or None
        Of such a run: its record up to the last converged increment, where one was made.
    """

    def __init__(self, message: str, *, reason: str = "", history=(), load_factor: float = 0.0,
                 state=None):
        super().__init__(message)
        self.reason = reason
        self.history = list(history)
        self.load_factor = load_factor
        self.state = state
        self.increment: int | None = None
        self.last_converged: int | None = None
        self.partial = None


class NonFiniteError(FesensError, FloatingPointError):
    """NaN or infinity in parameters, matrices or results."""


class TooLargeError(FesensError, ValueError):
    """A size or value too large to compute with (more memory or time than the machine
    has, or a system too ill-conditioned to solve), estimated before anything is built;
    the message names the size, the estimate and a smaller choice."""


class WriteError(FesensError, OSError):
    """A file could not be written (disk full, permissions, ...); the message names it."""


class Interrupted(Exception):  # noqa: N818 - it is a signal, not an error
    """A run stopped by Ctrl-C after saving its state; the message says how to resume.

    Not a :class:`FesensError`: nothing failed. It lives here, with the other exceptions,
    so that the command line can catch it without importing the workflows.
    """

    exit_code = 130


@contextmanager
def writing(path: str | os.PathLike, temporary: str | os.PathLike | None = None
            ) -> Iterator[None]:
    """Around an atomic write of ``path`` through ``temporary``: an ``OSError`` inside
    becomes a :class:`WriteError` naming ``path`` (``cannot write PATH: No space left on
    device``), and ``temporary`` is removed whatever happens."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)


def read_failure(exc: BaseException) -> str:
    """Why a file could not be read, in words that never quote the file: the system's
    reason for an ``OSError``, the position of a byte that is not UTF-8, else the kind of
    the exception. A parser's own message often quotes the line it failed on (a secret, if
    the path was ``/proc/self/environ``), so it is never shown."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (from byte {exc.start} on)"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__
