"""Each prim's eager impl against its meta rule, and the Prim contract itself."""
import copy
import inspect
import pickle

import pytest
import torch

import tinydynamo.prims as prims
from prims_helpers import make_tensor as T
from tinydynamo.prims import KINDS, PRIMS
from tinydynamo.prims.primitives import FLOAT, INTEGRAL, NUMBER, _SUPPORTED_DTYPES, suggest_memory_format, view_strides

f32, bf16, i64, b8 = torch.float32, torch.bfloat16, torch.int64, torch.bool


def _pointwise_inputs(prim_name):
    """Sample argument lists for a pointwise prim, for each dtype class it accepts."""
    arity = len(inspect.signature(PRIMS[prim_name].impl).parameters)
    dtypes = [d for d in (f32, bf16, i64, b8) if d in _SUPPORTED_DTYPES[_DTYPE_CLASS[prim_name]]]
    samples = []
    for dtype in dtypes:
        low = 1 if prim_name in ("pow", "div", "fmod") else -3
        tensors = [T(3, 4, dtype=dtype, low=low) for _ in range(arity)]
        samples.append(tensors)
        samples.append([T(4, 3, dtype=dtype, low=low, noncontiguous=True) for _ in range(arity)])
        if arity == 2:
            scalar = 2 if not dtype.is_floating_point else 1.5
            samples += [[tensors[0], True if dtype == b8 else scalar], [True if dtype == b8 else scalar, tensors[1]]]
    samples.append([T(0, 2, dtype=dtypes[0]) for _ in range(arity)])
    samples.append([T(dtype=dtypes[0], low=0.5) for _ in range(arity)])
    return samples


