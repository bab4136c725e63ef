"""SideEffects: mutations of objects that existed before the frame (book chapter 4,
"Guards and the transformed code").

The graph computes tensors; it cannot change Python objects. When the traced code mutates an
object the caller can see (``kwargs.pop(...)`` on the frame's ``**kwargs``, ``xs.append(y)`` on
an argument, ``obj.flag = True`` on a plain object), the tracker records the new state while
tracing, so later reads in the trace see it, and the transformed code *replays* the mutation
after the graph has run: it writes the new contents of each list, dict and set back into the real
object, and assigns each attribute. Every new value is rebuilt before the first write, so no
value is read back from an object that was already overwritten.
"""
from .variables import ConstDictVariable, TypeVariable
from .variables.sets import SetVariable


class SideEffects:
    def __init__(self):
        self.mutated = []  # list, dict and set trackers with a source whose contents changed
        self.attr_stores = {}  # tracker of an object with a source -> {attribute name: tracker}
        self.calls = []  # (function, argument trackers): ``object.__setattr__(obj, name, value)``...
        self.attr_values = {}  # tracker -> {name: tracker}: every attribute assigned, for reads
        self.item_writes = set()  # trackers of dict subclasses written through dict.__setitem__
        self.version = 0  # counts the mutations recorded (a forked body may record none)

    def replay_call(self, fn, args):
        """Call ``fn(*args)`` after the graph (a slot of ``object`` or ``dict`` that the class
        overrides, reached through ``super()``)."""
        self.version += 1
        self.calls.append((fn, args))

    def track_mutation(self, var):
        self.version += 1
        if not any(var is seen for seen in self.mutated):
            self.mutated.append(var)

    def store_attr(self, var, name, value, replay=True):
        """``var.name = value``; ``replay=False`` when a call in ``calls`` makes the assignment."""
        self.version += 1
        self.attr_values.setdefault(var, {})[name] = value
        if replay:
            self.attr_stores.setdefault(var, {})[name] = value

    def pending_attr(self, var, name):
        """The value assigned to ``var.name`` earlier in the trace, or None."""
        return self.attr_values.get(var, {}).get(name)

    def class_tracker(self, cls):
        """The tracker through which the trace assigned attributes of the class ``cls``, or None."""
        return next((var for var in self.attr_values if isinstance(var, TypeVariable) and var.cls is cls), None)

    def pending_class_attr(self, cls, name):
        """The value that ``Cls.name = value`` earlier in the trace gave the attribute ``name`` of
        ``cls``'s instances and subclasses (found along the MRO, as Python looks it up), or None."""
        for klass in cls.__mro__:
            tracker = self.class_tracker(klass)
            if tracker is not None and name in self.attr_values[tracker]:
                return self.attr_values[tracker][name]
            if name in vars(klass):
                return None
        return None

    def values(self):
        """Every tracker the replay rebuilds (the graph must output the tensors among them)."""
        new_items = [v for var in self.mutated for v in contents(var)]
        stored = [v for stores in self.attr_stores.values() for v in stores.values()]
        return new_items + stored + [arg for _, args in self.calls for arg in args]

    def codegen(self, codegen):
        """Emit the replay: rebuild every new value into a local, then write them all."""
        writes = []
        for var in self.mutated:
            local = codegen.new_local()
            build_copy(codegen, var)
            codegen.store_fast(local)
            writes.append((write_contents, var, local))
        for var, stores in self.attr_stores.items():
            for name, value in stores.items():
                local = codegen.new_local()
                codegen(value)
                codegen.store_fast(local)
                writes.append((write_attr(name), var, local))
        for fn, args in self.calls:
            local = codegen.new_local()
            for arg in args:
                codegen(arg)
            codegen.append("BUILD_TUPLE", arg=len(args))
            codegen.store_fast(local)
            writes.append((call_with(fn), None, local))
        for write, var, local in writes:
            write(codegen, var, local)


def contents(var):
    if isinstance(var, SetVariable):
        return []  # constants: nothing for the graph to compute
    return list(var.items.values()) if isinstance(var, ConstDictVariable) else list(var.items)


def build_copy(codegen, var):
    """Push a new list, dict or set holding what ``var`` holds now."""
    if isinstance(var, SetVariable):
        codegen.load_const(frozenset(var.values))
    elif isinstance(var, ConstDictVariable):
        for key, value in var.items.items():
            codegen.load_const(key)
            codegen(value)
        codegen.append("BUILD_MAP", arg=len(var.items))
    else:
        for item in var.items:
            codegen(item)
        codegen.append("BUILD_LIST", arg=len(var.items))


def write_contents(codegen, var, local):
    """``obj[:] = new`` for a list; ``obj.clear(); obj.update(new)`` for a dict or a set."""
    if isinstance(var, (ConstDictVariable, SetVariable)):
        for method, args in (("clear", ()), ("update", (local,))):
            def load_method(method=method):
                var.source.reconstruct(codegen)
                codegen.load_attr(method)
            codegen.add_push_null(load_method)
            for arg in args:
                codegen.load_fast(arg)
            codegen.call(len(args))
            codegen.append("POP_TOP")
    else:
        codegen.load_fast(local)
        var.source.reconstruct(codegen)
        codegen.load_const(None)
        codegen.load_const(None)
        codegen.append("BUILD_SLICE", arg=2)
        codegen.append("STORE_SUBSCR")


def write_attr(name):
    def write(codegen, var, local):
        codegen.load_fast(local)
        var.source.reconstruct(codegen)
        codegen.append("STORE_ATTR", argval=name)
    return write


def call_with(fn):
    def write(codegen, _, local):
        codegen.load_const(fn, push_null=True)
        codegen.load_fast(local)
        codegen.append("CALL_FUNCTION_EX", arg=0)
        codegen.append("POP_TOP")
    return write
