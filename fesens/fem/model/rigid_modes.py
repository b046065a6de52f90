"""Rigid-body motions left free by a set of Dirichlet conditions.

A linear-elastic stiffness matrix is singular exactly when some rigid-body motion
``r = t + ω × x`` vanishes on every constrained dof (for a connected mesh). With the rigid
modes as columns of ``R`` (``(n_dofs, n_modes)``), the free motions are the null space of
``R[constrained]``. Coordinates are centred on the constrained nodes, so a rotation about
them is a single named mode; modes that are free on their own are named, and any further
free combination is reported as such.
"""

from __future__ import annotations

import numpy as np

_AXES = "xyz"


def rigid_body_modes(points: np.ndarray, centre: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Rigid-body modes, rotations about ``centre``, on normalised coordinates.

    Returns
    -------
    modes : numpy.ndarray
        ``(n_points * dim, n_modes)``, interleaved dofs; 3 modes in 2D, 6 in 3D.
    names : list of str
    """
    n, dim = points.shape
    x = points - centre
    x = x / max(np.abs(x).max(), 1e-300)
    columns, names = [], []
    for i in range(dim):
        t = np.zeros((n, dim))
        t[:, i] = 1.0
        columns.append(t.ravel())
        names.append(f"translation in {_AXES[i]}")
    rotation_axes = [2] if dim == 2 else [0, 1, 2]
    for axis in rotation_axes:
        i, j = [k for k in range(3) if k != axis][:2]
        r = np.zeros((n, dim))
        r[:, i] = -x[:, j]
        r[:, j] = x[:, i]
        columns.append(r.ravel())
        names.append(f"rotation about {_AXES[axis]}")
    return np.stack(columns, axis=1), names


def free_rigid_modes(points: np.ndarray, constrained: np.ndarray, n_components: int) -> list[str]:
    """Names of the rigid-body motions that no Dirichlet condition prevents.

    Parameters
    ----------
    points : numpy.ndarray
        ``(n_points, dim)``.
    constrained : numpy.ndarray
        Global ids of the constrained dofs.
    n_components : int
        1 (scalar field: the free mode is a uniform value) or ``dim`` (elasticity).
    """
    if n_components == 1:
        return [] if constrained.size else ["a uniform shift of the field (nothing is fixed)"]
    dim = points.shape[1]
    nodes = np.unique(constrained // dim)
    centre = points[nodes].mean(axis=0) if nodes.size else points.mean(axis=0)
    modes, names = rigid_body_modes(points, centre)
    restricted = modes[constrained]
    if restricted.shape[0] == 0:
        return names
    singular_values = np.linalg.svd(restricted, compute_uv=False)
    rank = int(np.sum(singular_values > 1e-8 * max(singular_values.max(), 1.0)))
    n_free = len(names) - rank
    free = [name for name, column in zip(names, restricted.T, strict=True)
            if np.linalg.norm(column) < 1e-8 * np.sqrt(restricted.shape[0])]
    if len(free) < n_free:
        free.append(f"{n_free - len(free)} combined translation/rotation motion(s)")
    return free
