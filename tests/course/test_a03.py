"""a03's checkers: the reference and the solution's handlers pass them, every corpus function
is captured as torch._dynamo captures it, and typical mistakes fail with a message that names
the case and what went wrong. A learner's exception never escapes a checker."""
import collections
import dis
import json
import operator

import pytest
import torch
import torch._dynamo

import tinydynamo
from tinydynamo.course import a03
from tinydynamo.course import nbgrader_tools as nbt
from tinydynamo.dynamo.symbolic_convert import InliningInstructionTranslator, InstructionTranslatorBase
from tinydynamo.dynamo.variables import NullVariable

NOTEBOOK = nbt.REPO / "solutions" / "a03_opcodes" / "a03_opcodes.ipynb"


@pytest.fixture(scope="module")
def solution():
    """The solution notebook's setup and solution cells, run: the learner's eleven handlers."""
    namespace = {}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        nbgrader = cell["metadata"]["nbgrader"]
        if cell["cell_type"] == "code" and not nbgrader["grade"]:
            exec(compile("".join(cell["source"]), f"<a03 {nbgrader['grade_id']}>", "exec"), namespace)
    return a03.handlers_in(namespace)


def test_reference_handlers_pass_every_check():
    assert len(a03.CASES) >= 60
    assert a03.check_cases({}) == []
    assert a03.check_models({}) == []


def test_solution_passes_every_check(solution):
    assert list(solution) == list(a03.HANDLERS)
    assert a03.check_cases(solution) == []
    assert a03.check_models(solution) == []


def dynamo_op_name(node):
    """``add`` for operator.add / torch.add / Tensor.add, as in tests/dynamo/test_vs_torch_dynamo.py."""
    if node.op == "call_method":
        return node.target
    return getattr(node.target, "__name__", str(node.target)).strip("_")


def dynamo_ops(graphs):
    return collections.Counter(dynamo_op_name(n) for gm in graphs for n in gm.graph.nodes
                               if n.op in ("call_function", "call_method"))


@pytest.mark.parametrize("name", list(a03.CASES))
def test_corpus_function_is_captured_as_torch_dynamo_captures_it(name):
    case = a03.CASES[name]
    args, kwargs = case.make_inputs()
    torch._dynamo.reset()
    theirs = torch._dynamo.explain(case.fn)(*args, **kwargs)
    args, kwargs = case.make_inputs()
    ours = tinydynamo.explain(case.fn)(*args, **kwargs)
    tinydynamo.reset()
    assert ours.graph_break_count == 0 and theirs.graph_break_count <= 0  # -1: nothing to compile
    assert ours.graph_count == theirs.graph_count
    assert dynamo_ops(ours.graphs) == dynamo_ops(theirs.graphs)


# --- mistakes a learner makes, and what the checkers say ------------------------------------


def not_implemented(self, inst):
    raise NotImplementedError()


def store_keeps_unread_argument(self, inst):
    self.symbolic_locals[inst.argval] = self.pop()


def load_const_raw(self, inst):
    self.push(inst.argval)


def load_global_without_null(self, inst):
    self.push(self.load_global(inst.argval))


def binary_op_never_in_place(self, inst):
    symbol = dis._nb_ops[inst.arg][1].rstrip("=")
    functions = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
                 "**": operator.pow, "//": operator.floordiv, "%": operator.mod, "@": operator.matmul,
                 "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
                 ">>": operator.rshift}
    right, left = self.pop(), self.pop()
    self.push(self.call_builtin(functions[symbol], left, right))


def load_method_null_on_top(self, inst):
    method = self.pop().var_getattr(self, inst.argval)
    self.push(method)
    self.push(NullVariable())


def call_keeps_keyword_names(self, inst):
    args = self.popn(inst.arg)
    first, second = self.popn(2)
    fn, args = (second, args) if isinstance(first, NullVariable) else (first, [second, *args])
    n_positional = len(args) - len(self.kw_names)
    kwargs = dict(zip(self.kw_names, args[n_positional:]))
    self.push(fn.call_function(self, args[:n_positional], kwargs))


def return_always_compiles(self, inst):
    self.output_instructions = self.output.compile_subgraph(self, self.pop())
    self.done = True


def return_without_done(self, inst):
    self.return_value = self.pop()
    if self.parent is None:
        self.output_instructions = self.output.compile_subgraph(self, self.return_value)


