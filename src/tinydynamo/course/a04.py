"""Assignment a04 (chapter 4, "Guards and the cache"): guard generation, graded inside dynamo.

The learner writes ``guards_for(source, value)``: the guards to install when the trace first reads
``value`` from ``source`` (a tensor argument, a global constant, ``self.fc1``...), as ``Guard``
objects that the reference ``GuardBuilder`` compiles into the guard function. ``swapped_guards``
puts it into the real pipeline: while tracing, ``VariableBuilder`` keeps choosing the tracker,
and the guards it would have installed on the value's own source are replaced by the learner's.

The checkers compile real functions and zoo models with ``tinydynamo.compile(backend="eager")``,
call them again after each change of a case (a new shape, ``SCALE = 5.0``, ``model.eval()``...),
compare every result with eager PyTorch, and compare every (re)compile with what the change demands:

- soundness: a change the graph depends on must recompile; reusing the old graph is a stale graph;
- precision: equal inputs, and changes the graph does not depend on, must hit the cache.

Each checker returns a list of human-readable failures; ``checking.report`` turns them into one
AssertionError for a notebook test. While the learner's guards are in the pipeline, the
reference's own answer for tensors (``tensor_properties``) refuses the learner's calls.
"""
import contextlib
import dataclasses
import textwrap

import torch

import tinydynamo

from .. import config
from ..dynamo import eval_frame
from ..dynamo.guards import Guard, GuardBuilder
from ..dynamo.output_graph import tensor_properties
from ..dynamo.variables.builder import VariableBuilder
from ..dynamo.variables.constant import is_constant_value
from ..dynamo.variables.torch import is_torch_callable  # noqa: F401 (a helper for learners)
from ..testing.models import ZOO, make  # noqa: F401 (make: for learners)
from .a02 import difference, learner_location, user_module
from .checking import _refuse, call_learner, learner_code_running, no_delegation, time_limit

# Seconds one call of the learner's guards_for may run (it takes microseconds): past it, an infinite
# loop is reported as a failure of the case that ran it, and the later cases of the test are not run
# (each would wait as long), so that the test names the case instead of running past nbgrader's limit.
TIME_LIMIT = 10
TIMED_OUT = "ran past its time limit"

# The guard kinds that describe one value (the others are installed by the reference itself:
# global state, duplicated and aliased tensors).
VALUE_KINDS = ("ID_MATCH", "TYPE_MATCH", "CONSTANT_MATCH", "LENGTH_CHECK", "DICT_KEYS", "TENSOR_MATCH")
TENSOR_MATCH_KEYS = ("type", "dtype", "device", "shape", "stride", "requires_grad")

# Which of the learner's functions answers for a value (see ``category``).
TENSORS, CONSTANTS, OBJECTS = "tensors", "constants and containers", "objects"
CATEGORIES = (TENSORS, CONSTANTS, OBJECTS)

# What a change must do.
RECOMPILE = "recompile"  # the graph depends on what changed
HIT = "hit"  # it does not: the cached graph must serve the call
EITHER = "either"  # both are sound; only the result is checked
LIKE_REFERENCE = "like the reference"  # whatever the reference guards do (zoo models)


def category(value):
    """Tensors; constants, tuples, lists and dicts; everything else (modules, functions, objects)."""
    if isinstance(value, torch.Tensor):
        return TENSORS
    if is_constant_value(value) or isinstance(value, (tuple, list, dict)):
        return CONSTANTS
    return OBJECTS


# --------------------------------------------------------------------------- the swap-in
class GuardsError(Exception):
    """The learner's guards_for raised, or returned something the GuardBuilder cannot compile."""


def learner_guards(guards_for, source, value):
    """``guards_for(source, value)`` as a checked list of Guard objects on ``source``."""
    where = f"guards_for({source.name()}, <{type(value).__name__} value>)"
    try:
        with time_limit(TIME_LIMIT, "it"):
            guards = call_learner(guards_for, source, value)
    except Exception as e:  # noqa: BLE001 - reported with the case that triggered it (a LearnerTimeout too)
        raise GuardsError(f"{where} raised {type(e).__name__}{learner_location(e)}: {e}") from None
    if not isinstance(guards, (list, tuple)):
        raise GuardsError(f"{where} returned {guards!r}: return a list of Guard objects")
    for guard in guards:
        problem = guard_problem(guard, source)
        if problem:
            raise GuardsError(f"{where} returned {describe_guard(guard)}: {problem}")
    return list(guards)


def describe_guard(guard):
    if not isinstance(guard, Guard):
        return repr(guard)[:80]
    source = guard.source.name() if guard.source is not None else None
    return f"Guard({source}, {guard.kind!r}, <{type(guard.value).__name__}>)"


