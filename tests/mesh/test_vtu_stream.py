""".vtu files are streamed, one field converted at a time, and read back as meshio's own
files do."""

import tracemalloc

import meshio
import numpy as np
import pytest

from fesens.mesh import box, rectangle, write_mesh

MESHES = {f"{name}-{cell_type}": (make, cell_type)
          for name, make, types in (
              ("rectangle", lambda t: rectangle(3, 2, cell_type=t),
               ("quad4", "quad8", "quad9", "tri3", "tri6")),
              ("box", lambda t: box(2, 2, 1, cell_type=t),
               ("hex8", "hex20", "hex27", "tet4", "tet10")))
          for cell_type in types}


@pytest.mark.parametrize("key", MESHES)
def test_streamed_vtu_reads_back_like_meshios_file(tmp_path, key):
    make, cell_type = MESHES[key]
    mesh = make(cell_type)
    rng = np.random.default_rng(0)
    point_data = {"u": rng.standard_normal((mesh.n_points, mesh.dim)),
                  "T": rng.standard_normal(mesh.n_points)}
    cell_data = {"density": rng.uniform(size=mesh.n_cells),
                 "id": np.arange(mesh.n_cells, dtype=np.int32),
                 "void": rng.uniform(size=mesh.n_cells) > 0.5}
    ours = tmp_path / "ours.vtu"
    write_mesh(ours, mesh, point_data, cell_data)
    assert b"<DataArray" in ours.read_bytes()[:2000]  # our writer, not meshio's
    theirs = tmp_path / "theirs.vtu"
    meshio.write(theirs, meshio.Mesh(
        np.pad(mesh.points, ((0, 0), (0, 3 - mesh.dim))),
        [(mesh.type_info.meshio_name, mesh.cells)],
        point_data={"u": np.pad(point_data["u"], ((0, 0), (0, 3 - mesh.dim))),
                    "T": point_data["T"]},
        cell_data={k: [v.astype(np.uint8) if v.dtype == bool else v]
                   for k, v in cell_data.items()}))
    a, b = meshio.read(ours), meshio.read(theirs)
    np.testing.assert_array_equal(a.points, b.points)
    assert [c.type for c in a.cells] == [c.type for c in b.cells]
    np.testing.assert_array_equal(a.cells[0].data, b.cells[0].data)
    for name in point_data:
        np.testing.assert_array_equal(a.point_data[name], b.point_data[name])
    for name in cell_data:
        np.testing.assert_array_equal(a.cell_data[name][0], b.cell_data[name][0])


def test_fields_are_not_all_held_twice(tmp_path):
    mesh = rectangle(300, 200)
    rng = np.random.default_rng(1)
    fields = {f"f{k}": rng.standard_normal((mesh.n_points, 2)) for k in range(10)}
    padded = mesh.n_points * 3 * 8  # one field as written
    tracemalloc.start()
    write_mesh(tmp_path / "many.vtu", mesh, point_data=fields)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * padded + 8 * 2**20  # the ten padded fields: 10 * padded
