"""a10_dynamic_shapes: plausible mistakes in the range analysis and the automatic-dynamic policy."""
from tinydynamo.course.checking import Mutant

ASSIGNMENT = "a10_dynamic_shapes"

ADD = ("        intervals = [bounds(term) for term in expr.args]\n"
       "        return sympy.Add(*[lo for lo, _ in intervals]), sympy.Add(*[hi for _, hi in intervals])\n")
HISTORY_DOC = '    "The sizes a code object\'s traces saw, per source; None for a dimension seen with several sizes."\n'
ALWAYS_TRUE = "    if always[type(condition)]:\n        return True\n"

MUTANTS = [
    # part 1: bounds
    Mutant("symbols start at 1", "return sympy.Integer(2), sympy.oo", "return sympy.Integer(1), sympy.oo",
           "bounds(s0) returned (1, oo): TOO LOOSE"),
    Mutant("0 * oo left as nan", "a * b if a != 0 and b != 0 else sympy.Integer(0)", "a * b",
           "bounds(s1 * (s0 % 4))"),
    Mutant("products of the lows and of the highs", "lo, hi = min(corners), max(corners)",
           "lo, hi = corners[0], corners[3]", "bounds(-1 * s0)"),
    Mutant("a remainder up to the divisor", "return sympy.Integer(0), b_hi - 1", "return sympy.Integer(0), b_hi",
           "bounds(s0 % 4)"),
    Mutant("floor division rounds up", "return sympy.floor(a_lo / b_lo), sympy.floor(a_hi / b_lo)",
           "return sympy.ceiling(a_lo / b_lo), sympy.ceiling(a_hi / b_lo)", "(1 + s0) // 4"),
    Mutant("Min like Max", "pick = max if isinstance(expr, sympy.Max) else min", "pick = max", "bounds(min(5, s0))"),
    Mutant("unknown expressions assumed non-negative", "    return -sympy.oo, sympy.oo\n",
           "    return sympy.Integer(0), sympy.oo\n", "bounds(int(((-7 * s0) / 5) // 1))"),
    Mutant("a small number modulo a size kept as a remainder", "if a_lo >= 0 and a_hi < b_lo:", "if False:",
           "static_value((1 % s0) == 1) returned None: NEEDLESS GUARD"),
    Mutant("delegates to the reference's bounds", "    if expr.is_Number:\n        return expr, expr\n",
           '    return __import__("tinydynamo.symbolic_shapes", fromlist=["_"]).ShapeEnv().bounds(expr)\n',
           "ShapeEnv.bounds", zero=("test_bounds_examples", "test_bounds_cases")),
    Mutant("a number below the divisor's low end kept as a remainder up to it", "if a_lo >= 0 and a_hi < b_lo:",
           "if a_lo >= 0 and a_hi <= b_lo:", "bounds(2 % s0)"),
    Mutant("floor division by a symbol as by its smallest value", "if b_lo > 0 and b_lo == b_hi:  # a // n",
           "if b_lo > 0:  # a // n", "bounds(s0 // s1)"),
    Mutant("Max and Min of their first two arguments", "[bounds(arg) for arg in expr.args]",
           "[bounds(arg) for arg in expr.args[:2]]", "bounds(max(-5 + s0, -10 + s1, 1 + s2))"),
    Mutant("bounds is the reference's, found among the grader's originals",
           "    if expr.is_Number:\n        return expr, expr\n",
           "    import gc\n    from tinydynamo.symbolic_shapes import ShapeEnv as _SE\n"
           "    for _f in gc.get_objects():\n"
           "        if type(_f) is type(bounds) and _f.__qualname__ == 'ShapeEnv.bounds' and _f is not _SE.bounds:\n"
           "            _env = _SE()\n            _env.bounds = bounds\n            return _f(_env, expr)\n"
           "    if expr.is_Number:\n        return expr, expr\n",
           "ShapeEnv.bounds", zero=("test_bounds_examples", "test_bounds_cases")),
    # part 2: static_value
    Mutant("intervals of the condition as written only",
           "(difference, sympy.expand(difference), sympy.factor(difference))", "(difference, sympy.expand(difference))",
           "static_value((s0 * s1) != s0) returned None: NEEDLESS GUARD"),
    Mutant("< decided when the difference is at most 0", "sympy.Lt: hi < 0, sympy.Le", "sympy.Lt: hi <= 0, sympy.Le",
           "UNSOUND"),
    Mutant("> decided when the difference is at least 0", "sympy.Gt: lo > 0, sympy.Ge", "sympy.Gt: lo >= 0, sympy.Ge",
           "static_value(s0 > 2) returned True"),
    Mutant(">= decided only when strictly positive", "sympy.Ge: lo >= 0}", "sympy.Ge: lo > 0}",
           "static_value(s0 >= 2) returned None: NEEDLESS GUARD"),
    Mutant("!= never decided False", "sympy.Ne: lo == hi == 0, sympy.Lt: lo >= 0", "sympy.Ne: False, sympy.Lt: lo >= 0",
           "NEEDLESS GUARD"),
    Mutant("sympy.true and sympy.false left to a guard", "    if condition in (sympy.true, sympy.false):\n"
           "        return bool(condition)\n", "", "static_value(True) returned None"),
    Mutant("delegates to the reference's static_value", "    if condition in (sympy.true, sympy.false):\n",
           '    return __import__("tinydynamo.symbolic_shapes", fromlist=["_"]).ShapeEnv().static_value(condition)\n'
           "    if condition in (sympy.true, sympy.false):\n",
           "ShapeEnv.static_value", zero=("test_static_value_examples", "test_static_value_cases")),
    Mutant("== decided True when the difference is any one number", "sympy.Eq: lo == hi == 0, sympy.Ne: lo > 0",
           "sympy.Eq: lo == hi, sympy.Ne: lo > 0", "static_value((1 % s0) == 0) returned True"),
    Mutant("> decided False only when the difference is below 0", "sympy.Gt: hi <= 0, sympy.Ge",
           "sympy.Gt: hi < 0, sympy.Ge", "static_value((2 + (-1 * s0)) > 0) returned None"),
    Mutant(">= decided False when the difference is at most 0", "sympy.Ge: hi < 0}", "sympy.Ge: hi <= 0}",
           "static_value((2 + (-1 * s0)) >= 0) returned False"),
    Mutant("<= decided True only when the difference is below 0", "sympy.Lt: hi < 0, sympy.Le: hi <= 0,",
           "sympy.Lt: hi < 0, sympy.Le: hi < 0,", "static_value(2 <= s0) returned None"),
    Mutant("static_value is a functools.partial of the reference's", "    return None\n    ### END SOLUTION",
           "    return None\n    ### END SOLUTION\nimport functools\n"
           "from tinydynamo.symbolic_shapes import ShapeEnv as _SE\n"
           "static_value = functools.partial(_SE.static_value, _SE())",
           "ShapeEnv.static_value", zero=("test_static_value_examples", "test_static_value_cases")),
    # part 3: the policy
    Mutant("the history keeps only the newest sizes", "        for d in changed:\n            before[d] = None\n",
           "        self.sizes[source_name] = list(shape)\n", "batch_sizes"),
    Mutant("a new number of dimensions compared with the old", "if before is None or len(before) != len(shape):",
           "if before is None:", "new_rank"),
    Mutant("every dimension dynamic after any change", "dims = history.dynamic_dims(source_name)",
           "dims = set(range(tensor.dim())) if history.dynamic_dims(source_name) else set()", "batch_sizes"),
    Mutant("dynamic=True ignored", "    elif policy is True:\n        dims = set(range(tensor.dim()))\n", "",
           "dynamic_true"),
    Mutant("dynamic=False ignored", " or is_module_state or policy is False:", " or is_module_state:",
           "dynamic_false"),
    Mutant("parameters traced as symbols", "if isinstance(tensor, nn.Parameter) or is_module_state",
           "if is_module_state", "parameter_argument"),
    Mutant("buffers traced as symbols", " or is_module_state or policy", " or policy", "buffers_stay_static"),
    Mutant("mark_static ignored", " - a10.marked_static(tensor)", "", "mark_static"),
    Mutant("mark_dynamic ignored", "(dims | a10.marked_dynamic(tensor))", "dims", "mark_dynamic"),
    Mutant("sizes 0 and 1 traced as symbols", "return {d for d in dims if tensor.shape[d] >= 2}", "return dims",
           "sizes 0 and 1 are never symbols"),
    Mutant("update returns no dimension", "        return changed\n", "        return []\n",
           "SizeHistory, batch_sizes"),
    Mutant("mark_dynamic over mark_static", "(dims | a10.marked_dynamic(tensor)) - a10.marked_static(tensor)",
           "(dims - a10.marked_static(tensor)) | a10.marked_dynamic(tensor)", "mark_static_over_mark_dynamic"),
    Mutant("mark_dynamic on a size 1 traced as a symbol",
           "    dims = (dims | a10.marked_dynamic(tensor)) - a10.marked_static(tensor)\n"
           "    return {d for d in dims if tensor.shape[d] >= 2}",
           "    dims = {d for d in dims if tensor.shape[d] >= 2}\n"
           "    return (dims | a10.marked_dynamic(tensor)) - a10.marked_static(tensor)", "mark_dynamic: dims_to_trace"),
    Mutant("a tensor that requires grad taken for a parameter", "isinstance(tensor, nn.Parameter)",
           "tensor.requires_grad", "input_requires_grad"),
    Mutant("SizeHistory is the reference's FrameState",
           "@dataclasses.dataclass\nclass SizeHistory:\n",
           "from tinydynamo.dynamo.automatic_dynamic import FrameState\n\n\nclass SizeHistory(FrameState):\n"
           "    pass\n\n\n@dataclasses.dataclass\nclass _Unused:\n",
           "FrameState.update", zero=("test_policy_examples", "test_policy_cases")),
    Mutant("FloorDiv by any constant, negative included", "if b_lo > 0 and b_lo == b_hi:  # a // n",
           "if b_lo == b_hi and b_lo != 0:  # a // n", "s0 // -2"),
    Mutant("Mod: a % b is a without checking a >= 0", "if a_lo >= 0 and a_hi < b_lo:", "if a_hi < b_lo:",
           "(-1 * s0) % s1"),
    Mutant("FloorDiv: the upper end rounded up", "sympy.floor(a_hi / b_lo)", "sympy.ceiling(a_hi / b_lo)",
           "(s0 % 4) // 2"),
    Mutant("And decided by all() of the parts (None counts as False)", "    if not isinstance(condition, (sympy.Eq,",
           "    if isinstance(condition, sympy.And):\n        return all(static_value(arg) for arg in condition.args)\n"
           "    if not isinstance(condition, (sympy.Eq,", "(s1 >= 2) and (s0 > 2)"),
    Mutant("== decided False only for a positive difference", "never = {sympy.Eq: lo > 0 or hi < 0,",
           "never = {sympy.Eq: lo > 0,", "1 == s0"),
    Mutant("size 2 never a symbol (> 2 instead of >= 2)", "tensor.shape[d] >= 2}", "tensor.shape[d] > 2}",
           "size_two_at_the_change"),
    Mutant("history recorded only for dynamic=None", "    history.update(source_name, tuple(tensor.shape))\n    if isinstance",
           "    if policy is None:\n        history.update(source_name, tuple(tensor.shape))\n    if isinstance",
           "static_compile_first"),
    # found by a learner's-mistakes sweep
    # part 1
    Mutant("Mod bounded by the divisor's smallest value", "return sympy.Integer(0), b_hi - 1",
           "return sympy.Integer(0), b_lo - 1", "bounds(s0 % s1)"),
    Mutant("Mod as C's remainder, signed", "return sympy.Integer(0), b_hi - 1", "return 1 - b_hi, b_hi - 1",
           "bounds(s0 % 4)"),
    Mutant("Mod copied from the book: a % 4 is in [0, 3]", "return sympy.Integer(0), b_hi - 1",
           "return sympy.Integer(0), sympy.Integer(3)", "bounds(s0 % s1)"),
    Mutant("FloorDiv as true division (no floor)", "return sympy.floor(a_lo / b_lo), sympy.floor(a_hi / b_lo)",
           "return a_lo / b_lo, a_hi / b_lo", "(1 + s0) // 4"),
    Mutant("Min and Max as the hull of their arguments", "return pick(lo for lo, _ in intervals), pick(hi for _, hi in intervals)",
           "return min(lo for lo, _ in intervals), max(hi for _, hi in intervals)", "bounds(min(5, s0))"),
    Mutant("Max and Min unpack two arguments (raises on three)", "        intervals = [bounds(arg) for arg in expr.args]\n",
           "        a, b = expr.args\n        intervals = [bounds(a), bounds(b)]\n", "raised ValueError"),
    Mutant("numbers recognised as integers only", "    if expr.is_Number:\n", "    if expr.is_Integer:\n", "bounds("),
    Mutant("unknown expressions give None", "    return -sympy.oo, sympy.oo\n", "    return None\n",
           "bounds(s0 ** 2) returned None"),
    Mutant("a sum's terms looped over without moving on (loops forever)", ADD,
           "        lo = hi = sympy.Integer(0)\n        i = 0\n        while i < len(expr.args):\n"
           "            t_lo, t_hi = bounds(expr.args[i])\n            lo, hi = lo + t_lo, hi + t_hi\n        return lo, hi\n",
           "time limit"),
    # part 2
    Mutant("the difference taken the wrong way round", "    difference = condition.lhs - condition.rhs\n",
           "    difference = condition.rhs - condition.lhs\n", "UNSOUND"),
    Mutant("the forms' intervals joined, not intersected", "lo, hi = max(lo for lo, _ in forms), min(hi for _, hi in forms)",
           "lo, hi = min(lo for lo, _ in forms), max(hi for _, hi in forms)", "NEEDLESS GUARD"),
    Mutant("!= decided True unless the difference is exactly 0", "sympy.Ne: lo > 0 or hi < 0, sympy.Lt: hi < 0",
           "sympy.Ne: not (lo == hi == 0), sympy.Lt: hi < 0", "UNSOUND"),
    Mutant("== never decided False", "never = {sympy.Eq: lo > 0 or hi < 0,", "never = {sympy.Eq: False,",
           "static_value(s0 == 1) returned None"),
    Mutant("hard-codes the visible examples", "    if condition in (sympy.true, sympy.false):\n",
           "    known = {sympy.Ge(a10.s0, 2): True, sympy.Eq(a10.s0, 1): False, sympy.Ne(a10.s0 * a10.s1, a10.s0): True}\n"
           "    if condition in known:\n        return known[condition]\n    return None\n"
           "    if condition in (sympy.true, sympy.false):\n", "static_value(s0 > 1) returned None: NEEDLESS GUARD"),
    Mutant("relies on sympy's own simplification (symbols >= 1)", "    if condition in (sympy.true, sympy.false):\n",
           "    condition = sympy.simplify(condition)\n    return bool(condition) if condition in (sympy.true, sympy.false) else None\n"
           "    if condition in (sympy.true, sympy.false):\n", "static_value(s0 >= 2) returned None"),
    Mutant("Or decided by any() of the parts (None counts as False)", "    if not isinstance(condition, (sympy.Eq,",
           "    if isinstance(condition, sympy.Or):\n        return any(static_value(arg) for arg in condition.args)\n"
           "    if not isinstance(condition, (sympy.Eq,", "(s0 == 2) or"),
    Mutant("returns 1 for True", ALWAYS_TRUE, ALWAYS_TRUE.replace("return True", "return 1"),
           "returned 1: return True, False or None"),
    # part 3
    Mutant("a new number of dimensions counts as every dimension changed",
           "        if before is None or len(before) != len(shape):\n",
           "        if before is not None and len(before) != len(shape):\n            self.sizes[source_name] = [None] * len(shape)\n"
           "            return list(range(len(shape)))\n        if before is None:\n", "new_rank"),
    Mutant("the history a class attribute, shared by every code object",
           "@dataclasses.dataclass\nclass SizeHistory:\n" + HISTORY_DOC + "\n    sizes: dict = dataclasses.field(default_factory=dict)\n",
           "class SizeHistory:\n" + HISTORY_DOC + "\n    sizes = {}\n", "SizeHistory"),
    Mutant("only the batch dimension ever dynamic", "dims = history.dynamic_dims(source_name)",
           "dims = {0} & history.dynamic_dims(source_name)", "sequence_lengths"),
    Mutant("mark_dynamic honoured only under automatic dynamic",
           "        dims = history.dynamic_dims(source_name)\n    dims = (dims | a10.marked_dynamic(tensor))",
           "        dims = history.dynamic_dims(source_name) | a10.marked_dynamic(tensor)\n    dims = (dims)", "mark_dynamic"),
    Mutant("dims_to_trace returns None when nothing is dynamic", "    return {d for d in dims if tensor.shape[d] >= 2}",
           "    return {d for d in dims if tensor.shape[d] >= 2} or None", "returned None: return a set of dimensions"),
    Mutant("update returns None on a first sighting", "            self.sizes[source_name] = list(shape)\n            return []\n",
           "            self.sizes[source_name] = list(shape)\n            return None\n", "returned None"),
    Mutant("a dimension dynamic only while it keeps changing", "        for d in changed:\n            before[d] = None\n",
           "        before[:] = [None if d in changed else size for d, size in enumerate(shape)]\n", "one_dim_then_another"),
]


