"""Bytecode as an editable list of instructions, and back again (book chapter 4,
"Guards and the transformed code").

``decode(code)`` turns a code object into a list of :class:`Instruction` objects that can be
edited freely: jumps point at their target *instruction* (not at an offset), each instruction
knows its source position and which exception handler covers it, and EXTENDED_ARG prefixes
and inline CACHE entries are gone.

On 3.13, the "superinstructions" that do two things with locals (``LOAD_FAST_LOAD_FAST``,
``STORE_FAST_LOAD_FAST``, ``STORE_FAST_STORE_FAST``) become their two halves: every other part
of dynamo (the translator, the liveness analysis, resume functions) then sees one local per
instruction. ``assemble`` fuses the pairs that ``decode`` split again, where they are still
adjacent and both locals still among the first 16, so a decoded code object reassembles byte
for byte; new code keeps plain pairs.

``assemble(instructions, code, **changes)`` is the inverse: it rebuilds every table a 3.11 /
3.12 / 3.13 code object needs, the way CPython's own assembler does:

- ``co_consts``/``co_names``/``co_varnames``, and each instruction's ``arg`` from its ``argval``;
- jump offsets, with EXTENDED_ARG prefixes, iterated until the layout stops changing;
- the inline CACHE entries behind each instruction;
- ``co_exceptiontable`` (which instructions jump to which handler when something raises);
- ``co_linetable`` (the compact "location table" format of 3.11+);
- ``co_stacksize`` from a stack-effect analysis over the control-flow graph.

Nothing here imports torch, so the same file also runs on Python versions without it.
"""
import dataclasses
import dis
import opcode
import sys
import types

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)

# Instructions after which control never falls through to the next instruction.
UNCONDITIONAL_JUMPS = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}
TERMINATORS = UNCONDITIONAL_JUMPS | {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}

# 3.11's specialized forms of these skip over the instruction that follows them (the CALL after a
# PRECALL, the conditional jump after a COMPARE_OP); 3.13's FOR_ITER, once the iterator is done,
# jumps past its END_FOR and the POP_TOP after it: nothing may be inserted in between.
MUST_BE_FOLLOWED = {"END_FOR"} if PY313 else set() if PY312 else {"PRECALL", "COMPARE_OP"}

# Name-using opcodes whose oparg carries flag bits below the name index.
NAME_FLAG_BITS = {"LOAD_GLOBAL": 1, "LOAD_SUPER_ATTR": 2, "LOAD_ATTR": 1 if PY312 else 0}


@dataclasses.dataclass(eq=False)
class ExceptionTableEntry:
    """Where an instruction jumps when it raises: the handler and the stack depth to unwind to."""

    target: "Instruction"
    depth: int
    lasti: bool

    def key(self):
        return (self.target, self.depth, self.lasti)


@dataclasses.dataclass(eq=False)
class Instruction:
    """One bytecode instruction. Compared by identity, so it can be a jump target.

    ``arg`` is the raw oparg. For constants, names, locals and jumps, ``assemble`` recomputes it
    from ``argval`` / ``target``; for LOAD_GLOBAL (and 3.12's LOAD_ATTR) the low bit of ``arg``
    is the "push NULL" / "method" flag and is kept.
    """

    opname: str
    arg: int | None = None
    argval: object = None
    target: "Instruction | None" = None
    positions: dis.Positions | None = None
    exn_tab_entry: ExceptionTableEntry | None = None
    offset: int | None = None  # where it was in the decoded code; informational only
    fused: str | None = None  # 3.13: the superinstruction ``decode`` split (on its first half)

    @property
    def opcode(self):
        return dis.opmap[self.opname]

    def __repr__(self):
        shown = self.argval if self.target is None else f"-> {self.target.opname}@{self.target.offset}"
        return f"Instruction({self.opname} {shown!r})"


def create_instruction(opname, *, arg=None, argval=None, target=None, positions=None):
    """A new instruction; for LOAD_CONST/LOAD_FAST/... give ``argval``, for jumps ``target``."""
    return Instruction(opname, arg=arg, argval=argval, target=target, positions=positions)


