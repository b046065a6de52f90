"""A progress bar for a study: tqdm when installed, else a plain line every few seconds."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Counts finished samples (and errors) and shows the rate.

    Parameters
    ----------
    total : int
        Samples in the study.
    done : int
        Samples finished before (a resumed study).
    enabled : bool
        False shows nothing.
    stream : file, optional
        Where to write (default ``sys.stderr``).
    interval : float
        Seconds between two plain lines (tqdm chooses its own refresh).
    """

    def __init__(self, total: int, done: int = 0, *, enabled: bool = True,
                 stream: TextIO | None = None, interval: float = 5.0):
        self.total, self.done, self.errors = total, done, 0
        self.enabled = enabled
        self.stream = stream
        self.interval = interval
        self._start = time.perf_counter()
        self._last = self._start
        self._initial = done
        self._bar = self._tqdm() if enabled else None

    def _tqdm(self):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        return tqdm(total=self.total, initial=self.done, unit="sample", desc="study",
                    file=self.stream or sys.stderr, dynamic_ncols=True)

    def update(self, status: str) -> None:
        """One more sample finished with ``status`` (``"ok"`` or ``"error"``)."""
        self.done += 1
        self.errors += status != "ok"
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(1)
            if self.errors:
                self._bar.set_postfix(errors=self.errors, refresh=False)
            return
        now = time.perf_counter()
        if now - self._last >= self.interval or self.done == self.total:
            self._last = now
            print(self.line(), file=self.stream or sys.stderr, flush=True)

    def line(self) -> str:
        """``study: 12/64 samples, 1 error, 3.1 samples/s, about 17 s left``."""
        elapsed = time.perf_counter() - self._start
        rate = (self.done - self._initial) / elapsed if elapsed > 0 else 0.0
        left = f", about {(self.total - self.done) / rate:.0f} s left" \
            if rate > 0 and self.done < self.total else ""
        errors = f", {self.errors} error{'s' * (self.errors != 1)}" if self.errors else ""
        return f"study: {self.done}/{self.total} samples{errors}, {rate:.3g} samples/s{left}"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
