"""fesens.arrays.namespace: kernels follow the library of their inputs."""

import numpy as np
import pytest

from fesens.arrays import namespace


class Foreign:
    """An array of another library: only the array API's protocol."""

    def __init__(self, module):
        self.module = module

    def __array_namespace__(self):
        return self.module


def test_numpy_arrays_and_scalars_are_numpy():
    assert namespace(np.zeros(2), 1.0, np.float64(2.0)) is np
    assert namespace() is np


def test_another_library_is_found_by_its_protocol():
    lib = object()
    assert namespace(Foreign(lib), Foreign(lib)) is lib


def test_two_libraries_in_one_operation_are_refused():
    lib = type("cupy", (), {"__name__": "cupy"})
    with pytest.raises(TypeError, match="arrays of different libraries in one operation: "
                                        "cupy, numpy"):
        namespace(np.zeros(2), Foreign(lib))
