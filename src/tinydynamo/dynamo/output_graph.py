"""OutputGraph: the FX graph being built, its inputs and guards (book chapters 3
and 4: built while tracing, compiled at the end).

One OutputGraph per translated frame (inlined functions append to it too). It owns

- the ``torch.fx.Graph`` and a tracer that creates proxies in it (while the body of a
  ``torch.jit.fork`` is traced, the tracer of that body's own graph: ``SubgraphTracer``);
- the graph inputs, keyed by Source: every tensor the frame reads from outside becomes a
  placeholder, in the order first read, with the real tensor kept as the example input;
- the guards collected while tracing.

``compile_subgraph`` ends the trace: it turns the graph into a GraphModule, hands it to the
backend (``backend(gm, example_inputs)`` with the REAL tensors of this first call), stores the
compiled callable in the frame's globals as ``__compiled_fn_N`` and emits the bytecode that calls
it and rebuilds the values the frame returns. A graph break (chapter 5) ends the trace the same
way, with ``codegen_after_graph`` and ``call_graph``, but rebuilds the value stack and the live
locals instead of a return value.
"""
import contextlib
import itertools
import operator
import re
import sys

import sympy
import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher

from .._logging import trace_artifact
from ..backends import compiler_for_symbolic_graph
from ..symbolic_shapes import ShapeEnv
from ..utils import counters
from . import eval_frame, fork_join
from .automatic_dynamic import DYNAMIC_DIMS, dynamic_dims, dynamic_strides, is_dynamic_int
from .codegen import PyCodegen
from .exc import BackendCompilerFailed, unsupported
from .guards import AUTOCAST_DEVICES, Guard, autocast_state
from .side_effects import SideEffects
from .source import AttrSource, GlobalSource, SizeSource, StrideSource
from .variables import (
    ConstDictVariable,
    DataClassVariable,
    GetAttrVariable,
    NewObjectVariable,
    NNModuleVariable,
    SymNodeVariable,
    TensorVariable,
    UserMethodVariable,
)
from .variables.dicts import DictViewVariable
from .variables.lists import BaseListVariable, ListIteratorVariable
from .variables.tensor import INPLACE_OPERATORS
from .variables.torch import enter_autocast

_compiled_fn_ids = itertools.count()
# (globals dict, name) of everything installed in user globals, removed by tinydynamo.reset().
installed_globals = []


@contextlib.contextmanager
def outside_inference_mode():
    """A graph called under ``torch.inference_mode()`` is compiled outside it, without grad as
    inside it: inference mode leaves out the autograd layer, where composite ops (``Tensor.to``)
    decompose, so the backends' tracers would see ops that they expect decomposed. The compiled
    graph then runs in inference mode, and its outputs are inference tensors, as eager's."""
    if not torch.is_inference_mode_enabled():
        yield
        return
    with torch.inference_mode(False), torch.no_grad():
        yield


class SubgraphTracer(torch.fx.proxy.GraphAppendingTracer):
    """Creates the nodes of one FX graph: the frame's (``parent`` None), or the body of a
    ``torch.jit.fork`` traced inside it (``variables/futures.py``), nested in the graph that
    forks it.

    A body uses values of the graphs around it: the fork's arguments, a tensor it closes over,
    a parameter of the module it runs. Such a value becomes a placeholder of the body's graph:
    it is *lifted*, as Dynamo lifts the free variables of a higher-order op's body, and
    ``lifted`` remembers, in placeholder order, which node of the parent graph each one stands
    for (the fork node passes those). A value of a graph that does not enclose this one (a
    tensor computed in a forked body, used outside it without ``torch.jit.wait``) is Unsupported.
    """

    def __init__(self, parent=None):
        super().__init__(torch.fx.Graph())
        self.parent = parent
        self.lifted = {}  # node of the parent graph -> the placeholder that stands for it here
        self.submodules = {}  # name -> GraphModule of a body forked from this graph

    def create_arg(self, a):
        if isinstance(a, torch.fx.Proxy):
            return self.lift(a.node)
        return super().create_arg(a)

    def lift(self, node):
        """``node``, a node of this graph or of one around it, as a value of this graph."""
        if node.graph is self.graph:
            return node
        if self.parent is None:
            unsupported("a value computed inside a forked function is used outside it "
                        "without torch.jit.wait")
        outer = self.parent.lift(node)
        if outer not in self.lifted:
            self.lifted[outer] = self.create_placeholder(outer.name, outer.meta.get("example_value"))
            self.lifted[outer].meta["device"] = outer.meta.get("device")
        return self.lifted[outer]

    def create_placeholder(self, name, example):
        """A placeholder after the existing ones."""
        placeholders = self.graph.find_nodes(op="placeholder")
        insert_point = self.graph.inserting_after(placeholders[-1]) if placeholders else \
            self.graph.inserting_before(next(iter(self.graph.nodes), None))
        with insert_point:
            node = self.create_node("placeholder", name, (), {})
        node.meta["example_value"] = example
        return node

    def add_submodule(self, prefix, module):
        """Keep ``module`` (a forked body) as an attribute of this graph's module; its name."""
        name = f"{prefix}_{len(self.submodules)}"
        self.submodules[name] = module
        return name

    def graph_module(self):
        """The GraphModule of this graph, its forked bodies as submodules."""
        root = torch.nn.Module()
        for name, module in self.submodules.items():
            root.add_module(name, module)
        return torch.fx.GraphModule(root, self.graph)


