"""NumPy code on tensors is traced into the graph through torch._numpy (variables/ndarray.py):
results, their types (arrays, NumPy scalars, tensors) and dtypes match eager NumPy, with no break."""
import warnings

import numpy as np
import pytest
import torch

import tinydynamo
import tinydynamo.dynamo as dynamo


def meshgrid_and_back(x):
    r1, r2 = np.meshgrid(x.numpy(), x.numpy())
    return torch.from_numpy(r1), torch.from_numpy(r2)


def attributes(x):
    a = x.numpy()
    return a.size, a.shape, a.ndim, torch.from_numpy(a.T), a.T, a.real


def reductions(x):
    x_mean = np.mean(x.numpy(), 1)
    x_sum = np.sum(x_mean)  # a NumPy scalar, as in eager
    return torch.from_numpy(np.asarray(x_sum)), x_sum, x_mean


def methods_and_operators(x):
    a = x.numpy()
    return a + a, a - a * 2, a.copy(), a.reshape(5, 20)[0], np.linalg.norm(a, axis=0), np.fft.fftshift(a)


def dtype_argument(x):
    return np.ones_like(x, dtype=np.float64), np.zeros((2, 3), dtype=np.int32)


def converted_to_tensors(x):
    """BigBird builds its attention plan in NumPy, then ``torch.tensor(plan, device=..., dtype=...)``."""
    a = np.stack([np.arange(6, dtype=np.int32).reshape(2, 3) * k for k in range(2)], axis=0)
    shared = torch.as_tensor(a, dtype=torch.int32)
    shared += 1  # the same memory as a, as in eager
    row = x[0, :3]
    return (torch.tensor(a, device=x.device, dtype=torch.long) + row.long(), torch.tensor(a / 4, dtype=torch.int64),
            torch.as_tensor(a, dtype=torch.float64) * row, a)


def same(actual, expected):
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            same(a, e)
    elif isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    else:
        assert actual == expected


@pytest.mark.parametrize("fn", [meshgrid_and_back, attributes, reductions, methods_and_operators, dtype_argument,
                                converted_to_tensors])
def test_numpy_code_matches_eager_numpy_in_one_graph(fn):
    x = torch.randn(10, 10)
    same(dynamo.compile(fn, backend="eager")(x), fn(x))
    explanation = tinydynamo.explain(fn)(x)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)


def test_an_array_returned_shares_memory_with_the_graph_output():
    def view(x):
        return (x * 2).numpy()

    out = dynamo.compile(view, backend="eager")(torch.ones(3))
    assert type(out) is np.ndarray and out.dtype == np.float32 and out.tolist() == [2.0, 2.0, 2.0]


def test_numpy_of_a_tensor_that_requires_grad_is_not_traced():
    def leaves(x):
        return x.numpy()

    with pytest.raises(RuntimeError, match="requires grad"):  # the same error as eager's
        dynamo.compile(leaves, backend="eager")(torch.ones(2, requires_grad=True))


# --- arrays as arguments: the graph takes torch.from_numpy of each (variables/builder.py) ---------

def index_with_array(x, a):
    return x[torch.tensor(a, device=x.device, dtype=torch.long)] * 2


def array_arithmetic(x, a):
    b = a * 2 + 1
    return x + torch.from_numpy(b).float(), np.mean(a), b, a.shape, a.dtype == np.float64, len(a)


def arrays_in_containers(x, arrays, table):
    return x * torch.from_numpy(arrays[0]) + torch.as_tensor(table["bias"]), arrays[1].T


ARRAY_CASES = [
    (index_with_array, lambda: (torch.randn(6, 3), np.array([0, 2, 4], dtype=np.int32))),
    (array_arithmetic, lambda: (torch.randn(3), np.arange(3.0))),
    (arrays_in_containers, lambda: (torch.randn(2, 3), [np.ones((2, 3), np.float32), np.arange(6.0).reshape(2, 3)],
                                    {"bias": np.full(3, 0.5, np.float32)})),
]


@pytest.mark.parametrize("fn, make_args", ARRAY_CASES, ids=[fn.__name__ for fn, _ in ARRAY_CASES])
@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_an_array_argument_is_a_graph_input(fn, make_args, backend):
    args = make_args()
    same(dynamo.compile(fn, backend=backend)(*args), fn(*args))
    explanation = tinydynamo.explain(fn)(*args)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0)  # torch._dynamo: the same


def test_an_array_argument_written_in_place_is_the_same_array():
    def bump(a, x):
        a += x.numpy()
        return a

    a = np.zeros(3, np.float32)
    out = dynamo.compile(bump, backend="inductor")(a, torch.ones(3))
    assert out is a and a.tolist() == [1.0, 1.0, 1.0]


def test_an_array_argument_is_guarded_as_its_tensor():
    """A new dtype, size or layout recompiles; a list in its place runs the frame again too."""
    def total(a):
        return torch.as_tensor(a).sum() * 2

    compiled = dynamo.compile(total, backend="inductor")
    for a in [np.arange(4.0), np.arange(5, dtype=np.float32), np.arange(6.0).reshape(2, 3).T, np.arange(7),
              [1.0, 2.0]]:
        assert compiled(a).item() == total(a).item()
    assert type(compiled(np.arange(3, dtype=np.int16))) is torch.Tensor


def test_an_array_torch_cannot_share_is_left_to_python():
    """A read-only array (torch.from_numpy would warn on every call) or one in another byte order
    (it raises) is not a graph input: the frame uses it as a Python object, as eager does."""
    def first(a, x):
        return x * len(a) + float(a[1])

    read_only = np.arange(2.0)
    read_only.flags.writeable = False
    x = torch.ones(2, dtype=torch.float64)
    for a in [read_only, np.arange(2.0).astype(">f8")]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # eager's own warning for the read-only array
            assert torch.equal(dynamo.compile(first, backend="eager")(a, x), first(a, x))
