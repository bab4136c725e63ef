"""a03_opcodes: plausible mistakes in the opcode handlers."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a03_opcodes"
SYMBOLIC_CONVERT = '__import__("tinydynamo.dynamo.symbolic_convert", fromlist=["_"])'

MUTANTS = [
    # part 1
    Mutant("LOAD_GLOBAL pushes the NULL on the wrong side of the value (3.13: above it)",
           "    if null and sys.version_info < (3, 13):\n        self.push(NullVariable())\n    self.push(value)\n"
           "    if null and sys.version_info >= (3, 13):",
           "    if null and sys.version_info >= (3, 13):\n        self.push(NullVariable())\n    self.push(value)\n"
           "    if null and sys.version_info < (3, 13):",
           "pushed by your LOAD_GLOBAL"),
    Mutant("LOAD_GLOBAL never pushes a NULL", "self.load_global(inst.argval), inst.arg & 1)",
           "self.load_global(inst.argval), False)", "LOAD_GLOBAL"),
    Mutant("LOAD_FAST pushes the value of a 3.13 closure variable, not its cell",
           "    if inst.argval in self.code.co_cellvars + self.code.co_freevars:", "    if False:", "closure",
           versions=((3, 13),)),
    Mutant("LOAD_FAST copied from the book's LOAD_DEREF (chapter 3)", "    self.push(self.load_local(inst.argval))",
           "    self.push(self.cell(inst.argval).get(self))", "your LOAD_FAST"),
    Mutant("STORE_FAST leaves the overwritten argument waiting",
           "    self.unread_args.pop(inst.argval, None)  # the argument is overwritten before it was read\n", "",
           "reassign_argument"),
    Mutant("LOAD_CONST pushes the value itself", "self.push(wrap_constant(inst.argval))", "self.push(inst.argval)",
           "your LOAD_CONST"),
    # part 2
    Mutant("BINARY_OP swaps the operands", "right, left = self.pop(), self.pop()", "left, right = self.pop(), self.pop()",
           "arithmetic"),
    Mutant("in-place operators computed out of place", '"+=": operator.iadd,', '"+=": operator.add,',
           "inplace_on_input"),
    Mutant("BINARY_OP takes the reference's table",
           "    self.push(self.call_builtin(OPERATORS[symbol], left, right))",
           f"    self.push(self.call_builtin({SYMBOLIC_CONVERT}.BINARY_OPS[inst.arg], left, right))",
           "BINARY_OPS", zero=("test_binary_op", "test_binary_op_corpus")),
    Mutant("BINARY_OP takes the table of a second copy of the reference module",
           "    self.push(self.call_builtin(OPERATORS[symbol], left, right))",
           "    import importlib.util\n"
           "    spec = importlib.util.spec_from_file_location('tinydynamo.dynamo.copy', "
           f"{SYMBOLIC_CONVERT}.__file__)\n"
           "    copy = importlib.util.module_from_spec(spec)\n"
           "    spec.loader.exec_module(copy)\n"
           "    self.push(self.call_builtin(copy.BINARY_OPS[inst.arg], left, right))",
           "BINARY_OPS", zero=("test_binary_op", "test_binary_op_corpus")),
    Mutant("BINARY_OP takes the table of a copy of the reference module loaded when the cell runs",
           "def BINARY_OP(self, inst):",
           "import importlib.util as _util\n"
           f"_spec = _util.spec_from_file_location('tinydynamo.dynamo.copy', {SYMBOLIC_CONVERT}.__file__)\n"
           "_COPY = _util.module_from_spec(_spec)\n"
           "_spec.loader.exec_module(_COPY)\n"
           "def BINARY_OP(self, inst):\n"
           "    right, left = self.pop(), self.pop()\n"
           "    self.push(self.call_builtin(_COPY.BINARY_OPS[inst.arg], left, right))\n"
           "def _unused(self, inst):",
           "BINARY_OPS", zero=("test_binary_op", "test_binary_op_corpus")),
    # part 3
    Mutant("LOAD_METHOD pushes the method below the NULL",
           "    self.push(NullVariable())\n    self.push(method)", "    self.push(method)\n    self.push(NullVariable())",
           "pushed by your LOAD_METHOD", versions=((3, 11),)),
    Mutant("CALL keeps the keyword names for the next call", "kw_names, self.kw_names = self.kw_names, ()",
           "kw_names = self.kw_names", "keywords_then_positional", versions=((3, 11), (3, 12))),
    Mutant("LOAD_ATTR ignores the method bit (3.12+)", "sys.version_info >= (3, 12) and inst.arg & 1", "False",
           "LOAD_ATTR", versions=((3, 12), (3, 13))),
    Mutant("CALL_KW passes the tuple of keyword names as an argument (3.13)",
           "call_with_keywords(self, inst.arg, self.pop().as_python_constant())",
           "call_with_keywords(self, inst.arg + 1, ())", "CALL_KW", versions=((3, 13),)),
    Mutant("CALL takes the NULL of [callable, NULL] for self (3.13)",
           "    elif sys.version_info >= (3, 13) and isinstance(second, NullVariable):  # 3.13: [callable, NULL]\n"
           "        fn = first\n", "",
           "CALL", versions=((3, 13),)),
    Mutant("CALL forgets the self of [callable, self]", "        fn, args = first, [second, *args]",
           "        fn = first", "your CALL"),
    Mutant("CALL takes the first arguments as the keywords", "kwargs = dict(zip(kw_names, args[n_positional:]))",
           "kwargs = dict(zip(kw_names, args))", "keyword"),
    Mutant("delegates to the reference's CALL", "def CALL(self, inst):",
           f"def CALL(self, inst, _reference={SYMBOLIC_CONVERT}.InstructionTranslatorBase.CALL):\n"
           "    return _reference(self, inst)",
           "InstructionTranslatorBase.CALL", zero=("test_calls", "test_calls_corpus")),
    Mutant("delegates to the CALL of a second copy of the reference module",
           "def CALL(self, inst):",
           "def CALL(self, inst):\n"
           "    import importlib.util, tinydynamo.dynamo.symbolic_convert as reference\n"
           "    spec = importlib.util.spec_from_file_location('tinydynamo.dynamo.copy', reference.__file__)\n"
           "    copy = importlib.util.module_from_spec(spec)\n"
           "    spec.loader.exec_module(copy)\n"
           "    return copy.InstructionTranslatorBase.CALL(self, inst)",
           "InstructionTranslatorBase.CALL", zero=("test_calls", "test_calls_corpus")),
    # part 4
    Mutant("RETURN_VALUE ends every trace, inlined calls too",
           "    if self.parent is None:\n        self.output_instructions", "    if True:\n        self.output_instructions",
           "early_returns_in_a_helper"),
    Mutant("RETURN_VALUE does not stop the loop", "    self.done = True\n", "", "ran past the last instruction"),
    Mutant("RETURN_VALUE hands the compiled frame's value back as if inlined",
           "    if self.parent is None:\n        self.output_instructions", "    if False:\n        self.output_instructions",
           "return_a"),
    # played as a learner (second round)
    Mutant("CALL splits the keywords off with args[-len(kw_names):] (all of them when there are none)",
           "    n_positional = len(args) - len(kw_names)\n    kwargs = dict(zip(kw_names, args[n_positional:]))\n"
           "    self.push(fn.call_function(self, args[:n_positional], kwargs))",
           "    kwargs = dict(zip(kw_names, args[-len(kw_names):]))\n"
           "    self.push(fn.call_function(self, args[:-len(kw_names)], kwargs))", "CALL"),
    Mutant("RETURN_CONST returns the constant without its tracker (3.12+)", "    LOAD_CONST(self, inst)\n",
           "    self.push(inst.argval)\n", "RETURN_CONST", versions=((3, 12), (3, 13))),
    Mutant("LOAD_METHOD pushes the bound method and the object", "    method = self.pop().var_getattr(self, inst.argval)\n"
           "    self.push(NullVariable())\n    self.push(method)",
           "    obj = self.pop()\n    self.push(obj.var_getattr(self, inst.argval))\n    self.push(obj)", "LOAD_METHOD",
           versions=((3, 11),)),
    Mutant("**= computed out of place", '"**=": operator.ipow,', '"**=": operator.pow,', "inplace"),
    Mutant("@= computed out of place", '"@=": operator.imatmul,', '"@=": operator.matmul,', "inplace_matmul"),
    Mutant("LOAD_GLOBAL pushes a NULL for any argument but 0", "self.load_global(inst.argval), inst.arg & 1)",
           "self.load_global(inst.argval), inst.arg > 0)", "LOAD_GLOBAL"),
    Mutant("LOAD_CONST wraps every constant in ConstantVariable (a constant tuple is then no tuple)",
           "    self.push(wrap_constant(inst.argval))",
           "    from tinydynamo.dynamo.variables import ConstantVariable\n    self.push(ConstantVariable(inst.argval))",
           "constant_tuple_plus_tensors"),
]


# ----------------------------------------------------------------------------------------------
# Round 6 of adversarial learners (2026-11-30): delegation through the graders' own helpers and
# the reference's entry points, missing cases, and a hang that now fails its case.
HANDLER = "    _, symbol = dis._nb_ops[inst.arg]\n    right, left = self.pop(), self.pop()\n"

MUTANTS += [
    # part 2: every in-place operator computed out of place (the catalogue has +=, **= and @=)
    *(Mutant(f"{symbol} computed out of place", f'"{symbol}": operator.{inplace},', f'"{symbol}": operator.{plain},',
             "inplace")
      for symbol, inplace, plain in [("-=", "isub", "sub"), ("*=", "imul", "mul"), ("/=", "itruediv", "truediv"),
                                     ("//=", "ifloordiv", "floordiv"), ("%=", "imod", "mod"), ("&=", "iand", "and_"),
                                     ("|=", "ior", "or_"), ("^=", "ixor", "xor"), ("<<=", "ilshift", "lshift"),
                                     (">>=", "irshift", "rshift")]),
    Mutant("<< and >> swapped", '"<<": operator.lshift,', '"<<": operator.rshift,', "shift"),
    Mutant("** as the builtin pow", '"**": operator.pow,', '"**": pow,', "pow"),
    Mutant("BINARY_OP strips the '=' of an in-place operator in a loop that never advances (hangs)",
           HANDLER,
           "    _, symbol = dis._nb_ops[inst.arg]\n    base = symbol\n"
           "    while base.endswith('='):\n        inplace = True  # forgot base = base[:-1]\n"
           "    right, left = self.pop(), self.pop()\n",
           'inplace_on_input'),
    Mutant("LOAD_CONST wraps the constant's index (inst.arg), not the constant",
           "self.push(wrap_constant(inst.argval))", "self.push(wrap_constant(inst.arg))", "LOAD_CONST"),
    Mutant("STORE_FAST deletes the unread argument with del (KeyError for any other local)",
           "    self.unread_args.pop(inst.argval, None)  # the argument is overwritten before it was read\n",
           "    del self.unread_args[inst.argval]\n", "STORE_FAST"),
    Mutant("PRECALL clears the keyword names (3.11: KW_NAMES comes before PRECALL)",
           "def PRECALL(self, inst):\n    \"\"\"3.11: prepare a CALL.\"\"\"\n    ### BEGIN SOLUTION\n    pass\n",
           "def PRECALL(self, inst):\n    \"\"\"3.11: prepare a CALL.\"\"\"\n    ### BEGIN SOLUTION\n    self.kw_names = ()\n",
           "keyword", versions=((3, 11),)),
    Mutant("LOAD_ATTR reads the method bit on 3.11 too", "sys.version_info >= (3, 12) and inst.arg & 1",
           "inst.arg & 1", "LOAD_ATTR", versions=((3, 11),)),
    Mutant("CALL matches the keyword names to the arguments in reverse",
           "kwargs = dict(zip(kw_names, args[n_positional:]))",
           "kwargs = dict(zip(reversed(kw_names), args[n_positional:]))", "keyword"),
    Mutant("CALL pops [NULL/callable, self] before the arguments",
           "    args = self.popn(nargs)\n    first, second = self.popn(2)\n",
           "    first, second = self.popn(2)\n    args = self.popn(nargs)\n", "CALL"),
    Mutant("RETURN_VALUE sets done only for the compiled frame",
           "        self.return_value = value\n    self.done = True\n",
           "        self.return_value = value\n        return\n    self.done = True\n", "ran past the last instruction"),
    Mutant("CALL delegates to the translator's call_function_with_kw_names (the reference's call sequence)",
           "    call_with_keywords(self, inst.arg, kw_names)\n",
           "    self.call_function_with_kw_names(inst.arg, kw_names)\n",
           "call_function_with_kw_names", zero=("test_calls", "test_calls_corpus")),
    Mutant("LOAD_GLOBAL delegates the NULL to the translator's push_with_null",
           "    push_maybe_null(self, self.load_global(inst.argval), inst.arg & 1)\n",
           "    self.push_with_null(self.load_global(inst.argval), inst.arg & 1)\n",
           "push_with_null", zero=("test_loads_and_stores", "test_loads_and_stores_corpus")),
]