def guard_problem(guard, source):
    """Why ``guard`` cannot stand for the value at ``source``, or None."""
    if not isinstance(guard, Guard):
        return "not a Guard (make one with Guard(source, kind, value))"
    if guard.source != source:
        return (f"it guards {guard.source}, not {source.name()}: each value gets its own call, "
                "so its items and attributes are guarded when (and if) they are read")
    if guard.kind not in VALUE_KINDS:
        return f"the kind must be one of {', '.join(VALUE_KINDS)}"
    if guard.kind == "TENSOR_MATCH" and not (isinstance(guard.value, dict)
                                             and set(TENSOR_MATCH_KEYS) <= set(guard.value)):
        return f"a TENSOR_MATCH value is a dict with the keys {', '.join(TENSOR_MATCH_KEYS)}"
    if guard.kind == "TENSOR_MATCH":
        return tensor_match_problem(guard.value)
    if guard.kind == "TYPE_MATCH" and not isinstance(guard.value, type):
        return "a TYPE_MATCH value is the type the value must have"
    if guard.kind == "LENGTH_CHECK" and type(guard.value) is not int:
        return "a LENGTH_CHECK value is the length, an int"
    if guard.kind == "DICT_KEYS" and not isinstance(guard.value, (list, tuple)):
        return "a DICT_KEYS value is the list of keys, in order"
    return None


def _ints(value):
    return isinstance(value, tuple) and all(isinstance(n, int) and not isinstance(n, bool) for n in value)


# What each property of a TENSOR_MATCH must be: the check compares it with the tensor's own (with
# ``is`` or ``==``), so a value of another kind (a list for the shape, "cpu" for the device) never
# matches and every call would recompile, with a check that does not show why.
TENSOR_MATCH_TYPES = {
    "type": (lambda v: isinstance(v, type) and issubclass(v, torch.Tensor), "a subclass of torch.Tensor"),
    "dtype": (lambda v: isinstance(v, torch.dtype), "a torch.dtype"),
    "device": (lambda v: isinstance(v, torch.device), "a torch.device"),
    "shape": (_ints, "a tuple of ints"),
    "stride": (_ints, "a tuple of ints"),
    "requires_grad": (lambda v: isinstance(v, bool), "a bool"),
}


def tensor_match_problem(properties):
    """Why a TENSOR_MATCH value cannot match a tensor's own properties, or None."""
    wrong = [f"{key} is {properties[key]!r} ({type(properties[key]).__name__}), not {what}"
             for key, (ok, what) in TENSOR_MATCH_TYPES.items() if not ok(properties[key])]
    if wrong:
        return ("no tensor can match this TENSOR_MATCH: " + "; ".join(wrong)
                + " (the check compares each with the tensor's own)")
    if len(properties["stride"]) != len(properties["shape"]):
        return (f"no tensor can match this TENSOR_MATCH: its stride {properties['stride']} and its shape "
                f"{properties['shape']} differ in length (a tensor has one stride per dimension, size 1 too)")
    return None


def wrap_with(guards_for, categories):
    """``VariableBuilder.wrap`` with the learner's guards on the wrapped value's own source."""
    reference_wrap = VariableBuilder.wrap

    def wrap(builder, value):
        if learner_code_running():  # the learner's code building trackers: the reference's guards for them
            _refuse("VariableBuilder")
        installed = builder.tx.output.guards
        start = len(installed)
        tracker = reference_wrap(builder, value)
        if builder.source is not None and category(value) in categories:
            # the reference's guards on the value are gone before the learner is asked
            installed[start:] = [g for g in installed[start:]
                                 if g.source != builder.source or g.kind not in VALUE_KINDS]
            installed.extend(learner_guards(guards_for, builder.source, value))
        return tracker

    return wrap


# The reference's choice of guards, which the learner's replaces: refused to the learner's code.
_REFUSED = (tensor_properties, VariableBuilder.wrap, VariableBuilder.wrap_sequence, VariableBuilder.wrap_dict,
            VariableBuilder.wrap_callable_or_object, VariableBuilder.wrap_partial)


@contextlib.contextmanager
def swapped_guards(guards_for, categories=CATEGORIES):
    """Use ``guards_for`` for the values of ``categories`` while the block runs (the reference's
    guards for the others; ``guards_for=None``: the reference's for all). The caches are cleared
    on entry and exit, and the reference comes back even if the block raises."""
    unknown = set(categories) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown categories {sorted(unknown)}; use {CATEGORIES}")
    reference_wrap = VariableBuilder.wrap
    tinydynamo.reset()
    try:
        with config.patch(suppress_errors=False, strict=True), no_delegation(*_REFUSED):
            if guards_for is not None:
                VariableBuilder.wrap = wrap_with(guards_for, categories)
            yield
    finally:
        VariableBuilder.wrap = reference_wrap
        tinydynamo.reset()


def render(guards, arg_names=("x",)):
    """The source of the guard function GuardBuilder compiles from ``guards`` (Guard objects on
    the locals ``arg_names``, or on globals)."""
    return GuardBuilder(arg_names, (), {}).build(guards).source


def show_guards(guards_for, fn, *args):
    """The guard function that ``fn(*args)`` gets with ``guards_for`` (as ``explain()`` prints it)."""
    with swapped_guards(guards_for):
        return "\n".join(tinydynamo.explain(fn)(*args).guards)


