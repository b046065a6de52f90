"""Sigmund's 99-line topology optimization code, compliant-mechanism version, in numpy.

Written from the paper, independently of fesens (numpy and scipy only): O. Sigmund, "A
99 line topology optimization code written in Matlab", Struct. Multidisc. Optim. 21
(2001) 120-127, §5.3 (the synthesis of compliant mechanisms; the force inverter), and
Bendsøe & Sigmund, Topology Optimization (2003), §2.6. The code's names are kept (``lk``,
``check``, ``OC``, ``FE``, ``top``), its column-wise node numbering from the top-left
corner (node ``(nely+1)(i−1)+j`` is row ``j`` from the top of column ``i``; dofs ``2n−1``
and ``2n`` its ``x`` and ``y``) and its element matrix of unit-square quads with ``y``
pointing down, the element's nodes ordered top-left, top-right, bottom-right,
bottom-left. Only the loops over elements are vectorised.

The mechanism version, as the paper gives it:

* ``lk()``: the 8x8 element stiffness matrix of the 99-line code, ``E = 1``, ``nu = 0.3``;
  the element's modulus is ``x^penal``, with ``x ≥ 0.001`` kept by the OC update (no
  separate ``E_min``).
* ``din = 1`` (the ``x`` dof of the top-left node), ``dout = 2 nelx (nely+1) + 1`` (the
  ``x`` dof of the top-right node); springs ``K(din,din) += 0.1``, ``K(dout,dout) +=
  0.1``; two load cases ``F(din,1) = 1`` (the input force) and ``F(dout,2) = −1`` (the
  adjoint's, a unit dummy load at the output).
* ``fixeddofs = union(2:2(nely+1):2(nely+1)(nelx+1), 2(nely+1):−1:2(nely+1)−3)``: the
  ``y`` dofs of the top row (the symmetry line is the top edge) and both dofs of the two
  bottom nodes of the left edge.
* The objective is the output displacement ``c = U(dout,1)``, minimized; its
  sensitivity ``dc = penal x^(penal−1) Ue1ᵀ KE Ue2`` (``U(:,2)`` is minus the adjoint).
* ``check()``: the sensitivity filter ``dcn_e = Σ_i w_ei x_i dc_i / (x_e Σ_i w_ei)``,
  ``w_ei = max(0, rmin − dist(e,i))`` over the neighbours within ``floor(rmin)`` cells.
* ``OC()``: ``move = 0.1``, bisection on ``l1 = 0``, ``l2 = 1e5`` while
  ``(l2 − l1)/(l2 + l1) > 1e-4``, ``xnew = max(0.001, max(x − move, min(1, min(x +
  move, x·max(1e-10, −dc/lmid)^0.3))))``, ``l1 = lmid`` while ``Σ xnew > volfrac·nelx·nely``.
* The loop starts from ``x = volfrac`` and stops when the largest change of the design
  ``max|x − xold|`` is no longer above 0.01; ``top(40, 20, 0.3, 3.0, 1.2)``.

Details reconstructed rather than read (written from memory of the paper, which prints
only the lines that change; the rest is the 99-line code's): the bisection's relative test
and the ``1e-10`` floor of §5.3; the printed objective ``c = U(dout,1)`` (only its
sensitivity drives the algorithm); Matlab's arithmetic where no multiplier meets the volume
(the inverter's first iterations: ``l2`` halves to 0, ``0/0`` ends the loop, the last
update divides by 0 and Matlab's ``max`` drops the NaN), emulated with numpy's ``fmax``; the
linear solve by scipy's sparse LU instead of Matlab's backslash (the same numbers to
round-off); an iteration limit ``max_iter`` (the code has none) to run a few iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

#: The mechanism version's spring stiffnesses at the input and output dofs.
K_IN = K_OUT = 0.1
#: The OC update's move limit, damping exponent and lower bound of ``x``.
MOVE, DAMPING, X_MIN = 0.1, 0.3, 0.001


def lk() -> np.ndarray:
    """The 99-line code's element stiffness matrix ``(8, 8)`` (``E = 1``, ``nu = 0.3``)."""
    E, nu = 1.0, 0.3
    k = [1 / 2 - nu / 6, 1 / 8 + nu / 8, -1 / 4 - nu / 12, -1 / 8 + 3 * nu / 8,
         -1 / 4 + nu / 12, -1 / 8 - nu / 8, nu / 6, 1 / 8 - 3 * nu / 8]
    order = [[0, 1, 2, 3, 4, 5, 6, 7],
             [1, 0, 7, 6, 5, 4, 3, 2],
             [2, 7, 0, 5, 6, 3, 4, 1],
             [3, 6, 5, 0, 7, 2, 1, 4],
             [4, 5, 6, 7, 0, 1, 2, 3],
             [5, 4, 3, 2, 1, 0, 7, 6],
             [6, 3, 4, 1, 2, 7, 0, 5],
             [7, 2, 1, 4, 3, 6, 5, 0]]
    return E / (1 - nu**2) * np.array(k)[np.array(order)]


