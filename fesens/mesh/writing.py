"""Writing meshes and fields: one file (VTU, XDMF, ...) or an XDMF time series, atomically.

With :mod:`fesens.mesh.io` (reading), the only modules that import meshio.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import meshio
import numpy as np

from fesens.errors import MeshError, writing
from fesens.mesh.io import FieldData, file_formats
from fesens.mesh.mesh import Mesh
from fesens.mesh.vtu_stream import can_stream, write_vtu

#: Writer options: XDMF keeps its data inline, so no HDF5 file is named after the
#: temporary file (meshio's XDMF writer still needs h5py installed).
_WRITE_OPTIONS = {"xdmf": {"data_format": "XML"}}


def _field(kind: str, name: str, values, n_rows: int, dim: int) -> np.ndarray:
    """Check a field's shape ``(n_rows,)`` or ``(n_rows, k)``; pad 2D vectors to 3D."""
    array = np.asarray(values)
    if array.ndim not in (1, 2) or array.shape[0] != n_rows:
        raise MeshError(
            f"{kind} data {name!r} must have shape ({n_rows},) or ({n_rows}, k), got {array.shape}"
        )
    if dim == 2 and array.ndim == 2 and array.shape[1] == 2:
        array = np.column_stack([array, np.zeros(n_rows, dtype=array.dtype)])
    return array


def _checked(kind: str, data: FieldData | None, n_rows: int) -> dict:
    """``name -> array`` after checking every shape (:func:`_field`), no conversion."""
    out = {}
    for name, values in (data or {}).items():
        array = np.asarray(values)
        if array.ndim not in (1, 2) or array.shape[0] != n_rows:
            raise MeshError(f"{kind} data {name!r} must have shape ({n_rows},) or "
                            f"({n_rows}, k), got {array.shape}")
        out[name] = array
    return out


def _write_vtu_streaming(path: Path, mesh: Mesh, point_data: FieldData | None,
                         cell_data: FieldData | None) -> bool:
    """Write ``path`` with :func:`fesens.mesh.vtu_stream.write_vtu` (one field converted
    at a time); False when that writer does not handle the mesh or a field's dtype."""
    points = _checked("point", point_data, mesh.n_points)
    cells = _checked("cell", cell_data, mesh.n_cells)
    if not can_stream(mesh.type_info.meshio_name, [*points.values(), *cells.values()]):
        return False

    def lazily(kind: str, fields: dict, n_rows: int) -> dict:
        return {name: (lambda name=name, a=a: _field(kind, name, a, n_rows, mesh.dim))
                for name, a in fields.items()}

    temporary = _sibling_temporary(path)
    with writing(path, temporary):
        with open(temporary, "wb") as file:
            write_vtu(file, _points_3d(mesh), mesh.type_info.meshio_name, mesh.cells,
                      lazily("point", points, mesh.n_points),
                      lazily("cell", cells, mesh.n_cells))
        os.replace(temporary, path)
    return True


def _fields(mesh: Mesh, point_data: FieldData | None, cell_data: FieldData | None):
    """Point and cell data in meshio's layout (cell data: one array per block)."""
    points = {
        name: _field("point", name, values, mesh.n_points, mesh.dim)
        for name, values in (point_data or {}).items()
    }
    cells = {
        name: [_field("cell", name, values, mesh.n_cells, mesh.dim)]
        for name, values in (cell_data or {}).items()
    }
    return points, cells


def _points_3d(mesh: Mesh) -> np.ndarray:
    """Points padded to 3 coordinates, shape ``(n_points, 3)`` (VTK and XDMF want 3)."""
    return np.pad(mesh.points, ((0, 0), (0, 3 - mesh.dim)))


def _cell_blocks(mesh: Mesh) -> list[tuple[str, np.ndarray]]:
    return [(mesh.type_info.meshio_name, mesh.cells)]


def _sibling_temporary(path: Path) -> Path:
    """A fresh hidden file name next to ``path`` that keeps its extension."""
    if not path.parent.is_dir():
        raise MeshError(f"cannot write {path}: directory {path.parent} does not exist")
    return path.parent / f".{uuid.uuid4().hex[:12]}.tmp-{path.name}"


