"""Frequency response ``(K − ω² M + i ω C) u = f`` of a linear model and its adjoint.

For a harmonic load ``f e^(iωt)`` (``f`` real) the steady response is ``u e^(iωt)`` with
``Z(ω) u = f``, ``Z = (1 + i ω c_K) K + (−ω² + i ω c_M) M`` for Rayleigh damping
``C = c_M M + c_K K``. :class:`HarmonicAnalysis` (the shape of
:mod:`fesens.fem.analysis.base`; :func:`harmonic_response`, the function it was, stays for
one release and warns) runs the traced program::

    K_ff = assemble(c_k(θ), X),  M_ff = assemble(ρ t, X),  f = Σ_L m_L f_L(X)
    U = harmonic_solve(K_ff, M_ff, c_M, c_K, ω, f_f)        one primitive, all frequencies

(its inputs named, :class:`HarmonicInputs`, so that its adjoint asks for them by name)

and returns the real and imaginary parts of ``u`` as real traced arrays, so an objective
(the dynamic compliance ``|f · u|`` of Olhoff & Du, ``Re(f̄ · u)``, an amplitude) is ordinary
real traced code. With ``x̄, ȳ`` the cotangents of ``Re u`` and ``Im u``, ``dJ = Re(gᵀ du)``
for ``g = x̄ − i ȳ``; ``Z`` is complex *symmetric* (``Zᵀ = Z``, not Hermitian), so the
multiplier solves ``Zᵀ λ = g`` with the forward factorization (transposed, not conjugated)
and

    f̄ = Re λ,    K̄ = −Re((1 + i ω c_K) λ uᵀ),    M̄ = −Re((−ω² + i ω c_M) λ uᵀ)
    c̄_K = −Re(i ω λᵀ K u),    c̄_M = −Re(i ω λᵀ M u),    ω̄ = −Re(λᵀ (−2 ω M + i C) u)

(matrix cotangents on the pattern, summed over the frequencies, pulled back by the assembly
primitives to the per-cell fields and the node coordinates).

The factorization is SuperLU's on the complex matrix (:func:`scipy.sparse.linalg.splu`,
``MMD_AT_PLUS_A`` ordering: ``Z``'s pattern is symmetric). Measured against the real
``2n × 2n`` block form ``[[Re Z, −Im Z], [Im Z, Re Z]]`` on plane-stress quad4 meshes (2
cores): 6 560 dofs, 0.09 s both, but the block form's factors hold 2.5 M reals against
0.63 M complex entries and solve 5× slower; 25 920 dofs, 1.0–1.3 s complex against
0.6–0.9 s block, factors 3.3 M complex (53 MB) against 13.1 M real (105 MB), solves
23 ms against 26 ms. The complex form needs half the memory for comparable time, and the
adjoint's transposed solve is one call. The project's backends are real (CHOLMOD needs a
positive definite matrix; ``Z`` is indefinite above the first resonance), hence SuperLU here.

**Resonance.** With Rayleigh damping the modes ``φ_i`` of ``K φ = λ M φ`` diagonalize
``Z``: ``Z φ_i = z_i M φ_i``, ``z_i = λ_i (1 + i ω c_K) − ω² + i ω c_M``, and the response
of mode ``i`` is its load over ``z_i``. An undamped model driven at an eigenfrequency has
``z_i = 0``: ``Z`` is singular, and a factorization that does not fail returns a response
of round-off (``|f · u|`` of 1e13 where the static value is 1e-7). Each frequency's
factorization is therefore checked by two steps of inverse iteration ``y ← Z⁻¹ M y`` from a
fixed random start: ``‖y‖_M / ‖Z⁻¹ M y‖_M ≥ min_i |z_i|`` for any ``y`` (``Z⁻¹ M`` has the
eigenvalues ``1 / z_i`` on the M-orthonormal ``φ_i``), and it reaches ``min_i |z_i|`` in one
or two steps when that is far smaller than the others, as at a resonance. The frequency is
refused (:class:`~fesens.errors.ResonanceError`) when this bound is at most
``2 τ ω²``, which certifies a mode with ``|λ_i − ω²| ≤ 2 τ ω²`` (``ω`` within ``τ``,
relative, of its eigenfrequency) and a damping ratio ``(c_M / ω_i + c_K ω_i) / 2`` below
``τ``: an amplification of more than ``1 / (2 τ)`` over its static response.
:data:`RESONANCE_TOLERANCE` ``τ = 1e-4`` lies far below the discretization error of an
eigenfrequency on any practical mesh (``O(h²)``, 1e-3 and more), so the refused response
is a number of the mesh, not of the structure; a damping ratio of 1e-4 or more (every
physical one) always runs, resonance included.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from fesens.ad.numpy_wrapper import getval, untake
from fesens.ad.sparse import PatternMatrix
from fesens.ad.traced import Traced
from fesens.ad.tree_primitive import defvjp_tree, tree_primitive
from fesens.errors import NonFiniteError, ResonanceError, SingularMatrixError
from fesens.fem.analysis.base import Analysis
from fesens.fem.transient.run_inputs import rayleigh_damping
from fesens.fem.transient.steps import check_same_pattern

#: ``τ``: a driving frequency within ``τ`` (relative) of an eigenfrequency whose damping
#: ratio is below ``τ`` is refused (see the module docstring).
RESONANCE_TOLERANCE = 1e-4
#: Inverse-iteration steps of the resonance check of each frequency.
_RESONANCE_ITERATIONS = 2


@dataclass(frozen=True)
class HarmonicResponse:
    """The steady response to a harmonic load at several driving frequencies.

    Attributes
    ----------
    omegas : array
        Angular driving frequencies ``(n_omegas,)``.
    real, imag : array
        ``Re u`` and ``Im u`` on all dofs, ``(n_omegas, n_dofs)`` (zero at Dirichlet dofs);
        traced when an input was.
    force : array
        The load amplitude ``f`` on all dofs, ``(n_dofs,)`` (real).
    """

    omegas: object
    real: object
    imag: object
    force: object

    def compliance(self):
        """Dynamic compliance ``|f · u|`` per frequency, ``(n_omegas,)`` (Olhoff & Du)."""
        return np.sqrt((self.real @ self.force) ** 2 + (self.imag @ self.force) ** 2)

    def amplitude(self, dofs):
        """``|u_d|`` at the dofs ``dofs`` ``(k,)``, ``(n_omegas, k)``."""
        return np.sqrt(self.real[:, dofs] ** 2 + self.imag[:, dofs] ** 2)

    def magnitudes(self, functional):
        """``|j(u)| = |j(Re u) + i j(Im u)|`` per frequency, ``(n_omegas,)``, of a real
        functional ``j`` linear in the field (``u ↦ f · u``, a value at a dof)."""
        return np.stack([np.sqrt(functional(self.real[i]) ** 2
                                 + functional(self.imag[i]) ** 2)
                         for i in range(np.size(getval(self.omegas)))])


class HarmonicAnalysis(Analysis):
    """The steady response ``u`` of ``(K − ω² M + i ω C) u = f`` of a linear model.

    Parameters
    ----------
    model : LinearModel
        Its mesh, homogeneous Dirichlet conditions, load terms (the amplitude ``f``) and
        parameters.
    lumped : bool
        HRZ-lumped mass.
    resonance_tolerance : float
        ``τ`` of the resonance check (module docstring), ``>= 0``; 0 turns it off.

    Raises
    ------
    ValueError
        A negative ``resonance_tolerance``.
    """

    def __init__(self, model, *, lumped: bool = False,
                 resonance_tolerance: float = RESONANCE_TOLERANCE):
        if not np.isfinite(resonance_tolerance) or resonance_tolerance < 0:
            raise ValueError(f"resonance_tolerance must be a finite number >= 0, got "
                             f"{resonance_tolerance!r}")
        super().__init__(model)
        self.lumped = lumped
        self.resonance_tolerance = float(resonance_tolerance)

    def run(self, omegas, *, loads: dict | None = None, density=1.0, damping=(0.0, 0.0),
            points=None, **parameters) -> HarmonicResponse:
        """The response for each ``ω`` of ``omegas`` (traced when an input is).

        Parameters
        ----------
        omegas : array_like
            Angular driving frequencies ``(n_omegas,)``, ``>= 0``; differentiable.
        loads : dict, optional
            Magnitude of each named load term (default 1); differentiable.
        density : float or array_like
            Mass density, ``()`` or per cell ``(n_cells,)``; differentiable.
        damping : (float, float)
            Rayleigh coefficients ``(c_M, c_K)``, ``C = c_M M + c_K K``, ``>= 0``;
            differentiable.
        points : array_like, optional
            Node coordinates ``(n_points, dim)`` (shape sensitivities).
        **parameters
            The model's stiffness parameters.

        Returns
        -------
        HarmonicResponse

        Raises
        ------
        ValueError
            Non-zero prescribed values, a bad damping pair, negative or non-1D ``omegas``.
        ResonanceError
            A driving frequency within ``τ`` of an eigenfrequency of a mode whose damping
            ratio is below ``τ`` (naming both frequencies).
        SingularMatrixError
            A matrix that cannot be factorized (an exact resonance, dofs with neither
            stiffness nor mass).
        """
        model = self.model
        model.check_parameters(parameters)
        points = model.checked_points(points)
        if model.constrained_dofs.size and np.any(model.prescribed_values()):
            raise ValueError("a harmonic analysis takes homogeneous Dirichlet conditions "
                             "only; fix the dofs at zero and apply a support motion as a load")
        raw = np.asarray(getval(omegas), dtype=float)
        if raw.ndim != 1 or raw.size == 0:
            raise ValueError(f"omegas must be a 1D array of frequencies, got shape "
                             f"{raw.shape}")
        if not np.all(np.isfinite(raw)) or np.any(raw < 0):
            raise NonFiniteError(f"omegas must be finite and >= 0, got {raw.tolist()}")
        mass_damping, stiffness_damping = rayleigh_damping(damping)
        K = model.stiffness("ff", points=points, **parameters)
        M = model.mass(density, lumped=self.lumped, points=points)
        check_same_pattern(getval(K), getval(M))
        f = model.load_vector(loads, points)
        extra = model.parameter_load(points, **parameters)
        if extra is not None:
            f = f + extra
        free, n_dofs = model.free_dofs, model.dofmap.n_dofs
        run = _HarmonicRun(self.resonance_tolerance)
        inputs = HarmonicInputs(K, M, mass_damping, stiffness_damping, omegas, f[free])
        run.keep = any(isinstance(x, Traced) for x in inputs)
        U = harmonic_solve(run, inputs)
        n_omegas = raw.size
        real = untake(U[:, 0, :].T, free, (n_dofs, n_omegas), unique=True).T
        imag = untake(U[:, 1, :].T, free, (n_dofs, n_omegas), unique=True).T
        return HarmonicResponse(omegas, real, imag, f)


def harmonic_response(model, omegas, *, loads: dict | None = None, density=1.0,
                      damping=(0.0, 0.0), lumped: bool = False, points=None,
                      resonance_tolerance: float = RESONANCE_TOLERANCE,
                      **parameters) -> HarmonicResponse:
    """Deprecated: ``HarmonicAnalysis(model, lumped=..., resonance_tolerance=...).run(omegas,
    loads=..., density=..., damping=..., points=..., **parameters)``
    (:class:`HarmonicAnalysis`)."""
    warnings.warn("harmonic_response(model, omegas, ...) is deprecated: use fesens.fem."
                  "transient.HarmonicAnalysis(model, lumped=, resonance_tolerance=).run("
                  "omegas, loads=, density=, damping=, points=, **parameters)",
                  DeprecationWarning, stacklevel=2)
    return HarmonicAnalysis(model, lumped=lumped, resonance_tolerance=resonance_tolerance).run(
        omegas, loads=loads, density=density, damping=damping, points=points, **parameters)


class _HarmonicRun:
    """One call: the factorization of each frequency, kept for the adjoint when traced,
    and the resonance check's tolerance."""

    def __init__(self, tolerance: float = RESONANCE_TOLERANCE):
        self.keep = False
        self.tolerance = tolerance
        self.factors: list = []