def has_arg(op):
    """Whether opcode ``op`` takes an oparg (3.13's WITH_EXCEPT_START is numbered among those
    that do, but does not: ``dis.hasarg`` knows)."""
    return op in dis.hasarg if PY313 else op >= opcode.HAVE_ARGUMENT


def is_jump(inst):
    return inst.opcode in dis.hasjrel or inst.opcode in dis.hasjabs


def copy_instructions(instructions):
    """New Instruction objects for ``instructions``, with jump targets and exception handlers
    pointing into the copy, so it can be edited without touching the original (chapter 5)."""
    return relinked({inst: dataclasses.replace(inst) for inst in instructions})


def relinked(copies):
    """The new instructions of ``copies`` (old instruction -> its new one), their jump targets and
    exception handlers pointed at the new ones; each exception table entry copied once."""
    entries = {}
    for copy in copies.values():
        if copy.target is not None:
            copy.target = copies[copy.target]
        entry = copy.exn_tab_entry
        if entry is not None:
            if entry not in entries:
                entries[entry] = ExceptionTableEntry(copies[entry.target], entry.depth, entry.lasti)
            copy.exn_tab_entry = entries[entry]
    return list(copies.values())


def cache_entries(opname):
    """How many inline CACHE code units follow this instruction (3.13 keys the table by name)."""
    if PY313:
        return opcode._inline_cache_entries.get(opname, 0)
    return opcode._inline_cache_entries[dis.opmap[opname]]


# 3.13's superinstructions on two locals, and the two plain instructions each one does.
SUPERINSTRUCTIONS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}


def split_superinstruction(inst):
    """3.13: ``LOAD_FAST_LOAD_FAST (x, y)`` -> ``LOAD_FAST x; LOAD_FAST y`` (same position and
    handler). The first half keeps the instruction's identity, so jumps to it still land on it."""
    first_name, second_name = SUPERINSTRUCTIONS[inst.opname]
    first_local, second_local = inst.argval
    second = Instruction(second_name, None, second_local, positions=inst.positions,
                         exn_tab_entry=inst.exn_tab_entry, offset=inst.offset)
    inst.opname, inst.arg, inst.argval, inst.fused = first_name, None, first_local, inst.opname
    return [inst, second]


# ---------------------------------------------------------------------------------------------
# decode


def decode(code):
    """The instructions of ``code`` with jump targets and exception handlers resolved."""
    raw = list(dis.get_instructions(code))
    by_offset = {}  # every code-unit offset that starts an instruction (or its EXTENDED_ARG)
    instructions = []
    prefix_offsets = []
    for d in raw:
        if d.opname == "EXTENDED_ARG":
            prefix_offsets.append(d.offset)
            continue
        argval = code.co_consts[d.arg] if d.opcode in dis.hasconst else d.argval  # 3.11's dis misses KW_NAMES
        inst = Instruction(d.opname, d.arg, argval, positions=d.positions, offset=d.offset)
        for offset in prefix_offsets + [d.offset]:
            by_offset[offset] = inst
        prefix_offsets = []
        instructions.append(inst)
    for inst in instructions:
        if is_jump(inst):
            inst.target = by_offset[inst.argval]
    for start, end, target, depth, lasti in parse_exception_table(code.co_exceptiontable):
        entry = ExceptionTableEntry(by_offset[target], depth, lasti)
        for offset in range(start, end, 2):
            if offset in by_offset and by_offset[offset].exn_tab_entry is None:
                by_offset[offset].exn_tab_entry = entry
    return [half for inst in instructions
            for half in (split_superinstruction(inst) if inst.opname in SUPERINSTRUCTIONS else [inst])]


def _read_varint(first, rest):
    """Exception-table varints: 6 bits per byte, most significant first, bit 6 = "more"."""
    byte, value = first, first & 63
    while byte & 64:
        byte = next(rest)
        value = (value << 6) | (byte & 63)
    return value


def parse_exception_table(table):
    """Yield (start, end, target, depth, lasti), offsets in bytes, from ``co_exceptiontable``."""
    rest = iter(table)
    for first in rest:  # the first byte of each entry has bit 7 set
        start = _read_varint(first, rest) * 2
        length = _read_varint(next(rest), rest) * 2
        target = _read_varint(next(rest), rest) * 2
        depth_lasti = _read_varint(next(rest), rest)
        yield start, start + length, target, depth_lasti >> 1, bool(depth_lasti & 1)


