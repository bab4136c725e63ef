"""NNModuleVariable: an ``nn.Module`` met while tracing (book chapter 3,
"Symbolic execution").

Calling a module inlines ``type(module).forward`` with ``self`` bound to this tracker, so a whole
model becomes one graph. Its parameters and buffers, read as ``self.fc1.weight``, become graph
inputs named after their source (``L['self'].fc1.weight``), as Dynamo does when it inlines
built-in nn modules. Each module met is guarded by identity (ID_MATCH); the attributes that
forward reads (``self.training``, ``self.eps``...) get their own guards when read.

A module's forward pre-hooks and forward hooks are inlined around ``forward``, as
``Module._call_impl`` runs them; a DICT_KEYS guard on each hook dict, an empty one too, recompiles
when a hook is added or removed. Backward hooks and global hooks are Unsupported.
``torch.func.functional_call(module, tensors, args)`` inlines the module's call with those tensors
read in place of its parameters and buffers (``trace_functional_call``), as eager swaps them in.
Containers (``nn.ModuleList``, ``nn.Sequential``, ``nn.ModuleDict``) can be indexed, sliced,
measured and iterated; a LENGTH_CHECK guard keeps their length fixed.
"""
import functools
import inspect
import operator
import types

import torch

from ..exc import unsupported
from ..guards import Guard
from ..source import AttrSource, GetItemSource
from ..trace_rules import installed_package, library_file
from .base import GetAttrVariable, VariableTracker
from .constant import ConstantVariable, fold, is_none, wrap_constant
from .dicts import ConstDictVariable
from .functions import UserFunctionVariable, UserMethodVariable, static_attribute
from .lists import ListIteratorVariable, ListVariable, TupleVariable
from .tensor import TensorVariable

SEQUENCE_CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential)
DICT_CONTAINERS = (torch.nn.ModuleDict, torch.nn.ParameterDict)  # keyed: iterated, indexed and viewed by key
# Methods that walk a module tree, answered from the real module.
WALKS = ("modules", "named_modules", "children", "named_children", "parameters", "named_parameters",
         "buffers", "named_buffers")
BACKWARD_HOOKS = ("_backward_hooks", "_backward_pre_hooks")
GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                "_global_backward_pre_hooks")


