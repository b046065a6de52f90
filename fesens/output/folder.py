"""The results folder: never overwritten by accident, every file written atomically.

A folder holds the files of one run (``config.toml``, ``summary.json``, ``history.csv``,
``checkpoint.npz``, VTU and PNG files), never a mix of two. :meth:`ResultsFolder.check`
refuses an existing, non-empty folder unless ``--force`` (start over) or ``--resume``
(continue its run) is given, and does so before anything is written. Each file is written
to a hidden temporary sibling and renamed, so readers never see half a file. A run holds the
folder's lock (:meth:`ResultsFolder.locked`), so a second run on the same folder is refused.

Every name a run writes is recorded, before it is written, in the folder's hidden manifest
(:data:`MANIFEST`), so that ``--force`` removes exactly the previous run's files (a
Newton run's ``load_path.csv``, a time series' steps) and never the user's: not their
other files, nor a file the run reads (its config, a ``--design``), whatever its name.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fesens.errors import FesensError, writing

#: Files a run may write (``--force`` removes these and nothing else).
ARTIFACTS = (
    "config.toml", "summary.json", "history.csv", "checkpoint.npz", "design.vtu",
    "design.pvd", "design.png", "convergence.png", "solution.vtu", "solution.png",
    "solution.json", "sensitivity.vtu", "sensitivity.png", "sensitivity.json",
    "sensitivity.csv", "mode_1.png", "design.stl", "design_stl.png", "design_outline.svg",
)
#: Intermediate designs: ``design_0020.vtu``.
SNAPSHOT = re.compile(r"^design_(\d+)\.vtu$")
#: Temporary files of atomic writes (ours, ``write_mesh``'s, ``save_figure``'s, the
#: checkpoint's): hidden names containing ``.tmp``.
TEMPORARY = re.compile(r"^\..*\.tmp")

CHECKPOINT = "checkpoint.npz"
#: The names of the files the folder's runs wrote, one per line (``--force`` removes them).
MANIFEST = ".fesens-files"
#: The lock file of a run in progress (``flock``; released when the process ends).
LOCK = ".fesens.lock"
#: Columns that differ between otherwise identical runs, left out of ``history.csv``.
TIMING_COLUMNS = ("seconds",)
HISTORY_FIRST = ("iteration", "objective", "volume", "change")


class ResultsFolderError(FesensError, ValueError):
    """The results folder cannot be used as asked (exists, no checkpoint, not a folder)."""


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to a hidden sibling of ``path``, then rename it over ``path``."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with writing(path, temporary):
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    return path


def history_csv(history: list[dict]) -> str:
    """CSV text of the iteration records (without timings, so reruns compare equal)."""
    keys = {key for record in history for key in record} - set(TIMING_COLUMNS)
    columns = [k for k in HISTORY_FIRST if k in keys] + sorted(keys - set(HISTORY_FIRST))

    def cell(value) -> str:
        if value is None:
            return ""
        return str(value) if isinstance(value, int) else repr(float(value))

    rows = [",".join(columns)]
    rows += [",".join(cell(record.get(k)) for k in columns) for record in history]
    return "\n".join(rows) + "\n"


class ResultsFolder:
    """One run's output folder.

    Parameters
    ----------
    path : Path
    inputs : iterable of path
        Files the run reads (its config, a design): :meth:`prepare` never removes them,
        whatever their names.
    """

    def __init__(self, path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()):
        self.path = Path(path)
        self.inputs = tuple(Path(p) for p in inputs)
        self._holding = False
        self._wrote = False

    def file(self, name: str) -> Path:
        """The path of the output ``name``, recorded in the manifest as this run's before
        it is written (read a file of the folder as ``folder.path / name``)."""
        written = self._manifest()
        self._wrote = True
        if name not in written and self.path.is_dir():
            # sorted: the same files give the same manifest, however the runs were split
            atomic_write_text(self.path / MANIFEST, "".join(f"{n}\n" for n in
                                                            sorted([*written, name])))
        return self.path / name

    def _manifest(self) -> list[str]:
        """The names the manifest records (none without one)."""
        try:
            text = (self.path / MANIFEST).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [name for name in text.splitlines() if name]

    def _prune_manifest(self) -> None:
        """Keep the manifest's names of files that exist; remove it when none does."""
        names = [n for n in self._manifest() if (self.path / n).is_file()]
        if names:
            atomic_write_text(self.path / MANIFEST, "".join(f"{n}\n" for n in names))
        else:
            (self.path / MANIFEST).unlink(missing_ok=True)

    def is_input(self, path: Path) -> bool:
        """Whether ``path`` is one of the files the run reads (:attr:`inputs`)."""
        return any(p.is_file() and os.path.samefile(p, path) for p in self.inputs)

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    def is_empty(self) -> bool:
        """True if the folder does not exist or holds nothing but the lock file and the
        manifest."""
        return not self.path.exists() or (
            self.path.is_dir() and all(p.name in (LOCK, MANIFEST) for p in self.path.iterdir()))

    def _in_use_error(self) -> ResultsFolderError:
        return ResultsFolderError(f"results folder {self.path} is in use by another fesens "
                                  "run; wait for it to finish or choose another --out")

    def _in_use(self) -> bool:
        """Whether another run holds the lock (tested without taking it for long)."""
        if self._holding:
            return False
        try:
            with open(self.path / LOCK, "rb") as file:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            return False
        except BlockingIOError:
            return True
        return False

    def _is_lock_file(self, file) -> bool:
        try:
            return os.path.samestat(os.fstat(file.fileno()), (self.path / LOCK).stat())
        except FileNotFoundError:
            return False

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Create the folder and hold its exclusive lock (``flock`` on :data:`LOCK`) until
        the block ends, however it ends; the kernel releases it when the process dies. A
        folder created here and left empty (the run failed before writing) is removed.

        Raises
        ------
        ResultsFolderError
            Another run holds the lock.
        """
        created = not self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        lock = self.path / LOCK
        while True:
            file = open(lock, "ab")  # noqa: SIM115 - closed below, after the block
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                file.close()
                raise self._in_use_error() from None
            # the holder before us may have removed the file after we opened it: retry
            if self._is_lock_file(file):
                break
            file.close()
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
            if self._wrote:  # a refused run leaves the folder as it found it
                self._prune_manifest()
            lock.unlink(missing_ok=True)
            file.close()
            if created and not any(self.path.iterdir()):
                self.path.rmdir()

    def check(self, *, force: bool = False, resume: bool = False, command: str = "") -> None:
        """Raise :class:`ResultsFolderError` if the folder may not be used; writes nothing.

        ``command`` is the command line to suggest (e.g. ``fesens optimize mbb.toml``).
        """
        if self.path.exists() and not self.path.is_dir():
            raise ResultsFolderError(f"results folder {self.path} is a file, not a folder")
        if self._in_use():
            raise self._in_use_error()
        if resume:
            if not self.checkpoint.is_file():
                raise ResultsFolderError(
                    f"cannot resume: no checkpoint in {self.path} ({self.checkpoint} does not "
                    "exist); run without --resume to start a new run")
            return
        if not self.is_empty() and not force:
            hint = " or --resume to continue its run" if self.checkpoint.is_file() else ""
            raise ResultsFolderError(
                f"results folder {self.path} exists and is not empty; nothing was written. "
                f"Pass --force to overwrite its results{hint}, or choose another --out"
                + (f" ({command} --out OTHER)" if command else ""))

    def prepare(self, *, clear: bool) -> None:
        """Create the folder and remove the temporary files a killed run left; with
        ``clear``, remove the files of previous runs too: those the manifest records and
        those of :data:`ARTIFACTS` and :data:`SNAPSHOT` (a folder older than its
        manifest), never one of :attr:`inputs`."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.remove_temporaries()
        if not clear:
            return
        recorded = set(self._manifest())
        for entry in self.path.iterdir():
            name = entry.name
            if entry.is_file() and (name in recorded or name in ARTIFACTS
                                    or SNAPSHOT.match(name)) and not self.is_input(entry):
                entry.unlink()
        (self.path / MANIFEST).unlink(missing_ok=True)

    def remove_temporaries(self) -> None:
        """Delete temporary files left by an interrupted atomic write."""
        if self.path.is_dir():
            for entry in self.path.iterdir():
                if entry.is_file() and TEMPORARY.match(entry.name):
                    entry.unlink(missing_ok=True)

    # ------------------------------------------------------------ writers
    def write_text(self, name: str, text: str) -> Path:
        return atomic_write_text(self.file(name), text)

    def write_json(self, name: str, data: dict) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def write_history(self, history: list[dict]) -> Path:
        return self.write_text("history.csv", history_csv(history))

    def snapshots(self) -> list[tuple[int, str]]:
        """``(iteration, file name)`` of the intermediate design VTU files, sorted."""
        found = [(int(m.group(1)), m.group(0))
                 for m in (SNAPSHOT.match(p.name) for p in self.path.iterdir()) if m]
        return sorted(found)

    def write_collection(self) -> Path:
        """``design.pvd``: the intermediate designs as one ParaView time series."""
        lines = ['<?xml version="1.0"?>',
                 '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
                 "  <Collection>"]
        lines += [f'    <DataSet timestep="{it}" group="" part="0" file="{name}"/>'
                  for it, name in self.snapshots()]
        lines += ["  </Collection>", "</VTKFile>"]
        return self.write_text("design.pvd", "\n".join(lines) + "\n")
