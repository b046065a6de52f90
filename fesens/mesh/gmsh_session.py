"""Starting the Gmsh API without changing how the Python process handles signals.

``gmsh.initialize()`` resets the process's SIGPIPE disposition to the default (terminate)
and, unless ``interruptible=False``, SIGINT as well. A program that later writes to a closed
pipe or socket (a Dask client, a subprocess's stdin) is then killed by SIGPIPE instead of
getting ``BrokenPipeError``, and Ctrl-C no longer raises ``KeyboardInterrupt``. The mesh
scripts of ``meshes/`` and the tests start Gmsh through :func:`initialize_gmsh`.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence


def initialize_gmsh(argv: Sequence[str] = ()) -> None:
    """``gmsh.initialize(argv, interruptible=False)``, then SIGPIPE ignored again, as Python
    starts.

    Parameters
    ----------
    argv : sequence of str
        Gmsh command-line options, e.g. ``["-noenv"]``.

    Raises
    ------
    ImportError
        The ``gmsh`` module is not installed (``pip install fesens[gmsh]``).
    """
    import gmsh

    gmsh.initialize(list(argv), interruptible=False)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
