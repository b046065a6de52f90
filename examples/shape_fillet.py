"""Shape optimization of a shoulder fillet: lower peak stress at the same area.

A flat bar steps down from width ``D = 2`` to ``d = 1`` through a circular fillet of radius
``r = 0.15 d`` (half model: symmetry on ``y = 0``, a roller on the wide end, a unit tension
``σ₀ = 1`` on the narrow end, plane stress, quad4 in four structured blocks, fine at the
fillet). The fillet concentrates the stress: the largest cell von Mises stress is
``K_t σ₀`` with ``K_t ≈ 1.95`` on this mesh.

The design is the position of the boundary nodes of the shoulder face (below
``y = 0.85 d``), of the fillet and of the first ``0.45 d`` of the narrow side; the rest of
the boundary stays. Each iteration

1. solves the model at the current node coordinates ``X`` and gets the exact gradient
   ``dJ/dX`` of the p-norm ``J = (Σ_e σ_vm,e^p)^(1/p)`` (p = 20) of the cell von Mises
   stresses (one adjoint solve: :func:`fesens.ad.value_and_grad` through
   ``model.solve(points=X)``), and the gradient of the area ``A(X)``
   (:func:`fesens.objectives.volume` with ``points=X``);
2. turns each gradient into a smooth velocity (vertex morphing, :class:`DesignVelocity`):
   its normal part on the design nodes is filtered along the boundary with a Helmholtz
   filter ``(M_Γ + r_f² K_Γ) w = g_n n`` (``w = 0`` where the design boundary ends), and
   the interior nodes follow by a Laplace mesh-motion solve, so the cells stay valid;
3. removes from the stress velocity its area-changing part (``dA[v] = 0``), scales its
   largest nodal move to ``step`` and adds ``c v_A``, which restores the initial area;
4. checks every cell: a non-positive Jacobian stops the run with a message naming the
   iteration and the cell ids. The move is accepted if ``J`` decreased, else the step is
   halved.

Before optimizing, a Taylor test checks ``dJ/dX`` along the first design velocity (rate 2).
The material of the lightly loaded shoulder face (a relief groove) moves into a long,
tapered fillet, and ``K_t`` drops from about 1.95 to 1.2 at the same area.

Run: ``python examples/shape_fillet.py [--fast] [--iterations N] [--step S] [--out DIR]``
(``--fast``, or ``FESENS_EXAMPLES_FAST=1``: a coarser mesh and 12 iterations, about a
second; the full run, 40 iterations, takes a few seconds). Prints the p-norm, the peak
stress and the area before and after; writes ``shape_fillet.png`` (both shapes with their
von Mises stress) to ``results/examples/shape_fillet``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import Normalize

from fesens.ad import taylor_test, value_and_grad
from fesens.errors import DegenerateElementError
from fesens.fem.integrals.geometry import cell_geometry
from fesens.fem.integrals.kernels import gradient_matrices
from fesens.mesh import FacetSet, Mesh
from fesens.objectives import stress_pnorm, volume
from fesens.physics import Elasticity
from fesens.plotting import new_figure, save_figure

#: Geometry (half model, lengths in units of the narrow width d): the wide part ends at
#: x = SHOULDER, the fillet of radius RADIUS joins the shoulder face to the narrow side.
LENGTH, SHOULDER, HALF_WIDE, HALF_NARROW, RADIUS = 2.5, 1.0, 1.0, 0.5, 0.15
SIGMA = 1.0  # nominal tension on the narrow end
P_NORM = 20.0
FILTER_RADIUS = 0.15
#: Largest nodal move per iteration (a little more than the smallest cells), and the
#: design windows: the shoulder face up to y = FACE_WINDOW, the narrow side up to
#: NARROW_WINDOW after the fillet.
STEP, FACE_WINDOW, NARROW_WINDOW = 0.012, 0.85, 0.45


# ------------------------------------------------------------------ the mesh
#: The fillet's centre; the polar block around it reaches out to x = SHOULDER − REACH.
CENTRE = np.array([SHOULDER + RADIUS, HALF_NARROW + RADIUS])
REACH = 0.35


def graded(n: int, ratio: float) -> np.ndarray:
    """``n + 1`` points from 0 to 1 whose spacing grows by ``ratio`` per cell."""
    sizes = ratio ** np.arange(n)
    return np.concatenate([[0.0], np.cumsum(sizes)]) / sizes.sum()


def grid_cells(n_i: int, n_j: int) -> np.ndarray:
    """Quads ``(n_i n_j, 4)`` of a grid of ``(n_i + 1) x (n_j + 1)`` points numbered
    ``i (n_j + 1) + j``, counter-clockwise when ``(i, j)`` is a right-handed frame."""
    index = np.arange((n_i + 1) * (n_j + 1)).reshape(n_i + 1, n_j + 1)
    return np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]],
                    axis=-1).reshape(-1, 4)


def polar_block(n_face_side: int, n_bottom_side: int, n_radial: int) -> np.ndarray:
    """Points ``(n_angles + 1, n_radial + 1, 2)`` of the block around the fillet.

    Straight rays from the fillet's centre, at angles from π (towards the wide part) to
    3π/2 (down the narrow part), run from the fillet arc (graded finely there, more so
    towards the narrow side) to the block's outer side: the line
    ``x = SHOULDER − REACH``, then the symmetry line ``y = 0``; one ray ends exactly on
    the corner between the two.
    """
    corner = np.arctan2(-CENTRE[1], SHOULDER - REACH - CENTRE[0]) % (2 * np.pi)
    angles = np.concatenate([np.linspace(np.pi, corner, n_face_side + 1),
                             np.linspace(corner, 1.5 * np.pi, n_bottom_side + 1)[1:]])
    ray = np.column_stack([np.cos(angles), np.sin(angles)])
    to_side = (SHOULDER - REACH - CENTRE[0]) / ray[:, 0]
    with np.errstate(divide="ignore"):
        to_symmetry = np.where(ray[:, 1] < 0, -CENTRE[1] / ray[:, 1], np.inf)
    outer = CENTRE + np.minimum(to_side, to_symmetry)[:, None] * ray
    inner = CENTRE + RADIUS * ray
    # Finer at the fillet the closer to the narrow side, where the stress peaks; uniform
    # along the first ray, whose cells continue up the shoulder face.
    ratio = 1.0 + 0.15 * (angles - np.pi) / (0.5 * np.pi)
    fraction = np.stack([graded(n_radial, q) for q in ratio])
    return inner[:, None, :] + fraction[:, :, None] * (outer - inner)[:, None, :]


def fillet_mesh(scale: float = 1.0) -> Mesh:
    """Four structured quad4 blocks with matching nodes on their interfaces: the polar
    block around the fillet (:func:`polar_block`), the block above it between the
    shoulder face and ``x = SHOULDER − REACH``, the rest of the wide part and the narrow
    part. ``scale`` multiplies the cell counts.
    Sides: ``left`` (x = 0), ``right`` (x = LENGTH), ``bottom`` (y = 0), ``top`` (the
    rest: the wide side, the shoulder face, the fillet and the narrow side)."""
    n_face_side, n_bottom_side, n_radial = (round(scale * n) for n in (14, 10, 16))
    n_face, n_wide, n_narrow = (round(scale * n) for n in (12, 14, 24))
    polar = polar_block(n_face_side, n_bottom_side, n_radial)
    # Above the polar block: x from its first ray (reversed: outer end first), y up to D/2.
    xs = polar[0, ::-1, 0]
    ys = HALF_NARROW + RADIUS + (HALF_WIDE - HALF_NARROW - RADIUS) * graded(n_face, 1.1)
    face = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)
    # The wide part: its right side holds the polar block's outer nodes, then the face
    # block's left side.
    ys = np.concatenate([polar[n_face_side::-1, -1, 1], ys[1:]])
    xs = (SHOULDER - REACH) * np.linspace(0.0, 1.0, n_wide + 1)
    wide = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)
    # The narrow part: its left side is the polar block's last ray (reversed: y from 0).
    xs = SHOULDER + RADIUS + (LENGTH - SHOULDER - RADIUS) * graded(n_narrow, 1.08)
    ys = polar[-1, ::-1, 1]
    narrow = np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)
    points, cells, offset = [], [], 0
    for block in (polar, face, wide, narrow):
        n_i, n_j = block.shape[0] - 1, block.shape[1] - 1
        block_cells = grid_cells(n_i, n_j)
        corners = block.reshape(-1, 2)[block_cells]
        twice_area = np.sum(corners[:, :, 0] * np.roll(corners[:, :, 1], -1, axis=1)
                            - np.roll(corners[:, :, 0], -1, axis=1) * corners[:, :, 1], 1)
        if np.all(twice_area < 0):
            block_cells = block_cells[:, ::-1]
        points.append(block.reshape(-1, 2))
        cells.append(block_cells + offset)
        offset += len(points[-1])
    points = np.concatenate(points)
    _, first, merged = np.unique(np.round(points, 12), axis=0, return_index=True,
                                 return_inverse=True)
    mesh = Mesh(points[first], merged.ravel()[np.concatenate(cells)], "quad4")
    lines = {"left": lambda p: np.isclose(p[:, 0], 0.0),
             "right": lambda p: np.isclose(p[:, 0], LENGTH),
             "bottom": lambda p: np.isclose(p[:, 1], 0.0)}
    boundary = mesh.boundary_facets()
    on_lines = np.zeros(len(boundary), dtype=bool)
    for name, on_line in lines.items():
        mesh.facet_sets[name] = mesh.facets(on_line)
        mesh.node_sets[name] = mesh.nodes(on_line)
        on_lines |= on_line(mesh.points)[boundary.facets].all(axis=1)
    mesh.facet_sets["top"] = FacetSet(boundary.facet_type, boundary.facets[~on_lines],
                                      boundary.cells[~on_lines])
    mesh.node_sets["top"] = mesh.facet_sets["top"].nodes
    return mesh


def build(fast: bool) -> Elasticity:
    """The half bar: roller on ``left``, symmetry on ``bottom``, tension on ``right``."""
    mesh = fillet_mesh(0.7 if fast else 1.0)
    model = Elasticity(mesh, E=1.0, nu=0.3, plane="stress")
    model.fix("left", components=0).fix("bottom", components=1)
    model.traction("right", (SIGMA, 0.0), name="tension")
    return model


def design_nodes(mesh: Mesh) -> np.ndarray:
    """Top nodes of the shoulder face below FACE_WINDOW, the fillet and the first
    NARROW_WINDOW of the narrow side (the sharp corner and the rest stay)."""
    top = mesh.nodes("top")
    x, y = mesh.points[top].T
    inside = ((x > SHOULDER - 1e-9) & (y < FACE_WINDOW)
              & (x < SHOULDER + RADIUS + NARROW_WINDOW))
    return top[inside]


# ------------------------------------------------------------------ the design velocity
def outward_normals(mesh: Mesh, X: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Unit outward normals ``(len(nodes), 2)`` at boundary nodes of the current shape:
    the length-weighted mean of the normals of their ``top`` facets."""
    facets = mesh.facet_sets["top"]
    tangent = X[facets.facets[:, 1]] - X[facets.facets[:, 0]]
    normal = np.column_stack([tangent[:, 1], -tangent[:, 0]])
    centroid = X[mesh.cells[facets.cells]].mean(axis=1)
    inward = np.einsum("fi,fi->f", normal, X[facets.facets[:, 0]] - centroid) < 0
    normal[inward] *= -1
    summed = np.zeros_like(X)
    np.add.at(summed, facets.facets[:, 0], normal)
    np.add.at(summed, facets.facets[:, 1], normal)
    summed = summed[nodes]
    return summed / np.linalg.norm(summed, axis=1, keepdims=True)


