"""Functions that graph-break, each run compiled and eagerly by test_graph_breaks.py.

``@case(*inputs)`` registers a function as in dynamo_cases.py (``T(2, 3)`` is a seeded random
tensor, anything else is deep-copied for every run). Besides the result, the runs are compared
on their side effects: what they print, what they log (``LOG``), what they write to ``EVENTS``
(a module-level list), the inputs after the call (lists, dicts, objects, tensors updated in
place), the exception they raise, and the grad mode they leave behind. ``DYNAMO_DIFFERENCES`` in
test_graph_breaks.py lists the cases where torch._dynamo counts other graphs or breaks.

Every function must break at least once: a print, logging, a call of a function tinydynamo
does not know, ``.item()``/``.tolist()``/``.numpy()``, a branch on a tensor's value, an
unsupported instruction, a mutation of an input list or object, a construct inside a loop or a
try block (the frame then runs eagerly), in the frame itself or in a function it calls.
"""
import collections
import functools
import io
import json
import logging
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

from dynamo_cases import T, build

from tinydynamo.testing import graph_breaks

CASES = []
EVENTS = []  # side effects of the cases that are neither prints nor logging


class Case:
    def __init__(self, fn, inputs, kwargs):
        self.fn, self.inputs, self.kwargs = fn, inputs, kwargs

    @property
    def name(self):
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    def make_inputs(self):
        return build(self.inputs, 0), build(self.kwargs, 100)


def case(*inputs, **kwargs):
    def register(fn):
        CASES.append(Case(fn, inputs, kwargs))
        return fn

    return register


LOG = logging.StreamHandler(io.StringIO())  # what the cases log: LOG.stream.getvalue()
LOG.setFormatter(logging.Formatter("%(levelname)s:%(message)s"))
logger = logging.getLogger("graph_break_cases")
logger.addHandler(LOG)
logger.propagate = False
logger.setLevel(logging.INFO)

X = T(4, 5)
Y = T(4, 5)
G = T(4, 5, requires_grad=True)
POS = T(6, low=1, high=5, dtype=torch.int64)


class Box:
    """A plain object with attributes, for attribute writes."""

    def __init__(self, scale=2.0):
        self.scale = scale

    def __eq__(self, other):
        return type(other) is Box and vars(self).keys() == vars(other).keys() and all(
            torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
            for a, b in zip(vars(self).values(), vars(other).values()))


# --- print and logging ---------------------------------------------------------------------------


print_in_the_middle = case(X)(graph_breaks.print_in_the_middle)


print_first = case(X)(graph_breaks.print_first)


@case(X)
def print_last(x):
    y = torch.relu(x) * 3
    print("after everything")
    return y


@case(X)
def print_a_tensor(x):
    y = (x * 10).round()
    print(y[0])
    return y.sum(0)


@case(X)
def print_with_keywords(x):
    y = x.abs()
    print("a", "b", sep="-", end="!\n")
    return y.mean(1)


three_prints = case(X)(graph_breaks.three_prints)


@case(X)
def print_a_shape(x):
    y = x.t()
    print("shape", tuple(y.shape), y.dtype)
    return y @ x


@case(X, Y)
def print_inside_an_expression(x, y):
    return torch.add(x, y * len(str(print("inside") or "ab")))


@case(X)
def logging_a_value(x):
    y = x.exp()
    logger.info("mean %.3f", 1.5)
    return y.log()


@case(X)
def logging_a_warning(x):
    logger.warning("careful")
    return x.tanh()


# --- calls of functions the translator does not know ------------------------------------------------


@case(X)
def calls_a_c_function(x):
    y = x * 2
    checksum = zlib.crc32(b"tinydynamo")
    return y + checksum % 7


@case(X)
def calls_json(x):
    text = json.dumps({"scale": 3})
    return x * len(text)


@case(X)
def str_of_a_tensor(x):
    text = str(x.sum() > 0)
    return x + len(text)


helper_that_prints = graph_breaks.helper_that_prints