# --------------------------------------------------------------------------- the cases
@dataclasses.dataclass
class Case:
    """A function or model under test, and the changes made between its calls.

    ``source`` is a module of the learner's project (globals, classes, helpers, then the function or
    model named ``target``), run after ``import torch``, ``import torch.nn as nn`` and
    ``import torch.nn.functional as F``. ``setup`` makes the first arguments; ``args`` is the call's
    argument list, evaluated in the module before each call. Each step is (a statement run in the
    module, what the next call must do: RECOMPILE, HIT, EITHER or LIKE_REFERENCE). Functions take
    plain positional parameters, so the frame's arguments are the call's.
    """

    name: str
    source: str
    target: str
    setup: str
    args: str
    steps: list

    def __str__(self):
        steps = "\n".join(f"    {statement:<48} -> {expect}" for statement, expect in self.steps)
        return (f"case {self.name!r}:\n{textwrap.indent(textwrap.dedent(self.source).strip(), '    ')}\n"
                f"    # first call: {self.setup}; {self.target}({self.args})\n{steps}")


PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

TENSOR_EXAMPLES = [
    Case("add_one", """
        def add_one(x):
            return x + 1
    """, "add_one", "x = torch.randn(3)", "x", [
        ("x = torch.randn(3)", HIT),
        ("x = torch.randn(4)", RECOMPILE),
        ("x = torch.randn(3, dtype=torch.float64)", RECOMPILE),
        ("x = torch.randn(3)", HIT),
    ]),
]

TENSOR_CASES = [
    Case("inference_under_no_grad", """
        def predict(x):
            return x * 2
    """, "predict", "torch.set_grad_enabled(False); x = torch.randn(3, requires_grad=True)", "x", [
        ("x = torch.randn(3, requires_grad=True)", HIT),  # the tensor's own flag, whatever the grad mode
        ("x = torch.randn(3)", RECOMPILE),
        ("torch.set_grad_enabled(True)", RECOMPILE),  # grad mode back on, for the cases after this one
    ]),
    Case("flatten", """
        def flatten(x):
            return x.view(x.shape[0] * x.shape[1])
    """, "flatten", "x = torch.randn(2, 3)", "x", [
        ("x = torch.randn(2, 3)", HIT),
        ("x = torch.randn(3, 4)", RECOMPILE),
        ("x = torch.randn(2, 3)", HIT),
    ]),
    Case("branch_on_layout", """
        def by_layout(x):
            if x.is_contiguous():
                return x * 2
            return x.contiguous() * 3
    """, "by_layout", "x = torch.randn(2, 3)", "x", [
        ("x = torch.randn(3, 2).t()", RECOMPILE),
        ("x = torch.randn(2, 3)", HIT),
        ("x = torch.randn(2, 6)[:, ::2]", RECOMPILE),
    ]),
    Case("branch_on_requires_grad", """
        def by_grad(x):
            return x * 2 if x.requires_grad else x * 3
    """, "by_grad", "x = torch.randn(3)", "x", [
        ("x = torch.randn(3, requires_grad=True)", RECOMPILE),
        ("x = torch.randn(3, requires_grad=True)", HIT),
        ("x = torch.randn(3)", HIT),
    ]),
    Case("branch_on_dtype", """
        def by_dtype(x):
            if x.dtype == torch.float32:
                return x.sum()
            return x.double().mean()
    """, "by_dtype", "x = torch.randn(5)", "x", [
        ("x = torch.arange(5)", RECOMPILE),
        ("x = torch.arange(5) * 2", HIT),
        ("x = torch.randn(5, dtype=torch.float16)", RECOMPILE),
        ("x = torch.randn(5)", HIT),
    ]),
    Case("transposed_input", """
        def by_layout_first_transposed(x):
            return x.contiguous() * 3 if not x.is_contiguous() else x * 2
    """, "by_layout_first_transposed", "x = torch.randn(3, 2).t()", "x", [
        ("x = torch.randn(3, 2).t()", HIT),  # the same layout again: its strides, not a contiguous tensor's
        ("x = torch.randn(2, 3)", RECOMPILE),
    ]),
    Case("meta_device", """
        def by_device(x):
            return x * 2 if x.device.type == "cpu" else x * 3
    """, "by_device", "x = torch.empty(3, device='meta')", "x", [
        ("x = torch.empty(3, device='meta')", HIT),  # the tensor's own device, not an assumed one
        ("x = torch.randn(3)", RECOMPILE),
    ]),
    Case("non_leaf_requiring_grad", """
        def double(x):
            return x * 2
    """, "double", "w = torch.randn(3, requires_grad=True); x = w * 1", "x", [
        ("x = w * 3", HIT),
        ("x = w.detach() * 3", RECOMPILE),
    ]),
    Case("half_precision", """
        def halve(x):
            return x / 2
    """, "halve", "x = torch.randn(4, dtype=torch.float16)", "x", [
        ("x = torch.randn(4, dtype=torch.float16)", HIT),
        ("x = torch.randn(4, dtype=torch.bfloat16)", RECOMPILE),
        ("x = torch.randn(4)", RECOMPILE),
    ]),
    Case("batch_of_one", """
        def first_row(x):
            return x.squeeze(0) * 2
    """, "first_row", "x = torch.randn(1, 3)", "x", [
        ("x = torch.randn(1, 3)", HIT),  # a size-1 dimension has a stride too
        ("x = torch.randn(2, 3)", RECOMPILE),
        ("x = torch.randn(1, 3)", HIT),
    ]),
    Case("parameter_or_tensor", """
        def by_type(x):
            return x * 2 if isinstance(x, nn.Parameter) else x * 3
    """, "by_type", "x = torch.randn(3)", "x", [
        ("x = nn.Parameter(torch.randn(3), requires_grad=False)", RECOMPILE),
        ("x = torch.randn(3)", HIT),
    ]),
    Case("matmul", """
        def matmul(x, y):
            return x @ y
    """, "matmul", "x, y = torch.randn(2, 3), torch.randn(3, 4)", "x, y", [
        ("y = torch.randn(3, 5)", RECOMPILE),
        ("x, y = torch.randn(2, 3), torch.randn(3, 4)", HIT),
    ]),
    Case("list_of_tensors", """
        def total(xs):
            out = xs[0]
            for x in xs[1:]:
                out = out + x
            return out
    """, "total", "xs = [torch.randn(3), torch.randn(3)]", "xs", [
        ("xs = [torch.randn(3), torch.randn(3)]", HIT),
        ("xs = [torch.randn(3), torch.randn(4, 3)]", RECOMPILE),
        ("xs = [torch.randn(3), torch.randn(3)]", HIT),
    ]),
    Case("module_parameters", """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 4)

            def forward(self, x):
                return self.fc(x)
    """, "model", "model, x = Net(), torch.randn(2, 3)", "x", [
        ("model.fc.weight = nn.Parameter(torch.randn(4, 3))", HIT),
        ("model.fc.weight.requires_grad_(False)", RECOMPILE),
        ("model.fc.weight = nn.Parameter(torch.randn(3, 4).t())", RECOMPILE),
    ]),
]

