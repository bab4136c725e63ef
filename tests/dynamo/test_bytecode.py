"""bytecode.py: decode -> assemble gives back the very same code objects, for thousands of real
functions of the standard library; edited code (NOPs everywhere, huge jumps) still runs.

The same checks run under Python 3.12 in a subprocess when pyenv has it (bytecode.py needs no
torch, so it is loaded from its file there).
"""
import dis
import glob
import importlib
import os
import subprocess
import sys
import types

import pytest

from tinydynamo.dynamo import bytecode
from tinydynamo.dynamo.bytecode import assemble, create_instruction, decode

MODULES = [
    "json.decoder", "json.encoder", "re._parser", "re._compiler", "os", "collections", "argparse",
    "email.message", "email.parser", "email.utils", "dataclasses", "typing", "textwrap", "difflib",
    "inspect", "ast", "enum", "functools", "pathlib", "tokenize", "string", "calendar", "fractions",
    "decimal", "_pydecimal", "statistics", "pprint", "shlex", "configparser", "csv", "logging",
    "heapq", "bisect", "copy", "pickle", "random", "contextlib", "asyncio.tasks", "zipfile",
    "tarfile", "urllib.parse", "http.client", "unittest.case", "datetime", "_strptime",
]


def module_code(name):
    module = importlib.import_module(name)
    with open(module.__file__) as source:
        return compile(source.read(), module.__file__, "exec")


def all_codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from all_codes(const)


def lines(code):
    """The line number of every code unit."""
    return [line for start, end, line in code.co_lines() for _ in range(start, end, 2)]


def rebuild(code, edit=lambda instructions: instructions):
    """decode -> edit -> assemble, for ``code`` and every code object nested in it."""
    consts = tuple(rebuild(c, edit) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return assemble(edit(decode(code)), code, co_consts=consts)


def with_nops(instructions):
    """A NOP before every instruction, at its position and in its exception handler's range,
    except where 3.11 needs two instructions adjacent (see bytecode.MUST_BE_FOLLOWED)."""
    edited = []
    for inst in instructions:
        if not (edited and edited[-1].opname in bytecode.MUST_BE_FOLLOWED):
            nop = create_instruction("NOP", positions=inst.positions)
            nop.exn_tab_entry = inst.exn_tab_entry
            edited.append(nop)
        edited.append(inst)
    return edited


def without_nops_or_offsets(code):
    """dis output less NOPs and offsets: (opname, argument, line, jump target as text). A 3.13
    superinstruction counts as its two halves (a NOP between them keeps them apart)."""
    rows = []
    line = None
    for inst in dis.get_instructions(code):
        line = inst.positions.lineno if inst.positions.lineno is not None else line
        if inst.opname in ("NOP", "EXTENDED_ARG"):
            continue
        if inst.opname in bytecode.SUPERINSTRUCTIONS:
            rows += [(half, local, line, None) for half, local in
                     zip(bytecode.SUPERINSTRUCTIONS[inst.opname], inst.argval)]
            continue
        target = None
        if inst.opcode in dis.hasjrel:
            target = next(i.opname for i in dis.get_instructions(code)
                          if i.offset >= inst.argval and i.opname not in ("NOP", "EXTENDED_ARG"))
            target = bytecode.SUPERINSTRUCTIONS.get(target, (target,))[0]
        argval = None if target else inst.argval if not isinstance(inst.argval, types.CodeType) else "code"
        rows.append((inst.opname, argval, line, target))
    return rows


CODES = [c for name in MODULES for c in all_codes(module_code(name))]


def test_thousands_of_stdlib_code_objects_round_trip_exactly():
    assert len(CODES) > 3000
    for code in CODES:
        new = assemble(decode(code), code)
        where = f"{code.co_qualname} in {code.co_filename}:{code.co_firstlineno}"
        assert new.co_code == code.co_code, where
        assert new.co_exceptiontable == code.co_exceptiontable, where
        assert new.co_stacksize == code.co_stacksize, where
        assert (new.co_consts, new.co_names, new.co_varnames) == \
               (code.co_consts, code.co_names, code.co_varnames), where
        assert list(new.co_positions()) == list(code.co_positions()), where
        assert lines(new) == lines(code), where


def test_edited_code_disassembles_the_same_modulo_offsets():
    for code in CODES[::7]:
        new = assemble(with_nops(decode(code)), code)
        assert without_nops_or_offsets(new) == without_nops_or_offsets(code), code.co_qualname
        assert len(new.co_code) > len(code.co_code)


@pytest.mark.parametrize("edit", [None, with_nops], ids=["unchanged", "nops"])
def test_rebuilt_modules_still_work(edit):
    import difflib
    import fractions
    import json
    import shlex
    import statistics
    import textwrap

    rebuilt = {}
    for module in (json.decoder, json.encoder, textwrap, difflib, fractions, shlex, statistics):
        namespace = {"__name__": module.__name__ + "_rebuilt", "__file__": module.__file__}
        code = rebuild(module_code(module.__name__), edit or (lambda i: i))
        exec(code, namespace)
        rebuilt[module.__name__] = types.SimpleNamespace(**namespace)

    data = {"a": [1, 2.5, None, True], "b": {"c": "d\u00e9"}}
    assert rebuilt["json.encoder"].JSONEncoder(indent=2, sort_keys=True).encode(data) == \
        json.dumps(data, indent=2, sort_keys=True)
    assert rebuilt["json.decoder"].JSONDecoder().decode(json.dumps(data)) == data
    text = "The quick brown fox jumps over the lazy dog. " * 5
    assert rebuilt["textwrap"].wrap(text, 17) == textwrap.wrap(text, 17)
    a, b = ["one", "two", "three", "four"], ["zero", "one", "three", "five"]
    assert list(rebuilt["difflib"].unified_diff(a, b)) == list(difflib.unified_diff(a, b))
    F = rebuilt["fractions"].Fraction
    assert str(F(3, 4) + F(5, 6) * 2) == str(fractions.Fraction(3, 4) + fractions.Fraction(5, 6) * 2)
    with pytest.raises(ZeroDivisionError):  # exception tables still route exceptions
        F(1, 0)
    assert rebuilt["shlex"].split("a 'b c' \"d e\" f\\ g") == shlex.split("a 'b c' \"d e\" f\\ g")
    assert rebuilt["statistics"].median([5, 1, 4, 2]) == statistics.median([5, 1, 4, 2])


def long_loop_source(statements):
    body = "\n".join(f"        total += i * {k}" for k in range(statements))
    return f"def long_loop(n):\n    total = 0\n    for i in range(n):\n{body}\n    return total\n"


def test_far_jumps_need_extended_args():
    namespace = {}
    exec(long_loop_source(400), namespace)
    code = namespace["long_loop"].__code__
    assert "EXTENDED_ARG" in [i.opname for i in dis.get_instructions(code)]
    assert assemble(decode(code), code).co_code == code.co_code
    # Growing the loop body past the next EXTENDED_ARG boundary still lands every jump right.
    new = assemble(with_nops(decode(code)), code)
    function = types.FunctionType(new, namespace)
    assert function(3) == namespace["long_loop"](3)


def test_many_constants_and_names():
    names = [f"v{k}" for k in range(300)]
    source = "def many():\n" + "".join(f"    {n} = {k}.5\n" for k, n in enumerate(names)) + \
        f"    return {' + '.join(names)}\n"
    namespace = {}
    exec(source, namespace)
    code = namespace["many"].__code__
    new = assemble(decode(code), code)
    assert new.co_code == code.co_code
    assert types.FunctionType(new, namespace)() == namespace["many"]()


def test_new_constants_and_names_are_appended():
    def g(x):
        return x + 1

    code = g.__code__
    instructions = decode(code)
    ret = instructions[-1]
    instructions[-1:] = [
        create_instruction("LOAD_CONST", argval=1000, positions=ret.positions),
        create_instruction("BINARY_OP", arg=5, positions=ret.positions),  # NB_MULTIPLY
        ret,
    ]
    new = assemble(instructions, code)
    assert new.co_consts[:len(code.co_consts)] == code.co_consts and 1000 in new.co_consts
    assert types.FunctionType(new, {})(2) == 3000


PY312 = next(iter(sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))), None)