# ---------------------------------------------------------------------------------------------
# assemble


COMPUTED_FIELDS = ("co_code", "co_nlocals", "co_exceptiontable", "co_linetable", "co_stacksize")


def assemble(instructions, code, **changes):
    """A code object running ``instructions``, with the other fields taken from ``code``.

    ``changes`` are ``code.replace`` keywords (``co_argcount=2``, ``co_varnames=(...)``, ...).
    New constants and names are appended to the tables inherited from ``code``. The fields that
    follow from the instructions (``COMPUTED_FIELDS``) are computed, never taken from ``changes``.
    """
    given = sorted(set(changes) & set(COMPUTED_FIELDS))
    if given:
        raise TypeError(f"assemble computes {', '.join(given)} from the instructions: do not pass them")
    tables = _Tables(code, changes)
    for inst in instructions:
        tables.fill_arg(inst)
    if PY313:
        instructions = fuse_superinstructions(instructions)
    offsets = _fix_jump_args(instructions)
    co_code = _emit_code(instructions)
    return code.replace(
        co_code=co_code,
        co_consts=tuple(tables.consts),
        co_names=tuple(tables.names),
        co_varnames=tables.varnames,
        co_nlocals=len(tables.varnames),
        co_exceptiontable=_encode_exception_table(instructions, offsets),
        co_linetable=_encode_linetable(instructions, changes.get("co_firstlineno", code.co_firstlineno)),
        co_stacksize=stacksize(instructions),
        **{k: v for k, v in changes.items() if k not in ("co_consts", "co_names", "co_varnames")},
    )


class _Tables:
    """co_consts / co_names / localsplus names, and how an argval becomes an oparg."""

    def __init__(self, code, changes):
        self.consts = list(changes.get("co_consts", code.co_consts))
        self.names = list(changes.get("co_names", code.co_names))
        self.varnames = tuple(changes.get("co_varnames", code.co_varnames))
        cellvars = changes.get("co_cellvars", code.co_cellvars)
        freevars = changes.get("co_freevars", code.co_freevars)
        # "localsplus": locals, then cells that are not also arguments, then free variables.
        localsplus = self.varnames + tuple(c for c in cellvars if c not in self.varnames) + tuple(freevars)
        self.localsplus = {name: i for i, name in reversed(list(enumerate(localsplus)))}
        self.const_index = {}
        for i, value in reversed(list(enumerate(self.consts))):
            self.const_index[_const_key(value)] = i

    def fill_arg(self, inst):
        op = inst.opcode
        if op in dis.hasconst:
            inst.arg = self.const(inst.argval)
        elif op in dis.hasname:
            shift = NAME_FLAG_BITS.get(inst.opname, 0)
            flags = (inst.arg or 0) & ((1 << shift) - 1)
            inst.arg = (self.name(inst.argval) << shift) | flags
        elif op in dis.haslocal or op in dis.hasfree:
            if inst.argval not in self.localsplus:
                raise ValueError(f"{inst.opname}: {inst.argval!r} is not a local, cell or free variable")
            inst.arg = self.localsplus[inst.argval]
        elif not has_arg(op):
            inst.arg = None
        elif inst.arg is None and not is_jump(inst):
            raise ValueError(f"{inst.opname} needs an explicit arg")

    def const(self, value):
        key = _const_key(value)
        if key not in self.const_index:
            self.const_index[key] = len(self.consts)
            self.consts.append(value)
        return self.const_index[key]

    def name(self, name):
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)


def _const_key(value):
    """A key under which equal constants share one co_consts slot (1, 1.0, True and -0.0 do not)."""
    if isinstance(value, (tuple, frozenset)):
        return (type(value), tuple(_const_key(v) for v in value))
    if isinstance(value, (float, complex)):
        return (type(value), repr(value))
    try:
        hash(value)
    except TypeError:
        return (type(value), id(value))
    if isinstance(value, types.CodeType):
        return (type(value), id(value))
    return (type(value), value)