CONSTANT_EXAMPLES = [
    Case("scale_by", """
        def scale_by(x, k):
            return x * k
    """, "scale_by", "x, k = torch.arange(4), 2", "x, k", [
        ("x = torch.arange(4)", HIT),
        ("k = 3", RECOMPILE),
        ("k = 2.0", RECOMPILE),
        ("k = 2", HIT),
    ]),
    Case("global_constant", """
        SCALE = 2.0

        def scaled(x):
            return x * SCALE
    """, "scaled", "x = torch.randn(3)", "x", [
        ("SCALE = 5.0", RECOMPILE),
        ("UNUSED = 'anything'", HIT),
        ("SCALE = 2.0", HIT),
    ]),
    Case("list_of_scales", """
        def scale_all(x, scales):
            for s in scales:
                x = x * s
            return x
    """, "scale_all", "x, scales = torch.randn(3), [2, 3]", "x, scales", [
        ("scales = [2, 3]", HIT),
        ("scales = [2, 4]", RECOMPILE),
        ("scales = [2, 3, 4]", RECOMPILE),
    ]),
]

CONSTANT_CASES = [
    Case("flag", """
        def maybe_relu(x, relu):
            return torch.relu(x) if relu else -x
    """, "maybe_relu", "x, relu = torch.randn(3), True", "x, relu", [
        ("relu = False", RECOMPILE),
        ("relu = True", HIT),
    ]),
    Case("mode_string", """
        def act(x, mode):
            return torch.relu(x) if mode == "relu" else torch.tanh(x)
    """, "act", "x, mode = torch.randn(3), 'relu'", "x, mode", [
        ("mode = 'tanh'", RECOMPILE),
        ("mode = 'relu'", HIT),
    ]),
    Case("optional_bias", """
        def add_bias(x, bias):
            return x * 2 if bias is None else x + bias
    """, "add_bias", "x, bias = torch.randn(3), None", "x, bias", [
        ("bias = torch.ones(3)", RECOMPILE),
        ("bias = None", HIT),
    ]),
    Case("reshape_to", """
        def reshape_to(x, shape):
            return x.reshape(shape)
    """, "reshape_to", "x, shape = torch.randn(12), (3, 4)", "x, shape", [
        ("shape = (3, 4)", HIT),
        ("shape = (4, 3)", RECOMPILE),
    ]),
    Case("weighted_sum", """
        def weighted_sum(x, weights):
            out = x * 0
            for name, w in weights.items():
                out = out + x * w
            return out
    """, "weighted_sum", "x, weights = torch.randn(3), {'a': 1.0, 'b': 2.0}", "x, weights", [
        ("weights = {'a': 1.0, 'b': 2.0}", HIT),
        ("weights['b'] = 5.0", RECOMPILE),
        ("weights['c'] = 3.0", RECOMPILE),
    ]),
    Case("dict_subclass", """
        import collections

        def by_mapping(x, opts):
            return x * opts["k"] if isinstance(opts, collections.OrderedDict) else x + opts["k"]
    """, "by_mapping", "x, opts = torch.randn(3), {'k': 2.0}", "x, opts", [
        ("opts = {'k': 2.0}", HIT),
        ("opts = collections.OrderedDict(k=2.0)", RECOMPILE),  # the same keys, another type
        ("opts = {'k': 2.0}", HIT),
    ]),
    Case("ordered_dict_keys", """
        import collections

        def first_weight(x, opts):
            return x * list(opts.values())[0] + len(opts)
    """, "first_weight", "x, opts = torch.randn(3), collections.OrderedDict(a=1.0, b=2.0)", "x, opts", [
        ("opts = collections.OrderedDict(a=1.0, b=2.0)", HIT),
        ("opts = collections.OrderedDict(b=2.0, a=1.0)", RECOMPILE),  # a dict subclass: its keys are guarded too
    ]),
    Case("dict_order", """
        def concat(x, parts):
            return torch.cat([x * w for w in parts.values()])
    """, "concat", "x, parts = torch.randn(3), {'a': 1.0, 'b': 2.0}", "x, parts", [
        ("parts = {'a': 1.0, 'b': 2.0}", HIT),
        ("parts = {'b': 2.0, 'a': 1.0}", RECOMPILE),
        ("parts = {'b': 2.0, 'a': 1.0}", HIT),
    ]),
    Case("empty_list", """
        def add_all(x, extras):
            x = x * 2
            for e in extras:
                x = x + e
            return x
    """, "add_all", "x, extras = torch.randn(3), []", "x, extras", [
        ("extras = []", HIT),
        ("extras = [torch.ones(3)]", RECOMPILE),
    ]),
    Case("empty_dict", """
        def add_named(x, extras):
            x = x * 2
            for name, e in extras.items():
                x = x + e
            return x
    """, "add_named", "x, extras = torch.randn(3), {}", "x, extras", [
        ("extras = {}", HIT),
        ("extras = {'bias': torch.ones(3)}", RECOMPILE),
        ("extras = {}", HIT),
    ]),
    Case("list_mutated_in_place", """
        def scale_all(x, scales):
            for s in scales:
                x = x * s
            return x
    """, "scale_all", "x, scales = torch.randn(3), [2, 3]", "x, scales", [
        ("scales.append(4)", RECOMPILE),  # the same list object, one item longer
        ("scales[2] = 5", RECOMPILE),
        ("scales.pop()", HIT),  # [2, 3] again: the first graph
    ]),
    Case("slice_argument", """
        def take(x, part):
            return x[part] * 2
    """, "take", "x, part = torch.randn(6), slice(0, 2)", "x, part", [
        ("part = slice(0, 2)", HIT),
        ("part = slice(1, 3)", RECOMPILE),
    ]),
    Case("range_argument", """
        def count_up(x, steps):
            for i in steps:
                x = x + i
            return x
    """, "count_up", "x, steps = torch.randn(3), range(3)", "x, steps", [
        ("steps = range(3)", HIT),
        ("steps = range(1, 4)", RECOMPILE),
    ]),
    Case("named_tuple", """
        import collections

        Pair = collections.namedtuple("Pair", "a b")

        def combine(x, pair):
            return x + pair[0] * pair[1] if isinstance(pair, Pair) else x - pair[0]
    """, "combine", "x, pair = torch.randn(3), Pair(torch.randn(3), torch.randn(3))", "x, pair", [
        ("pair = Pair(torch.randn(3), torch.randn(3))", HIT),
        ("pair = (torch.randn(3), torch.randn(3))", RECOMPILE),
    ]),
    Case("list_or_tuple", """
        def combine(x, parts):
            if isinstance(parts, tuple):
                return x * len(parts)
            return x + len(parts)
    """, "combine", "x, parts = torch.randn(3), [torch.randn(3), torch.randn(3)]", "x, parts", [
        ("parts = [torch.randn(3), torch.randn(3)]", HIT),
        ("parts = (torch.randn(3), torch.randn(3))", RECOMPILE),
    ]),
    Case("closure_cell", """
        def make_scaler(k):
            def scaled(x):
                return x * k

            def set_k(value):
                nonlocal k
                k = value

            return scaled, set_k

        scaled, set_k = make_scaler(2)
    """, "scaled", "x = torch.randn(3)", "x", [
        ("set_k(3)", RECOMPILE),
        ("set_k(2)", HIT),
    ]),
    Case("module_attribute", """
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2.0

            def forward(self, x):
                return x * self.scale
    """, "model", "model, x = Scaled(), torch.randn(3)", "x", [
        ("model.scale = 3.0", RECOMPILE),
        ("model.note = 'not read by forward'", HIT),
        ("model.scale = 2.0", HIT),
    ]),
    Case("training_flag", """
        class TrainOnly(nn.Module):
            def forward(self, x):
                return x * 2 if self.training else x * 3
    """, "model", "model, x = TrainOnly(), torch.randn(3)", "x", [
        ("model.eval()", RECOMPILE),
        ("model.train()", HIT),
    ]),
    Case("dtype_argument", """
        def cast(x, dtype):
            return x.to(dtype) * 2
    """, "cast", "x, dtype = torch.randn(3), torch.float32", "x, dtype", [
        ("dtype = torch.float64", RECOMPILE),
        ("dtype = torch.float32", HIT),
    ]),
    Case("tuple_of_tensors", """
        def product(pair):
            out = pair[0]
            for t in pair[1:]:
                out = out * t
            return out
    """, "product", "pair = (torch.randn(3), torch.randn(3))", "pair", [
        ("pair = (torch.randn(3), torch.randn(3))", HIT),
        ("pair = (torch.randn(3), torch.randn(3), torch.randn(3))", RECOMPILE),
    ]),
    Case("unused_argument", """
        def first(x, unused):
            return x + 1
    """, "first", "x, unused = torch.randn(3), 1", "x, unused", [
        ("unused = 'anything else'", HIT),
        ("unused = torch.randn(7)", HIT),
    ]),
]