@case(X)
def breaks_in_an_inlined_function(x):
    y = x + 1
    z = helper_that_prints(y)
    return z.sigmoid()


def inner_helper(t):
    print("two calls deep")
    return t - 1


def outer_helper(t):
    return inner_helper(t * 3) + 1


@case(X)
def breaks_two_calls_deep(x):
    y = x.cos()
    return outer_helper(y) * y


def helper_with_item(t):
    return t * t.max().item()


@case(X)
def item_in_an_inlined_function(x):
    return helper_with_item(x + 1) - 1


@case(X)
def helper_result_in_a_container(x):
    pair = (x.sum(), helper_that_prints(x))
    return pair[0] + pair[1]


# --- values read out of tensors ----------------------------------------------------------------------


@case(X)
def uses_item(x):
    scale = x.abs().max().item()
    return x / scale


@case(X)
def item_then_python_math(x):
    total = x.sum().item()
    return x * round(total, 2)


@case(T(3, 4), T(16, 5))
def slice_with_tensor_bounds(x, e):
    span = torch.tensor(min(x.size(-2), 8))  # DeBERTa's attention span
    return e[8 - span: 8 + span] * 2 + x.sum()  # the resume function gets slice(tensor, tensor)


@case(X)
def uses_tolist(x):
    rows = (x[:2] * 10).round().tolist()
    return x[0] + len(rows), rows


@case(POS)
def int_of_a_tensor(n):
    k = int(n.max())
    return n[:k].sum() + k


@case(X)
def float_of_a_tensor(x):
    y = x.mean()
    return x - float(y)


# --- branches on tensor values -------------------------------------------------------------------


@case(T(5))
def branch_on_a_sum(x):
    x = x * 2
    if x.sum() > 0:
        x = x + 1
    else:
        x = x - 1
    return x.cos()


@case(T(5, low=0, high=1, dtype=torch.int64))
def branch_other_way(x):
    x = x - 3
    if x.sum() > 0:
        return x * 2
    return x * 3


@case(X)
def conditional_expression(x):
    y = x.relu()
    z = y * 2 if y.mean() > 0.3 else y / 2
    return z + 1


and_of_tensors = case(X, Y)(graph_breaks.and_of_tensors)


@case(X, Y)
def or_of_tensors(x, y):
    return (x.mean() > 10) or (y.max() > 0)


@case(X)
def branch_on_not(x):
    if not (x > 0).all():
        x = x.abs()
    return x * 2


early_return = case(X)(graph_breaks.early_return)


@case(X)
def nested_branches(x):
    if x.sum() > 0:
        if x.mean() > 0.1:
            return x + 1
        return x + 2
    if x.min() < -2:
        return x - 1
    return x - 2


@case(X)
def failing_assert(x):
    assert x.sum().item() > 1000, "too small"  # (an assert on the tensor itself is checked by the graph)
    return x


@case(X)
def branch_on_a_tensor_in_a_helper(x):
    return clamp_if_large(x * 4) + 1


def clamp_if_large(t):
    if t.abs().max() > 3:
        return t.clamp(-3, 3)
    return t


# --- instructions tinydynamo does not capture -------------------------------------------------------


@case(X)
def raises_on_a_shape(x):
    y = x + 1
    if y.shape[0] > 2:
        raise ValueError(f"too many rows: {y.shape[0]}")
    return y


in_place_then_print = case(X)(graph_breaks.in_place_then_print)


@case(X)
def setitem_then_print(x):
    x[0] = 7.0
    print("row 0 set")
    return x.sum(0)


@case(X)
def writes_a_global(x):
    global LAST_SUM
    LAST_SUM = x.sum()
    print("stored")
    return x - LAST_SUM


# --- grad mode -------------------------------------------------------------------------------


print_inside_no_grad = case(G)(graph_breaks.print_inside_no_grad)


nested_grad_modes = case(G)(graph_breaks.nested_grad_modes)


@case(G)
def set_grad_enabled_block(x):
    with torch.set_grad_enabled(False):
        y = x.sin()
        print("off")
    return y + x, y.requires_grad


