"""Run PyTorch's OpInfo samples (``op_db``) through ``tinydynamo.compile`` and compare with eager.

Each OpInfo describes one operator and generates sample inputs for a device and dtype. For every
sample, ``check_sample`` calls the operator eagerly and through the default pipeline (dynamo →
aot → prims → inductor) on identical copies of the inputs, and returns one status:

- ``pass``: same outputs (values, dtype, shape) and, for float32, the same gradients;
- ``fallback``: the frame ran eagerly or broke its graph (tinydynamo said it cannot compile it);
- ``expected_error``: eager raises, and so does the compiled function;
- ``wrong``: a different answer, or no error where eager raises. Never acceptable;
- ``error``: the compiled function raised where eager does not. Never acceptable;
- ``timeout``: the sample ran past its time budget.
"""
import contextlib
import math
import signal
import time
import warnings
from dataclasses import dataclass, field

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

import tinydynamo

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.bool)
TOLERANCES = {
    torch.float32: dict(rtol=1.3e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
}
STATUSES = ("pass", "fallback", "expected_error", "wrong", "error", "timeout")


@dataclass
class Result:
    op: str
    dtype: str
    sample: int
    status: str
    detail: str = ""
    notes: list = field(default_factory=list)


def ops_by_name():
    """OpInfos keyed by ``name`` or ``name.variant``."""
    return {f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name: op for op in op_db}


def copy_inputs(value):
    """An independent copy of a sample's (nested) inputs, with the same strides and requires_grad."""
    def copy(t):
        if not isinstance(t, torch.Tensor):
            return t
        strided = t.layout == torch.strided and t.numel()
        c = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype).copy_(t.detach()) if strided else t.detach().clone()
        return c.requires_grad_(t.requires_grad)
    return tree_map(copy, value)


def call(op, sample):
    """The function under test: the OpInfo's operator on a sample's input, args and kwargs."""
    def fn(input, args, kwargs):
        return op(input, *args, **kwargs)
    return fn


def run(fn, inputs, seed, with_grad):
    """(outputs, grads) or the exception raised. Gradients are of the sum of every differentiable
    output, with respect to the inputs that require grad."""
    torch.manual_seed(seed)
    try:
        out = fn(*inputs)
        grads = None
        if with_grad:
            leaves = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
            outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
            if leaves and outs:
                total = sum(t.sum() for t in outs)
                grads = torch.autograd.grad(total, leaves, allow_unused=True)
        return out, grads
    except Exception as error:  # noqa: BLE001 - the error itself is what we compare
        return error


def difference(actual, expected, what, deterministic=True):
    """How ``actual`` differs from eager's ``expected`` (a description), or None."""
    actual_leaves, actual_spec = tree_flatten(actual)
    expected_leaves, expected_spec = tree_flatten(expected)
    if actual_spec != expected_spec:
        return f"{what}: structure {actual_spec} vs eager {expected_spec}"
    for i, (a, e) in enumerate(zip(actual_leaves, expected_leaves)):
        where = f"{what}[{i}]"
        if not isinstance(e, torch.Tensor):
            if deterministic and not _same_scalar(a, e):
                return f"{where}: {a!r} vs eager {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"{where}: {type(a).__name__} vs eager tensor"
        if (a.dtype, a.shape) != (e.dtype, e.shape):
            return f"{where}: {a.dtype}{list(a.shape)} vs eager {e.dtype}{list(e.shape)}"
        if a.requires_grad != e.requires_grad:
            return f"{where}: requires_grad {a.requires_grad} vs eager {e.requires_grad}"
        if deterministic:
            try:
                torch.testing.assert_close(a.detach(), e.detach(), equal_nan=True, **TOLERANCES.get(e.dtype, {}))
            except AssertionError as error:
                return f"{where}: {str(error)[:400]}"
    return None


def _same_scalar(a, e):
    if isinstance(e, float) and isinstance(a, float) and (a != a and e != e):
        return True
    return type(a) is type(e) and (a == e or abs(a - e) <= 1e-6 * max(1.0, abs(e)) if isinstance(e, float) else a == e)


def float64_copy(value):
    """The inputs in float64 (same requires_grad), for a reference more exact than eager's."""
    def widen(t):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return t
        return t.detach().double().requires_grad_(t.requires_grad)
    return tree_map(widen, copy_inputs(value))


def closer_to_float64(actual, expected, reference):
    """Whether each compiled tensor is about as close to the float64 result as eager's is (its
    largest error within twice eager's, plus a tenth of the tolerance): a difference of rounding,
    as torch._dynamo's own accuracy checker judges it, tensor by tensor. Eager's layer_norm over
    one element rounds x * rstd - mean * rstd to 1e-5, where the decomposition's (x - mean) * rstd
    is exactly 0."""
    for a, e, r in zip(*(tree_flatten(v)[0] for v in (actual, expected, reference))):
        if not isinstance(e, torch.Tensor) or not e.is_floating_point():
            continue
        if a is None or r is None or a.shape != r.shape:
            return False
        a, e, r = (t.detach().double() for t in (a, e, r))
        if _error(a, r).max() > 2 * _error(e, r).max() + TOLERANCES[torch.float32]["atol"] / 10:
            return False
    return True


