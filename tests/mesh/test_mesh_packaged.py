"""Packaged meshes: named by their file's stem, found inside the installed package."""

import pytest

from fesens.errors import MeshError
from fesens.mesh import packaged_mesh_names, packaged_mesh_path, read_mesh


def test_packaged_meshes_are_named_by_their_stem():
    assert "lbracket" in packaged_mesh_names()
    path = packaged_mesh_path("lbracket")
    assert path.is_absolute() and path.name == "lbracket.msh"
    assert read_mesh(path).n_cells == 1983


def test_an_unknown_packaged_mesh_suggests_the_nearest_and_lists_them():
    with pytest.raises(MeshError, match=r"^no packaged mesh named 'lbraket'; did you mean "
                                        r"'lbracket'\? \(packaged meshes: lbracket\)$"):
        packaged_mesh_path("lbraket")
