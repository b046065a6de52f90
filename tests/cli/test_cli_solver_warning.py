"""Without CHOLMOD, ``fesens`` says once that ``auto`` factorizes with the slower SuperLU,
and how to install CHOLMOD (the console script's code in a fresh interpreter, under
Python's default warning filters, with scikit-sparse hidden)."""

from __future__ import annotations

import subprocess
import sys

from cli_helpers import write_config

from fesens.solvers.registry import CHOLMOD_FALLBACK_MESSAGE

WITHOUT_CHOLMOD = ("import fesens.solvers.cholmod as cholmod; cholmod._cholmod = None; "
                   "from fesens.cli import main; main()")


def test_an_optimization_without_cholmod_says_it_once(tmp_path):
    config = write_config(tmp_path)
    done = subprocess.run([sys.executable, "-W", "default", "-c", WITHOUT_CHOLMOD, "optimize",
                           str(config), "--out", str(tmp_path / "out"), "--max-iter", "3",
                           "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count(CHOLMOD_FALLBACK_MESSAGE) == 1, done.stderr
    # one ``warning: ...`` line, not Python's file:line form with the source line
    assert done.stderr.strip() == f"warning: {CHOLMOD_FALLBACK_MESSAGE}", done.stderr