@case(G)
def branch_inside_no_grad(x):
    with torch.no_grad():
        y = x * 2
        if y.sum() > 0:
            y = y + 1
    return y, y.requires_grad


@case(G)
def grad_mode_switched_as_a_statement(x):
    torch.set_grad_enabled(False)
    y = x * 2
    print("switched")
    torch.set_grad_enabled(True)
    z = y * x
    return z, y.requires_grad, z.requires_grad


class Recorder:
    """A user context manager: a graph break inside its block makes the rest run eagerly."""

    def __enter__(self):
        EVENTS.append("enter")
        return self

    def __exit__(self, *exc):
        EVENTS.append("exit")


@case(X)
def user_context_manager(x):
    y = x + 1
    with Recorder():
        print("recorded")
        y = y * 2
    return y


# --- loops ------------------------------------------------------------------------------------


@case(X)
def print_in_a_for_loop(x):
    for i in range(3):
        x = x + i
        print("iteration", i)
    return x


item_in_a_while_loop = case(X)(graph_breaks.item_in_a_while_loop)


@case(X)
def loop_before_the_break(x):
    for i in range(3):
        x = x * 1.5 + i
    print("loop done")
    return x


@case(X)
def loop_after_the_break(x):
    print("loop next")
    for w in (0.5, 2.0):
        x = x * w
    return x


@case(X)
def loop_calling_a_breaking_helper(x):
    for _ in range(3):
        x = helper_that_prints(x)
    return x


@case(X)
def data_dependent_while(x):
    while x.norm() < 20:
        x = x * 2
    return x


@case([T(3), T(3), T(3)])
def loop_over_a_list_with_print(xs):
    total = 0
    for i, t in enumerate(xs):
        total = total + t * i
        print(i)
    return total


@case(X)
def loop_with_break_statement(x):
    for i in range(10):
        if i == 3:
            break
        x = x + i
    print("after the loop", i)
    return x


@case(X)
def print_in_a_try_block(x):
    y = x * 2
    try:
        print("trying")
        y = y + 1
    except ValueError:
        y = y - 1
    return y


# --- modules -------------------------------------------------------------------------------------


class PrintingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        print("hidden", tuple(h.shape))
        return self.fc2(h)


class Logger(nn.Module):
    def forward(self, x):
        print("logger", tuple(x.shape))
        return x


class NetWithALoggingLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)
        self.log = Logger()

    def forward(self, x):
        return self.log(self.fc(x)).tanh()


class ReturnsANorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 2)

    def forward(self, x):
        y = self.fc(x)
        return y * 2, y.norm().item()


@case(X)
def module_that_prints(x):
    return MODELS["printing"](x)


@case(X)
def module_with_a_logging_submodule(x):
    return MODELS["logging"](x)


@case(X)
def module_with_item(x):
    y, norm = MODELS["remembers"](x)
    return y / norm


@case(X)
def sequential_with_a_printing_layer(x):
    return MODELS["sequential"](x)


class PrintingLayer(nn.Module):
    def forward(self, x):
        print("layer input", tuple(x.shape))
        return x * 2


torch.manual_seed(0)
MODELS = {
    "printing": PrintingNet(),
    "logging": NetWithALoggingLayer(),
    "remembers": ReturnsANorm(),
    "sequential": nn.Sequential(nn.Linear(5, 5), PrintingLayer(), nn.ReLU()),
}


# --- closures, cells, arguments ---------------------------------------------------------------------


def make_closure():
    offset = torch.ones(5)

    def closure_that_prints(x):
        y = x + offset
        print("closure")
        return y * offset

    return closure_that_prints


CASES.append(Case(make_closure(), (X,), {}))


cell_used_after_the_break = case(X)(graph_breaks.cell_used_after_the_break)


@case(X)
def live_lambda(x):
    scale = 3
    f = lambda t: t * scale  # noqa: E731
    print("lambda")
    return f(x)


varargs_and_kwargs = case(X, 1, 2, scale=3.0, shift=1.0)(graph_breaks.varargs_and_kwargs)


