"""fesens functions as PyTorch functions (``fesens.interop.torch.as_torch``): gradients
agree with fesens's own through ``.backward()``, ``torch.autograd.gradcheck`` passes, pytrees
go in and out; float32 is converted with a warning, integer and complex are refused."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install fesens[torch])")
from interop_helpers import (  # noqa: E402
    OBJECTIVES,
    RTOL,
    densities,
    objective,
    pytree_function,
    relative_error,
)

from fesens.ad import value_and_grad, vjp  # noqa: E402
from fesens.interop import AdapterDtypeError, AdapterWarning  # noqa: E402
from fesens.interop.torch import as_torch  # noqa: E402


def tensor(x) -> "torch.Tensor":
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("load_cases", [False, True], ids=["one case", "two cases"])
@pytest.mark.parametrize("name", OBJECTIVES)
@pytest.mark.parametrize("dim", [2, 3])
def test_gradient_agrees_with_fesens(dim, name, load_cases):
    fun = objective(dim, name, load_cases)
    x = densities(dim, seed=dim)
    value, gradient = value_and_grad(fun)(x)
    xt = tensor(x)
    out = as_torch(fun)(xt)
    out.backward()
    assert out.dtype == torch.float64 and out.shape == ()
    assert out.item() == pytest.approx(float(value), rel=RTOL)
    assert relative_error(xt.grad.numpy(), gradient) < RTOL


@pytest.mark.parametrize("dim", [2, 3])
def test_gradcheck(dim):
    fun = objective(dim, "stress_pnorm", False)
    assert torch.autograd.gradcheck(as_torch(fun), (tensor(densities(dim, seed=11)),))


def test_one_fesens_evaluation_per_forward_and_backward():
    """The backward applies the forward's pullback: fesens runs (and solves) once."""
    fun = objective(2, "compliance", True)
    calls = []
    adapted = as_torch(lambda x: calls.append(1) or fun(x))
    adapted(tensor(densities(2))).backward()
    assert len(calls) == 1


def test_pytrees_in_and_out_and_constants():
    fun = pytree_function(2)
    x, load, factor = densities(2, seed=7), 1.3, 0.5
    params = {"x": tensor(x), "load": tensor(load)}
    out = as_torch(fun)(params, factor)  # a Python number: a constant
    (out["compliance"] * 2.0 + torch.sum(out["tip"] * torch.arange(4.0))).backward()
    expected, pullback = vjp(lambda p: fun(p, factor), {"x": x, "load": load})
    want = pullback({"compliance": 2.0, "tip": np.arange(4.0)})
    assert relative_error(out["tip"].detach().numpy(), expected["tip"]) < RTOL
    assert relative_error(params["x"].grad.numpy(), want["x"]) < RTOL
    assert params["load"].grad.item() == pytest.approx(float(want["load"]), rel=RTOL)


def test_float32_is_converted_with_a_warning():
    fun = objective(2, "compliance", False)
    x = densities(2, seed=3).astype(np.float32)
    x32 = torch.tensor(x, requires_grad=True)
    with pytest.warns(AdapterWarning, match="dtype float32: converted to float64"):
        out = as_torch(fun)(x32)
    out.backward()
    assert out.dtype == torch.float64 and x32.grad.dtype == torch.float32
    gradient = value_and_grad(fun)(x.astype(np.float64))[1]
    assert relative_error(x32.grad.numpy(), gradient) < 1e-6  # float32 round-off


@pytest.mark.parametrize(("dtype", "named"), [
    (torch.int64, "integer dtype int64"), (torch.complex128, "complex dtype complex128")])
def test_integer_and_complex_are_refused(dtype, named):
    with pytest.raises(AdapterDtypeError, match=named):
        as_torch(objective(2, "compliance", False))(torch.ones(18, dtype=dtype))


def test_shapes_that_do_not_match_and_no_tensor():
    adapted = as_torch(objective(2, "compliance", False))
    with pytest.raises(ValueError, match=r"one value per cell \(18\), got shape \(17,\)"):
        adapted(tensor(np.ones(17)))
    with pytest.raises(TypeError, match="without tensor arguments"):
        adapted(np.ones(18))