MISTAKES = [
    ("STORE_FAST", store_keeps_unread_argument, "reassign_argument",
     "graph 0 has the inputs ['L_x', 'L_y'], the reference's has ['L_x']"),
    ("LOAD_CONST", load_const_raw, "many_locals",
     "your LOAD_CONST handler raised TypeError: after it ran, the stack holds 1 (int)"),
    ("LOAD_GLOBAL", load_global_without_null, "add_relu",
     "your CALL handler raised ValueError: not enough values to unpack"),
    ("BINARY_OP", binary_op_never_in_place, "inplace_on_input",
     "graph 0's ops differ from the reference's: missing {'operator.iadd': 1, 'operator.imul': 1}"),
    ("LOAD_METHOD", load_method_null_on_top, "method_chain",
     "tracing stopped with Unsupported: "),
    ("CALL", call_keeps_keyword_names, "keywords_then_positional",
     "tracing stopped with Unsupported: "),
    ("RETURN_VALUE", return_always_compiles, "global_helper",
     "your CALL handler raised AssertionError (at symbolic_convert.py:"),
    ("RETURN_VALUE", return_without_done, "add_relu",
     "the translator ran past the last instruction of add_relu()"),
]


@pytest.mark.parametrize("handler, fn, case_name, message", MISTAKES, ids=lambda v: getattr(v, "__name__", None))
def test_a_mistake_names_the_case_and_what_differed(solution, handler, fn, case_name, message):
    assert a03.check_case(solution, a03.CASES[case_name]) == []
    failures = a03.check_case({**solution, handler: fn}, a03.CASES[case_name])
    case = a03.CASES[case_name]
    assert failures and all(f.startswith(f"{case_name} (a03.py:{case.fn.__code__.co_firstlineno}): ") for f in failures)
    assert any(message in f for f in failures), failures


def test_the_inputs_mutated_by_an_in_place_operator_are_compared(solution):
    failures = a03.check_case({**solution, "BINARY_OP": binary_op_never_in_place}, a03.CASES["inplace_on_input"])
    assert any("the inputs after the call (args, kwargs)[0][0] differs" in f for f in failures), failures


@pytest.mark.parametrize("name", a03.HANDLERS)
def test_every_handler_is_exercised_by_the_corpus_and_the_zoo(name):
    failures = a03.check_cases({name: not_implemented})
    assert failures and all(f"your {name} handler raised NotImplementedError (in not_implemented, line " in f
                            for f in failures)
    assert a03.check_models({name: not_implemented})


def test_a_learner_exception_shows_the_learner_line_and_the_traced_line():
    [failure] = a03.check_cases({"LOAD_CONST": not_implemented}, ["many_locals"])
    line = not_implemented.__code__.co_firstlineno + 1
    assert failure.startswith("many_locals (a03.py:")
    assert (f"your LOAD_CONST handler raised NotImplementedError (in not_implemented, line {line}: "
            "raise NotImplementedError()), on `LOAD_CONST 1 (1)` in many_locals() at a03.py:") in failure
    assert failure.endswith(": a = x + 1")


def test_the_reference_handlers_come_back_even_after_an_error():
    originals = {name: vars(cls)[name] for cls in a03.TRANSLATORS for name in a03.HANDLERS if name in vars(cls)}
    step = InstructionTranslatorBase.step
    with pytest.raises(RuntimeError, match="inside the block"):
        with a03.swapped_handlers({name: not_implemented for name in a03.HANDLERS}):
            assert InliningInstructionTranslator.RETURN_VALUE is not originals["RETURN_VALUE"]
            raise RuntimeError("inside the block")
    assert {name: vars(cls)[name] for cls in a03.TRANSLATORS for name in a03.HANDLERS
            if name in vars(cls)} == originals
    assert InstructionTranslatorBase.step is step


def test_unknown_handlers_and_missing_definitions_are_refused():
    with pytest.raises(ValueError, match="not \\['COMPARE_OP'\\]"):
        with a03.swapped_handlers({"COMPARE_OP": not_implemented}):
            pass
    with pytest.raises(NameError, match="define the handler\\(s\\) \\['KW_NAMES', 'PRECALL', 'CALL'\\] first"):
        a03.handlers_in({"LOAD_ATTR": not_implemented, "LOAD_METHOD": not_implemented}, part=3)


def test_print_capture_shows_the_graph_or_the_error(solution, capsys):
    a03.print_capture(solution, a03.CASES["add_relu"].fn, torch.ones(2), torch.ones(2))
    shown = capsys.readouterr().out
    assert "add_relu: 1 graph(s)" in shown and "torch.relu" in shown
    a03.print_capture({"CALL": not_implemented}, a03.CASES["add_relu"].fn, torch.ones(2), torch.ones(2))
    assert "your CALL handler raised NotImplementedError" in capsys.readouterr().out
