"""Column tables (``{column: list}``) to and from CSV, JSON and Parquet files.

Files are written atomically (hidden temporary sibling, then rename; the sibling is removed
whatever happens, and an ``OSError`` such as a full disk becomes a
:class:`~fesens.errors.WriteError` naming the file). CSV and JSON need
nothing beyond the standard library; Parquet needs ``pyarrow``. Floats are written so that
they read back bit for bit (``repr`` in CSV; NaN is ``nan`` in CSV and ``null`` in JSON).
Reading returns raw columns: CSV cells are strings, to be typed by the caller's schema.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import uuid
from pathlib import Path

from fesens.errors import writing

Columns = dict[str, list]

#: Suffix → format name.
FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet"}


def table_format(path: str | os.PathLike) -> str:
    """``"csv"``, ``"json"`` or ``"parquet"`` from the file suffix (ValueError otherwise)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the table format of {path}: use a .csv, .json or "
                         f".parquet file name")
    return FORMATS[suffix]


def parquet_available() -> bool:
    """Whether ``pyarrow`` is installed (Parquet files can be written and read)."""
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")


def _atomic(path: Path, write) -> Path:
    temporary = _temporary(path)
    with writing(path, temporary):
        path.parent.mkdir(parents=True, exist_ok=True)
        write(temporary)
        os.replace(temporary, path)
    return path


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_text(columns: Columns) -> str:
    """CSV text of the table: a header row, then one row per entry."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(columns))
    for row in zip(*columns.values(), strict=True):
        writer.writerow([_cell(v) for v in row])
    return buffer.getvalue()


def _json_value(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_table(path: str | os.PathLike, columns: Columns, types: dict[str, str]) -> Path:
    """Write ``columns`` to ``path`` in the format its suffix names.

    ``types`` maps each column to ``"int"``, ``"float"`` or ``"str"`` (Parquet schema).
    """
    path = Path(path)
    kind = table_format(path)
    if kind == "csv":
        text = csv_text(columns)
        return _atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if kind == "json":
        rows = [{k: _json_value(v) for k, v in zip(columns, row, strict=True)}
                for row in zip(*columns.values(), strict=True)]
        text = json.dumps(rows, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        return _atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}
    table = pa.table({name: pa.array(values, type=arrow[types[name]])
                      for name, values in columns.items()})
    return _atomic(path, lambda tmp: pq.write_table(table, tmp))


def read_table(path: str | os.PathLike) -> Columns:
    """Raw columns of a file written by :func:`write_table` (or any CSV/JSON/Parquet table).

    CSV cells come back as strings; JSON ``null`` as None.
    """
    path = Path(path)
    kind = table_format(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such table: {path}")
    if kind == "csv":
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise ValueError(f"{path} is empty")
            rows = list(reader)
        return {name: [row[i] for row in rows] for i, name in enumerate(header)}
    if kind == "json":
        rows = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{path}: expected a JSON list of row objects")
        names = list(rows[0]) if rows else []
        return {name: [r.get(name) for r in rows] for name in names}
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pydict()