OBJECT_EXAMPLES = [
    Case("global_function", """
        def double(x):
            return x * 2

        def triple(x):
            return x * 3

        act = double

        def apply(x):
            return act(x) + 1
    """, "apply", "x = torch.randn(3)", "x", [
        ("act = triple", RECOMPILE),
        ("act = double", HIT),
    ]),
    Case("submodule", """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.act = nn.Tanh()

            def forward(self, x):
                return self.act(self.fc(x))
    """, "model", "model, x = Net(), torch.randn(2, 4)", "x", [
        ("model.act = nn.Sigmoid()", RECOMPILE),
        ("x = torch.randn(2, 4)", HIT),
    ]),
    Case("config_object", """
        class Config:
            def __init__(self, scale):
                self.scale = scale

        class FastConfig(Config):
            pass

        def configured(x, cfg):
            return x * cfg.scale if isinstance(cfg, FastConfig) else x + cfg.scale
    """, "configured", "x, cfg = torch.randn(3), Config(2.0)", "x, cfg", [
        ("cfg = Config(2.0)", HIT),
        ("cfg = FastConfig(2.0)", RECOMPILE),
        ("cfg = Config(2.0)", HIT),
    ]),
]

OBJECT_CASES = [
    Case("callable_object", """
        class Scale:
            def __init__(self, k):
                self.k = k

            def __call__(self, x):
                return x * self.k

        class Shift(Scale):
            def __call__(self, x):
                return x + self.k

        def apply(fn, x):
            return fn(x)
    """, "apply", "fn, x = Scale(2), torch.randn(3)", "fn, x", [
        ("fn = Shift(2)", RECOMPILE),
        ("fn = Scale(2)", LIKE_REFERENCE),
    ]),
    Case("python_module", """
        import types

        fast = types.ModuleType("fast")
        fast.activation = torch.relu
        slow = types.ModuleType("slow")
        slow.activation = torch.tanh
        lib = fast

        def kernel(x):
            return lib.activation(x)
    """, "kernel", "x = torch.randn(3)", "x", [
        ("lib = slow", RECOMPILE),
        ("lib = fast", HIT),
    ]),
    Case("module_identity", """
        import types

        fast = types.ModuleType("fast")
        slow = types.ModuleType("slow")
        backend = fast

        def dispatch(x):
            return x * 2 if backend is fast else x * 3
    """, "dispatch", "x = torch.randn(3)", "x", [
        ("backend = slow", RECOMPILE),
        ("backend = fast", HIT),
    ]),
    Case("enum_member", """
        import enum

        class Mode(enum.Enum):
            SUM = 1
            MEAN = 2

        def reduce(x, mode):
            return x.sum() if mode is Mode.SUM else x.mean()
    """, "reduce", "x, mode = torch.randn(3), Mode.SUM", "x, mode", [
        ("mode = Mode.MEAN", RECOMPILE),
        ("mode = Mode.SUM", HIT),
    ]),
    Case("class_argument", """
        def activation(x, cls):
            return torch.relu(x) if issubclass(cls, nn.ReLU) else torch.tanh(x)
    """, "activation", "x, cls = torch.randn(3), nn.ReLU", "x, cls", [
        ("cls = nn.Tanh", RECOMPILE),
        ("cls = nn.ReLU", HIT),
    ]),
    Case("builtin_argument", """
        def picked(x, pick):
            return x * pick(2, 3)
    """, "picked", "x, pick = torch.randn(3), max", "x, pick", [
        ("pick = min", RECOMPILE),
        ("pick = max", HIT),
    ]),
    Case("operator_argument", """
        def apply_op(x, op):
            return op(x)
    """, "apply_op", "x, op = torch.randn(3), torch.ops.aten.relu", "x, op", [
        ("op = torch.ops.aten.relu", HIT),
        ("op = torch.ops.aten.neg", RECOMPILE),  # an operator is no builtin function, yet used as that object
        ("op = torch.ops.aten.relu", HIT),
    ]),
    Case("partial", """
        import functools

        def apply(x, op):
            return op(x)
    """, "apply", "x, op = torch.randn(3), functools.partial(torch.add, other=2.0)", "x, op", [
        ("op = functools.partial(torch.add, other=2.0)", HIT),
        ("op = functools.partial(torch.mul, other=2.0)", RECOMPILE),
    ]),
    Case("bound_method", """
        class Scaler:
            def __init__(self, k):
                self.k = k

            def apply(self, x):
                return x * self.k

        def call(x, fn):
            return fn(x)

        scaler = Scaler(2.0)
    """, "call", "x, fn = torch.randn(3), scaler.apply", "x, fn", [
        ("fn = scaler.apply", HIT),
        ("earlier = fn; fn = scaler.apply", HIT),  # both alive: a new method object, at a new address
        ("fn = Scaler(3.0).apply", RECOMPILE),
        ("fn = scaler.apply", HIT),
    ]),
    Case("model_argument", """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                return torch.relu(self.fc(x))

        def run(model, x):
            return model(x)
    """, "run", "model, x = Net(), torch.randn(2, 3)", "model, x", [
        ("x = torch.randn(2, 3)", HIT),
        ("model.extra = nn.Linear(2, 2)", HIT),
        ("model = Net()", EITHER),
        ("model.fc = nn.Linear(3, 3, bias=False)", RECOMPILE),
        # the same class, but a forward set on the instance: another computation
        ("model = Net(); model.forward = lambda x: x * 5", RECOMPILE),
    ]),
]