def _dynamic_stiffness(K: PatternMatrix, M: PatternMatrix, mass_damping: float,
                       stiffness_damping: float, omega: float):
    """``Z(ω)`` as a complex CSC matrix (on ``K``'s pattern)."""
    data = ((1 + 1j * omega * stiffness_damping) * K.data
            + (-omega ** 2 + 1j * omega * mass_damping) * M.data)
    p = K.pattern
    return sp.csr_matrix((data, p.indices, p.indptr), shape=p.shape).tocsc()


def _factorized(K, M, mass_damping, stiffness_damping, omega: float):
    try:
        # Z's pattern is symmetric: minimum degree on Zᵀ + Z keeps the fill lowest
        return splu(_dynamic_stiffness(K, M, mass_damping, stiffness_damping, omega),
                    permc_spec="MMD_AT_PLUS_A")
    except RuntimeError as exc:
        raise SingularMatrixError(
            f"K − ω² M + i ω C is singular at ω = {omega!r} ({exc}): a resonance of an "
            "undamped model, or dofs with neither stiffness nor mass (cells of zero "
            "scale and density); move ω, add damping or give those cells a floor") from None


class HarmonicInputs(NamedTuple):
    """The inputs of :func:`harmonic_solve`, each of which may be traced."""

    stiffness: PatternMatrix      #: ``K_ff``
    mass: PatternMatrix           #: ``M_ff``
    mass_damping: float           #: ``c_M``
    stiffness_damping: float      #: ``c_K``
    omegas: np.ndarray            #: ``ω`` ``(n_omegas,)``
    forces: np.ndarray            #: ``f_f`` ``(n_free,)``