def write_mesh(
    path: str | os.PathLike,
    mesh: Mesh,
    point_data: FieldData | None = None,
    cell_data: FieldData | None = None,
) -> None:
    """Write ``mesh`` and fields to a single-file format chosen by the extension.

    The file is written to a temporary sibling and renamed, so a reader never sees a
    half-written file. A ``.vtu`` file is streamed (:mod:`fesens.mesh.vtu_stream`): one
    field converted and compressed at a time. Points are written with 3 coordinates and
    2-component fields of 2D meshes are padded to 3 components, as ParaView expects.

    Parameters
    ----------
    path : str or path-like
        Target file, e.g. ``result.vtu``.
    mesh : Mesh
    point_data : mapping, optional
        ``name -> array`` of shape ``(n_points,)`` or ``(n_points, k)``.
    cell_data : mapping, optional
        ``name -> array`` of shape ``(n_cells,)`` or ``(n_cells, k)``.

    Raises
    ------
    MeshError
        Field of the wrong shape, missing directory, unknown extension, or a format
        meshio cannot write. ``.msh`` is written as Gmsh 4.1 (not ANSYS).
    """
    path = Path(path)
    if path.suffix.lower() == ".vtu" and _write_vtu_streaming(path, mesh, point_data,
                                                              cell_data):
        return
    points, cells = _fields(mesh, point_data, cell_data)
    raw = meshio.Mesh(_points_3d(mesh), _cell_blocks(mesh), point_data=points, cell_data=cells)
    file_format = file_formats(path)[0]
    temporary = _sibling_temporary(path)
    try:
        with writing(path, temporary):
            meshio.write(temporary, raw, file_format=file_format,
                         **_WRITE_OPTIONS.get(file_format, {}))
            os.replace(temporary, path)
    except (meshio.WriteError, ImportError) as err:  # ImportError: XDMF/HDF5 without h5py
        raise MeshError(f"cannot write {path} as {file_format}: {err}") from err


class XdmfSeriesWriter:
    """Time series of fields on one mesh, as a single XDMF file for ParaView.

    The mesh is stored once; each :meth:`write` adds one time step. Data are kept
    inline as XML (no HDF5 dependency). The file appears atomically when the
    ``with`` block ends, holding every step written so far (also if the block raised).

    Parameters
    ----------
    path : str or path-like
        Target file, ``*.xdmf``.
    mesh : Mesh

    Examples
    --------
    >>> with XdmfSeriesWriter("heat.xdmf", mesh) as series:  # doctest: +SKIP
    ...     for t, u in zip(times, temperatures):
    ...         series.write(t, point_data={"T": u})
    """

    def __init__(self, path: str | os.PathLike, mesh: Mesh):
        self.path = Path(path)
        self.mesh = mesh
        self._writer: meshio.xdmf.TimeSeriesWriter | None = None
        self._temporary: Path | None = None

    def __enter__(self) -> XdmfSeriesWriter:
        self._temporary = _sibling_temporary(self.path)
        self._writer = meshio.xdmf.TimeSeriesWriter(self._temporary, data_format="XML")
        self._writer.__enter__()
        self._writer.write_points_cells(_points_3d(self.mesh), _cell_blocks(self.mesh))
        return self

    def write(
        self,
        t: float,
        point_data: FieldData | None = None,
        cell_data: FieldData | None = None,
    ) -> None:
        """Add the fields at time ``t``.

        Parameters
        ----------
        t : float
            Time (or load factor, iteration number) of the step.
        point_data, cell_data : mapping, optional
            As in :func:`write_mesh`.

        Raises
        ------
        MeshError
            Called outside the ``with`` block, non-finite ``t``, or a field of the wrong
            shape.
        """
        if self._writer is None:
            raise MeshError("XdmfSeriesWriter.write() must be called inside its with-block")
        if not np.isfinite(t):
            raise MeshError(f"time must be finite, got {t!r}")
        points, cells = _fields(self.mesh, point_data, cell_data)
        self._writer.write_data(float(t), point_data=points, cell_data=cells)

    def __exit__(self, *exc_info) -> None:
        writer, self._writer = self._writer, None
        try:
            writer.__exit__(*exc_info)
            os.replace(self._temporary, self.path)
        finally:
            self._temporary.unlink(missing_ok=True)