class OutputGraph:
    def __init__(self, code, f_globals, compiler_fn, dynamic=None):
        self.code = code
        self.dynamic = dynamic  # the compile's policy for sizes: None (automatic), True or False
        self.shape_env = ShapeEnv(where=self.user_location)
        self.root_globals = f_globals
        self.compiler_fn = compiler_fn
        self.tracer = SubgraphTracer()  # the frame's graph
        self.graph = self.tracer.graph
        self.current_tracer = self.tracer  # where nodes go: the frame's graph, or a forked body's
        self.forks_outstanding = set()  # fork nodes traced and not waited for yet
        self.graph_inputs = []  # [(source, real tensor, TensorVariable)], placeholder order
        self.input_by_id = {}  # id(real tensor) -> its TensorVariable (one input per tensor)
        self.input_properties = {}  # id(real tensor) -> what its TENSOR_MATCH checks
        self.guards = []
        self.variable_cache = {}  # source -> tracker, so a value read twice is one tracker
        self.containers_by_id = {}  # id -> (list or dict, its first source): one tracker per object
        self.cells_by_id = {}  # id of a closure cell from outside -> its CellVariable (one per cell)
        self.node_tags = {}  # put in the meta of each node traced now (see ``tagging``)
        self.reparametrized = {}  # (id(module), name) -> tracker read instead (see ``reparametrizing``)
        self.initial_grad_mode = torch.is_grad_enabled()
        self.default_dtype = torch.get_default_dtype()
        self.autocast = autocast_state()
        self.autocast_blocks_open = 0  # `with torch.autocast` blocks entered and not left (they switch)
        self.autocast_cache_enabled = torch.is_autocast_cache_enabled()
        self.current_tx = None  # the innermost translator, for stack traces in node.meta
        self.instruction_count = 0
        self.global_writes = {}  # name -> tracker: `global` assignments, replayed after the graph
        self.side_effects = SideEffects()  # mutations of the caller's objects, replayed after the graph

    # --- building the graph --------------------------------------------------------------------

    def add_guard(self, guard):
        self.guards.append(guard)

    def switch_autocast(self, fn, *args):
        """Record ``enter_autocast`` or ``exit_autocast`` and run it now, so that the ops traced
        after it see the autocast state the program has there."""
        self.create_proxy("call_function", fn, args, {})
        fn(*args)
        self.autocast_blocks_open += 1 if fn is enter_autocast else -1

    def restore_autocast(self):
        """Leave the blocks that a trace stopped inside (an error, a graph break): the state is the
        one the frame started with again."""
        for _ in range(self.autocast_blocks_open):
            torch.autocast_decrement_nesting()
        self.autocast_blocks_open = 0
        for device_type, (enabled, dtype) in zip(AUTOCAST_DEVICES, self.autocast):
            torch.set_autocast_enabled(device_type, enabled)
            torch.set_autocast_dtype(device_type, dtype)
        torch.set_autocast_cache_enabled(self.autocast_cache_enabled)

    def add_global_state_guard(self, kind):
        """Global state the graph depends on: grad mode, the default dtype (it decides the dtype
        of ``torch.ones(3)`` and of ``int_tensor * 0.5``), and autocast."""
        values = {"GRAD_MODE": self.initial_grad_mode, "DEFAULT_DTYPE": self.default_dtype,
                  "AUTOCAST": self.autocast}
        self.add_guard(Guard(None, kind, values[kind]))

    def add_input(self, source, value):
        """A placeholder for the tensor at ``source`` (or the existing one if already an input)."""
        if id(value) in self.input_by_id:  # the same tensor reached twice (tied weights)
            first = self.input_by_id[id(value)]
            self.add_guard(Guard(source, "TENSOR_MATCH", self.input_properties[id(value)]))  # first's, symbols too
            self.add_guard(Guard(source, "DUPLICATE_INPUT", (first.source,)))
            return first
        example, properties = self.example_input(source, value)
        self.input_properties[id(value)] = properties
        self.add_guard(Guard(source, "TENSOR_MATCH", properties))
        proxy = self.create_placeholder(source, example)
        var = TensorVariable(proxy, example, value.device, source=source, python_cls=type(value))
        self.graph_inputs.append((source, value, var))
        self.input_by_id[id(value)] = var
        return var

    def add_int_input(self, source, value):
        """A placeholder for the int argument at ``source`` if the policy makes it a symbol (see
        ``automatic_dynamic``), else None: it is then a constant, guarded by CONSTANT_MATCH."""
        if not is_dynamic_int(self.dynamic, self.code, source, value):
            return None
        self.add_guard(Guard(source, "TYPE_MATCH", int))
        symint = self.shape_env.create_symint(value, source, duck=False)
        proxy = self.create_placeholder(source, symint)
        var = SymNodeVariable(proxy, symint, source)
        self.graph_inputs.append((source, value, var))
        return var

    def create_placeholder(self, source, example):
        """A placeholder of the frame's graph, even while a forked body is traced (the body
        lifts it): graph inputs come first, in the order read."""
        node = self.tracer.create_placeholder(source.placeholder_name(), example)
        node.meta["source"] = source.name()
        return torch.fx.Proxy(node, self.tracer)

    def example_input(self, source, value):
        """The meta tensor that stands for the input ``value`` while tracing, and what its
        TENSOR_MATCH guard checks. Dimensions the policy makes dynamic get size symbols, and the
        strides of a tensor that is not dense symbols of their own."""
        is_module_state = isinstance(source, AttrSource) and \
            isinstance(self.variable_cache.get(source.base), NNModuleVariable)
        dims = dynamic_dims(self.dynamic, self.code, source, value, is_module_state)
        strides_changed = dynamic_strides(self.dynamic, self.code, source, value, is_module_state)
        layout = symbolic_layout(self.shape_env, source, value, dims) if dims or strides_changed else None
        if layout is None:
            example = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
            return autograd_like(example, value), tensor_properties(value)
        sizes, strides = layout
        for d in getattr(value, DYNAMIC_DIMS, set()) & dims:  # the user's mark_dynamic
            self.shape_env.mark_dynamic(sizes[d].node.expr, SizeSource(source, d))
        with enable_python_dispatcher():
            example = autograd_like(torch.empty_strided(sizes, strides, dtype=value.dtype, device="meta"), value)
        properties = tensor_properties(value)
        properties.update(shape=tuple(sym_expr(s) for s in sizes), shape_env=self.shape_env,
                          stride=tuple(sym_expr(st) if n != 1 else None for st, n in zip(strides, value.shape)))
        return example, properties

    def user_location(self):
        """The user's file:line being traced (where a guard on sizes was needed)."""
        tx = self.current_tx
        if tx is None or tx.current_instruction is None:
            return "unknown"
        return f"{tx.code.co_filename}:{tx.current_instruction.positions.lineno}"

    def real_value(self, var):
        """The real tensor behind the graph input ``var``."""
        return next(value for _, value, input_var in self.graph_inputs if input_var is var)

    def create_proxy(self, kind, target, args, kwargs):
        proxy = self.current_tracer.create_proxy(kind, target, args, kwargs)
        if self.current_tx is not None:
            proxy.node.meta["stack_trace"] = self.current_tx.format_stack()
        proxy.node.meta.update(self.node_tags)
        return proxy

    @contextlib.contextmanager
    def tagging(self, **tags):
        """Put ``tags`` in the ``meta`` of every node traced inside the block (``recompute=True``
        inside a ``torch.utils.checkpoint`` region, which the partitioner reads)."""
        outer, self.node_tags = self.node_tags, {**self.node_tags, **tags}
        try:
            yield
        finally:
            self.node_tags = outer

    @contextlib.contextmanager
    def reparametrizing(self, overrides):
        """Inside the block, a module's attribute in ``overrides`` ({(id(module), name): tracker})
        reads as that tracker: ``torch.func.functional_call`` swaps tensors in for one call."""
        outer, self.reparametrized = self.reparametrized, {**self.reparametrized, **overrides}
        try:
            yield
        finally:
            self.reparametrized = outer

    @contextlib.contextmanager
    def subgraph(self):
        """Trace into a graph of its own, nested in the current one (the body of a
        ``torch.jit.fork``, see ``variables/futures.py``); yields its SubgraphTracer."""
        tracer = SubgraphTracer(parent=self.current_tracer)
        self.current_tracer = tracer
        try:
            yield tracer
        finally:
            self.current_tracer = tracer.parent

    def records_effects(self):
        """Whether an op traced now must record what it writes (``fork_join.EffectRecorder``):
        inside a forked body, or while a fork is outstanding, it may run concurrently."""
        return self.current_tracer is not self.tracer or bool(self.forks_outstanding)

    def all_nodes(self):
        """The nodes of the frame's graph and of every forked body in it."""
        bodies = [m for body in self.tracer.submodules.values() for m in body.modules()]
        return [*self.graph.nodes, *(n for body in bodies for n in body.graph.nodes)]

    def has_computation(self):
        return any(node.op not in ("placeholder", "output") for node in self.graph.nodes)

    def install_global(self, prefix, value):
        """Store ``value`` in the frame's globals under a fresh ``prefix_N`` name; return it."""
        name = f"{prefix}_{next(_compiled_fn_ids)}"
        self.root_globals[name] = value
        installed_globals.append((self.root_globals, name))
        return name

    def import_source(self, module_name):
        """A source for a module other than the frame's own, whose globals an inlined function
        reads: the module is stored in the frame's globals, as Dynamo does (``__import_...``)."""
        alias = "__import_" + re.sub(r"\W", "_", module_name)
        if alias not in self.root_globals:
            self.root_globals[alias] = sys.modules[module_name]
            installed_globals.append((self.root_globals, alias))
        return GlobalSource(alias)

    # --- finishing -----------------------------------------------------------------------------

    def compile_subgraph(self, tx, return_value):
        """The instructions of the transformed frame: call the graph, return ``return_value``."""
        # Rebuilding the return value first: if it cannot be done, nothing was compiled in vain.
        rebuild = self.codegen_after_graph(tx, [return_value])
        rebuild(return_value)
        self.codegen_global_writes(rebuild)
        rebuild.append("RETURN_VALUE")
        return self.call_graph(tx) + rebuild.instructions

    def codegen_after_graph(self, tx, live_values):
        """End the graph, and start the code that runs after it (chapters 4 and 5).

        The graph returns every tensor it computed that ``live_values`` (what Python needs next:
        the return value, or at a graph break the value stack and the live locals) hold, and it
        leaves grad mode as it found it. The returned PyCodegen rebuilds values from the graph's
        outputs; it starts by setting the grad mode that is in effect at this point of the
        frame, if that is not the one it started with (``with torch.no_grad():`` cut by a
        break, or ``torch.set_grad_enabled(False)`` as a statement)."""
        pending = list(self.global_writes.values()) + self.side_effects.values()
        outputs = tensors_to_output(live_values + pending)
        if torch.is_grad_enabled() != self.initial_grad_mode:
            self.create_proxy("call_function", torch._C._set_grad_enabled, (self.initial_grad_mode,), {})
        self.create_proxy("output", "output", (tuple(v.proxy for v in outputs),), {})
        self.remove_unused_nodes()
        self.remove_redundant_grad_mode_switches()
        codegen = PyCodegen(tx.current_instruction.positions, self.root_globals)
        codegen.graph_outputs = {var: i for i, var in enumerate(outputs)}
        if torch.is_grad_enabled() != self.initial_grad_mode:
            codegen.call_constant(torch._C._set_grad_enabled, torch.is_grad_enabled())
            codegen.append("POP_TOP")
        return codegen

    def codegen_global_writes(self, codegen):
        """Replay the frame's ``global`` assignments and its mutations of the caller's objects
        (``side_effects``): every value is rebuilt before the first is stored, so that none is
        read back from a global that was already overwritten."""
        for value in self.global_writes.values():
            codegen(value)
        for name in reversed(self.global_writes):
            codegen.append("STORE_GLOBAL", argval=name)
        self.side_effects.codegen(codegen)

    def call_graph(self, tx):
        """The start of the transformed frame: the prologue, then, if the graph computes
        anything, the call of the compiled graph, whose outputs are kept in a local."""
        codegen = PyCodegen(tx.current_instruction.positions)
        codegen.prologue(self.code)
        if self.has_computation():
            self.add_global_state_guard("GRAD_MODE")
            self.add_global_state_guard("DEFAULT_DTYPE")
            self.add_global_state_guard("AUTOCAST")
            self.add_aliasing_guard()
            codegen.load_global(self.compile_and_call_fx_graph(), push_null=True)
            for source, _, _ in self.graph_inputs:
                source.reconstruct(codegen)
            codegen.call(len(self.graph_inputs))
            codegen.store_fast(codegen.graph_output_local)
        return codegen.instructions

    def remove_unused_nodes(self):
        """Drop what is trivially dead, as Dynamo does: unused items of multi-output ops
        (``values, _ = x.max(1)``), and inputs the graph never reads (``if mask is None``)."""
        for node in reversed(list(self.graph.nodes)):
            if not node.users and node.op == "call_function" and node.target is operator.getitem:
                self.graph.erase_node(node)
        for entry in list(self.graph_inputs):
            node = entry[2].proxy.node
            if not node.users:
                self.graph.erase_node(node)
                self.graph_inputs.remove(entry)

    def remove_redundant_grad_mode_switches(self):
        """Of consecutive ``_set_grad_enabled`` calls only the last matters, and none is needed
        if it sets the mode already in effect (``with no_grad(): with enable_grad(): ...``)."""
        mode, pending = self.initial_grad_mode, []
        for node in list(self.graph.nodes):
            if node.op == "call_function" and node.target is torch._C._set_grad_enabled:
                pending.append(node)
                continue
            for switch in pending[:-1]:
                self.graph.erase_node(switch)
            if pending and pending[-1].args[0] == mode:
                self.graph.erase_node(pending[-1])
            elif pending:
                mode = pending[-1].args[0]
            pending = []

    def compile_and_call_fx_graph(self):
        """Make the GraphModule, run the backend on it, and install the result in globals.
        A graph with forks (``torch.jit.fork``) is compiled in pieces, each by the backend,
        and run by ``fork_join``'s runtime."""
        self.graph.lint()
        gm = self.tracer.graph_module()
        where = f"{self.code.co_qualname} ({self.code.co_filename}:{self.code.co_firstlineno})"
        trace_artifact("graph", lambda: f"graph of {where}\n{gm.print_readable(print_output=False)}")
        example_inputs = [value for _, value, _ in self.graph_inputs]
        compiler_fn = self.compiler_fn
        symbolic = bool(self.shape_env.var_to_val)
        if symbolic:
            self.add_guard(Guard(None, "SHAPE_ENV", self.shape_env))
            compiler_fn = compiler_for_symbolic_graph(compiler_fn)

        def compile_graph(graph_module, examples):
            try:  # in the grad mode the graph is called in: the frame's at its start, not the trace's at its end
                with torch.set_grad_enabled(self.initial_grad_mode), outside_inference_mode():
                    compiled = compiler_fn(graph_module, examples)
            except Exception as error:
                raise BackendCompilerFailed(error) from error
            if not callable(compiled):
                raise TypeError(f"backend {self.compiler_fn!r} returned {compiled!r}, which is not callable")
            counters["graphs"] += 1
            return compiled

        if fork_join.has_forks(gm):
            compiled = fork_join.compile_forks(gm, example_inputs, compile_graph, symbolic=symbolic,
                                               grad_mode=self.initial_grad_mode)
        else:
            compiled = compile_graph(gm, example_inputs)
            # The guards check every input tensor before each call: the backend need not again.
            compiled = getattr(compiled, "without_input_checks", compiled)
        return self.install_global("__compiled_fn", eval_frame.disable(compiled))

    def add_aliasing_guard(self):
        """If the graph mutates tensors, two distinct inputs must not become one object later."""
        mutates = any(n.op in ("call_method", "call_function") and is_mutation(n) for n in self.all_nodes())
        tensor_sources = tuple(source for source, value, _ in self.graph_inputs if isinstance(value, torch.Tensor))
        if mutates and len(tensor_sources) > 1:
            sources = tensor_sources
            self.add_guard(Guard(sources[0], "NO_ALIASING", sources))