def element_dofs(nelx: int, nely: int) -> np.ndarray:
    """``(nely, nelx, 8)`` 0-based dofs of each element ``(ely, elx)``, the code's ``edof``
    ``[2n1−1 2n1 2n2−1 2n2 2n2+1 2n2+2 2n1+1 2n1+2]`` (1-based)."""
    ely, elx = np.meshgrid(np.arange(1, nely + 1), np.arange(1, nelx + 1), indexing="ij")
    n1 = (nely + 1) * (elx - 1) + ely
    n2 = (nely + 1) * elx + ely
    one_based = np.stack([2 * n1 - 1, 2 * n1, 2 * n2 - 1, 2 * n2, 2 * n2 + 1, 2 * n2 + 2,
                          2 * n1 + 1, 2 * n1 + 2], axis=-1)
    return one_based - 1


def ports(nelx: int, nely: int) -> tuple[int, int]:
    """0-based ``(din, dout)``."""
    return 0, 2 * nelx * (nely + 1)


def fixed_dofs(nelx: int, nely: int) -> np.ndarray:
    """0-based ``union(2:2(nely+1):2(nely+1)(nelx+1), 2(nely+1):−1:2(nely+1)−3)``."""
    symmetry = np.arange(2, 2 * (nely + 1) * (nelx + 1) + 1, 2 * (nely + 1))
    clamped = np.arange(2 * (nely + 1), 2 * (nely + 1) - 4, -1)
    return np.union1d(symmetry, clamped) - 1


def FE(nelx: int, nely: int, x: np.ndarray, penal: float) -> np.ndarray:
    """``U`` ``(n_dofs, 2)``: the two load cases solved with the springs."""
    KE = lk()
    n = 2 * (nelx + 1) * (nely + 1)
    edof = element_dofs(nelx, nely).reshape(-1, 8)
    values = (x.reshape(-1)[:, None, None] ** penal) * KE
    K = sp.coo_matrix((values.ravel(), (np.repeat(edof, 8, axis=1).ravel(),
                                        np.tile(edof, (1, 8)).ravel())), shape=(n, n)).tocsc()
    din, dout = ports(nelx, nely)
    springs = np.zeros(n)
    springs[din] += K_IN
    springs[dout] += K_OUT
    K = (K + sp.diags(springs)).tocsc()
    F = np.zeros((n, 2))
    F[din, 0] = 1.0
    F[dout, 1] = -1.0
    free = np.setdiff1d(np.arange(n), fixed_dofs(nelx, nely))
    U = np.zeros((n, 2))
    U[free] = splu(K[free][:, free].tocsc()).solve(F[free])
    return U


