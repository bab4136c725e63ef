"""a04_guards: plausible mistakes in the guards on tensors, constants, containers and objects."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a04_guards"
CONSTANT_START = "    ### BEGIN SOLUTION\n    if a04.is_constant_value(value):"

MUTANTS = [
    # part 1: tensors
    Mutant("tensor guard assumes float32", '"dtype": value.dtype,', '"dtype": torch.float32,', "branch_on_dtype"),
    Mutant("tensor guard assumes no gradient", '"requires_grad": value.requires_grad,', '"requires_grad": False,',
           "branch_on_requires_grad"),
    Mutant("tensor guard on torch.Tensor, not the tensor's type", '"type": type(value),', '"type": torch.Tensor,',
           "NEEDLESS RECOMPILE"),
    Mutant("tensor guarded by identity", 'return [Guard(source, "TENSOR_MATCH", properties)]',
           'return [Guard(source, "ID_MATCH", value)]', "NEEDLESS RECOMPILE"),
    Mutant("delegates to the reference's tensor_properties", '    return [Guard(source, "TENSOR_MATCH", properties)]',
           '    return [Guard(source, "TENSOR_MATCH", '
           '__import__("tinydynamo.dynamo.output_graph", fromlist=["_"]).tensor_properties(value))]',
           "tensor_properties", zero=("test_tensor_guards_examples", "test_tensor_guards_cases")),
    Mutant("tensor strides assumed contiguous", '"stride": tuple(value.stride()),',
           '"stride": tuple(int(__import__("math").prod(value.shape[i + 1:])) for i in range(value.dim())),',
           "transposed_input"),
    Mutant("tensor device assumed to be the CPU", '"device": value.device,', '"device": torch.device("cpu"),',
           "meta_device"),
    Mutant("every floating dtype guarded as float32", '"dtype": value.dtype,',
           '"dtype": torch.float32 if value.is_floating_point() else value.dtype,', "half_precision"),
    # part 2: constants and containers
    Mutant("constants guarded by type only", 'return [Guard(source, "CONSTANT_MATCH", value)]',
           'return [Guard(source, "TYPE_MATCH", type(value))]', "STALE GRAPH"),
    Mutant("a tuple of constants guarded as a container", "    if a04.is_constant_value(value):",
           "    if a04.is_constant_value(value) and not isinstance(value, tuple):", "reshape_to"),
    Mutant("dict guarded by its length, not its keys", 'Guard(source, "DICT_KEYS", list(value))',
           'Guard(source, "LENGTH_CHECK", len(value))', "dict_order"),
    Mutant("sequence without its length", ', Guard(source, "LENGTH_CHECK", len(value))]', "]", "STALE GRAPH"),
    Mutant("sequence without its type", 'return [Guard(source, "TYPE_MATCH", type(value)), Guard(source, "LENGTH_CHECK"',
           'return [Guard(source, "LENGTH_CHECK"', "list_or_tuple"),
    Mutant("dict guarded by its keys, not its type", 'return [Guard(source, "TYPE_MATCH", type(value)), Guard(source, "DICT_KEYS"',
           'return [Guard(source, "DICT_KEYS"', "dict_subclass"),
    # part 3: objects
    Mutant("bound methods guarded by identity", "    if isinstance(value, types.MethodType):\n        return []\n",
           '    if isinstance(value, types.MethodType):\n        return [Guard(source, "ID_MATCH", value)]\n',
           "bound_method"),
    Mutant("other objects guarded by identity", 'return [Guard(source, "TYPE_MATCH", type(value))]',
           'return [Guard(source, "ID_MATCH", value)]', "NEEDLESS RECOMPILE"),
    Mutant("functions guarded by type", "identity_types = (nn.Module, types.FunctionType,",
           "identity_types = (nn.Module,", "global_function"),
    Mutant("classes guarded by type", "types.ModuleType, type)", "types.ModuleType)", "class_argument"),
    Mutant("Python modules guarded by type", "types.BuiltinFunctionType, types.ModuleType, type)",
           "types.BuiltinFunctionType, type)", "module_identity"),
    Mutant("torch operators guarded by type", " or a04.is_torch_callable(value):", ":", "operator_argument"),
    Mutant("modules guarded by type", "identity_types = (nn.Module, ", "identity_types = (", "model_argument"),
    Mutant("other objects left unguarded", 'return [Guard(source, "TYPE_MATCH", type(value))]', "return []",
           "config_object"),
    Mutant("builtins guarded by type", "types.FunctionType, types.BuiltinFunctionType,", "types.FunctionType,",
           "builtin_argument"),
    # found by an adversarial learner (see the cases non_leaf_requiring_grad, dict_order, empty_list...)
    Mutant("requires_grad guarded only for a leaf", '"requires_grad": value.requires_grad,',
           '"requires_grad": value.requires_grad and value.is_leaf,', "non_leaf_requiring_grad"),
    Mutant("dict keys guarded in sorted order", 'Guard(source, "DICT_KEYS", list(value))',
           'Guard(source, "DICT_KEYS", sorted(value))', "dict_order, after"),
    Mutant("an own test of constants, without range, slice or device", "    if a04.is_constant_value(value):",
           "    if isinstance(value, (int, float, bool, str, type(None), torch.dtype)) or (\n"
           "            type(value) is tuple and all(isinstance(v, (int, float, bool, str)) for v in value)):",
           "slice_argument"),
    Mutant("a namedtuple guarded as a plain tuple",
           'return [Guard(source, "TYPE_MATCH", type(value)), Guard(source, "LENGTH_CHECK"',
           'return [Guard(source, "TYPE_MATCH", tuple if isinstance(value, tuple) else list), '
           'Guard(source, "LENGTH_CHECK"', "named_tuple"),
    Mutant("an empty list left unguarded", "    if isinstance(value, dict):",
           "    if isinstance(value, (list, tuple)) and not value:\n        return []\n    if isinstance(value, dict):",
           "empty_list"),
    Mutant("a tensor's shape guarded as its number of elements", '"shape": tuple(value.shape),',
           '"shape": (value.numel(),),', "flatten"),
    Mutant("copies the reference's guards out of the grader's frame", CONSTANT_START,
           "    import sys\n    frame = sys._getframe(1)\n"
           "    while frame is not None and 'installed' not in frame.f_locals:\n"
           "        frame = frame.f_back\n    if frame is not None:\n"
           "        return [g for g in frame.f_locals['installed'][frame.f_locals['start']:]\n"
           "                if g.source == source and g.kind in a04.VALUE_KINDS]\n"
           + CONSTANT_START, "STALE GRAPH",
           zero=("test_constant_guards_examples", "test_constant_guards_cases")),
    Mutant("runs the reference's VariableBuilder to pick the guards", CONSTANT_START,
           "    import sys\n    from tinydynamo.dynamo.variables.builder import VariableBuilder\n"
           "    frame = sys._getframe(1)\n    while frame is not None and 'builder' not in frame.f_locals:\n"
           "        frame = frame.f_back\n    builder = frame.f_locals['builder']\n"
           "    guards = builder.tx.output.guards\n    start = len(guards)\n"
           "    wrap = VariableBuilder.wrap_dict if isinstance(value, dict) else VariableBuilder.wrap_sequence\n"
           "    wrap(builder, value)\n"
           "    mine = [g for g in guards[start:] if g.source == source and g.kind in a04.VALUE_KINDS]\n"
           "    del guards[start:]\n    if mine or not a04.is_constant_value(value):\n        return mine\n"
           + CONSTANT_START, "VariableBuilder.wrap",
           zero=("test_constant_guards_examples", "test_constant_guards_cases")),
    Mutant("only a plain dict gets DICT_KEYS (not an OrderedDict)", "    if isinstance(value, dict):",
           "    if type(value) is dict:", "ordered_dict_keys"),
    # played as a learner (third round): new mistakes, each must cost points
    Mutant("tensor shape guarded as a list", '"shape": tuple(value.shape),', '"shape": list(value.shape),',
           "add_one"),
    Mutant("tensor device guarded by its type name", '"device": value.device,', '"device": value.device.type,',
           "add_one"),
    Mutant("parameters guarded by identity", '    properties = {\n',
           '    if isinstance(value, nn.Parameter):\n        return [Guard(source, "ID_MATCH", value)]\n'
           '    properties = {\n', "module_parameters"),
    Mutant("tensor layout guarded as contiguous or not", '"stride": tuple(value.stride()),',
           '"stride": value.is_contiguous(),', "add_one"),
    Mutant("requires_grad taken from the grad mode", '"requires_grad": value.requires_grad,',
           '"requires_grad": torch.is_grad_enabled(),', "branch_on_requires_grad"),
    Mutant("an empty dict left unguarded", "    if isinstance(value, dict):",
           "    if isinstance(value, dict) and not value:\n        return []\n    if isinstance(value, dict):",
           "empty_dict"),
    Mutant("a dict's type hard-coded as dict", 'Guard(source, "TYPE_MATCH", type(value)), Guard(source, "DICT_KEYS"',
           'Guard(source, "TYPE_MATCH", dict), Guard(source, "DICT_KEYS"', "ordered_dict_keys"),
    Mutant("a sequence's type hard-coded as list",
           'return [Guard(source, "TYPE_MATCH", type(value)), Guard(source, "LENGTH_CHECK"',
           'return [Guard(source, "TYPE_MATCH", list), Guard(source, "LENGTH_CHECK"', "tuple_of_tensors"),
    Mutant("dict keys given as a set", 'Guard(source, "DICT_KEYS", list(value))',
           'Guard(source, "DICT_KEYS", set(value))', "weighted_sum"),
    Mutant("DICT_KEYS given the dict's values", 'Guard(source, "DICT_KEYS", list(value))',
           'Guard(source, "DICT_KEYS", list(value.values()))', "weighted_sum"),
    Mutant("floats guarded by type only, like tensors", CONSTANT_START,
           '    if isinstance(value, float):\n        return [Guard(source, "TYPE_MATCH", float)]\n' + CONSTANT_START,
           "global_constant"),
    Mutant("constants guarded by identity", 'return [Guard(source, "CONSTANT_MATCH", value)]',
           'return [Guard(source, "ID_MATCH", value)]', "global_constant"),
    Mutant("a list of constants folded as one constant", "    if a04.is_constant_value(value):",
           "    if a04.is_constant_value(value) or (\n"
           "            isinstance(value, list) and all(a04.is_constant_value(v) for v in value)):",
           "list_mutated_in_place"),
    Mutant("only the examples' constants: numbers and lists", CONSTANT_START,
           '    if isinstance(value, (int, float)):\n        return [Guard(source, "CONSTANT_MATCH", value)]\n'
           '    if isinstance(value, list):\n'
           '        return [Guard(source, "TYPE_MATCH", list), Guard(source, "LENGTH_CHECK", len(value))]\n'
           '    return []\n' + CONSTANT_START, "mode_string"),
    Mutant("loops forever over a dict's keys (forgot i += 1)", "    if isinstance(value, dict):",
           "    if isinstance(value, dict):\n        keys, i = [], 0\n        while i < len(value):\n"
           "            key = list(value)[i]\n            if key not in keys:\n                keys.append(key)\n"
           "    if isinstance(value, dict):",
           "weighted_sum: guards_for(L['weights'], <dict value>) raised LearnerTimeout"),
    Mutant("every callable guarded by identity",
           "    if isinstance(value, identity_types) or a04.is_torch_callable(value):", "    if callable(value):",
           "partial"),
    Mutant("bound methods: returns None", "    if isinstance(value, types.MethodType):\n        return []\n",
           "    if isinstance(value, types.MethodType):\n        return\n", "bound_method"),
    Mutant("raises for an object it does not know", 'return [Guard(source, "TYPE_MATCH", type(value))]',
           'raise TypeError(f"no guard for a {type(value).__name__}")', "config_object"),
    Mutant("size-1 dimensions' strides left out", '"stride": tuple(value.stride()),',
           '"stride": tuple(s for s, n in zip(value.stride(), value.shape) if n > 1),', "batch_of_one"),
    Mutant("numbers guarded by their truthiness", 'return [Guard(source, "CONSTANT_MATCH", value)]',
           'return [Guard(source, "CONSTANT_MATCH", bool(value) if isinstance(value, (int, float)) else value)]',
           "scale_by"),
]


# ----------------------------------------------------------------------------------------------
# Round 6 of adversarial learners (2026-11-30): delegation through the graders' own helpers and
# the reference's entry points, missing cases, and a hang that now fails its case.
CONSTANT_START = "    ### BEGIN SOLUTION\n    if a04.is_constant_value(value):"
OBJECT_START = "    ### BEGIN SOLUTION\n    identity_types = ("
CONSTANT_TESTS = ("test_constant_guards_examples", "test_constant_guards_cases")
OBJECT_TESTS = ("test_object_guards_examples", "test_object_guards_cases")

# The reference's VariableBuilder run through its public __call__ on a stand-in translator: the
# refused wrap* methods are then called by reference code, not by the learner's.
FAKE_BUILDER = (
    "import types as _types\n"
    "from tinydynamo.dynamo.variables.builder import VariableBuilder as _VB\n"
    "class _Out:\n"
    "    def __init__(self):\n"
    "        self.guards, self.seen, self.variable_cache, self.containers_by_id = [], [], {}, {}\n"
    "    def add_guard(self, guard):\n"
    "        self.guards.append(guard)\n"
    "        self.seen.append(guard)\n"
    "    def __getattr__(self, name):\n"
    "        return lambda *args, **kwargs: None\n"
    "_BUSY = []\n"
    "def _reference_guards(source, value):\n"
    "    if _BUSY:\n"
    "        return []\n"
    "    _BUSY.append(1)\n"
    "    tx = _types.SimpleNamespace(output=_Out())\n"
    "    try:\n"
    "        _VB(tx, source)(value)\n"
    "    except Exception:\n"
    "        pass\n"
    "    finally:\n"
    "        _BUSY.pop()\n"
    "    return [g for g in tx.output.seen if g.source == source and g.kind in a04.VALUE_KINDS]\n\n\n"
)

MUTANTS += [
    # ---------------------------------------------------------------- delegation
    Mutant("constants: the reference's VariableBuilder run through __call__ on a stand-in translator",
           "def constant_guards(source, value):",
           FAKE_BUILDER + "def constant_guards(source, value):\n    return _reference_guards(source, value)\n\n\n"
           "def _unused(source, value):",
           "VariableBuilder", zero=CONSTANT_TESTS),
    Mutant("objects: the reference's VariableBuilder run through __call__ on a stand-in translator",
           "def object_guards(source, value):",
           FAKE_BUILDER + "def object_guards(source, value):\n    return _reference_guards(source, value)\n\n\n"
           "def _unused(source, value):",
           "VariableBuilder", zero=OBJECT_TESTS),
    Mutant("requires_grad guarded as 'records a graph here' (requires_grad and grad mode)",
           '"requires_grad": value.requires_grad,', '"requires_grad": value.requires_grad and torch.is_grad_enabled(),',
           "requires_grad"),
    Mutant("a tensor also guarded by TYPE_MATCH torch.Tensor, belt and braces",
           'return [Guard(source, "TENSOR_MATCH", properties)]',
           'return [Guard(source, "TYPE_MATCH", torch.Tensor), Guard(source, "TENSOR_MATCH", properties)]',
           "module_parameters"),
    Mutant("a tensor's strides guarded only for the dimensions bigger than 1 (size 1 strides set to 1)",
           '"stride": tuple(value.stride()),',
           '"stride": tuple(s if n > 1 else 1 for s, n in zip(value.stride(), value.shape)),', "batch_of_one"),
    Mutant("a tensor's dtype guarded as its kind (float or not)", '"dtype": value.dtype,',
           '"dtype": torch.float32 if value.is_floating_point() else torch.int64,', "dtype"),
    Mutant("bools guarded by type (there are only two, the graph is the same)", CONSTANT_START,
           '    if isinstance(value, bool):\n        return [Guard(source, "TYPE_MATCH", bool)]\n' + CONSTANT_START,
           'flag'),
    Mutant("a tuple of constants guards each item too (recursively, on GetItemSource)",
           "    if a04.is_constant_value(value):\n        return [Guard(source, \"CONSTANT_MATCH\", value)]\n",
           "    if a04.is_constant_value(value):\n        guards = [Guard(source, \"CONSTANT_MATCH\", value)]\n"
           "        if isinstance(value, tuple):\n"
           "            for i, item in enumerate(value):\n"
           "                guards += constant_guards(GetItemSource(source, i), item)\n"
           "        return guards\n",
           "reshape_to"),
    Mutant("strings guarded by their length only", CONSTANT_START,
           '    if isinstance(value, str):\n        return [Guard(source, "TYPE_MATCH", str), Guard(source, "LENGTH_CHECK", len(value))]\n'
           + CONSTANT_START, "mode"),
    Mutant("numbers guarded with CONSTANT_MATCH of float(value)", 'return [Guard(source, "CONSTANT_MATCH", value)]',
           'return [Guard(source, "CONSTANT_MATCH", float(value) if isinstance(value, int) and not isinstance(value, bool) else value)]',
           "NEEDLESS RECOMPILE"),
    Mutant("a range guarded by its length (a sequence like a list)", CONSTANT_START,
           '    if isinstance(value, range):\n        return [Guard(source, "TYPE_MATCH", range), Guard(source, "LENGTH_CHECK", len(value))]\n'
           + CONSTANT_START, "range"),
    Mutant("a dict guarded by its length and type, keys left to the item reads",
           'return [Guard(source, "TYPE_MATCH", type(value)), Guard(source, "DICT_KEYS", list(value))]',
           'return [Guard(source, "TYPE_MATCH", type(value)), Guard(source, "LENGTH_CHECK", len(value))]',
           "dict"),
    Mutant("a module also guards its training flag (on AttrSource)", OBJECT_START,
           "    if isinstance(value, nn.Module):\n"
           "        return [Guard(source, \"ID_MATCH\", value), Guard(AttrSource(source, \"training\"), \"CONSTANT_MATCH\", value.training)]\n"
           + OBJECT_START, "training"),
    Mutant("a bound method guarded by its __func__ (on AttrSource)", "    if isinstance(value, types.MethodType):\n        return []\n",
           '    if isinstance(value, types.MethodType):\n        return [Guard(AttrSource(source, "__func__"), "ID_MATCH", value.__func__)]\n',
           "bound_method"),
    Mutant("objects guarded by type only when they are not callable (a callable object left unguarded)",
           'return [Guard(source, "TYPE_MATCH", type(value))]',
           'return [] if callable(value) else [Guard(source, "TYPE_MATCH", type(value))]', "callable_object"),
]