def nodal_matrix(n_points: int, elements: np.ndarray, local: np.ndarray) -> sp.csr_matrix:
    """Scalar ``(n_points, n_points)`` matrix from element matrices ``(n, k, k)`` on the
    node ids ``elements`` ``(n, k)``."""
    k = elements.shape[1]
    rows = np.repeat(elements, k, axis=1).ravel()
    cols = np.tile(elements, (1, k)).ravel()
    return sp.csr_matrix((local.ravel(), (rows, cols)), shape=(n_points, n_points))


class DesignVelocity:
    """Smooth velocity fields of the current shape ``X`` from shape gradients.

    * Vertex morphing on the design boundary: the normal parts ``g_n n`` of a gradient on
      the design nodes are filtered along the boundary, ``(M_Γ + r_f² K_Γ) w = g_n n``
      componentwise (linear elements on the boundary edges of the design nodes, ``w = 0``
      at the first fixed node on either side), and the design nodes move by ``w``: at the
      shoulder's sharp corner, ``w`` blends the motions of both sides (no spike).
    * Mesh motion: the interior nodes follow by a Laplace solve ``K v = 0`` with ``v``
      given on the whole boundary (``w`` on the design nodes, 0 elsewhere); each cell's
      Laplace matrix is divided by its area, so the small cells at the fillet move almost
      rigidly and the large ones take up the deformation (Jacobian-based stiffening).

    Both matrices are those of the current mesh; each is factorized once per iteration.
    """

    def __init__(self, mesh: Mesh, X: np.ndarray, design: np.ndarray, radius: float):
        self.design, self.shape = design, X.shape
        self.normals = outward_normals(mesh, X, design)
        top = mesh.facet_sets["top"].facets
        edges = top[np.isin(top, design).any(axis=1)]
        length = np.linalg.norm(X[edges[:, 1]] - X[edges[:, 0]], axis=1)[:, None, None]
        local = (length / 6 * np.array([[2.0, 1.0], [1.0, 2.0]])
                 + radius**2 / length * np.array([[1.0, -1.0], [-1.0, 1.0]]))
        boundary_filter = nodal_matrix(mesh.n_points, edges, local)
        self._filter = spla.factorized(boundary_filter[design][:, design].tocsc())
        geometry = cell_geometry(mesh, points=X)
        stiffening = 1.0 / geometry.volumes  # small cells move (almost) rigidly
        laplace = nodal_matrix(mesh.n_points, mesh.cells,
                               stiffening[:, None, None] * gradient_matrices(geometry))
        self.boundary = np.unique(mesh.boundary_facets().facets)
        self.interior = np.setdiff1d(np.arange(mesh.n_points), self.boundary)
        self._motion = spla.factorized(laplace[self.interior][:, self.interior].tocsc())
        self._coupling = laplace[self.interior][:, self.boundary]

    def __call__(self, gradient: np.ndarray) -> np.ndarray:
        """The velocity ``(n_points, 2)`` of the (filtered) gradient ``(n_points, 2)``."""
        normal_gradient = np.einsum("ni,ni->n", gradient[self.design], self.normals)
        v = np.zeros(self.shape)
        for component in range(self.shape[1]):
            v[self.design, component] = self._filter(normal_gradient
                                                     * self.normals[:, component])
        rhs = -(self._coupling @ v[self.boundary])
        for component in range(self.shape[1]):
            v[self.interior, component] = self._motion(rhs[:, component])
        return v