class NNModuleVariable(VariableTracker):
    def __init__(self, module, source):
        super().__init__(source)
        self.module = module

    def python_object(self):
        return self.module

    def python_type(self):
        return type(self.module)

    def child_source(self, name):
        """A container's module, read from its ``_modules`` dict by name, as PyTorch 2's guards
        read it (``L['self']._modules['0']``): ``Sequential.__getitem__`` would cost microseconds
        on every call, in the guard and where the graph's parameters are loaded."""
        return GetItemSource(AttrSource(self.source, "_modules"), name)

    def var_getattr(self, tx, name):

        module, source = self.module, AttrSource(self.source, name)
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        swapped = tx.output.reparametrized.get((id(module), name))
        if swapped is not None:
            return swapped
        if name in ("keys", "values", "items") and isinstance(module, DICT_CONTAINERS):
            return GetAttrVariable(self, name)  # answered by call_method, not inlined
        if name in WALKS or name == "to":
            return GetAttrVariable(self, name)  # answered by call_method, not inlined
        for table in ("_parameters", "_buffers", "_modules"):
            written = self.written_table(tx, table)
            if written is not None and name in written.items:
                return written.items[name]
            if written is None and name in module.__dict__.get(table, {}):
                return tx.build(module.__dict__[table][name], source)
        return static_attribute(tx, self, module, name, source)

    def written_table(self, tx, table):
        """The tracker of the module's dict ``table`` (its parameters, buffers or submodules) if
        the trace has written to it (``register_buffer`` in ``forward``), else None: reads of the
        module's attributes then see what the trace wrote."""
        entry = tx.output.containers_by_id.get(id(self.module.__dict__.get(table)))
        tracker = tx.output.variable_cache.get(entry[1]) if entry is not None else None
        return tracker if any(tracker is m for m in tx.output.side_effects.mutated) else None

    def call_function(self, tx, args, kwargs):
        """``module(*args)``: its class's own ``__call__`` if it overrides Module's (torch_geometric's
        aggregations compute arguments there; its ``super().__call__`` comes back to
        ``module_call``), else ``module_call``."""
        call = inspect.getattr_static(type(self.module), "__call__")
        if call is torch.nn.Module.__call__:
            return self.module_call(tx, args, kwargs)
        if not isinstance(call, types.FunctionType):
            unsupported(f"{type(self.module).__name__}.__call__, which is not Python code")
        return UserMethodVariable(call, self).call_function(tx, args, kwargs)

    def module_call(self, tx, args, kwargs):
        """``Module.__call__``: the forward pre-hooks, which may replace the arguments,
        ``forward``, then the forward hooks, which may replace the result."""
        module = self.module
        if any(getattr(module, h, None) for h in BACKWARD_HOOKS) or \
                any(getattr(torch.nn.modules.module, h) for h in GLOBAL_HOOKS):
            unsupported(f"nn.Module backward hooks or global hooks on {type(module).__name__}")
        if "forward" in module.__dict__:
            unsupported(f"{type(module).__name__} instance with its own forward attribute")
        forward = type(module).forward
        source = AttrSource(AttrSource(self.source, "__class__"), "forward") if self.source else None
        args, kwargs = self.forward_pre_hooks(tx, args, kwargs)
        if isinstance(inspect.getattr_static(type(module), "forward"), staticmethod):  # called without self
            result = UserFunctionVariable(forward, source=source).call_function(tx, args, kwargs)
        else:
            result = UserMethodVariable(forward, self, source=source).call_function(tx, args, kwargs)
        return self.forward_hooks(tx, args, kwargs, result)

    def hooks(self, tx, name):
        """(hook id, tracker of the hook) for each hook in the module's dict ``name``, in order.
        Its keys are guarded, an empty dict's too: a hook registered after compiling recompiles."""
        hooks = getattr(self.module, name)
        if self.source is None:
            if hooks:
                unsupported(f"hooks on a {type(self.module).__name__} created inside the frame")
            return []
        source = AttrSource(self.source, name)
        tx.output.add_guard(Guard(source, "DICT_KEYS", list(hooks)))
        return [(key, tx.build(hook, GetItemSource(source, key))) for key, hook in hooks.items()]

    def forward_pre_hooks(self, tx, args, kwargs):
        """Each pre-hook sees ``(module, args)`` (or ``(module, args, kwargs)``) and may replace them."""
        for key, hook in self.hooks(tx, "_forward_pre_hooks"):
            if key in self.module._forward_pre_hooks_with_kwargs:
                result = hook.call_function(tx, [self, TupleVariable(args), ConstDictVariable(kwargs)], {})
                if not is_none(result):
                    new_args, new_kwargs = result.unpack_var_sequence(tx)
                    args, kwargs = new_args.unpack_var_sequence(tx), dict(new_kwargs.items)
            else:
                result = hook.call_function(tx, [self, TupleVariable(args)], {})
                if not is_none(result):
                    args = result.unpack_var_sequence(tx) if isinstance(result, TupleVariable) else [result]
        return args, kwargs

    def forward_hooks(self, tx, args, kwargs, result):
        """Each hook sees ``(module, args, result)`` (or with ``kwargs`` before the result) and may
        replace the result."""
        for key, hook in self.hooks(tx, "_forward_hooks"):
            with_kwargs = key in self.module._forward_hooks_with_kwargs
            hook_args = [self, TupleVariable(args), *([ConstDictVariable(kwargs)] if with_kwargs else []), result]
            hook_result = hook.call_function(tx, hook_args, {})
            if not is_none(hook_result):
                result = hook_result
        return result

    def call_method(self, tx, name, args, kwargs):
        module = self.module
        if name == "__len__" and not args:
            return ConstantVariable(self.guarded_len(tx))
        indexed = SEQUENCE_CONTAINERS + DICT_CONTAINERS + (torch.nn.ParameterList,)
        if name == "__getitem__" and isinstance(module, indexed):
            return self.getitem(tx, args[0].as_python_constant())
        if name in ("keys", "values", "items") and isinstance(module, DICT_CONTAINERS):
            return self.dict_view(tx, name)
        if name == "__contains__" and isinstance(module, DICT_CONTAINERS):
            return ConstantVariable(args[0].as_python_constant() in self.guarded_keys(tx))
        if name in WALKS:
            return self.walk(tx, name, args, kwargs)
        if name == "to":
            return self.to_same(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def to_same(self, tx, args, kwargs):
        """``module.to(dtype)`` that changes nothing (Switch Transformers' router casts its
        classifier to float32 on every call): the module itself. Each tensor's dtype and device
        is guarded (TENSOR_MATCH) through ``parameters()``/``buffers()``; a real cast is Unsupported."""
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unsupported("module.to() with non-constant arguments")
        device, dtype, _, _ = fold(torch._C._nn._parse_to, *[a.as_python_constant() for a in args],
                                   **{k: v.as_python_constant() for k, v in kwargs.items()})
        tensors = [*self.walk(tx, "parameters", [], {}).items, *self.walk(tx, "buffers", [], {}).items]
        for tensor in (t.example_value for t in tensors):
            casts = dtype is not None and tensor.dtype != dtype and (tensor.is_floating_point() or tensor.is_complex())
            if casts or (device is not None and tensor.device != device):
                unsupported(f"{type(self.module).__name__}.to() that moves or casts its tensors (changes the module)")
        return self

    def walk(self, tx, name, args, kwargs):
        """``modules()``, ``named_parameters()``...: run on the real module, each item wrapped
        with its source (``self.a.b.weight``). The module is ID_MATCHed, and its structure is
        assumed fixed, as Dynamo assumes for the modules it inlines."""
        if self.source is None:
            unsupported(f"{name}() of a module created inside the frame")
        consts = [a.as_python_constant() for a in args]
        kwconsts = {k: v.as_python_constant() for k, v in kwargs.items()}
        walk = getattr(self.module, "named_" + name.removeprefix("named_"))
        named = fold(lambda: list(walk(*consts, **kwconsts)))
        swaps = tx.output.reparametrized if name.endswith(("parameters", "buffers")) else {}
        if swaps and self.swap_changes_ties(name, swaps):
            unsupported(f"{name}() inside torch.func.functional_call that ties or unties the module's tensors")
        items = []
        for path, value in named:
            source = self.source
            for part in filter(None, path.split(".")):
                source = AttrSource(source, part)
            swapped = swaps.get(self.member_key(path)) if swaps else None
            item = tx.build(value, source) if swapped is None else swapped
            items.append(TupleVariable([ConstantVariable(path), item]) if name.startswith("named_") else item)
        return ListIteratorVariable(items)

    def swap_changes_ties(self, name, swaps):
        """Whether functional_call's ``swaps`` tie or untie tensors among the module's parameters
        (or buffers): ``parameters()`` lists a tensor with two names once, so it would list other items."""
        members = getattr(self.module, "named_" + name.removeprefix("named_"))(remove_duplicate=False)
        real, swapped = [], []
        for path, tensor in members:
            real.append(id(tensor))
            swapped.append(id(swaps.get(self.member_key(path), tensor)))
        return not len(set(real)) == len(set(swapped)) == len(set(zip(real, swapped)))

    def member_key(self, path):
        """(id of the module that holds it, its name) for a parameter or buffer's dotted ``path``:
        the key of ``OutputGraph.reparametrized``."""
        owner, _, attr = path.rpartition(".")
        return id(self.module.get_submodule(owner)), attr

    def swapped_in(self, named, tie):
        """{(id(owner), attribute): tracker} for ``functional_call``'s ``named`` tensors: each name
        is a parameter or buffer of this module (and with ``tie``, so is every name of the same tensor)."""
        module = self.module
        members = [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]
        names_of = {}
        for path, tensor in members:
            names_of.setdefault(id(tensor), []).append(path)
        tied = {path: names_of[id(tensor)] if tie else [path] for path, tensor in members}
        overrides = {}
        for path, value in named.items():
            if path not in tied:
                unsupported(f"torch.func.functional_call with {path!r}, not a parameter or buffer of "
                            f"{type(module).__name__}")
            if not isinstance(value, TensorVariable):
                unsupported(f"torch.func.functional_call with {value} for {path!r} (a tensor is needed)")
            for target in tied[path]:
                if target in named and named[target] is not value:
                    unsupported(f"torch.func.functional_call with two values for the tied names {path!r}, {target!r}")
                overrides[self.member_key(target)] = value
        return overrides

    def store_attr(self, tx, name, value):
        """``self.flag = value`` or ``self.cache = tensor`` in a forward: replayed after the graph
        (``Module.__setattr__`` runs then), and read back while tracing. A tensor given to a
        buffer's name replaces the buffer (wav2vec2-conformer's positions); parameters and modules,
        which ``__setattr__`` would register, are Unsupported."""
        if isinstance(value, NNModuleVariable) and value.module is self.module._modules.get(name):
            return  # self.classifier = self.classifier.to(dtype): the same module again
        is_parameter = isinstance(value, TensorVariable) and issubclass(value.python_type(), torch.nn.Parameter)
        is_buffer = name in self.module.__dict__.get("_buffers", {})
        if is_buffer and self.source is not None and isinstance(value, TensorVariable) and not is_parameter:
            tx.output.side_effects.store_attr(self, name, value)  # Module.__setattr__ keeps it a buffer
            return
        if self.source is None or is_parameter or isinstance(value, NNModuleVariable) or any(
                name in self.module.__dict__.get(t, {}) for t in ("_parameters", "_buffers", "_modules")):
            unsupported(f"assigning attribute {name!r} of {self} (a parameter, buffer or module)")
        tx.output.side_effects.store_attr(self, name, value)

    def getitem(self, tx, key):

        if isinstance(key, slice) and isinstance(self.module, (torch.nn.ModuleList, torch.nn.ParameterList)):
            return ListVariable([self.getitem(tx, i) for i in range(self.guarded_len(tx))[key]])
        if isinstance(key, slice) and isinstance(self.module, torch.nn.Sequential):
            return SequentialSliceVariable(tx, self, key)
        if isinstance(key, slice):
            unsupported(f"slicing a {type(self.module).__name__} (it builds a new module)")
        if isinstance(self.module, torch.nn.ModuleDict):
            self.guarded_keys(tx)
            return tx.build(self.module[key], self.child_source(key))
        if isinstance(self.module, torch.nn.ParameterDict) and key in self.module._parameters:
            self.guarded_keys(tx)
            return tx.build(self.module[key], GetItemSource(AttrSource(self.source, "_parameters"), key))
        if isinstance(self.module, torch.nn.ParameterDict):
            unsupported(f"the item {key!r} of a ParameterDict that is not a parameter")
        index = range(self.guarded_len(tx))[key]  # negative indexes count from the end
        if isinstance(self.module, torch.nn.ParameterList):  # its parameters are named "0", "1"...
            return tx.build(self.module[index], GetItemSource(AttrSource(self.source, "_parameters"), str(index)))
        return tx.build(self.module[index], self.child_source(list(self.module._modules)[index]))

    def guarded_len(self, tx):
        tx.output.add_guard(Guard(self.source, "LENGTH_CHECK", len(self.module)))
        return len(self.module)

    def guarded_keys(self, tx):
        """A ModuleDict's or ParameterDict's keys, in order (kept in ``_modules`` or ``_keys``)."""
        table = "_keys" if isinstance(self.module, torch.nn.ParameterDict) else "_modules"
        tx.output.add_guard(Guard(AttrSource(self.source, table), "DICT_KEYS", list(self.module.keys())))
        return list(self.module.keys())

    def dict_view(self, tx, name):
        keys = self.guarded_keys(tx)
        values = [self.getitem(tx, k) for k in keys]
        if name == "keys":
            return ListVariable([wrap_constant(k) for k in keys])
        if name == "values":
            return ListVariable(values)
        return ListVariable([TupleVariable([wrap_constant(k), v]) for k, v in zip(keys, values)])

    def unpack_var_sequence(self, tx):
        if isinstance(self.module, SEQUENCE_CONTAINERS):
            return [self.getitem(tx, i) for i in range(self.guarded_len(tx))]
        if isinstance(self.module, DICT_CONTAINERS):
            return [wrap_constant(k) for k in self.guarded_keys(tx)]
        if isinstance(self.module, torch.nn.ParameterList):
            return [self.getitem(tx, i) for i in range(self.guarded_len(tx))]
        unsupported(f"iterating over a {type(self.module).__name__}")

    def truthy(self, tx):
        if isinstance(self.module, SEQUENCE_CONTAINERS + DICT_CONTAINERS):
            return self.guarded_len(tx) > 0
        return True

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__}, {self.source.name()})"


