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

import hashlib
import os
import pickle
import socket
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