@case(X, Y)
def stack_values_across_the_break(x, y):
    return torch.cat([x, y * int(print("in the list") is None), x + y])


returns_containers = case(X)(graph_breaks.returns_containers)


@case(X)
def method_on_the_stack(x):
    return (x + 1).mul(len(str(print("arg") or "xyz")))


gradients_through_a_break = case(G)(graph_breaks.gradients_through_a_break)


@case(X)
def alias_of_a_rebound_argument(x):
    y = x  # y is read from the argument x, which the frame stores a new value into at the break
    x = x * 10
    print("rebound")
    return x + y


@case(X)
def item_of_a_rebound_argument(pair):
    first, second = pair, pair[1]  # second is read from an item of the argument
    pair = pair[0] * 2
    print("rebound")
    return pair + second + first[2]


@case(X)
def reads_global_after_break(x):
    print("global next")
    return x * SCALE


SCALE = 1.5


# --- more of what real code does around a break ------------------------------------------------------


@case(X, T(1, low=2, high=3, dtype=torch.int64))
def item_as_a_shape(x, n):
    rows = int(n.item())
    return x.reshape(rows, -1).sum(1)


@case(X)
def item_for_an_early_exit(x):
    loss = (x * x).mean()
    if loss.item() < 1e-6:
        return x
    return x - 0.1 * x.sign()


@case(X)
def item_as_a_keyword_argument(x):
    dim = int(x.shape[1] > 2)
    k = x.abs().argmax().item() % 2 + 1
    return F.softmax(x * k, dim=dim)


class Scaler:
    """A plain (not nn.Module) helper object whose methods are inlined."""

    def __init__(self, factor):
        self.factor = factor

    def apply(self, t):
        print("scaling by", self.factor)
        return t * self.factor

    @staticmethod
    def shift(t):
        print("shifting")
        return t + 1


@case(X, Scaler(3.0))
def break_in_a_method(x, scaler):
    return scaler.apply(x.relu()) - 1


@case(X)
def break_in_a_staticmethod(x):
    return Scaler.shift(x.cos()) * 2


@case(X, T(4, 5))
def breaks_then_keyword_call(x, y):
    z = x + y
    print("softmax next")
    return F.softmax(z, dim=-1).sum(dim=0, keepdim=True)


Pair = collections.namedtuple("Pair", ["low", "high"])


@case(X)
def returns_a_namedtuple(x):
    low, high = x.min(), x.max()
    print("range")
    return Pair(low, high - low)


@case(T(4, 6))
def unpacks_after_the_break(x):
    a, b = x.chunk(2, dim=1)
    print("chunks")
    return a * b, a - b


@case({"w": T(5, 3), "b": T(3)}, X)
def dict_of_tensors(params, x):
    h = x @ params["w"]
    print("matmul done")
    return h + params["b"]


@case([T(4, 5), T(4, 5), T(4, 5)])
def list_of_tensors(xs):
    first = xs[0] * 2
    print("first")
    return first + xs[1] - xs[2]


@case(X)
def view_updated_in_place(x):
    row = x[0]
    row.mul_(2)
    print("row doubled")
    return x.sum(), row


@case(X)
def default_arguments(x, scale=2.0, bias=None):
    y = x * scale
    print("bias is", bias)
    return y if bias is None else y + bias


@case(X, scale=0.5)
def keyword_only_arguments(x, *, scale):
    y = x * scale
    print("scaled")
    return y.exp()


@case(X)
def fstring_of_a_shape(x):
    y = x.sum(0)
    print(f"sum over rows: {tuple(y.shape)}")
    return y / x.shape[0]


@case(X)
def two_breaks_and_a_branch(x):
    print("start")
    x = x * 3
    if x.mean() > 0:
        x = x - 1
    print("end")
    return x


@case(X)
def tolist_into_python_math(x):
    values = x[0].tolist()
    total = sum(values)
    return x + total


