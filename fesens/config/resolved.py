"""The resolved config (:class:`Config`): a checked configuration and its mesh, in its own
module so that the section checks and builders that read it import it without importing the
checks that make it (:func:`fesens.config.schema.resolve`)."""

from __future__ import annotations

from dataclasses import dataclass

from fesens.config.toml_writer import dumps
from fesens.fem.model.linear import LinearModel
from fesens.mesh import Mesh
from fesens.physics import PHYSICS


@dataclass
class Config:
    """A checked configuration and its mesh.

    Attributes
    ----------
    data : dict
        The resolved config (defaults filled in), TOML-writable.
    mesh : Mesh
    source : str
        Where it came from (a file path or ``preset 'mbb'``), for messages.
    label : str
        Short name of the mesh source for messages (file name or generator).
    """

    data: dict
    mesh: Mesh
    source: str
    label: str = ""

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def physics(self) -> str:
        return self.data["physics"]["type"]

    @property
    def physics_class(self) -> type[LinearModel]:
        """The registered physics of ``physics.type``."""
        return PHYSICS.get(self.physics)

    @property
    def dim(self) -> int:
        return self.mesh.dim

    def toml(self, header: str = "") -> str:
        """The resolved config as TOML text that runs from any folder.

        Parameters
        ----------
        header : str
            Comment lines written first.

        Returns
        -------
        str
            ``dumps(self.data)`` after ``header``; a mesh file's path is absolute (a
            packaged mesh keeps its name), and a comment line says so.
        """
        if "file" in self.data["mesh"]:
            header = (f"{header.rstrip()}\n" if header else "") + (
                "# mesh.file is an absolute path, so this file runs from any folder (a "
                "relative path\n# would be relative to this file's folder)")
        return dumps(self.data, header=header)