# ----------------------------------------------------------------------------------------------
# Round 6 of adversarial learners (2026-11-30): delegation through the graders' own helpers and
# the reference's entry points, missing cases, and a hang that now fails its case.
NUMBER = "    if expr.is_Number:\n        return expr, expr\n"
STATIC_START = "    if condition in (sympy.true, sympy.false):\n"
FORMS = "    forms = [bounds(form) for form in (difference, sympy.expand(difference), sympy.factor(difference))]\n"
BOUNDS_TESTS = ("test_bounds_examples", "test_bounds_cases")
STATIC_TESTS = ("test_static_value_examples", "test_static_value_cases")

MUTANTS += [
    # ---------------------------------------------------------------- delegation
    Mutant("static_value asks the grader's decision_problems (an oracle for the reference's answer)",
           STATIC_START,
           "    _problems = a10.decision_problems(condition, None)\n"
           "    if _problems:\n"
           "        return 'it is True for every size' in _problems[0]\n"
           "    return None\n" + STATIC_START,
           "_expected_decision", zero=STATIC_TESTS),
    Mutant("bounds parses the reference's interval out of the grader's bounds_problems message",
           NUMBER,
           "    import re\n"
           "    _problems = a10.bounds_problems(lambda e: (-sympy.oo, sympy.oo), expr)\n"
           "    if _problems:\n"
           "        _m = re.search(r'within \\((.+), (.+)\\)$', _problems[0])\n"
           "        if _m:\n"
           "            return sympy.sympify(_m.group(1)), sympy.sympify(_m.group(2))\n"
           "    return -sympy.oo, sympy.oo\n" + NUMBER,
           "bounds", zero=BOUNDS_TESTS),
    Mutant("bounds delegates to torch's own range analysis (torch.utils._sympy.value_ranges.bound_sympy)",
           NUMBER,
           "    if not expr.has(FloorDiv):\n"
           "        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy\n"
           "        _r = bound_sympy(expr, {s: ValueRanges(2, sympy.oo) for s in expr.free_symbols})\n"
           "        _conv = lambda v: sympy.oo if str(v) in ('oo', 'int_oo') else "
           "(-sympy.oo if str(v) in ('-oo', '-int_oo') else sympy.sympify(v))\n"
           "        return _conv(_r.lower), _conv(_r.upper)\n" + NUMBER,
           "value_ranges", zero=BOUNDS_TESTS),
    Mutant("Mul delegates to the reference's multiply_intervals (imported by the grader module)",
           "            corners = [a * b if a != 0 and b != 0 else sympy.Integer(0) for a in (lo, hi) for b in (f_lo, f_hi)]\n"
           "            lo, hi = min(corners), max(corners)\n",
           "            lo, hi = a10.multiply_intervals((lo, hi), (f_lo, f_hi))\n",
           "multiply_intervals", zero=BOUNDS_TESTS),
    Mutant("a power bounded as (lo**e, hi**e) for any exponent, negative too",
           "    if isinstance(expr, (sympy.Max, sympy.Min)):\n",
           "    if isinstance(expr, sympy.Pow) and expr.exp.is_Number:\n"
           "        b_lo, b_hi = bounds(expr.base)\n"
           "        return b_lo ** expr.exp, b_hi ** expr.exp\n"
           "    if isinstance(expr, (sympy.Max, sympy.Min)):\n",
           "bounds("),
    Mutant("a product of the first two factors only", "        for factor in expr.args:\n",
           "        for factor in expr.args[:2]:\n", "bounds("),
    Mutant("Mod by a negative constant bounded as by a positive one", "        if b_lo > 0 and isinstance(expr, sympy.Mod):\n",
           "        if isinstance(expr, sympy.Mod):\n", "bounds("),
    Mutant("a symbol bounded by (2, oo) only when it is named s0 (the visible examples)",
           "    if isinstance(expr, sympy.Symbol):\n        return sympy.Integer(2), sympy.oo\n",
           "    if isinstance(expr, sympy.Symbol) and expr.name == 's0':\n        return sympy.Integer(2), sympy.oo\n",
           "bounds("),
    Mutant("the difference's factored form forgotten", FORMS,
           "    forms = [bounds(form) for form in (difference, sympy.expand(difference))]\n", "static_value("),
    Mutant("only the expanded difference bounded", FORMS,
           "    forms = [bounds(sympy.expand(difference))]\n", "static_value("),
    Mutant("!= decided True when the difference is at least 0", "sympy.Ne: lo > 0 or hi < 0, sympy.Lt: hi < 0",
           "sympy.Ne: lo >= 0 or hi < 0, sympy.Lt: hi < 0", "static_value("),
    Mutant("<= decided False when the difference is at least 0", "sympy.Lt: lo >= 0, sympy.Le: lo > 0,",
           "sympy.Lt: lo >= 0, sympy.Le: lo >= 0,", "static_value("),
    Mutant("< decided False only when the difference is above 0", "sympy.Lt: lo >= 0, sympy.Le: lo > 0,",
           "sympy.Lt: lo > 0, sympy.Le: lo > 0,", "static_value("),
    Mutant("a new number of dimensions ignored (the old sizes kept)",
           "        if before is None or len(before) != len(shape):\n            self.sizes[source_name] = list(shape)\n"
           "            return []\n",
           "        if before is None:\n            self.sizes[source_name] = list(shape)\n            return []\n"
           "        if len(before) != len(shape):\n            return []\n", "dimensions"),
    Mutant("the sizes rebuilt from the new shape (a dimension already dynamic gets its size back)",
           "        for d in changed:\n            before[d] = None\n",
           "        self.sizes[source_name] = [None if d in changed else size for d, size in enumerate(shape)]\n",
           "update"),
    Mutant("mark_static applied before mark_dynamic (mark_dynamic wins)",
           "    dims = (dims | a10.marked_dynamic(tensor)) - a10.marked_static(tensor)\n",
           "    dims = (dims - a10.marked_static(tensor)) | a10.marked_dynamic(tensor)\n", "mark_static"),
    Mutant("dynamic=True also makes parameters dynamic",
           "    if isinstance(tensor, nn.Parameter) or is_module_state or policy is False:\n        dims = set()\n"
           "    elif policy is True:\n",
           "    if policy is True:\n        dims = set(range(tensor.dim()))\n"
           "    elif isinstance(tensor, nn.Parameter) or is_module_state or policy is False:\n        dims = set()\n"
           "    elif policy is True:\n", 'parameters_stay_static'),
    Mutant("the history never updated by dims_to_trace (left to the caller)",
           "    history.update(source_name, tuple(tensor.shape))\n    if isinstance(tensor, nn.Parameter)",
           "    if isinstance(tensor, nn.Parameter)", 'batch_sizes'),
    Mutant("the history updated after deciding (a change seen one call late)",
           '    history.update(source_name, tuple(tensor.shape))\n    if isinstance(tensor, nn.Parameter) or is_module_state or policy is False:\n        dims = set()\n    elif policy is True:\n        dims = set(range(tensor.dim()))\n    else:\n        dims = history.dynamic_dims(source_name)\n',
           '    if isinstance(tensor, nn.Parameter) or is_module_state or policy is False:\n        dims = set()\n    elif policy is True:\n        dims = set(range(tensor.dim()))\n    else:\n        dims = history.dynamic_dims(source_name)\n    history.update(source_name, tuple(tensor.shape))\n', 'batch_sizes'),
    Mutant("static_value: the reference's, bound to a fresh ShapeEnv and run by its _maybe_evaluate_static",
           STATIC_START,
           "    import functools\n    from tinydynamo.symbolic_shapes import ShapeEnv as _SE\n"
           "    _env = _SE()\n"
           "    _env.static_value = functools.partial(a10._REFERENCE_STATIC_VALUE, _env)\n"
           "    _env.bounds = functools.partial(a10._REFERENCE_BOUNDS, _env)\n"
           "    return _env._maybe_evaluate_static(condition)\n" + STATIC_START,
           "_maybe_evaluate_static", zero=STATIC_TESTS),
]