def _harmonic_solve(run: _HarmonicRun, inputs: HarmonicInputs):
    """``[Re u, Im u]`` per frequency, ``(n_omegas, 2, n_free)``."""
    K, M, mass_damping, stiffness_damping = inputs[:4]
    omegas = np.asarray(inputs.omegas, dtype=float)
    f = np.asarray(inputs.forces, dtype=float)
    out = np.empty((omegas.size, 2, f.size))
    run.factors = []
    for k, omega in enumerate(omegas):
        lu = _factorized(K, M, float(mass_damping), float(stiffness_damping), float(omega))
        if run.tolerance > 0 and omega > 0:
            _check_resonance(lu, K, M, float(omega), k, run.tolerance)
        u = lu.solve(f.astype(complex))
        if not np.all(np.isfinite(u)):
            raise NonFiniteError(f"the harmonic response at ω = {omega!r} contains NaN or "
                                 "infinity")
        out[k, 0], out[k, 1] = u.real, u.imag
        if run.keep:
            run.factors.append(lu)
    return out


def _check_resonance(lu, K: PatternMatrix, M: PatternMatrix, omega: float, index: int,
                     tolerance: float) -> None:
    """Refuse ``ω`` when inverse iteration with ``Z``'s factorization ``lu`` bounds some
    ``|z_i|`` by ``2 τ ω²`` (see the module docstring), naming the nearest eigenfrequency
    (the Rayleigh quotient of the last iterate)."""
    M_csr = M.tocsr()
    # a fixed start, so that a run's bits do not depend on a global random state, with a
    # component on every mode, which a load orthogonal to the resonant one would lack
    y = np.random.default_rng(0).standard_normal(M_csr.shape[0]).astype(complex)
    y /= np.sqrt(np.real(np.vdot(y, M_csr @ y)))
    bound = np.inf
    for _ in range(_RESONANCE_ITERATIONS):
        w = lu.solve(M_csr @ y)
        size = np.sqrt(np.real(np.vdot(w, M_csr @ w)))
        if not np.isfinite(size) or size == 0.0:
            bound = 0.0  # Z⁻¹ overflows: singular to working precision
            break
        bound, y = 1.0 / size, w / size
    if bound > 2 * tolerance * omega ** 2:
        return
    eigenvalue = float(np.real(np.vdot(y, K.tocsr() @ y))) if bound > 0 else omega ** 2
    nearest = np.sqrt(max(eigenvalue, 0.0))
    distance = abs(omega - nearest) / nearest if nearest > 0 else np.inf
    hertz = nearest / (2 * np.pi)
    raise ResonanceError(
        f"the driving frequency {omega / (2 * np.pi):.6g} Hz (ω = {omega:.6g}, frequency "
        f"{index}) is a resonance: within {distance:.2g} (relative) of the eigenfrequency "
        f"{hertz:.6g} Hz (ω = {nearest:.6g}) of a mode whose damping ratio is below "
        f"{tolerance:g}, where K − ω² M + i ω C is singular or nearly so and the response "
        f"is round-off; drive more than {tolerance:g} (relative) away from {hertz:.6g} Hz, "
        f"or add damping (a ratio of at least {tolerance:g})",
        omega=omega, index=index, eigenfrequency=hertz)