_DTYPE_CLASS = {
    **dict.fromkeys(["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf",
                     "reciprocal"], FLOAT),
    **dict.fromkeys(["abs", "neg", "floor", "ceil", "round", "trunc", "sign", "sub", "div", "fmod",
                     "pow"], NUMBER),
    **dict.fromkeys(["bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor"], INTEGRAL),
    **dict.fromkeys(["add", "mul", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"],
                    "bool, integer or floating point"),
}

_x = T(2, 3, 4)
_nc = T(4, 3, 2, noncontiguous=True)
_cl = torch.channels_last
_idx = torch.tensor([[0, 2, 1], [3, 3, 0]])
OTHER_SAMPLES = {
    "where": [(T(3, 4, dtype=b8), T(3, 4), T(3, 4)), (T(3, 4, dtype=b8), T(3, 4, dtype=i64), 7),
              (T(3, dtype=b8), 0.5, T(3, noncontiguous=True))],
    "convert_element_type": [(_x, i64), (T(3, dtype=i64), f32), (_nc, b8), (_x, f32), (T(3, dtype=b8), bf16)],
    "sum": [(_x, [0, 2]), (_x, []), (_nc, [1]), (T(3, 4, dtype=i64), [0]), (T(0, 3), [0])],
    "prod": [(_x, [1]), (_x, [2, 0]), (T(3, 4, dtype=i64), [1])],
    "amax": [(_x, [1]), (_nc, [0, 2]), (T(3, 4, dtype=b8), [1]), (_x, [])],
    "amin": [(_x, [0]), (T(3, 4, dtype=i64), [0, 1])],
    "argmax": [(_x, 1), (_nc, 0), (T(3, 4, dtype=i64), 1)],
    "argmin": [(_x, 2), (_nc, 1)],
    "broadcast_in_dim": [(T(3, 1), [2, 3, 4], [1, 2]), (T(), [2, 3], []), (_nc, [4, 3, 5, 2], [0, 1, 3]),
                         (T(3), [3], [0])],
    "reshape": [(_x, [6, 4]), (_x, [24]), (_nc, [12, 2]), (_nc, [24]), (T(4, 6)[:, 1:4], [2, 2, 3]),
                (T(4, 6)[:, 1:4], [12]), (T(2, 1, 3).expand(2, 5, 3), [10, 3]), (T(0, 3), [3, 0]),
                (T(1, 4, 1), [4]), (T(4).expand(3, 4), [3, 2, 2])],
    "permute": [(_x, [2, 0, 1]), (_nc, [1, 2, 0]), (T(), [])],
    "slice": [(T(5, 6), [1, 0], [4, 6], [1, 2]), (_nc, [0, 1, 0], [4, 3, 1], None), (T(5, 6), [2, 2], [2, 6], [1, 3]),
              (T(4, 6)[1:, 2:], [1, 1], [3, 4], [2, 1])],
    "gather": [(T(4, 3), 0, _idx), (T(3, 5), 1, _idx), (T(4, 3, noncontiguous=True), 0, _idx[:, :2])],
    "scatter_add": [(T(4, 3), 0, _idx, T(2, 3)), (T(3, 5, dtype=i64), 1, _idx, T(2, 3, dtype=i64))],
    "cat": [([T(2, 3), T(4, 3)], 0), ([T(2, 3), _nc[:, :, 0][:2]], 0), ([T(2, 1), T(2, 0), T(2, 2)], 1)],
    "mm": [(T(3, 4), T(4, 5)), (T(4, 3, noncontiguous=True).t(), T(4, 2))],
    "bmm": [(T(2, 3, 4), T(2, 4, 5))],
    "convolution": [(T(2, 3, 6, 6), T(4, 3, 3, 3), T(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
                    (T(2, 4, 7, 7), T(4, 2, 3, 3), None, [2, 2], [0, 0], [1, 1], False, [0, 0], 2),
                    # channels-last, as oneDNN lays the result out when the input or the weight is
                    (T(2, 3, 6, 6).to(memory_format=_cl), T(4, 3, 3, 3), T(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
                    (T(2, 4, 6, 6), T(4, 3, 3, 3).to(memory_format=_cl), None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1)],
    "convolution_backward": [(T(2, 4, 6, 6), T(2, 3, 6, 6), T(4, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True]),
                             (T(2, 4, 6, 6), T(2, 3, 6, 6), T(4, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True]),
                             (T(2, 4, 6, 6).to(memory_format=_cl), T(2, 3, 6, 6).to(memory_format=_cl), T(4, 3, 3, 3),
                              [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True])],
}


# Creation prims take keyword arguments: (args, kwargs) pairs.
CREATION_SAMPLES = {
    "full": [(([2, 3], 1.5), dict(dtype=f32, device="cpu")), (([4], 3), dict(dtype=i64, device="cpu")),
             (([], True), dict(dtype=b8, device="cpu"))],
    "iota": [((5,), dict(start=2, step=3, dtype=i64, device="cpu")), ((0,), dict(start=0, step=1, dtype=i64, device="cpu"))],
    "uniform": [(([2, 3], 0.0, 1.0), dict(dtype=f32, device="cpu")), (([4], -1, 1), dict(dtype=bf16, device="cpu"))],
}


def _samples(name):
    if name in _DTYPE_CLASS:
        return [(args, {}) for args in _pointwise_inputs(name)]
    if name in CREATION_SAMPLES:
        return CREATION_SAMPLES[name]
    return [(args, {}) for args in OTHER_SAMPLES[name]]


def _meta_of(value):
    """A meta tensor like value, down to its storage offset."""
    if isinstance(value, torch.Tensor):
        storage = torch.empty(value.untyped_storage().nbytes() // value.element_size(), dtype=value.dtype,
                              device="meta")
        return storage.as_strided(value.shape, value.stride(), value.storage_offset())
    if isinstance(value, list):
        return [_meta_of(v) for v in value]
    return value


def _significant_strides(t):
    return [s for size, s in zip(t.shape, t.stride()) if size > 1]


def _shares_storage(out, args):
    return any(isinstance(a, torch.Tensor) and out.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
               and out.numel() > 0 for a in args)


def _check_agrees(name, out, meta, args):
    assert out.shape == meta.shape and out.dtype == meta.dtype, (name, out.shape, meta.shape, out.dtype, meta.dtype)
    assert meta.device.type == "meta"
    if out.numel() > 0:
        assert _significant_strides(out) == _significant_strides(meta), (name, out.stride(), meta.stride())
    is_view = meta._is_view()
    assert _shares_storage(out, args) == (is_view and out.numel() > 0), f"{name}: view-ness differs"
    if is_view:
        assert out.storage_offset() == meta.storage_offset()
    elif name in ("convolution", "convolution_backward"):
        input_and_weight = args[:2] if name == "convolution" else args[1:3]
        memory_format = suggest_memory_format(*input_and_weight)
        assert out.is_contiguous(memory_format=memory_format), f"{name}: not in {memory_format}"
    else:
        assert out.is_contiguous(), f"{name}: a non-view prim must return a contiguous tensor"


def test_every_prim_has_samples():
    assert set(PRIMS) == set(_DTYPE_CLASS) | set(OTHER_SAMPLES) | set(CREATION_SAMPLES)


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_impl_agrees_with_meta(name):
    prim = PRIMS[name]
    for args, kwargs in _samples(name):
        out = prim(*args, **kwargs)
        meta = prim.meta(*_meta_of(list(args)), **kwargs)
        if isinstance(out, tuple):
            for o, m in zip(out, meta):
                assert (o is None) == (m is None)
                if o is not None:
                    _check_agrees(name, o, m, args)
        else:
            _check_agrees(name, out, meta, args)


def test_prim_table_is_small_and_documented():
    assert len(PRIMS) <= 60
    for name, prim in PRIMS.items():
        assert prim.kind in KINDS
        signature, _, semantics = prim.doc.partition(": ")
        assert signature.startswith(f"{name}(") and "->" in signature and semantics, prim.doc
        assert getattr(prims, name) is prim and repr(prim) == f"prims.{name}"


@pytest.mark.parametrize("args, message", [
    ((T(3), T(4)), "shapes differ"),
    ((T(3), T(3, dtype=torch.float64)), "dtypes differ"),
    ((T(3, dtype=i64), 2.5), "not a tensor or a scalar that fits"),
    ((2, 3), "needs at least one tensor"),
])
def test_pointwise_meta_rejects_implicit_broadcasting_and_promotion(args, message):
    with pytest.raises(ValueError, match=message):
        prims.add.meta(*_meta_of(list(args)))


def test_meta_rules_reject_bad_arguments():
    meta = _meta_of(T(2, 3))
    with pytest.raises(ValueError, match="floating point"):
        prims.exp.meta(_meta_of(T(3, dtype=i64)))
    with pytest.raises(ValueError, match="dims"):
        prims.sum.meta(meta, [-1])
    with pytest.raises(ValueError, match="no -1"):
        prims.reshape.meta(meta, [-1])
    with pytest.raises(ValueError, match="cannot broadcast"):
        prims.broadcast_in_dim.meta(meta, [4, 5], [0, 1])
    with pytest.raises(ValueError, match="bad range"):
        prims.slice.meta(meta, [0, 2], [2, 1], [1, 1])


@pytest.mark.parametrize("shape, strides, new_shape, expected", [
    ((2, 3), (3, 1), (6,), (1,)),
    ((2, 3), (1, 2), (6,), None),  # transposed: no view
    ((4, 3), (0, 1), (2, 2, 3), (0, 0, 1)),  # expanded dims split
    ((4, 3), (0, 1), (12,), None),
    ((2, 1, 3), (3, 3, 1), (3, 2), (2, 1)),
])
def test_view_strides(shape, strides, new_shape, expected):
    assert view_strides(shape, strides, new_shape) == expected
    base = torch.empty_strided(shape, strides)
    if expected is not None:
        assert base.view(new_shape).stride() == expected  # torch agrees that it is a view


def test_prims_work_as_fx_targets():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(prims.exp, (x,))
    graph.output(graph.call_function(prims.add, (y, 1.0)))
    gm = torch.fx.GraphModule({}, graph)
    gm.recompile()
    assert "tinydynamo_prims_exp(x)" in gm.code
    x = T(3)
    torch.testing.assert_close(gm(x), torch.exp(x) + 1)
    assert pickle.loads(pickle.dumps(prims.add)) is prims.add
    assert copy.deepcopy(gm).graph.find_nodes(op="call_function", target=prims.exp)