def autograd_like(example, value):
    """``example`` requiring grad as ``value`` does, and, like it, not a leaf if it is not one:
    a program may write an activation in place, not a leaf that requires grad. (The non-leaf is
    a clone, which keeps the strides of a contiguous tensor; other layouts stay leaves.)"""
    example.requires_grad_(value.requires_grad)
    contiguous = value.is_contiguous() or value.is_contiguous(memory_format=torch.channels_last)
    if value.requires_grad and not value.is_leaf and contiguous:
        with torch.enable_grad():  # the frame may run under no_grad (an autograd.Function's forward)
            return example.clone(memory_format=torch.preserve_format)
    return example


def is_mutation(node):
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return node.target in INPLACE_OPERATORS or (name.endswith("_") and not name.startswith("_")) \
        or node.kwargs.get("inplace") is True


def symbolic_layout(shape_env, source, value, dims):
    """Sizes with a symbol for each dimension in ``dims``, and strides: those of a dense tensor
    laid out like ``value``, in terms of the sizes; or, for a tensor that is not dense (a slice
    ``ids[:, :-1]``, whose strides no expression in its sizes describes), a symbol of its own for
    each stride other than 0 and 1, as PyTorch's Dynamo makes. None for an empty tensor: it is
    traced with static sizes."""
    if value.numel() == 0:
        return None
    sizes = [shape_env.create_symint(n, SizeSource(source, d)) if d in dims else n
             for d, n in enumerate(value.shape)]
    innermost_first = sorted(range(value.dim()), key=lambda d: (value.stride(d), value.shape[d]))
    if dense_strides(value.shape, innermost_first) == [
            stride if n != 1 else None for n, stride in zip(value.shape, value.stride())]:
        return sizes, dense_strides(sizes, innermost_first, size_one_stride=True)
    return sizes, [shape_env.create_symint(stride, StrideSource(source, d), duck=False) if stride >= 2 and n != 1
                   else stride for d, (n, stride) in enumerate(zip(value.shape, value.stride()))]


