"""top3d: Liu & Tovar's 3D compliance topology optimization, rewritten in numpy/scipy.

K. Liu and A. Tovar, "An efficient 3D topology optimization code written in Matlab",
Struct Multidisc Optim 50:1175–1196 (2014), the code ``top3d.m`` of its appendix, called in
the paper as ``top3d(60,20,4,0.3,3,1.5)``. Reconstructed from that code, statement by
statement (MATLAB's 1-based numbering turned 0-based), independent of fesens:

* Mesh: ``nelx × nely × nelz`` unit hex8 cells. Node ``(i, j, k)`` (``i`` along x, ``j``
  along y measured upwards, ``k`` along z) is ``k (nelx+1)(nely+1) + i (nely+1) + (nely − j)``
  (top3d numbers each column of nodes from the top); its dofs are ``3n, 3n+1, 3n+2`` (x, y,
  z). Element ``(row r from the top, column i, layer k)`` is ``k nelx nely + i nely + r``;
  its dofs ``edofMat`` follow top3d's offsets ``[0 1 2, 3nely+[3 4 5 0 1 2], −3 −2 −1]``
  and the same one layer up, i.e. the corners (0,0,0), (1,0,0), (1,1,0), (0,1,0), then z+1.
* Element stiffness ``lk_H8(nu)``: the closed form of the trilinear hex8 on a unit cube
  with 2×2×2 Gauss integration, ``E = 1`` and the factor ``1/((1+ν)(1−2ν))``. It is computed
  here by that quadrature (exact for the cube); :data:`LK_H8_COEFFICIENTS` is the paper's
  ``k = 1/144 · Aᵀ [1; ν]`` table, whose 14 values are the distinct magnitudes of the
  entries (checked by the tests).
* Loads (``USER-DEFINED LOAD DOFs``): ``[il,jl,kl] = meshgrid(nelx, 0, 0:nelz)``, the
  ``nelz + 1`` nodes of the bottom edge (y = 0) of the right face (x = nelx), each with
  ``F = −1`` in y (dof ``3n − 1`` in MATLAB's numbering).
* Supports (``USER-DEFINED SUPPORT FIXED DOFs``): ``meshgrid(0, 0:nely, 0:nelz)``, every
  node of the left face x = 0 clamped (all three dofs).
* Material: ``E0 = 1``, ``Emin = 1e-9``, ``ν = 0.3``; modified SIMP
  ``E = Emin + x^p (E0 − Emin)``; ``K = (K + Kᵀ)/2``, solved on the free dofs (top3d: the
  backslash; here SuperLU, ``scipy.sparse.linalg.spsolve``).
* Density filter: cone weights ``max(0, rmin − ‖e1 − e2‖)`` between cell indices within
  ``ceil(rmin) − 1`` per axis, ``xPhys = H x / Hs``; the compliance and volume sensitivities
  filtered as ``H (dc / Hs)``.
* OC: ``l1 = 0``, ``l2 = 1e9``, move 0.2, bisection while ``(l2 − l1)/(l1 + l2) > 1e-3``,
  ``xnew = max(0, max(x − move, min(1, min(x + move, x sqrt(−dc/dv/lmid)))))`` (damping
  1/2, lower bound 0), ``l1 = lmid`` while ``sum(xPhys) > volfrac · nele``.
* Stop: ``change = max|xnew − x| < tolx = 0.01`` or ``maxloop = 200`` iterations; the
  compliance printed at an iteration is the one of the design evaluated at its start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

#: ``k = 1/144 · Aᵀ [1; ν]`` of ``lk_H8`` (rows of ``A``: the constant and the ν part).
LK_H8_COEFFICIENTS = np.array([
    [32, 6, -8, 6, -6, 4, 3, -6, -10, 3, -3, -3, -4, -8],
    [-48, 0, 0, -24, 24, 0, 0, 0, 12, -12, 0, 12, 12, 12]], dtype=float)

#: The corners of top3d's hex8 in its dof order (x, y up, z), unit cube.
CORNERS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=float)


def lk_h8(nu: float) -> np.ndarray:
    """``(24, 24)`` stiffness of a unit-cube hex8 with ``E = 1`` (top3d's ``lk_H8``), dofs
    ``(x, y, z)`` of each corner of :data:`CORNERS`, by 2×2×2 Gauss quadrature."""
    lam = nu / ((1 + nu) * (1 - 2 * nu))
    mu = 1 / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[np.arange(3), np.arange(3)] += 2 * mu
    D[np.arange(3, 6), np.arange(3, 6)] = mu
    gauss = (np.array([-1.0, 1.0]) / np.sqrt(3) + 1) / 2  # on [0, 1], weights 1/2 each
    signs = 2 * CORNERS - 1
    KE = np.zeros((24, 24))
    for xi in gauss:
        for eta in gauss:
            for zeta in gauss:
                point = np.array([xi, eta, zeta])
                # trilinear N_a = Π (1 − c + (2c − 1) ξ): dN_a/dξ_d on the unit cube
                factors = 1 - CORNERS + signs * point
                dN = np.empty((8, 3))
                for d in range(3):
                    others = [o for o in range(3) if o != d]
                    dN[:, d] = signs[:, d] * factors[:, others[0]] * factors[:, others[1]]
                B = np.zeros((6, 24))
                for a in range(8):
                    gx, gy, gz = dN[a]
                    B[0, 3 * a], B[1, 3 * a + 1], B[2, 3 * a + 2] = gx, gy, gz
                    B[3, 3 * a], B[3, 3 * a + 1] = gy, gx
                    B[4, 3 * a + 1], B[4, 3 * a + 2] = gz, gy
                    B[5, 3 * a], B[5, 3 * a + 2] = gz, gx
                KE += B.T @ D @ B / 8
    return KE


def node_id(i, j, k, nelx: int, nely: int):
    """0-based top3d node number of lattice point ``(i, j, k)`` (``j`` upwards)."""
    return k * (nelx + 1) * (nely + 1) + i * (nely + 1) + (nely - j)


def element_dofs(nelx: int, nely: int, nelz: int) -> np.ndarray:
    """``(nele, 24)`` 0-based ``edofMat`` of top3d, rows in its element order."""
    nodegrd = np.arange(1, (nely + 1) * (nelx + 1) + 1).reshape(nelx + 1, nely + 1).T
    nodeids = nodegrd[:-1, :-1].flatten(order="F")
    nodeidz = np.arange(nelz) * (nely + 1) * (nelx + 1)
    nodeids = (nodeids[:, None] + nodeidz[None, :]).flatten(order="F")
    edof_vec = 3 * nodeids + 1
    layer = np.r_[0, 1, 2, 3 * nely + np.array([3, 4, 5, 0, 1, 2]), -3, -2, -1]
    offsets = np.r_[layer, 3 * (nely + 1) * (nelx + 1) + layer]
    return edof_vec[:, None] + offsets[None, :] - 1


def density_filter(nelx: int, nely: int, nelz: int, rmin: float):
    """top3d's ``H`` ``(nele, nele)`` and ``Hs`` ``(nele,)``."""
    reach = int(np.ceil(rmin)) - 1
    k1, i1, j1 = (a.ravel() for a in np.meshgrid(np.arange(nelz), np.arange(nelx),
                                                 np.arange(nely), indexing="ij"))
    rows, cols, weights = [], [], []
    for dk in range(-reach, reach + 1):
        for di in range(-reach, reach + 1):
            for dj in range(-reach, reach + 1):
                k2, i2, j2 = k1 + dk, i1 + di, j1 + dj
                inside = ((k2 >= 0) & (k2 < nelz) & (i2 >= 0) & (i2 < nelx)
                          & (j2 >= 0) & (j2 < nely))
                rows.append((k1 * nelx * nely + i1 * nely + j1)[inside])
                cols.append((k2 * nelx * nely + i2 * nely + j2)[inside])
                weights.append(np.full(inside.sum(),
                                       max(0.0, rmin - np.sqrt(di**2 + dj**2 + dk**2))))
    n = nelx * nely * nelz
    H = sp.csr_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n, n))
    return H, np.asarray(H.sum(axis=1)).ravel()