@case(X)
def tensor_from_tolist(x):
    values = (x[:, 0] * 10).round().tolist()
    return torch.tensor(values) + x[:, 1]


@case(X)
def returns_nothing(x):
    y = x * 2
    print("nothing to return", tuple(y.shape))


@case(X)
def reads_a_global_tensor(x):
    print("global next")
    return x + OFFSET


OFFSET = torch.arange(5.0)


@case(X)
def manual_seed_inside(x):
    torch.manual_seed(0)
    return x + torch.randn(5).abs().lt(-1).float()


@case(X)
def many_locals_across_the_break(x):
    a, b, c = x + 1, x * 2, x - 3
    d = a * b
    unused = c.sum()
    print("locals")
    b = b + 1
    return a + b + d


class ResidualBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(5)
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        h = self.fc(self.norm(x))
        print("residual", round(float(h.abs().mean()) * 0, 1))
        return x + torch.relu(h)


MODELS["residual"] = ResidualBlock()


@case(X)
def module_with_a_residual(x):
    return MODELS["residual"](x)


class ResidualKeptBeforeRebinding(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 5)

    def forward(self, x):
        residual = x
        x = self.fc(x)
        print("rebound residual")
        return x + residual


MODELS["rebound_residual"] = ResidualKeptBeforeRebinding()


@case(G)
def print_inside_a_profiler_range_inside_no_grad(x):
    with torch.profiler.record_function("outer"):
        y = x * 2
        with torch.no_grad():
            with torch.autograd.profiler.record_function("inner"):
                z = y.sin()
                print("in the range")
            w = z + 1
        v = w * x
    return v, y.requires_grad, w.requires_grad, v.requires_grad


@case(X)
def module_keeping_a_residual_across_a_break(x):
    return MODELS["rebound_residual"](x)


@case(G)
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        y = x * 2
        with torch.enable_grad():
            z = x * 3
            print("grad on")
        w = y + 1
    return z.sum(), w, z.requires_grad, w.requires_grad


@case(X, T(4, 2))
def training_step_with_logging(x, target):
    model = MODELS["remembers"]
    prediction, _ = model(x)
    loss = F.mse_loss(prediction, target)
    print(f"loss {loss.item() * 0:.1f}")
    return loss * 2


@case(X)
def sleeps(x):
    y = x + 1
    time.sleep(0)
    return y * y


@case(X, True)
def prints_in_both_branches_of_a_flag(x, verbose):
    if verbose:
        print("verbose")
        y = x * 2
    else:
        print("quiet")
        y = x / 2
    return y


@case(X, T(1, low=2, high=4, dtype=torch.int64))
def item_sets_a_loop_count(x, n):
    steps = int(n.item())
    for _ in range(steps):
        x = x * 0.5
    return x


@case(X)
def dtype_conversion_and_print(x):
    y = (x * 100).to(torch.int32)
    print("as ints", y.dtype)
    return y.float() / 100


class BatchNormWrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(5)

    def forward(self, x):
        y = self.bn(x)
        print("batch mean", tuple(self.bn.running_mean.shape))
        return y * 2


MODELS["batchnorm"] = BatchNormWrapper()


@case(X)
def module_updating_buffers(x):
    model = MODELS["batchnorm"]
    return model(x), model.bn.running_mean.clone()


@case(X)
def lambda_that_prints(x):
    apply = lambda t: print("in a lambda") or t * 2  # noqa: E731
    return apply(x + 1)


@case(X)
def partial_that_prints(x):
    scale = functools.partial(torch.mul, other=3.0)
    y = scale(x)
    print("partial applied")
    return helper_that_prints(y)


@case(T(1), T(1))
def sorting_compares_tensors_with_equal_keys(x, y):
    pairs = sorted([(1, x + 1), (1, y)])  # equal keys: the tensors decide, by their values
    return pairs[0][1] * 2



@case(T(4, 5), T(4, 5))
def normal_with_argument_validation(x, y):
    normal = torch.distributions.Normal(x, y.abs() + 0.1, validate_args=True)  # checks the values
    return normal.log_prob(y).sum()