def zoo_case(name):
    """A zoo model: new inputs of the same shapes, a smaller batch, eval mode, train mode again."""
    return Case(f"zoo_{name}", "from tinydynamo.testing.models import make\n", "model",
                f"model, inputs = make({name!r}); first = inputs", "*inputs", [
                    ("inputs = tuple(t.clone() for t in inputs)", HIT),
                    ("inputs = tuple(t[:1] for t in inputs)", RECOMPILE),
                    ("model.eval()", LIKE_REFERENCE),
                    ("model.train(); inputs = first", HIT),
                ])


ZOO_CASES = [zoo_case(name) for name in ZOO]
CASES = {case.name: case for case in TENSOR_EXAMPLES + TENSOR_CASES + CONSTANT_EXAMPLES + CONSTANT_CASES
         + OBJECT_EXAMPLES + OBJECT_CASES + ZOO_CASES}


# --------------------------------------------------------------------------- running a case
@dataclasses.dataclass
class Outcome:
    """What one call of the compiled function did."""

    compiled: bool  # the frame was translated (again)
    hit: bool  # a cache entry's guard passed
    mismatch: str  # how the result differs from eager ("" if it does not)
    failed_checks: list  # after a recompile: the checks of the previous entry that failed


def run_case(case, guards_for=None, categories=CATEGORIES):
    """Call the case's target, compiled and eagerly, first and after each step; one Outcome per call.

    A GuardsError (the learner's guards_for failed) propagates."""
    # a step may switch grad mode: it comes back when the case ends
    with swapped_guards(guards_for, categories), torch.set_grad_enabled(torch.is_grad_enabled()):
        module = user_module(f"a04_{case.name}", PRELUDE + textwrap.dedent(case.source))
        exec(case.setup, vars(module))
        original = getattr(module, case.target)
        # Sizes are specialised: a new shape must recompile under the learner's guards (the
        # symbolic guards of automatic dynamic are the reference's, chapter 12).
        compiled = tinydynamo.compile(original, backend="eager", dynamic=False)
        outcomes = []
        for statement in ["", *(statement for statement, _ in case.steps)]:
            exec(statement, vars(module))
            args = eval(f"({case.args},)", vars(module))
            outcomes.append(call_both(compiled, original, args))
        return outcomes