def trace_functional_call(tx, module, tensors, args=None, kwargs=None, *, tie_weights=None, strict=None):
    """``torch.func.functional_call(module, tensors, args, kwargs)``: the module's call, inlined
    with each tensor of ``tensors`` (a dict of dotted names, or a tuple of such dicts) read in
    place of the parameter or buffer it names. With ``tie_weights`` (the default), a name tied to
    another (one tensor under two names) is swapped too, as eager does."""
    if not isinstance(module, NNModuleVariable) or module.source is None:
        unsupported(f"torch.func.functional_call of {module} (a module from outside the frame is needed)")
    if strict is not None and strict.as_python_constant():
        unsupported("torch.func.functional_call(strict=True)")
    named = {}
    for table in tensors.unpack_var_sequence(tx) if isinstance(tensors, (TupleVariable, ListVariable)) else [tensors]:
        if not isinstance(table, ConstDictVariable) or named.keys() & table.items.keys():
            unsupported(f"torch.func.functional_call with {tensors} (dicts of names with no name twice)")
        named.update(table.items)
    tie = tie_weights is None or tie_weights.as_python_constant()
    if args is None or is_none(args):
        args = []
    else:  # a tuple of arguments, or the only argument
        args = args.unpack_var_sequence(tx) if isinstance(args, TupleVariable) else [args]
    kwargs = {} if kwargs is None or is_none(kwargs) else dict(kwargs.items)
    with tx.output.reparametrizing(module.swapped_in(named, tie)):
        return module.call_function(tx, args, kwargs)