def check_cells(mesh: Mesh, X: np.ndarray, iteration: int) -> None:
    """Raise if a cell of ``X`` is inverted or degenerate, naming the iteration and cells."""
    try:
        cell_geometry(mesh, points=X)
    except DegenerateElementError as error:
        ids = error.cell_ids
        raise DegenerateElementError(
            f"iteration {iteration}: the shape update inverts {len(ids)} cell(s), ids "
            f"{ids[:20].tolist()}; lower the step or raise the filter radius", ids) from error


# ------------------------------------------------------------------ the optimization
def check_shape_gradient(model: Elasticity) -> float:
    """Taylor test of ``dJ/dX`` at the initial shape along the first design velocity
    (steps from 1e-3, a sixth of the smallest cells); returns the rate (2 when right)."""
    X = model.mesh.points.copy()

    def J(X):
        return stress_pnorm(model.solve(points=X), p=P_NORM)

    _, dJ = value_and_grad(J)(X)
    direction = DesignVelocity(model.mesh, X, design_nodes(model.mesh), FILTER_RADIUS)(-dJ)
    result = taylor_test(J, X, direction / np.abs(direction).max(), step=1e-3,
                         verbose=False)
    print(f"Taylor test of the shape gradient along the design velocity: rate "
          f"{result.rate:.3f} (2 when the gradient is right)")
    return result.rate