@dataclass
class Top3dResult:
    """A top3d run.

    Attributes
    ----------
    compliance : list of float
        ``c`` printed at each iteration (of the design evaluated at its start).
    change : list of float
        The largest design change of each iteration.
    x, x_phys : numpy.ndarray
        ``(nelx, nely, nelz)`` final design variables and filtered densities, indexed by the
        cell's x, y (upwards) and z position.
    """

    compliance: list
    change: list
    x: np.ndarray
    x_phys: np.ndarray

    @property
    def iterations(self) -> int:
        return len(self.compliance)


def top3d(nelx: int = 60, nely: int = 20, nelz: int = 4, volfrac: float = 0.3,
          penal: float = 3.0, rmin: float = 1.5, maxloop: int = 200,
          tolx: float = 0.01) -> Top3dResult:
    """Run top3d (see the module docstring for what it does, statement by statement)."""
    E0, Emin, nu = 1.0, 1e-9, 0.3
    nele = nelx * nely * nelz
    ndof = 3 * (nelx + 1) * (nely + 1) * (nelz + 1)
    kl = np.arange(nelz + 1)
    loaddof = 3 * node_id(nelx, 0, kl, nelx, nely) + 1
    jf, kf = (a.ravel() for a in np.meshgrid(np.arange(nely + 1), np.arange(nelz + 1)))
    fixednid = node_id(0, jf, kf, nelx, nely)
    fixeddof = np.concatenate([3 * fixednid, 3 * fixednid + 1, 3 * fixednid + 2])
    F = np.zeros(ndof)
    F[loaddof] = -1.0
    U = np.zeros(ndof)
    freedofs = np.setdiff1d(np.arange(ndof), fixeddof)
    KE = lk_h8(nu)
    edof = element_dofs(nelx, nely, nelz)
    iK = np.repeat(edof, 24, axis=1).ravel()
    jK = np.tile(edof, (1, 24)).ravel()
    H, Hs = density_filter(nelx, nely, nelz, rmin)
    x = np.full(nele, volfrac)
    x_phys = x.copy()
    history, changes = [], []
    change = 1.0
    while change > tolx and len(history) < maxloop:
        stiffness = Emin + x_phys**penal * (E0 - Emin)
        sK = (KE.ravel()[None, :] * stiffness[:, None]).ravel()
        K = sp.csc_matrix((sK, (iK, jK)), shape=(ndof, ndof))
        K = (K + K.T) / 2
        U[freedofs] = spsolve(K[freedofs][:, freedofs], F[freedofs])
        Ue = U[edof]
        ce = np.einsum("ei,ij,ej->e", Ue, KE, Ue)
        history.append(float(np.sum(stiffness * ce)))
        dc = -penal * (E0 - Emin) * x_phys**(penal - 1) * ce
        dc = H @ (dc / Hs)
        dv = H @ (np.ones(nele) / Hs)
        l1, l2, move = 0.0, 1e9, 0.2
        while (l2 - l1) / (l1 + l2) > 1e-3:
            lmid = 0.5 * (l2 + l1)
            xnew = np.maximum(0.0, np.maximum(x - move, np.minimum(
                1.0, np.minimum(x + move, x * np.sqrt(-dc / dv / lmid)))))
            x_phys = (H @ xnew) / Hs
            if x_phys.sum() > volfrac * nele:
                l1 = lmid
            else:
                l2 = lmid
        change = float(np.max(np.abs(xnew - x)))
        changes.append(change)
        x = xnew
    return Top3dResult(history, changes, _by_position(x, nelx, nely, nelz),
                       _by_position(x_phys, nelx, nely, nelz))


def _by_position(values: np.ndarray, nelx: int, nely: int, nelz: int) -> np.ndarray:
    """top3d's element vector as ``(nelx, nely, nelz)`` by position, y upwards (its rows
    count from the top)."""
    cube = values.reshape(nelz, nelx, nely)   # element k nelx nely + i nely + r
    return cube.transpose(1, 2, 0)[:, ::-1, :]


if __name__ == "__main__":
    import time

    tic = time.perf_counter()
    result = top3d()
    print(f"top3d(60,20,4,0.3,3,1.5): {result.iterations} iterations, "
          f"c = {result.compliance[-1]:.4f}, {time.perf_counter() - tic:.1f} s")
