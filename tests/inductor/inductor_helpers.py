"""Helpers for the inductor tests: build prim graphs, compile them, compare with eager."""
import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from tinydynamo.inductor import compile_fx_inner
from tinydynamo.inductor.compile_fx import generate_code
from tinydynamo.prims import decompose
from tinydynamo.prims.prim_tracer import PrimTracer


def prim_graph(fn, inputs):
    """The FX graph of ``fn``, which calls tinydynamo prims on its tensor arguments."""
    tracer = PrimTracer()
    with tracer:
        proxies = [tracer.placeholder(f"in{i}", x) for i, x in enumerate(inputs)]
        tracer.output(fn(*proxies))
    return torch.fx.GraphModule({}, tracer.graph)


def torch_graph(fn, inputs):
    """make_fx, then decompose: the prim graph of a function written with torch ops."""
    return decompose(make_fx(fn)(*inputs), list(inputs))


def assert_same(actual, expected, **tolerance):
    """Equal structure, dtypes, shapes and values (nan == nan)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), (actual, expected)
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, msg=f"output {i}", **tolerance)
        return
    if expected is None:
        assert actual is None
        return
    msg = tolerance.pop("msg", "")
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        (msg, actual.dtype, actual.shape, expected.dtype, expected.shape)
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{msg}: {m}",
                               **tolerance)


def check_prims(fn, inputs, **tolerance):
    """Compile the prim graph of fn; compare with running the prims eagerly."""
    gm = prim_graph(fn, inputs)
    compiled = compile_fx_inner(gm, inputs)
    assert_same(compiled(*inputs), gm(*inputs), **tolerance)
    return compiled


def check_torch(fn, inputs, **tolerance):
    """make_fx -> decompose -> compile_fx_inner, against eager torch."""
    gm = torch_graph(fn, inputs)
    compiled = compile_fx_inner(gm, inputs)
    assert_same(compiled(*inputs), fn(*inputs), **tolerance)
    return compiled


def generated(gm, inputs):
    """(scheduler, CppModule) that compiling gm for inputs produces, without compiling C++."""
    _, scheduler, module = generate_code(gm, inputs)
    return scheduler, module