def check(nelx: int, nely: int, rmin: float, x: np.ndarray, dc: np.ndarray) -> np.ndarray:
    """The sensitivity filter ``(nely, nelx)``: ``Σ w x dc / (x Σ w)``."""
    reach = int(np.floor(rmin))
    numerator = np.zeros((nely, nelx))
    total = np.zeros((nely, nelx))
    for dk in range(-reach, reach + 1):  # k − i, over the columns
        for dl in range(-reach, reach + 1):  # l − j, over the rows
            fac = max(0.0, rmin - np.hypot(dk, dl))
            # element (j, i) reads (l, k) = (j + dl, i + dk) where that lies in the mesh
            rows_to = slice(max(0, -dl), nely - max(0, dl))
            rows_from = slice(max(0, dl), nely - max(0, -dl))
            cols_to = slice(max(0, -dk), nelx - max(0, dk))
            cols_from = slice(max(0, dk), nelx - max(0, -dk))
            total[rows_to, cols_to] += fac
            numerator[rows_to, cols_to] += fac * (x * dc)[rows_from, cols_from]
    return numerator / (x * total)


def OC(nelx: int, nely: int, x: np.ndarray, volfrac: float, dc: np.ndarray) -> np.ndarray:
    """The mechanism version's optimality-criteria update ``(nely, nelx)``."""
    l1, l2 = np.float64(0.0), np.float64(1e5)
    xnew = x
    # Matlab's arithmetic: when no multiplier meets the volume (the fullest design the move
    # limit allows is below it, as in the first iterations of the inverter), l2 halves down
    # to 0, the test becomes 0/0 = NaN and ends the loop, and the last update divides by
    # lmid = 0 (±Inf; Matlab's max ignores a NaN, as np.fmax does)
    while _open(l1, l2):
        lmid = 0.5 * (l2 + l1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            factor = np.fmax(1e-10, -dc / lmid) ** DAMPING
            xnew = np.maximum(X_MIN, np.maximum(x - MOVE, np.minimum(1.0, np.minimum(
                x + MOVE, x * factor))))
        if xnew.sum() - volfrac * nelx * nely > 0:
            l1 = lmid
        else:
            l2 = lmid
    return xnew


def _open(l1: np.float64, l2: np.float64) -> bool:
    """Matlab's ``(l2 − l1)/(l2 + l1) > 1e-4``: False once it is ``0/0 = NaN``."""
    with np.errstate(invalid="ignore"):
        return bool((l2 - l1) / (l2 + l1) > 1e-4)


@dataclass
class Run:
    """What :func:`top` returns.

    Attributes
    ----------
    u_out : numpy.ndarray
        ``(iterations,)`` the output displacement ``U(dout,1)`` at each iteration's design
        (before its update).
    change : numpy.ndarray
        ``(iterations,)`` ``max|x − xold|`` of each update.
    x : numpy.ndarray
        ``(nely, nelx)`` the final design (after the last update).
    """

    u_out: np.ndarray
    change: np.ndarray
    x: np.ndarray

    @property
    def iterations(self) -> int:
        return len(self.u_out)


def top(nelx: int, nely: int, volfrac: float, penal: float, rmin: float,
        max_iter: int | None = None) -> Run:
    """The main loop: ``top(40, 20, 0.3, 3.0, 1.2)`` is the paper's inverter."""
    x = np.full((nely, nelx), volfrac)
    KE = lk()
    edof = element_dofs(nelx, nely)
    _, dout = ports(nelx, nely)
    u_out, changes = [], []
    change = 1.0
    while change > 0.01 and (max_iter is None or len(u_out) < max_iter):
        xold = x
        U = FE(nelx, nely, x, penal)
        Ue1, Ue2 = U[edof, 0], U[edof, 1]  # (nely, nelx, 8)
        u_out.append(U[dout, 0])
        dc = penal * x ** (penal - 1) * np.einsum("jia,ab,jib->ji", Ue1, KE, Ue2)
        dc = check(nelx, nely, rmin, x, dc)
        x = OC(nelx, nely, x, volfrac, dc)
        change = float(np.max(np.abs(x - xold)))
        changes.append(change)
    return Run(np.array(u_out), np.array(changes), x)


def u_out_of(nelx: int, nely: int, x: np.ndarray, penal: float) -> float:
    """The output displacement ``U(dout,1)`` of the design ``x`` ``(nely, nelx)``."""
    return float(FE(nelx, nely, x, penal)[ports(nelx, nely)[1], 0])