def _error(x, reference):
    """|x - reference|, 0 where both are the same inf or both nan, inf where only one is nan."""
    same = (x == reference) | (x.isnan() & reference.isnan())
    return torch.where(same, 0.0, (x - reference).abs()).nan_to_num(nan=math.inf)


# Ops whose values are whatever memory held: only dtypes and shapes can be compared.
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}


class _SeesRandomOps(TorchDispatchMode):
    """Notes whether any aten op that draws random numbers runs (aten tags them)."""
    random = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.random = self.random or torch.Tag.nondeterministic_seeded in func.tags
        return func(*args, **(kwargs or {}))


def is_random(fn, inputs):
    """Whether eager ``fn`` draws random numbers (dropout, rand_like, ...). The OpInfos of random
    ops seed the generator themselves, but tinydynamo's kernels draw from their own generator, as
    inductor's do, so only dtypes and shapes can be compared."""
    with _SeesRandomOps() as mode:
        run(fn, copy_inputs(inputs), 0, False)
    return mode.random


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    def expire(signum, frame):
        raise _Timeout(f"over {seconds}s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_sample(op, sample, dtype, timeout=60, dynamic=None):
    """Compare one OpInfo sample, eager against ``tinydynamo.compile``: (status, detail, notes).
    With ``dynamic=True`` every size is a symbol, and a second call with the same inputs must
    reuse the translation: guards that reject their own inputs are an error."""
    inputs = (sample.input, tuple(sample.args), dict(sample.kwargs))
    fn = call(op.op, sample)
    with_grad = dtype == torch.float32 and op.supports_autograd
    random = op.name in UNINITIALIZED or is_random(fn, inputs)
    expected = run(fn, copy_inputs(inputs), 0, with_grad)
    tinydynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with time_limit(timeout):
                compiled = tinydynamo.compile(fn, dynamic=dynamic)
                actual = run(compiled, copy_inputs(inputs), 0, with_grad)
                if dynamic and not isinstance(actual, Exception):
                    translations = tinydynamo.stats()["frames_compiled"]
                    run(compiled, copy_inputs(inputs), 0, with_grad)
                    if tinydynamo.stats()["frames_compiled"] != translations:
                        return "error", "the guards of the symbolic trace reject the inputs it was traced with", []
        except _Timeout as error:
            return "timeout", str(error), []
    stats = tinydynamo.stats()
    fell_back = stats.get("fallbacks", 0) + stats.get("graph_breaks", 0) > 0
    reasons = [str(w.message)[:300] for w in caught if str(w.message).startswith("tinydynamo")]
    notes = ["random or uninitialized: compared dtypes and shapes only"] if random else []
    if isinstance(expected, Exception):
        if isinstance(actual, Exception) or fell_back:
            return "expected_error", f"{type(expected).__name__}: {str(expected)[:200]}", notes
        return "wrong", f"eager raised {type(expected).__name__}: {str(expected)[:200]}; compiled did not", notes
    if isinstance(actual, Exception):
        return "error", f"{type(actual).__name__}: {str(actual)[:500]}", notes
    problem = difference(actual[0], expected[0], "output", not random)
    if problem is None and with_grad:
        problem = difference(actual[1], expected[1], "grad", not random)
    if problem is not None and dtype in (torch.float32, torch.bfloat16):
        reference = run(fn, float64_copy(inputs), 0, with_grad)
        if not isinstance(reference, Exception) and closer_to_float64(actual, expected, reference):
            problem, notes = None, notes + [f"differs from eager, but no further from float64 ({problem[:200]})"]
    if problem is not None:
        return "wrong", problem, notes
    if fell_back:
        return "fallback", "; ".join(reasons) or "graph break", notes
    return "pass", "", notes


def samples(op, dtype, limit):
    """The first ``limit`` CPU samples of ``op`` for ``dtype``; float32 ones require grad."""
    requires_grad = dtype == torch.float32 and op.supports_autograd
    try:
        generated = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
        return [s for _, s in zip(range(limit), generated)]
    except Exception:  # noqa: BLE001 - an OpInfo that cannot make samples here is skipped
        return []


def sweep_op(op, name, dtypes=DTYPES, limit=3, budget=60.0, dynamic=None):
    """Results for the first ``limit`` samples of each supported dtype, within ``budget`` seconds."""
    start = time.monotonic()
    results = []
    for dtype in dtypes:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        for i, sample in enumerate(samples(op, dtype, limit)):
            left = budget - (time.monotonic() - start)
            if left <= 0:
                results.append(Result(name, str(dtype), i, "timeout", f"op budget of {budget}s spent"))
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    status, detail, notes = check_sample(op, sample, dtype, max(1, int(left)), dynamic)
                except Exception as error:  # noqa: BLE001 - a harness error is an error
                    status, detail, notes = "error", f"harness: {type(error).__name__}: {str(error)[:300]}", []
            results.append(Result(name, str(dtype), i, status, detail, notes))
    return results