def stresses(model: Elasticity, X: np.ndarray) -> dict:
    """p-norm, peak cell von Mises stress and area of the shape ``X``."""
    solution = model.solve(points=X)
    von_mises = solution.von_mises()
    return {"pnorm": float(stress_pnorm(solution, p=P_NORM)),
            "max_von_mises": float(von_mises.max()),
            "area": float(volume(model, points=X)), "von_mises": von_mises}


def optimize_shape(model: Elasticity, iterations: int, step: float = STEP) -> dict:
    """Projected, filtered steepest descent of the p-norm at fixed area (module docstring)."""
    mesh = model.mesh
    largest_step = step
    design = design_nodes(mesh)
    X = mesh.points.copy()
    area0 = float(volume(model, points=X))
    objective = value_and_grad(lambda X: stress_pnorm(model.solve(points=X), p=P_NORM))
    area = value_and_grad(lambda X: volume(model, points=X))
    J, dJ = objective(X)
    history = [float(J)]
    for iteration in range(1, iterations + 1):
        A, dA = area(X)
        velocity = DesignVelocity(mesh, X, design, FILTER_RADIUS)
        v_J, v_A = velocity(-dJ), velocity(dA)
        rate_A = float(np.sum(dA * v_A))  # dA[v_A] > 0
        v = v_J - float(np.sum(dA * v_J)) / rate_A * v_A  # dA[v] = 0
        v /= np.abs(v).max()
        restore = (area0 - float(A)) / rate_A * v_A
        for _ in range(6):  # backtracking on the step length
            trial = X + step * v + restore
            check_cells(mesh, trial, iteration)
            J_trial, dJ_trial = objective(trial)
            if J_trial < J:
                break
            step *= 0.5
        else:
            print(f"  no descent at iteration {iteration}: stopping")
            break
        X, J, dJ = trial, J_trial, dJ_trial
        history.append(float(J))
        if iteration % 10 == 0:
            print(f"  {iteration:4d}  p-norm {float(J):.4f}  "
                  f"area {float(volume(model, points=X)):.6f}  step {step:.4f}")
        step = min(1.25 * step, largest_step)
    return {"points": X, "history": history, "design": design}


