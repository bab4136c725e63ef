"""Guards: when may a compiled frame be reused? (book chapter 4,
"Guards and the transformed code").

While tracing, every assumption the graph bakes in about an input is recorded as a ``Guard``:
"``L['x']`` is a float32 CPU tensor of shape (10,)", "``G['scale']`` == 2.0",
"``L['self'].training`` is True". ``GuardBuilder`` compiles all guards of one cache entry into
ONE Python function whose source stays readable (``explain()`` and ``TINYDYNAMO_LOGS=guards``
print it). The frame hook calls it with the frame's arguments, then its closure cells:

    def guard(self, x):
        try:
            L_self_fc = self.fc  # L['self'].fc
            L_self_fc_weight = L_self_fc.weight  # L['self'].fc.weight
            if (
                ___is_grad_enabled() is True  # GRAD_MODE
                and id(self) == 140211532485456  # ID_MATCH L['self']
                and type(x) is ___Tensor and x.dtype is ___float32 and ...  # TENSOR_MATCH L['x']
                ...
            ):
                return True
            return False
        except Exception:
            return False

Each source is fetched once, into a local named after it; expected values are precomputed and
reach the function as closure constants (``___float32``); cheap checks run before expensive
ones; and an exception (a missing attribute, an empty cell) counts as a failed guard.
"""
import builtins
import dataclasses
import keyword
import weakref

import sympy
import torch

from ..symbolic_shapes import to_python
from ..utils import contiguous_strides
from .source import ClosureSource, GetItemSource, GlobalSource, LocalSource, NumpyTensorSource, Source