def dense_strides(sizes, innermost_first, size_one_stride=False):
    """The strides of a dense tensor of ``sizes`` laid out innermost dimension first. A dimension
    of size 1, whose stride does not matter, gets None, or with ``size_one_stride`` the stride a
    contiguous layout would give it."""
    strides = [None] * len(sizes)
    running = 1
    for d in innermost_first:
        strides[d] = running if sizes[d] != 1 or size_one_stride else None
        running = running * sizes[d]
    return strides


def sym_expr(value):
    """The sympy expression of a size (a SymInt's, or a plain int's)."""
    return value.node.expr if isinstance(value, torch.SymInt) else sympy.Integer(value)


def tensor_properties(value):
    """What TENSOR_MATCH checks, read from the real tensor when it is first seen."""
    return {
        "type": type(value),
        "dtype": value.dtype,
        "device": value.device,
        "shape": tuple(value.shape),
        "stride": tuple(value.stride()),
        "requires_grad": value.requires_grad,
    }


def tensors_to_output(values):
    """Tensors the graph must return for ``values`` to be rebuilt: those it computed, once each."""
    found = {}

    def visit(var):
        if isinstance(var, TensorVariable):
            if var.source is None:
                found.setdefault(var, None)
        elif isinstance(var, BaseListVariable):
            for item in var.items:
                visit(item)
        elif isinstance(var, ConstDictVariable):
            for item in var.values_read():
                visit(item)
        elif isinstance(var, (GetAttrVariable, UserMethodVariable)):  # x.view, self.helper
            visit(var.obj)
        elif isinstance(var, DictViewVariable):
            visit(var.dict_var)
        elif isinstance(var, ListIteratorVariable):  # the items a comprehension, called at the break, will take
            for item in var.items[var.index:]:
                visit(item)
        elif isinstance(var, (DataClassVariable, NewObjectVariable)):
            for item in var.children():
                visit(item)

    for value in values:
        visit(value)
    return list(found)