def fuse_superinstructions(instructions):
    """3.13: the pairs that ``decode`` split (see ``split_superinstruction``) become one
    superinstruction again, where the halves are still adjacent, on locals 0-15, under one
    handler, and nothing jumps to the second half. Returns new Instruction objects (jumps and
    handlers re-linked); the caller's list is not changed."""
    targets = {inst.target for inst in instructions if inst.target is not None}
    targets |= {inst.exn_tab_entry.target for inst in instructions if inst.exn_tab_entry is not None}
    new, i = {}, 0  # original instruction (a fused pair's first half) -> its replacement
    while i < len(instructions):
        first, second = instructions[i], instructions[i + 1] if i + 1 < len(instructions) else None
        if second is not None and SUPERINSTRUCTIONS.get(first.fused) == (first.opname, second.opname) \
                and first.arg < 16 and second.arg < 16 and second not in targets \
                and first.exn_tab_entry is second.exn_tab_entry:
            new[first] = dataclasses.replace(first, opname=first.fused, arg=(first.arg << 4) | second.arg,
                                             argval=(first.argval, second.argval), fused=None)
            i += 2
        else:
            new[first] = dataclasses.replace(first)
            i += 1
    if len(new) == len(instructions):
        return instructions
    return relinked(new)


def _extended_args(arg):
    """How many EXTENDED_ARG prefixes an oparg needs (each carries 8 more bits)."""
    return 0 if arg is None or arg <= 0xFF else 1 if arg <= 0xFFFF else 2 if arg <= 0xFFFFFF else 3


def instruction_size(inst):
    """Size in 2-byte code units: EXTENDED_ARG prefixes, the instruction, its caches."""
    return _extended_args(inst.arg) + 1 + cache_entries(inst.opname)


def _layout(instructions):
    """Byte offset of each instruction's first code unit (its first EXTENDED_ARG, if any)."""
    offsets, offset = {}, 0
    for inst in instructions:
        offsets[inst] = offset
        offset += 2 * instruction_size(inst)
    return offsets


def _fix_jump_args(instructions):
    """Set each jump's oparg from its target's offset, until no prefix count changes."""
    jumps = [inst for inst in instructions if is_jump(inst)]
    for inst in jumps:
        inst.arg = 0
    while True:
        offsets = _layout(instructions)
        changed = False
        for inst in jumps:
            # The offset counts from the end of the instruction and its caches.
            after = offsets[inst] + 2 * instruction_size(inst)
            target = offsets[inst.target]
            arg = (after - target) // 2 if "JUMP_BACKWARD" in inst.opname else (target - after) // 2
            if arg < 0:
                raise ValueError(f"{inst.opname} cannot jump in that direction (to {inst.target})")
            if arg != inst.arg:
                inst.arg, changed = arg, True
        if not changed:
            return offsets


def _emit_code(instructions):
    out = bytearray()
    for inst in instructions:
        if inst.opcode > 255:  # 3.13: LOAD_CLOSURE, JUMP, SETUP_*... exist only in the compiler
            raise ValueError(f"{inst.opname} is a pseudo-instruction on Python "
                             f"{sys.version_info.major}.{sys.version_info.minor}: it has no bytecode")
        arg = inst.arg or 0
        for shift in range(8 * _extended_args(inst.arg), 0, -8):
            out += bytes([dis.opmap["EXTENDED_ARG"], (arg >> shift) & 0xFF])
        out += bytes([inst.opcode, arg & 0xFF])
        out += bytes(2 * cache_entries(inst.opname))
    return bytes(out)


def _write_varint_msb_first(out, value, mark_start=False):
    chunks = [value & 63]
    while value > 63:
        value >>= 6
        chunks.append(value & 63)
    chunks.reverse()
    for i, chunk in enumerate(chunks):
        more = 64 if i < len(chunks) - 1 else 0
        start = 128 if i == 0 and mark_start else 0
        out.append(chunk | more | start)