harmonic_solve = tree_primitive(_harmonic_solve, "harmonic_solve")


def _harmonic_solve_vjp(traced: HarmonicInputs, U, run: _HarmonicRun,
                        inputs: HarmonicInputs):
    K, M, mass_damping, stiffness_damping, omegas, f = inputs

    def pullback(G):
        if any(isinstance(x, Traced) for x in (G, *inputs)):
            raise NotImplementedError("second derivatives through harmonic_solve are not "
                                      "available; differentiate once")
        G = np.asarray(G, dtype=float)
        cM, cK = float(mass_damping), float(stiffness_damping)
        pattern = K.pattern
        K_csr, M_csr = K.tocsr(), M.tocsr()
        K_bar, M_bar = np.zeros(pattern.nnz), np.zeros(pattern.nnz)
        cM_bar = cK_bar = 0.0
        omega_bar = np.zeros(np.size(omegas))
        f_bar = np.zeros(np.size(f))
        for k, omega in enumerate(np.asarray(omegas, dtype=float)):
            lu = run.factors[k] if run.factors else _factorized(K, M, cM, cK, float(omega))
            lam = lu.solve(G[k, 0] - 1j * G[k, 1], trans="T")  # Zᵀ λ = g, not conjugated
            u = U[k, 0] + 1j * U[k, 1]
            outer = pattern.outer(lam, u)
            K_bar -= np.real((1 + 1j * omega * cK) * outer)
            M_bar -= np.real((-omega ** 2 + 1j * omega * cM) * outer)
            lam_Ku, lam_Mu = lam @ (K_csr @ u), lam @ (M_csr @ u)
            cK_bar -= float(np.real(1j * omega * lam_Ku))
            cM_bar -= float(np.real(1j * omega * lam_Mu))
            omega_bar[k] = -np.real((-2 * omega + 1j * cM) * lam_Mu + 1j * cK * lam_Ku)
            f_bar += lam.real
        return HarmonicInputs(K_bar, M_bar, cM_bar, cK_bar, omega_bar, f_bar)

    return pullback


defvjp_tree(harmonic_solve, _harmonic_solve_vjp)