def call_both(compiled, original, args):
    before = tinydynamo.stats()
    torch.manual_seed(0)
    try:
        got, mismatch = compiled(*args), ""
    except GuardsError:
        raise
    except Exception as e:  # noqa: BLE001 - a stale graph may fail on inputs it was not made for
        got, mismatch = None, f"the compiled call raised {type(e).__name__}: {one_line(e)}"
    after = tinydynamo.stats()
    torch.manual_seed(0)
    expected = original(*args)
    if not mismatch:
        mismatch = difference(got, expected)
    compiled_now = after["frames_compiled"] > before["frames_compiled"]
    hit = after["cache_hits"] > before["cache_hits"] and not compiled_now
    failed = previous_entry_failures(original, args) if compiled_now else []
    return Outcome(compiled_now, hit, mismatch, failed)


def one_line(error):
    lines = str(error).strip().splitlines()
    return " ".join(lines) if lines else type(error).__name__


def frame_of(original, args):
    """(code, the guard's arguments) of the frame that calling ``original(*args)`` compiles."""
    if isinstance(original, torch.nn.Module):
        fn, values = type(original).forward, (original, *args)
    else:
        fn, values = original, args
    return fn.__code__, (*values, *(fn.__closure__ or ()))


def previous_entry_failures(original, args):
    """The checks of the entry made before the newest one that these arguments fail, checks of
    a source first (global state checks also "fail" when fetching a source raises)."""
    code, guard_args = frame_of(original, args)
    guards = [guard for _, guard, _ in eval_frame.get_cache_entries(code) if hasattr(guard, "failures")]
    failed = guards[-2].failures(*guard_args) if len(guards) >= 2 else []
    return sorted(failed, key=lambda check: "L[" not in check and "G[" not in check)


