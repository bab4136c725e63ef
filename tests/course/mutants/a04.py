"""a04_guards: plausible mistakes in the guards on tensors, constants, containers and objects."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a04_guards"

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
]