AUTOCAST_DEVICES = ("cpu", "cuda")
# Tensor types whose is_cpu and is_contiguous() are torch's own (a subclass may redefine them).
PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def autocast_state():
    """Whether autocast is on, and to which dtype, for each device type. AOT autograd traces the
    casts autocast inserts, so a graph only holds under the autocast state it was traced in."""
    return tuple((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in AUTOCAST_DEVICES)


# Guard kinds, cheapest first: the order in which the guard function checks them.
GUARD_KINDS = (
    "GRAD_MODE",  # torch.is_grad_enabled() as when traced
    "DEFAULT_DTYPE",  # torch.get_default_dtype() as when traced (factory functions use it)
    "AUTOCAST",  # torch.autocast on or off (and its dtype) for each device type, as when traced
    "STATE_QUERY",  # a query of global state answered while tracing (dist.is_initialized())
    "ID_MATCH",  # the very same object (modules, functions, classes)
    "TYPE_MATCH",  # an object of exactly this type
    "CONSTANT_MATCH",  # a constant equal to (and of the same type as) the traced one
    "HASATTR",  # an object has (or lacks) an attribute, as when traced: hasattr(), getattr(o, n, d)
    "LENGTH_CHECK",  # a container of this length
    "DICT_KEYS",  # a dict with these keys, in this order
    "TENSOR_MATCH",  # a tensor with this type, dtype, device, shape, stride, requires_grad
    "SHAPE_ENV",  # the relations between sizes that a trace with symbolic sizes relied on
    "DUPLICATE_INPUT",  # two sources hold the same tensor (or list, or dict), as when traced
    "NO_ALIASING",  # distinct objects: tensors the graph mutates, lists compared with `is`
)


@dataclasses.dataclass(frozen=True, eq=False)
class Guard:
    """One assumption about the value at ``source`` (``None`` for global state)."""

    source: Source | None
    kind: str
    value: object = None  # what the check compares against (see GuardBuilder)

    def key(self):
        extra = tuple(s.name() for s in self.value) if self.kind in ("DUPLICATE_INPUT", "NO_ALIASING") else ()
        if self.kind == "STATE_QUERY":  # one guard per query
            extra = (self.value[0].__qualname__,)
        if self.kind == "HASATTR":
            extra = (self.value[0],)
        return (self.kind, self.source.name() if self.source else None, extra)


class GuardBuilder:
    """Turns a list of guards into the source of one guard function, then into the function."""

    def __init__(self, arg_names, freevars, f_globals):
        self.arg_names = list(arg_names)
        self.freevars = list(freevars)
        # names the guard function can see, and their values
        self.closure = {"G": f_globals}
        self.locals = {}  # source name -> the guard function's local holding that value
        self.fetches = []  # "local = expression  # source" lines, parents before children
        self.watched = []  # objects whose identity is checked by id(); see ``watch_ids``

    def const(self, value):
        """A name the guard function can use for ``value`` (literals are written inline)."""
        if type(value) in (int, str, bool, type(None)) or (type(value) is float and value == value
                                                             and abs(value) != float("inf")):
            return repr(value)
        if type(value) is tuple and all(type(v) is int for v in value):
            return repr(value)
        if isinstance(value, type) and getattr(builtins, value.__name__, None) is value:
            return value.__name__  # int, float, tuple...: the guard function sees the builtins
        for name, existing in self.closure.items():
            if existing is value or (isinstance(value, torch.device) and existing == value):
                return name
        hint = getattr(value, "__name__", None) or str(value).replace("torch.", "")
        name = "___" + "".join(c if c.isalnum() else "_" for c in hint)[:30]
        while name in self.closure:
            name += "_"
        self.closure[name] = value
        return name

    def param_names(self):
        """The guard's parameters: the frame's argument names, then its free variable names (renamed
        where they are not identifiers: pytest's rewritten asserts keep values in ``@py_assert1``,
        which a resume function takes as an argument)."""
        taken = set(self.closure) | set(dir(builtins)) | {"L"}
        names = self.arg_names + self.freevars
        return [n if n not in taken and not n.startswith("___") and n.isidentifier() and not keyword.iskeyword(n)
                else f"___arg{i}" for i, n in enumerate(names)]

    def local(self, source):
        """The local variable of the guard function that holds the value at ``source``."""
        key = source.name()
        if key not in self.locals:
            params = self.param_names()
            if isinstance(source, LocalSource):
                self.locals[key] = params[self.arg_names.index(source.local_name)]
                return self.locals[key]
            if isinstance(source, ClosureSource):
                cell = params[len(self.arg_names) + self.freevars.index(source.local_name)]
                expression = f"{cell}.cell_contents"
            elif isinstance(source, GlobalSource):
                expression = key
            elif isinstance(source, NumpyTensorSource):
                expression = f"{self.const(torch.from_numpy)}({self.local(source.base)})"
            elif isinstance(source, GetItemSource):  # a key that has no literal (an enum member) is a constant
                expression = source.child_expression(self.local(source.base), self.const(source.index))
            else:
                expression = source.child_expression(self.local(source.base))
            name = source.placeholder_name()
            while name in self.locals.values() or name in self.closure or name in params:
                name += "_"
            self.fetches.append(f"{name} = {expression}" + (f"  # {key}" if expression != key else ""))
            self.locals[key] = name
        return self.locals[key]

    # --- one method per guard kind: each returns a Python expression --------------------------

    def GRAD_MODE(self, guard):
        return f"{self.const(torch.is_grad_enabled)}() is {guard.value}"

    def DEFAULT_DTYPE(self, guard):
        return f"{self.const(torch.get_default_dtype)}() is {self.const(guard.value)}"

    def AUTOCAST(self, guard):
        if not any(enabled for enabled, _ in guard.value):  # the usual case, and a cheap check
            return f"{self.const(torch._C._is_any_autocast_enabled)}() is False"
        return f"{self.const(autocast_state)}() == {self.const(guard.value)}"

    def STATE_QUERY(self, guard):
        query, answer = guard.value
        return f"{self.const(query)}() == {self.const(answer)}"

    def ID_MATCH(self, guard):
        self.watched.append(guard.value)
        return f"id({self.local(guard.source)}) == {id(guard.value)}"

    def TYPE_MATCH(self, guard):
        return f"type({self.local(guard.source)}) is {self.const(guard.value)}"

    def CONSTANT_MATCH(self, guard):
        x, value = self.local(guard.source), guard.value
        if value is None or type(value) is bool:
            return f"{x} is {value!r}"
        if isinstance(value, torch.dtype):
            return f"{x} is {self.const(value)}"
        return f"type({x}) is {self.const(type(value))} and {x} == {self.const(value)}"

    def HASATTR(self, guard):
        name, present = guard.value
        return f"hasattr({self.local(guard.source)}, {name!r}) is {present}"

    def LENGTH_CHECK(self, guard):
        return f"len({self.local(guard.source)}) == {guard.value}"

    def DICT_KEYS(self, guard):
        if not guard.value:  # every module's hook dicts: cheaper than building a tuple
            return f"not {self.local(guard.source)}"
        return f"tuple({self.local(guard.source)}) == {self.const(tuple(guard.value))}"

    def TENSOR_MATCH(self, guard):
        x, t = self.local(guard.source), guard.value
        return " and ".join([
            f"type({x}) is {self.const(t['type'])}",
            f"{x}.dtype is {self.const(t['dtype'])}",
            self.device_check(x, t),
            *self.layout_checks(x, t),
            f"{x}.requires_grad is {t['requires_grad']}",
        ])

    def device_check(self, x, t):
        """``x.device == cpu`` makes a device object on every call; ``x.is_cpu`` says the same."""
        if t["device"] == torch.device("cpu") and t["type"] in PLAIN_TENSOR_TYPES:
            return f"{x}.is_cpu"
        return f"{x}.device == {self.const(t['device'])}"

    def layout_checks(self, x, t):
        """Shape and strides: constants, or, for a tensor with symbolic sizes, expressions in the
        symbols' values (a stride of ``None``, a size-1 dimension's, is not checked)."""
        if "shape_env" not in t:
            shape, stride = t["shape"], t["stride"]
            if t["type"] in PLAIN_TENSOR_TYPES and stride == contiguous_strides(shape) and min(shape, default=2) >= 2:
                # with no size below 2, the contiguous strides are the only ones is_contiguous()
                # accepts, and it makes no tuple
                return [f"{x}.shape == {self.const(shape)}", f"{x}.is_contiguous()"]
            return [f"{x}.shape == {self.const(shape)}", f"{x}.stride() == {self.const(stride)}"]
        shape = ", ".join(self.size_expression(t["shape_env"], size) for size in t["shape"])
        checks = [f"{x}.shape == ({shape},)"]
        checks += [f"{x}.stride()[{d}] == {self.size_expression(t['shape_env'], stride)}"
                   for d, stride in enumerate(t["stride"]) if stride is not None]
        return checks

    def size_expression(self, shape_env, expr):
        """A size expression as Python over the guard's locals (``L_x_size_0 * 64``)."""
        return to_python(sympy.sympify(expr), lambda symbol: self.local(shape_env.var_to_sources[symbol][0]))

    def SHAPE_ENV(self, guard):
        shape_env = guard.value
        checks = [f"{self.size_expression(shape_env, symbol)} >= 2" for symbol in shape_env.var_to_val]
        shape_env.check_constraints()
        checks += [f"({self.size_expression(shape_env, g.expr)})" for g in shape_env.simplified_guards()]
        return " and ".join(checks) or "True"

    def DUPLICATE_INPUT(self, guard):
        (other,) = guard.value
        return f"{self.local(guard.source)} is {self.local(other)}"

    def NO_ALIASING(self, guard):
        names = ", ".join(self.local(s) for s in guard.value)
        return f"len({{id(t) for t in ({names},)}}) == {len(guard.value)}"

    # --- the function ---------------------------------------------------------------------------

    def parts(self, guards):
        """[(comment, expression)] in checking order: cheap kinds and shallow sources first."""
        unique = list({g.key(): g for g in guards}.values())
        unique.sort(key=lambda g: (GUARD_KINDS.index(g.kind), g.source.depth if g.source else 0))
        return [(f"{g.kind} {g.source.name() if g.source else ''}".strip(), getattr(self, g.kind)(g))
                for g in unique]

    def source(self, parts, name="guard"):
        checks = "\n".join(f"            {'and ' if i else ''}{code}  # {comment}"
                           for i, (comment, code) in enumerate(parts)) or "            True"
        fetches = "".join(f"        {line}\n" for line in self.fetches)
        return (f"def {name}({', '.join(self.param_names())}):\n"
                f"    try:\n"
                f"{fetches}"
                f"        if (\n{checks}\n        ):\n"
                f"            return True\n"
                f"        return False\n"
                f"    except Exception:\n"
                f"        return False\n")

    def compile(self, source, name="guard"):
        body = "\n".join("    " + line for line in source.splitlines())
        maker = f"def ___make_{name}({', '.join(self.closure)}):\n{body}\n    return {name}\n"
        namespace = {}
        exec(compile(maker, "<tinydynamo guard>", "exec"), namespace)
        return namespace[f"___make_{name}"](*self.closure.values())

    def build(self, guards):
        """The guard function, with ``.source``, ``.parts`` and ``.failures(*args)`` attached."""
        parts = self.parts(guards)
        source = self.source(parts)
        fn = self.compile(source)
        fn.source = source
        fn.parts = parts
        fn.failures = lambda *args: self.failures(parts, args)
        fn.watched, self.watched = self.watched, []  # (see watch_ids)
        fn.id_matched_args = {self.arg_names.index(g.source.local_name): id(g.value) for g in guards
                              if g.kind == "ID_MATCH" and isinstance(g.source, LocalSource)
                              and g.source.local_name in self.arg_names}  # (see same_id_matched_args)
        return fn

    def failures(self, parts, args):
        """The expressions of the guards that fail for these arguments (for recompile logs)."""
        failed = []
        for i, (comment, code) in enumerate(parts):
            check = self.compile(self.source([(comment, code)], f"check{i}"), f"check{i}")
            if not check(*args):
                failed.append(f"{code}  # {comment}")
        return failed


def same_id_matched_args(guard_fn, args):
    """Whether the arguments that ``guard_fn`` checks by id() (a module's ``self``) are these
    ``args``: the entry was made for the same objects. (An entry of a frame that ran eagerly
    has none: it counts for any objects.)"""
    matched = getattr(guard_fn, "id_matched_args", {})
    return all(id(args[i]) == expected for i, expected in matched.items())


def watch_ids(guard_fn, on_death):
    """Call ``on_death()`` when any object whose id() the guard checks dies (ids get reused)."""
    for obj in guard_fn.__dict__.pop("watched"):  # no strong reference stays behind
        try:
            weakref.finalize(obj, on_death)
        except TypeError:  # not weak-referenceable: keep it alive so its id stays unique
            guard_fn.__dict__.setdefault("kept_alive", []).append(obj)
