"""The translator's Python 3.12 opcode handlers, exercised from Python 3.11.

torch is not installed for 3.12 here, so 3.12 cannot run tinydynamo. But the translator only
reads instructions: a 3.12 subprocess compiles dynamo_cases.py and dumps the instructions of
every function; here they replace the 3.11 instructions of the same functions, with the
translator in 3.12 mode. The graph it builds is then run (with 3.11 glue code) and compared
with eager. Cases that inline code from elsewhere (torch.nn modules) or hold nested code
objects (lambdas, inner functions: 3.12 code objects cannot cross over) are skipped. Every
opcode that 3.12 uses in these functions and in the model zoo must have a handler.
"""
import dis
import glob
import json
import marshal
import os
import subprocess
import sys

import pytest

import tinydynamo.dynamo as dynamo
from tinydynamo.dynamo import bytecode, symbolic_convert
from tinydynamo.dynamo.bytecode import ExceptionTableEntry, Instruction
from tinydynamo.testing import models

from dynamo_cases import CASES, assert_same

PY312 = next(iter(sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))), None)
pytestmark = pytest.mark.skipif(PY312 is None or sys.version_info >= (3, 12), reason="needs pyenv's 3.12")
CASES_FILE = os.path.join(os.path.dirname(__file__), "dynamo_cases.py")
MODELS_FILE = models.__file__

DUMP = f"""
import importlib.util, json, marshal, sys, types
spec = importlib.util.spec_from_file_location("bytecode", {bytecode.__file__!r})
bytecode = importlib.util.module_from_spec(spec)
sys.modules["bytecode"] = bytecode
spec.loader.exec_module(bytecode)
out = {{}}
todo = [compile(open(f).read(), f, "exec") for f in ({CASES_FILE!r}, {MODELS_FILE!r})]
while todo:
    code = todo.pop()
    todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    insts = bytecode.decode(code)
    index = {{id(i): k for k, i in enumerate(insts)}}
    rows = []
    for i in insts:
        value = None if isinstance(i.argval, types.CodeType) else i.argval
        try:
            value = marshal.dumps(value).hex()
        except ValueError:
            value = None
        entry = i.exn_tab_entry
        rows.append(dict(opname=i.opname, arg=i.arg, argval=value,
                         target=index[id(i.target)] if i.target is not None else None,
                         positions=list(i.positions) if i.positions else None,
                         exn=[index[id(entry.target)], entry.depth, entry.lasti] if entry else None,
                         code_const=isinstance(i.argval, types.CodeType)))
    if code.co_flags & 1:  # CO_OPTIMIZED: a function, not a module or class body
        out[f"{{code.co_filename}}:{{code.co_name}}:{{code.co_firstlineno}}"] = rows
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def instructions_312():
    result = subprocess.run([PY312, "-c", DUMP], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def rebuild(rows):
    """Instruction objects from the 3.12 dump (jump targets and handlers re-linked)."""
    insts = [Instruction(r["opname"], r["arg"], marshal.loads(bytes.fromhex(r["argval"])) if r["argval"]
                         else None, positions=dis.Positions(*r["positions"]) if r["positions"] else None)
             for r in rows]
    for inst, row in zip(insts, rows):
        inst.target = insts[row["target"]] if row["target"] is not None else None
        if row["exn"]:
            inst.exn_tab_entry = ExceptionTableEntry(insts[row["exn"][0]], row["exn"][1], row["exn"][2])
    return tuple(insts)


class NotFromCasesFile(Exception):
    pass


def test_every_312_opcode_of_the_cases_and_the_zoo_has_a_handler(instructions_312):
    exception_paths = {"PUSH_EXC_INFO", "POP_EXCEPT", "RERAISE", "CHECK_EXC_MATCH", "WITH_EXCEPT_START",
                       "CLEANUP_THROW"}
    opnames = {row["opname"] for rows in instructions_312.values() for row in rows}
    assert "END_FOR" in opnames and "RETURN_CONST" in opnames and "LOAD_FAST_AND_CLEAR" in opnames
    translators = (symbolic_convert.InstructionTranslator,  # and, for `yield from`, the generators'
                   symbolic_convert.InliningGeneratorInstructionTranslator)
    missing = {op for op in opnames - exception_paths if not any(hasattr(t, op) for t in translators)}
    assert missing == set()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_traced_from_312_bytecode(case, instructions_312, monkeypatch):
    def decoded_312(code):
        rows = instructions_312.get(f"{code.co_filename}:{code.co_name}:{code.co_firstlineno}")
        if code.co_filename != CASES_FILE or rows is None:
            raise NotFromCasesFile(code.co_qualname)
        if any(r["code_const"] for r in rows):
            raise NotFromCasesFile(f"{code.co_qualname} makes a nested function")
        return rebuild(rows)

    monkeypatch.setattr(symbolic_convert, "decoded", decoded_312)
    monkeypatch.setattr(symbolic_convert, "PY312", True)
    expected_args, expected_kwargs = case.make_inputs()
    expected = case.fn(*expected_args, **expected_kwargs)
    args, kwargs = case.make_inputs()
    try:
        actual = dynamo.compile(case.fn, backend="eager", fullgraph=True)(*args, **kwargs)
    except NotFromCasesFile as e:
        pytest.skip(f"inlines {e}")
    assert_same(actual, expected)
    assert_same((args, kwargs), (expected_args, expected_kwargs))