class SequentialSliceVariable(NNModuleVariable):
    """``self.layers[1:]`` of an ``nn.Sequential``: a new Sequential holding some of its modules.
    It is built now (slicing runs no user code), to trace its forward; each module in it is read
    through the sliced one (``L['self'].layers[1]``), whose length is guarded, and the
    transformed code slices again if the new Sequential outlives the graph."""

    def __init__(self, tx, base, key):
        super().__init__(base.module[key], None)
        self.base, self.key = base, key
        self.positions = range(base.guarded_len(tx))[key]  # of its modules, in ``base``

    def var_getattr(self, tx, name):
        if name in self.module._modules:  # a slice keeps its modules' names
            return self.base.var_getattr(tx, name)
        return static_attribute(tx, self, self.module, name, None)

    def getitem(self, tx, key):
        if isinstance(key, slice):
            return SequentialSliceVariable(tx, self, key)
        return self.base.getitem(tx, self.positions[key])

    def guarded_len(self, tx):
        return len(self.positions)

    def reconstruct(self, codegen):
        codegen.load_const(operator.getitem, push_null=True)
        codegen(self.base)
        codegen.load_const(self.key)
        codegen.call(2)

    def __repr__(self):
        return f"SequentialSliceVariable({self.base!r}[{self.key.start}:{self.key.stop}:{self.key.step}])"