# ------------------------------------------------------------------ output
def plot_shapes(mesh: Mesh, shapes: list[tuple[str, np.ndarray, np.ndarray]],
                path: Path) -> Path:
    """Both shapes side by side near the shoulder, coloured by the cell von Mises stress
    (one colour scale); the initial outline in red on the optimized shape."""
    fig = new_figure(figsize=(11, 4.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    norm = Normalize(0.0, max(float(vm.max()) for _, _, vm in shapes))
    for ax, (title, X, vm) in zip(axes, shapes, strict=True):
        cells = PolyCollection(X[mesh.cells], array=vm, cmap="viridis", norm=norm,
                               edgecolors="face", linewidths=0.2)
        ax.add_collection(cells)
        ax.set_xlim(SHOULDER - 0.5, SHOULDER + RADIUS + 0.9)
        ax.set_ylim(0.0, HALF_WIDE + 0.05)
        ax.set_aspect("equal")
        ax.set_title(title)
        ax.set_xlabel("x / d")
    outline = mesh.points[mesh.facet_sets["top"].facets]  # (n_facets, 2, 2)
    axes[1].add_collection(LineCollection(outline, colors="crimson", linewidths=1.0,
                                          label="initial shape"))
    axes[1].legend(loc="upper right")
    axes[0].set_ylabel("y / d")
    fig.colorbar(cells, ax=axes, label="von Mises stress / σ₀", shrink=0.85)
    return save_figure(fig, path)


def run(fast: bool = False, out: Path = Path("results/examples/shape_fillet"),
        iterations: int | None = None, step: float = STEP) -> dict:
    """Optimize the fillet and draw both shapes; returns the key numbers."""
    start = time.perf_counter()
    model = build(fast)
    mesh = model.mesh
    iterations = iterations if iterations is not None else (12 if fast else 40)
    print(f"shoulder fillet: {mesh.n_cells} quad4 cells, {model.dofmap.n_dofs} dofs, "
          f"{len(design_nodes(mesh))} design nodes, p-norm p = {P_NORM:g}, "
          f"{iterations} iterations")
    before = stresses(model, mesh.points)
    numbers = {"taylor_rate": check_shape_gradient(model)}
    result = optimize_shape(model, iterations, step)
    after = stresses(model, result["points"])
    for name, state in (("initial", before), ("optimized", after)):
        print(f"  {name:9s}  p-norm {state['pnorm']:.4f}  max σ_vm {state['max_von_mises']:.4f}"
              f" (K_t = {state['max_von_mises'] / SIGMA:.3f})  area {state['area']:.6f}")
    numbers.update({
        "pnorm_before": before["pnorm"], "pnorm_after": after["pnorm"],
        "max_before": before["max_von_mises"], "max_after": after["max_von_mises"],
        "area_before": before["area"], "area_after": after["area"],
        "history": result["history"], "iterations": len(result["history"]) - 1,
        "points": result["points"],
    })
    print(f"p-norm {1 - after['pnorm'] / before['pnorm']:.1%} lower, peak stress "
          f"{1 - after['max_von_mises'] / before['max_von_mises']:.1%} lower, area change "
          f"{after['area'] / before['area'] - 1:+.1e}")
    numbers["png"] = plot_shapes(mesh, [
        (f"initial: r = {RADIUS} d, K_t = {before['max_von_mises']:.2f}", mesh.points,
         before["von_mises"]),
        (f"optimized ({numbers['iterations']} iterations): K_t = "
         f"{after['max_von_mises']:.2f}, same area", result["points"], after["von_mises"]),
    ], Path(out) / "shape_fillet.png")
    numbers["seconds"] = time.perf_counter() - start
    print(f"wrote {numbers['png']}; {numbers['seconds']:.1f} s")
    return numbers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="coarser mesh, fewer iterations (also FESENS_EXAMPLES_FAST=1)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="shape iterations (default 40, 12 with --fast)")
    parser.add_argument("--step", type=float, default=STEP,
                        help=f"largest nodal move per iteration (default {STEP})")
    parser.add_argument("--out", type=Path, default=Path("results/examples/shape_fillet"))
    args = parser.parse_args(argv)
    try:
        return run(args.fast, args.out, args.iterations, args.step)
    except DegenerateElementError as error:  # an inverted cell: stop with the message
        raise SystemExit(f"shape_fillet: {error}") from error


if __name__ == "__main__":
    main()
