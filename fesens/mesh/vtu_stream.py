"""A VTU writer that streams: each field is converted, compressed and written in turn.

meshio's writer needs every field converted up front (2D vectors padded to 3 components,
held next to the caller's arrays) and the whole base64 text of an array at once. Here one
field at a time is padded, compressed in 32 KiB zlib blocks and base64-encoded in chunks
straight into the file, so no field is held twice. The file is
the same VTK XML ``UnstructuredGrid`` (``binary``, ``vtkZLibDataCompressor``, UInt64
headers) that meshio writes and reads.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable, Iterable
from typing import BinaryIO
from xml.sax.saxutils import quoteattr

import numpy as np
from meshio._vtk_common import meshio_to_vtk_order, meshio_to_vtk_type

#: Uncompressed bytes per zlib block (as meshio and VTK write).
BLOCK_BYTES = 32768
#: Bytes base64-encoded per write (a multiple of 3, so the chunks concatenate).
ENCODE_BYTES = 3 * 2**20

_VTK_TYPES = {np.dtype(np.float64): "Float64", np.dtype(np.float32): "Float32",
              np.dtype(np.int64): "Int64", np.dtype(np.int32): "Int32",
              np.dtype(np.uint8): "UInt8", np.dtype(np.int8): "Int8",
              np.dtype(np.uint32): "UInt32", np.dtype(np.uint64): "UInt64",
              np.dtype(np.int16): "Int16", np.dtype(np.uint16): "UInt16"}


def can_stream(meshio_cell_type: str, arrays: Iterable[np.ndarray]) -> bool:
    """Whether :func:`write_vtu` handles this cell type and these field dtypes."""
    return meshio_cell_type in meshio_to_vtk_type and all(
        np.asarray(a).dtype.newbyteorder("=") in _VTK_TYPES or np.asarray(a).dtype == bool
        for a in arrays)


def _data_array(file: BinaryIO, name: str, data: np.ndarray) -> None:
    """One ``<DataArray>``: zlib blocks, their UInt64 header, base64 in chunks."""
    data = np.ascontiguousarray(data)
    if data.dtype == bool:
        data = data.astype(np.uint8)
    data = data.astype(data.dtype.newbyteorder("<"), copy=False)
    vtk_type = _VTK_TYPES[data.dtype.newbyteorder("=")]
    components = f' NumberOfComponents="{data.shape[1]}"' if data.ndim == 2 else ""
    file.write(f'<DataArray type="{vtk_type}" Name={quoteattr(name)}{components} '
               'format="binary">'.encode())
    raw = memoryview(data.reshape(-1).view(np.uint8))
    blocks = [zlib.compress(raw[i:i + BLOCK_BYTES]) for i in range(0, len(raw), BLOCK_BYTES)]
    last = len(raw) - (len(blocks) - 1) * BLOCK_BYTES if blocks else 0
    header = np.array([len(blocks), BLOCK_BYTES, last, *map(len, blocks)], dtype="<u8")
    file.write(base64.b64encode(header.tobytes()))
    pending = b""
    for block in blocks:
        pending += block
        if len(pending) >= ENCODE_BYTES:
            cut = len(pending) - len(pending) % 3
            file.write(base64.b64encode(pending[:cut]))
            pending = pending[cut:]
    file.write(base64.b64encode(pending))
    file.write(b"</DataArray>\n")


def write_vtu(file: BinaryIO, points: np.ndarray, cell_type: str, cells: np.ndarray,
              point_fields: dict[str, Callable[[], np.ndarray]],
              cell_fields: dict[str, Callable[[], np.ndarray]]) -> None:
    """Write an unstructured grid of one meshio ``cell_type`` to ``file`` (binary).

    Parameters
    ----------
    points : numpy.ndarray
        ``(n_points, 3)``.
    cells : numpy.ndarray
        ``(n_cells, nodes per cell)``, meshio's node order.
    point_fields, cell_fields : dict of str to callable
        ``name -> function returning the array`` (called when the field is written, so
        only one converted field exists at a time).
    """
    n_cells, per_cell = cells.shape
    file.write(b'<?xml version="1.0"?>\n<VTKFile type="UnstructuredGrid" version="1.0" '
               b'byte_order="LittleEndian" header_type="UInt64" '
               b'compressor="vtkZLibDataCompressor">\n<UnstructuredGrid>\n')
    file.write(f'<Piece NumberOfPoints="{len(points)}" NumberOfCells="{n_cells}">\n'.encode())
    file.write(b"<Points>\n")
    _data_array(file, "Points", np.asarray(points, dtype=np.float64))
    file.write(b"</Points>\n<Cells>\n")
    order = meshio_to_vtk_order(cell_type)
    _data_array(file, "connectivity",
                np.asarray(cells if order is None else cells[:, order], dtype=np.int64))
    _data_array(file, "offsets", np.arange(1, n_cells + 1, dtype=np.int64) * per_cell)
    _data_array(file, "types", np.full(n_cells, meshio_to_vtk_type[cell_type], np.uint8))
    file.write(b"</Cells>\n")
    for tag, fields in (("PointData", point_fields), ("CellData", cell_fields)):
        if fields:
            file.write(f"<{tag}>\n".encode())
            for name, make in fields.items():
                _data_array(file, name, make())
            file.write(f"</{tag}>\n".encode())
    file.write(b"</Piece>\n</UnstructuredGrid>\n</VTKFile>\n")