def constructor_is_known(klass):
    """Every ``__init__`` written in Python in ``klass``'s MRO is torch's or an installed library's."""
    for base in klass.__mro__:
        init = base.__dict__.get("__init__")
        if isinstance(init, types.FunctionType):
            file = init.__code__.co_filename
            if library_file(file) is None and installed_package(file) is None:
                return False
    return True


class NewModuleVariable(NNModuleVariable):
    """A module without parameters or buffers, created inside the frame from constants
    (``loss_fct = CrossEntropyLoss()``, transformers' ``ACT2FN["silu"]``): built now, so that its
    forward can be traced, and built again by the transformed code (``cls(*args, **kwargs)``) if it
    outlives the graph. Building it at trace time runs its ``__init__`` once, outside the graph, so
    only constructors known to do nothing else qualify: torch.nn's own, or those of an installed
    library (not the user's own code, whose ``__init__`` may count instances or log)."""

    def __init__(self, module, rebuild):
        super().__init__(module, None)
        self.rebuild = rebuild  # functools.partial(cls, *args, **kwargs)

    @classmethod
    def create(cls, tx, klass, args, kwargs):
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unsupported(f"creating a {klass.__name__} inside the compiled frame from non-constant arguments")
        if not constructor_is_known(klass):
            unsupported(f"creating a {klass.__name__} inside the compiled frame (its __init__ is the "
                        "user's own code, which would run at trace time only)")
        rebuild = functools.partial(klass, *[a.as_python_constant() for a in args],
                                    **{k: v.as_python_constant() for k, v in kwargs.items()})
        module = fold(rebuild)
        if any(True for _ in module.parameters()) or any(True for _ in module.buffers()):
            unsupported(f"creating a {klass.__name__} with parameters or buffers inside the compiled frame")
        return cls(module, rebuild)

    def var_getattr(self, tx, name):

        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.module.__dict__.get(table, {}):
                return tx.build(self.module.__dict__[table][name])
        return static_attribute(tx, self, self.module, name, None)

    def reconstruct(self, codegen):
        codegen.call_constant(self.rebuild)

    def __repr__(self):
        return f"NewModuleVariable({type(self.module).__name__})"
