"""What runs in a worker process: the model's setup (once per process) and one sample.

The parametric model travels as bytes (:func:`dumps_model`, cloudpickle when installed so
that lambdas and closures of a script travel too) and is installed in the process under a
token, the hash of those bytes. The first sample of a token in a process unpickles the
model and runs its setup; later samples reuse the result. This per-process cache is the
only state here; :func:`uninstall` drops it.

After the setup, the BLAS and OpenMP thread pools of the process are limited to
``blas_threads`` (with ``threadpoolctl``; one by default): worker processes already share
the cores, and every backend then computes with the same thread count, so local processes
and a Dask cluster give bit-identical results. A process with several threads (a dask
worker with ``nthreads > 1``) runs one sample of a model at a time: FE solvers keep their
factorization in the context, which is not safe to share between threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import pickle
import signal
import socket
import sys
import threading
import time

from fesens.study.parametric import ParametricModel
from fesens.study.results import error_record

#: token → model installed in this process.
_INSTALLED: dict[str, InstalledModel] = {}
_LOCK = threading.Lock()


def dumps_model(model: ParametricModel) -> tuple[str, bytes]:
    """``(token, payload)``: the pickled model and the hash that names it.

    Raises
    ------
    TypeError
        The model cannot be pickled (then it cannot run in another process).
    """
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    try:
        payload = (cloudpickle or pickle).dumps(model)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        hint = "" if cloudpickle else " or install cloudpickle (lambdas, closures)"
        raise TypeError(f"the model cannot be sent to worker processes ({exc}); use "
                        f"module-level functions{hint}, or run in this process "
                        "(workers=0)") from exc
    return hashlib.sha1(payload).hexdigest(), payload


def worker_name() -> str:
    """``host:pid`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _describe(exc: BaseException) -> str:
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class InstalledModel:
    """A model in one process: unpickled and set up on first use, then reused.

    Parameters
    ----------
    payload : bytes, optional
        The pickled model (from :func:`dumps_model`).
    model : ParametricModel, optional
        The model itself (in-process runs).
    blas_threads : int, optional
        Thread limit of the BLAS/OpenMP pools after setup (None: leave them).
    """

    def __init__(self, payload: bytes | None = None, model: ParametricModel | None = None,
                 blas_threads: int | None = None):
        self._payload = payload
        self._model = model
        self._blas_threads = blas_threads
        self._ready = False
        self._setup_error = ""
        self._lock = threading.Lock()

    def _prepare(self) -> None:
        try:
            if self._model is None:
                self._model = pickle.loads(self._payload)
            self._model.context  # noqa: B018 - runs setup() once for this process
        except Exception as exc:
            self._setup_error = f"setup failed: {_describe(exc)}"
        if self._blas_threads is not None:
            limit_threads(self._blas_threads)
        self._ready = True

    def run(self, sample: int, inputs: dict[str, float]) -> dict:
        """One sample's record; exceptions of setup or evaluate become an error record."""
        with self._lock:
            if not self._ready:
                self._prepare()
            if self._setup_error:
                return error_record(sample, inputs, self._setup_error, worker_name())
            return _evaluate(self._model, sample, inputs)


def limit_threads(count: int) -> bool:
    """Limit the BLAS and OpenMP thread pools loaded in this process to ``count`` threads;
    False if ``threadpoolctl`` is not installed (nothing is changed then)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    threadpool_limits(limits=count)
    return True


def _evaluate(model: ParametricModel, sample: int, inputs: dict[str, float]) -> dict:
    start = time.perf_counter()
    try:
        evaluation = model.values_and_gradients(inputs)
    except Exception as exc:
        return error_record(sample, inputs, _describe(exc), worker_name(),
                            time.perf_counter() - start)
    wall_time = time.perf_counter() - start
    bad = evaluation.non_finite()
    return {"sample": sample, "inputs": inputs, "outputs": evaluation.values,
            "gradients": evaluation.gradients, "wall_time": wall_time,
            "status": "error" if bad else "ok",
            "error": f"non-finite output or gradient: {', '.join(bad)}" if bad else "",
            "worker": worker_name()}


#: ``prctl`` option: the signal this process gets when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1
#: Seconds between two looks at the parent of a local worker.
PARENT_POLL = 1.0


def _parent_death_signal() -> bool:
    """Ask the kernel for SIGKILL when the parent dies (Linux); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """Make this local worker process end when its parent ``parent`` (the study) ends, even
    by ``kill -9``: at once by the kernel's parent-death signal on Linux, and within
    :data:`PARENT_POLL` seconds by a thread that watches ``os.getppid()`` everywhere (a
    parent that died before this call is caught at once)."""
    _parent_death_signal()
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="fesens-parent-watch",
                     daemon=True).start()


def start_local_worker(parent: int, token: str, payload: bytes,
                       blas_threads: int | None = 1) -> None:
    """Initializer of a local worker process: die with the study process ``parent``, leave
    Ctrl-C to it (the study stops its workers itself), install the model."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install(token, payload, blas_threads)


def install(token: str, payload: bytes, blas_threads: int | None = 1) -> None:
    """Make the model ``token`` available in this process (nothing is run yet)."""
    with _LOCK:
        _INSTALLED.setdefault(token, InstalledModel(payload, blas_threads=blas_threads))


def uninstall(token: str) -> None:
    """Forget the model ``token`` and its setup result."""
    with _LOCK:
        _INSTALLED.pop(token, None)


def run_sample(token: str, sample: int, inputs: dict[str, float]) -> dict:
    """Evaluate one sample of the installed model ``token`` with its gradients.

    Raises
    ------
    LookupError
        The model ``token`` was not installed in this process.
    """
    with _LOCK:
        installed = _INSTALLED.get(token)
    if installed is None:
        raise LookupError(f"study model {token[:12]} is not installed in worker {worker_name()}")
    return installed.run(sample, inputs)
