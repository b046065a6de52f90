"""`fesens study` as a real process with slow local workers:
Ctrl-C ends it promptly with the resume command, ``kill -9`` of the main process leaves no
worker behind, and a second study on the folder in use is refused.

The workers are slowed down by a ``sitecustomize`` module on ``PYTHONPATH`` (every Python
process of the test, workers included, imports it at start): each sample sleeps
``FESENS_TEST_SAMPLE_SLEEP`` seconds before it is evaluated.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from study_helpers import STUDY
from study_helpers import write_study as write

ROOT = Path(__file__).resolve().parents[2]
SLOW = """
import os
if os.environ.get("FESENS_TEST_SAMPLE_SLEEP"):
    import time
    import fesens.study.worker as worker
    evaluate = worker._evaluate

    def slow(*args, **kwargs):
        time.sleep(float(os.environ["FESENS_TEST_SAMPLE_SLEEP"]))
        return evaluate(*args, **kwargs)

    worker._evaluate = slow
"""

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


def start(tmp_path: Path, out: Path, *args, sleep: float = 60.0) -> subprocess.Popen:
    """``fesens study`` with 2 workers whose samples take ``sleep`` s, in its own session."""
    (tmp_path / "site").mkdir(exist_ok=True)
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW)
    study = write(tmp_path, STUDY.replace("samples = 4", "samples = 8"))
    env = dict(os.environ, FESENS_TEST_SAMPLE_SLEEP=str(sleep),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(ROOT)]))
    return subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "study", str(study), "--out",
                             str(out), "--workers", "2", "-q", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_for_workers(process: subprocess.Popen, count: int, timeout: float = 300.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = children(process.pid)
        if len(found) >= count:
            time.sleep(2.0)  # the workers import fesens and start their first sample
            return children(process.pid)
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"the study started no {count} workers within {timeout} s")


def survivors(pids: set[int], within: float = 5.0) -> set[int]:
    """The processes of ``pids`` still running ``within`` seconds from now (or earlier,
    once none is)."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {p for p in pids if alive(p)}


def reap(pids: set[int]) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_kill_9_of_the_study_leaves_no_worker_running(tmp_path):
    process = start(tmp_path, tmp_path / "out")
    pids = wait_for_workers(process, 3)  # two workers and multiprocessing's resource tracker
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=300)
    left = survivors(pids, within=60.0)  # at once in practice; margin for a loaded machine
    reap(left)
    process.stderr.close()
    assert not left, f"worker processes {sorted(left)} outlived the killed study"


def test_ctrl_c_ends_promptly_with_the_resume_command(tmp_path):
    out = tmp_path / "out"
    # samples of an hour: a study that waited for those in flight outlives the generous
    # timeout, where an elapsed time asserted against a few seconds fails on a loaded machine
    process = start(tmp_path, out, sleep=3600.0)
    pids = wait_for_workers(process, 3)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
    try:
        _, stderr = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("the study waited for the samples in flight")
    finally:
        reap(pids | {process.pid})
    assert process.returncode == 130, stderr
    assert stderr.startswith("error: interrupted"), stderr
    assert f"Resume with: fesens study {tmp_path / 'study.toml'} --out {out} --resume" \
        in stderr
    assert "Traceback" not in stderr
    assert not survivors(pids)


def test_a_second_study_while_one_runs_is_refused(tmp_path):
    out = tmp_path / "out"
    process = start(tmp_path, out, sleep=3600.0)  # still running whatever the load
    pids = wait_for_workers(process, 3)
    try:
        before = sorted(p.name for p in out.iterdir())
        second = subprocess.run([sys.executable, str(ROOT / "cli.py"), "study",
                                 str(tmp_path / "study.toml"), "--out", str(out), "--force",
                                 "--workers", "0", "-q"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=300)
        assert second.returncode == 2, second.stderr
        assert f"results folder {out} is in use by another fesens run" in second.stderr
        assert sorted(p.name for p in out.iterdir()) == before
        assert process.poll() is None
    finally:
        reap(pids | {process.pid})
        process.communicate()