def _encode_exception_table(instructions, offsets):
    """One entry per run of consecutive instructions sharing a handler (as CPython does)."""
    out = bytearray()
    runs = []  # [start, end, entry]
    for inst in instructions:
        entry, start = inst.exn_tab_entry, offsets[inst]
        end = start + 2 * instruction_size(inst)
        if runs and runs[-1][2] is not None and entry is not None and runs[-1][2].key() == entry.key() \
                and runs[-1][1] == start:
            runs[-1][1] = end
        else:
            runs.append([start, end, entry])
    for start, end, entry in runs:
        if entry is None:
            continue
        _write_varint_msb_first(out, start // 2, mark_start=True)
        _write_varint_msb_first(out, (end - start) // 2)
        _write_varint_msb_first(out, offsets[entry.target] // 2)
        _write_varint_msb_first(out, (entry.depth << 1) | int(entry.lasti))
    return bytes(out)


# --- the location table: each entry covers 1-8 code units; first byte 1CCCCLLL ---------------
# (C = kind of entry, L = number of code units - 1). Varints here are least significant first.


def _write_varint(out, value):
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _write_signed_varint(out, value):
    _write_varint(out, (-value << 1) | 1 if value < 0 else value << 1)


def _encode_location(out, positions, units, previous_line):
    """Append one entry for ``units`` code units at ``positions``; return the new "current line"."""
    line, end_line, col, end_col = positions if positions is not None else (None,) * 4
    header = 0x80 | (units - 1)
    if line is None:
        out.append(header | (15 << 3))  # no location
        return previous_line
    delta = line - previous_line
    if end_line == line and (col is None or end_col is None):
        out.append(header | (13 << 3))  # line only
        _write_signed_varint(out, delta)
        return line
    if end_line == line and end_col >= col:
        if delta == 0 and col < 80 and end_col - col < 16:  # short form: same line, small columns
            out.append(header | ((col // 8) << 3))
            out.append(((col % 8) << 4) | (end_col - col))
            return line
        if 0 <= delta < 3 and col < 128 and end_col < 128:  # one-line form
            out.append(header | ((10 + delta) << 3))
            out += bytes([col, end_col])
            return line
    out.append(header | (14 << 3))  # long form
    _write_signed_varint(out, delta)
    _write_varint(out, end_line - line)
    _write_varint(out, 0 if col is None else col + 1)
    _write_varint(out, 0 if end_col is None else end_col + 1)
    return line


def _encode_linetable(instructions, firstlineno):
    runs = []  # [positions, units], consecutive instructions with equal positions merged
    for inst in instructions:
        positions = tuple(inst.positions) if inst.positions is not None else None
        if runs and runs[-1][0] == positions:
            runs[-1][1] += instruction_size(inst)
        else:
            runs.append([positions, instruction_size(inst)])
    out, line = bytearray(), firstlineno
    for positions, units in runs:
        while units > 0:
            line = _encode_location(out, positions, min(units, 8), line)
            units -= 8
    return bytes(out)


# --- co_stacksize ------------------------------------------------------------------------------


def _stack_effect(inst, jump):
    if inst.opname == "RETURN_GENERATOR":
        return 1  # when the new generator first runs, the value sent in (None) is on the stack
    arg = inst.arg if has_arg(inst.opcode) else None
    return dis.stack_effect(inst.opcode, arg, jump=jump)


def stacksize(instructions):
    """The deepest the value stack gets, over every path through the control-flow graph."""
    index = {inst: i for i, inst in enumerate(instructions)}
    seen = set()
    todo = [(0, 0)]
    deepest = 0
    while todo:
        i, depth = todo.pop()
        while i < len(instructions) and i not in seen:
            seen.add(i)
            inst = instructions[i]
            deepest = max(deepest, depth)
            if inst.exn_tab_entry is not None:
                entry = inst.exn_tab_entry
                # the handler starts with the unwound stack, lasti (if kept) and the exception
                todo.append((index[entry.target], entry.depth + int(entry.lasti) + 1))
            if is_jump(inst):
                todo.append((index[inst.target], depth + _stack_effect(inst, jump=True)))
                deepest = max(deepest, depth + _stack_effect(inst, jump=True))
            if inst.opname in TERMINATORS:
                break
            depth += _stack_effect(inst, jump=False)
            deepest = max(deepest, depth)
            i += 1
    return deepest
