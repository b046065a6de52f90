"""A file given as a checkpoint that is none (any file a path may point at) is called
damaged naming the file, never quoting its content: numpy's messages quote the array
header they could not parse, and a header that does not tokenize escaped as a TokenError."""

import re
import struct
import zipfile

import numpy as np
import pytest

from fesens.opt.loop import CheckpointError, load_checkpoint

SECRET = b"SECRET=hunter2"


def npy(header: bytes) -> bytes:
    """A version 1.0 ``.npy`` prefix with ``header`` (padded as numpy pads it)."""
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


HEADERS = {
    "dtype": npy(b"{'descr': '" + SECRET + b"', 'fortran_order': False, 'shape': (3,), }"),
    "syntax": npy(b"{'descr': " + SECRET + b"}"),
    "unterminated": npy(b"{'descr': '" + SECRET + b"'"),
}


@pytest.mark.parametrize("archive", [False, True])
@pytest.mark.parametrize("header", sorted(HEADERS))
def test_an_unparsable_entry_is_damaged_without_its_text(tmp_path, header, archive):
    path = tmp_path / ("run.npz" if archive else "run.npy")
    if archive:
        with zipfile.ZipFile(path, "w") as file:
            for entry in ("x", "iteration", "history", "columns"):
                file.writestr(f"{entry}.npy", HEADERS[header])
    else:
        path.write_bytes(HEADERS[header])
    with pytest.raises(CheckpointError) as raised:
        load_checkpoint(path)
    message = str(raised.value)
    assert re.fullmatch(rf"checkpoint {re.escape(str(path))} is damaged \(.*\)", message)
    assert "hunter2" not in message and "SECRET" not in message


def test_an_iteration_entry_of_text_is_described_not_quoted(tmp_path):
    path = tmp_path / "run.npz"
    np.savez(path, x=np.full(4, 0.5), iteration=np.array(SECRET.decode()),
             history=np.zeros((1, 5)), columns=np.array(["iteration", "objective", "volume",
                                                           "change", "seconds"]))
    with pytest.raises(CheckpointError, match=r"'iteration' must be one whole number") as raised:
        load_checkpoint(path)
    assert "hunter2" not in str(raised.value)
