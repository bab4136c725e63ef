"""NumPy code on tensors is traced into the graph through torch._numpy (variables/ndarray.py):
results, their types (arrays, NumPy scalars, tensors) and dtypes match eager NumPy, with no break."""
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