# --------------------------------------------------------------------------- the checkers
def outcome_problems(case_name, statement, expect, outcome):
    """What is wrong with one call's outcome, as the learner should read it."""
    when = f"{case_name}, after `{statement}`" if statement else f"{case_name}, first call"
    if expect == EITHER:
        return [f"{when}: {outcome.mismatch}"] if outcome.mismatch else []
    if expect == RECOMPILE and not outcome.compiled:
        if outcome.hit:
            result = outcome.mismatch or ("its result equals eager here by luck, but a graph "
                                          "specialised on the old inputs is not safe to run")
            return [f"{when}: STALE GRAPH: the cached graph ran although the change matters "
                    f"(expected a recompile); {result}"]
        return [f"{when}: expected a recompile, but the frame ran eagerly (past "
                f"config.cache_size_limit={config.cache_size_limit}?)"]
    problems = [f"{when}: {outcome.mismatch}"] if outcome.mismatch else []
    if expect == HIT and outcome.compiled:
        failed = "; ".join(outcome.failed_checks) or ("none left to show: the earlier entry was "
                                                           "dropped when an object its guard checks by id() died")
        problems.append(f"{when}: NEEDLESS RECOMPILE: nothing the graph depends on changed, so the "
                        f"cached graph should have served the call; failed check(s): {failed}")
    elif expect == HIT and not outcome.hit:
        problems.append(f"{when}: expected a cache hit, but the frame ran eagerly: it reached "
                        f"config.cache_size_limit={config.cache_size_limit} (do your guards fail on "
                        "equal inputs?)")
    return problems


def expectations(case):
    """What each call must do; LIKE_REFERENCE steps are decided by running the reference guards."""
    wanted = [RECOMPILE] + [expect for _, expect in case.steps]
    if LIKE_REFERENCE not in wanted:
        return wanted
    reference = run_case(case)
    return [(RECOMPILE if outcome.compiled else HIT) if expect == LIKE_REFERENCE else expect
            for expect, outcome in zip(wanted, reference)]


def check_case(guards_for, case, categories=CATEGORIES):
    wanted = expectations(case)
    try:
        outcomes = run_case(case, guards_for, categories)
    except GuardsError as e:
        return [f"{case.name}: {e}"]
    statements = [""] + [statement for statement, _ in case.steps]
    return [problem for statement, expect, outcome in zip(statements, wanted, outcomes)
            for problem in outcome_problems(case.name, statement, expect, outcome)]


def check_cases(guards_for, cases, categories=CATEGORIES):
    """Every failure of ``guards_for`` (used for ``categories``) on the cases, in order; after a
    case in which guards_for ran past its time limit, the later cases are named, not run."""
    failures = []
    for i, case in enumerate(cases):
        found = check_case(guards_for, case, categories)
        failures += found
        if any(TIMED_OUT in problem for problem in found) and cases[i + 1:]:
            failures.append(f"not run, after the time-out in {case.name}: "
                            + ", ".join(later.name for later in cases[i + 1:]))
            break
    return failures


def check_tensor_guards(tensor_guards, cases=TENSOR_EXAMPLES):
    return check_cases(tensor_guards, cases, [TENSORS])


def check_constant_guards(constant_guards, cases=CONSTANT_EXAMPLES):
    return check_cases(constant_guards, cases, [CONSTANTS])


def check_object_guards(object_guards, cases=OBJECT_EXAMPLES):
    return check_cases(object_guards, cases, [OBJECTS])


def check_zoo(guards_for, names=tuple(ZOO)):
    return check_cases(guards_for, [CASES[f"zoo_{name}"] for name in names])


def summary(guards_for, cases, categories=CATEGORIES):
    """One line per case: calls, compiles and cache hits with these guards."""
    lines = []
    for case in cases:
        outcomes = run_case(case, guards_for, categories)
        lines.append(f"{case.name}: {len(outcomes)} calls, {sum(o.compiled for o in outcomes)} compiles, "
                     f"{sum(o.hit for o in outcomes)} cache hits, "
                     f"{sum(not o.mismatch for o in outcomes)} results equal to eager")
    return "\n".join(lines)
