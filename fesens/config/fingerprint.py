"""The fingerprint of a problem: what a checkpoint or a study journal was computed for.

A results folder's ``config.toml`` can be deleted or edited; the fingerprint stored in the
checkpoint (and in every line of a study's ``results.jsonl``) cannot be edited together
with the design it belongs to by accident. It is one short hash per part of the problem:
``mesh`` (the points, cells, cell type and named sets: the mesh itself, wherever its file
lies) and each other top-level section of the resolved config. A caller compares the parts
that must not change (a resume: all but ``[stop]``, ``[output]``, the name and the
description; a design read back: the mesh and the sections that turn design variables into
densities) and names the ones that differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

import numpy as np

from fesens.config.resolved import Config
from fesens.mesh import Mesh

#: Hex digits kept of each part's SHA-256 (64 bits: no accidental collision in practice).
DIGITS = 16


def _digest(chunks: Iterable[bytes]) -> str:
    sha = hashlib.sha256()
    for chunk in chunks:
        sha.update(len(chunk).to_bytes(8, "little"))  # no two splits give one stream
        sha.update(chunk)
    return sha.hexdigest()[:DIGITS]


def _array_bytes(array) -> bytes:
    array = np.ascontiguousarray(array)
    return f"{array.dtype.str}{array.shape}".encode() + array.tobytes()


def mesh_fingerprint(mesh: Mesh) -> str:
    """The hash of ``mesh``'s cell type, points, cells and named node, cell and facet sets."""
    chunks = [mesh.cell_type.encode(), _array_bytes(mesh.points), _array_bytes(mesh.cells)]
    for kind, sets in (("node", mesh.node_sets), ("cell", mesh.cell_sets)):
        for name in sorted(sets):
            chunks += [f"{kind}:{name}".encode(), _array_bytes(sets[name])]
    for name in sorted(mesh.facet_sets):
        chunks += [f"facet:{name}".encode(), _array_bytes(mesh.facet_sets[name].facets)]
    return _digest(chunks)


def data_fingerprint(value) -> str:
    """The hash of a JSON-able value (a config section), independent of its keys' order."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return _digest([text.encode()])


def problem_fingerprint(config: Config) -> dict[str, str]:
    """``{part: hash}``: ``mesh`` (its content; the ``[mesh]`` table that made it, a file's
    path included, is not a part) and every other top-level section of ``config.data``."""
    parts = {key: data_fingerprint(value) for key, value in config.data.items()
             if key != "mesh"}
    return {"mesh": mesh_fingerprint(config.mesh), **parts}


def changed_parts(stored: dict[str, str], current: dict[str, str],
                  parts: Iterable[str] | None = None) -> list[str]:
    """The parts (among ``parts``; default: all of either) whose hashes differ, sorted."""
    names = set(stored) | set(current) if parts is None else set(parts)
    return sorted(name for name in names if stored.get(name) != current.get(name))


def encode(fingerprint: dict[str, str]) -> str:
    """``fingerprint`` as one string (what a checkpoint stores)."""
    return json.dumps(fingerprint, sort_keys=True)


def decode(text: str) -> dict[str, str]:
    """The inverse of :func:`encode`.

    Raises
    ------
    ValueError
        ``text`` is not an encoded fingerprint.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not a fingerprint ({err.msg})") from None
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError("not a fingerprint (expected a table of hashes)")
    return value