@pytest.mark.skipif(PY312 is None or sys.version_info >= (3, 12), reason="needs pyenv's Python 3.12")
def test_round_trip_under_python_312():
    script = f"""
import importlib.util, sys, types
spec = importlib.util.spec_from_file_location("bytecode", {bytecode.__file__!r})
bytecode = importlib.util.module_from_spec(spec)
sys.modules["bytecode"] = bytecode
spec.loader.exec_module(bytecode)
count = 0
for name in {MODULES!r}:
    module = __import__(name, fromlist=["_"])
    code = compile(open(module.__file__).read(), module.__file__, "exec")
    todo = [code]
    while todo:
        c = todo.pop()
        todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        new = bytecode.assemble(bytecode.decode(c), c)
        assert (new.co_code, new.co_exceptiontable, new.co_stacksize) == \\
            (c.co_code, c.co_exceptiontable, c.co_stacksize), c
        assert list(new.co_positions()) == list(c.co_positions()), c
        count += 1
{long_loop_source(400)!r}
ns = {{}}
exec({long_loop_source(400)!r}, ns)
code = ns["long_loop"].__code__
edited = []
for inst in bytecode.decode(code):
    if not (edited and edited[-1].opname in bytecode.MUST_BE_FOLLOWED):
        nop = bytecode.create_instruction("NOP", positions=inst.positions)
        nop.exn_tab_entry = inst.exn_tab_entry
        edited.append(nop)
    edited.append(inst)
assert types.FunctionType(bytecode.assemble(edited, code), ns)(3) == ns["long_loop"](3)
print(count)
"""
    result = subprocess.run([PY312, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 3000


def test_superinstructions_are_split_and_fused_again():
    """3.13 fuses two LOAD_FASTs or STORE_FASTs into one instruction. decode gives their halves
    (the translator sees one local per instruction); assemble fuses the halves again while both
    locals are among the first 16, and leaves them apart once they are not."""
    def f(a, b):
        c, d = a, b
        return c - d

    code = f.__code__
    assert not {i.opname for i in decode(code)} & set(bytecode.SUPERINSTRUCTIONS)
    assert assemble(decode(code), code).co_code == code.co_code
    padded = code.co_varnames[:2] + tuple(f"pad{i}" for i in range(16)) + code.co_varnames[2:]
    new = assemble(decode(code), code, co_varnames=padded)
    assert types.FunctionType(new, {})(5, 3) == 2
    fused = [i.argval for i in dis.get_instructions(new) if i.opname in bytecode.SUPERINSTRUCTIONS]
    assert all(name in ("a", "b") for pair in fused for name in pair), fused


def test_assemble_refuses_the_fields_it_computes():
    """A learner's create_resume passing co_nlocals got "multiple values for keyword argument"."""
    code = (lambda x: x + 1).__code__
    with pytest.raises(TypeError, match="assemble computes co_nlocals, co_stacksize"):
        assemble(decode(code), code, co_nlocals=3, co_stacksize=9)
