"""How much memory a sparse Cholesky factor needs, estimated before it is built.

The factor's fill follows the nested-dissection bounds for grids (George 1973; Lipton,
Rose and Tarjan 1979): ``O(n log n)`` entries in 2D and ``O(n^(4/3))`` in 3D, for ``n``
unknowns; the constants were fitted to the peak RSS of a solve on 200², 400² quad4 and
16³, 28³ hex8 meshes (the estimate is 75-95 % of it), so it errs towards letting a run
through. :mod:`fesens.config.memory` (generated meshes in config files) and the solver
choice of a model (:mod:`fesens.fem.model.solvers`) both use it.
"""

from __future__ import annotations

import math

#: Factor entries per unknown: ``C2 log2 n`` in 2D, ``C3 n^(1/3)`` in 3D; 12 bytes each.
FILL_2D, FILL_3D, FACTOR_ENTRY = 12.0, 24.0, 12


def factor_bytes(unknowns: float, dim: int) -> float:
    """Estimated bytes of the sparse Cholesky factor of a ``dim``-D grid problem with
    ``unknowns`` unknowns (a float, so absurd sizes cannot overflow)."""
    unknowns = float(unknowns)
    fill = (FILL_2D * math.log2(max(unknowns, 2.0)) if dim <= 2
            else FILL_3D * unknowns ** (1.0 / 3.0))
    return unknowns * fill * FACTOR_ENTRY


def available_bytes() -> float | None:
    """Memory the machine can give a new allocation now (``MemAvailable`` of
    ``/proc/meminfo``, or psutil's ``available``); None where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        return None
    return float(psutil.virtual_memory().available)
