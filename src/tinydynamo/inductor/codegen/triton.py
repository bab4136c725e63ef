"""Triton code generation for CUDA tensors, and for CPU tensors through Triton's interpreter
(chapter 11, "Generating Triton").

The scheduler and the loop IR are the ones the C++ generator uses; only the last step differs.
A C++ kernel is a loop nest that one thread walks element by element. A Triton kernel is a
*tile program*: many copies of it (program instances) run at once, and each computes a whole
block of elements with vector operations:

    @triton.jit
    def triton_per_0(arg0_x_1, buf3, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
        xnumel = 32                                          # rows (the outer loops)
        rnumel = 64                                          # elements per row
        xoffset = tl.program_id(0) * XBLOCK                  # this instance's first row
        xindex = xoffset + tl.arange(0, XBLOCK)[:, None]     # its XBLOCK rows, as a column
        xmask = xindex < xnumel                              # the last block may stick out
        rbase = tl.arange(0, RBLOCK)[None, :]                # a row's elements, as a row
        rindex = rbase
        rmask = rindex < rnumel
        tmp0 = tl.load(arg0_x_1 + (rindex + 64*xindex), xmask & rmask, other=0)
        tmp1 = tl.where(rmask, tmp0, float("-inf"))          # the identity past the row's end
        tmp2 = max_propagate_nan(tmp1, 1)[:, None]           # one value per row: [XBLOCK, 1]
        ...
        tl.store(buf3 + (rindex + 64*xindex), tmp7, xmask & rmask)

How a FusedSchedulerNode maps onto that:

* The kernel's outer loops, flattened, are the ``x`` dimension: ``xnumel`` iterations, XBLOCK
  of them per program instance. Index expressions use ``xindex`` directly; ``//`` and ``%``
  recover the original loop variables where a body needs them.
* Each body's own loops (a reduction's reduced elements, or the elements of a row that a
  pointwise body writes) are flattened into the ``r`` dimension. A kernel without any is a
  *pointwise* kernel, with 1-D tiles of XBLOCK elements. Otherwise tiles are ``[XBLOCK, RBLOCK]``.
* A reduction is *persistent* when one RBLOCK (the next power of 2 of its size) covers a whole
  row: the row stays in registers, and every body of the kernel sees it at once. Otherwise the
  kernel *loops* over each body's row in chunks of RBLOCK, accumulating in a tile of partial
  results that is reduced once at the end.
* Masks replace bounds: a load or store only touches lanes whose ``xindex`` and ``rindex`` are in
  range. A load uses the masks of the dimensions its index depends on.
* A local buffer of the C++ kernel (a row max, a row of exp values) stays in registers when it
  is a scalar per row, or a row that is read at the same ``rindex`` that wrote it, in a
  persistent kernel. Otherwise it is written to memory and read back after a barrier
  (``tl.debug_barrier()``), which makes one instance's writes visible to all its threads.
* A reduction with loops of its own inside the kernel's outer loops (a reduction of a
  ``[4, 8, 16]`` tensor over its last dim, fused with a pointwise over ``[4]``) does not fit
  ``[XBLOCK, RBLOCK]`` tiles; it gets a kernel of its own.

Variance is the two-pass computation the prims emit (a mean, then a sum of squared
differences); the IR has no Welford reduction, so neither does this generator.

The kernel class is the ops handler its bodies run under, as in ``cpp.py``: ``ops.exp(x)``
becomes ``tmp3 = tl.exp(tmp2)``. :func:`codegen_reduction` writes the code of one reduction
body (the piece assignment a09 asks for).
"""
import contextlib
import inspect
import math
import re
import typing

import sympy
import torch

from ..dependencies import MemoryDep
from ..indexing import Expr, FloorDiv, ModularIndexing, Var, unflatten
from ..runtime import triton_helpers
from ..scheduler import FusedSchedulerNode
from ...symbolic_shapes import SymbolicShapeError
from ..sizevars import SymbolicSize, known, size_max
from ..virtualized import V
from .common import CSEVariable, IndentedBuffer, Kernel

# A reduction row up to this size is kept in registers (a persistent reduction); a longer one
# is looped over in chunks of at most this size. TorchInductor's limit for reductions along the
# innermost dimension is 1024 as well.
PERSISTENT_REDUCTION_MAX = 1024
INT32_MAX = 2 ** 31 - 1

TRITON_TYPES = {
    torch.float32: "tl.float32", torch.float64: "tl.float64", torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16", torch.int64: "tl.int64", torch.int32: "tl.int32",
    torch.int16: "tl.int16", torch.int8: "tl.int8", torch.uint8: "tl.uint8", torch.bool: "tl.int1",
}
LOW_PRECISION = (torch.float16, torch.bfloat16)
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def triton_type(dtype):
    """``tl.float32`` for torch.float32, ...: the Triton type of a dtype, as source."""
    return TRITON_TYPES[dtype]


def compute_dtype(dtype):
    """Values of 16-bit float buffers are computed in float32 (and rounded after each op)."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def triton_literal(value, dtype):
    """Python source for a scalar of ``dtype``: ``0.5``, ``float("-inf")``, ``3``, ``True``."""
    if dtype == torch.bool:
        return "True" if value else "False"
    if not dtype.is_floating_point:
        return str(int(value))
    value = torch.tensor(float(value), dtype=dtype).item()  # rounded to dtype's precision
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return f'float("{"-" if value < 0 else ""}inf")'
    return repr(value)


class TritonCSEVariable(CSEVariable):
    """A value in a kernel: its name (or a literal), dtype, and the tile dimensions it varies
    along (``{"x"}``: one value per row, ``{"x", "r"}``: a whole tile, ``{}``: a scalar)."""

    def __init__(self, name, dtype, dims, literal=None):
        super().__init__(name, dtype)
        self.dims = frozenset(dims)
        self.literal = literal  # the Python value of a constant, else None


# --------------------------------------------------------------------------- index expressions


def pysize(size):
    """A size as Python source: ``64``, or ``(s0*64)`` for a symbolic one (an argument)."""
    if isinstance(size, SymbolicSize):
        text = size.sizevars.to_python(size)
        return text if text.isidentifier() else f"({text})"
    return str(size)


def texpr(expr):
    """An indexing.Expr as Triton source: ``64*xindex + rindex``, ``(xindex // 8)``."""
    parts = []
    for atom, c in expr.terms:
        text = _atom(atom)
        parts.append(text if c == 1 else f"-{text}" if c == -1 else f"{pysize(c)}*{text}")
    if expr.const or not parts:
        parts.append(pysize(expr.const))
    return " + ".join(parts).replace("+ -", "- ")


def _atom(atom):
    if isinstance(atom, Var):
        return atom.name
    if atom.numerator.bounds()[0] >= 0:  # Triton's // and % agree with Python's here
        operator = "//" if isinstance(atom, FloorDiv) else "%"
        return f"({_parenthesized(atom.numerator)} {operator} {pysize(atom.divisor)})"
    helper = "floordiv" if isinstance(atom, FloorDiv) else "floormod"
    return f"{helper}({texpr(atom.numerator)}, {pysize(atom.divisor)})"


def _parenthesized(expr):
    """``expr`` as an operand: in parentheses if it is a sum."""
    text = texpr(expr)
    return f"({text})" if len(expr.terms) + bool(expr.const) > 1 else text


def pointer(name, index):
    """``buf0 + (64*xindex + rindex)``: the addresses of the elements ``index`` of ``name``."""
    return f"{name} + {_parenthesized(index)}"


def helpers_in_index(expr):
    """The helper functions that printing ``expr`` calls."""
    found = set()
    for atom, _ in expr.terms:
        if isinstance(atom, (FloorDiv, ModularIndexing)):
            found |= helpers_in_index(atom.numerator)
            if atom.numerator.bounds()[0] < 0:
                found.add("floordiv" if isinstance(atom, FloorDiv) else "floormod")
    return found


# --------------------------------------------------------------------------- pointwise ops


def _is_float(x):
    return x.dtype.is_floating_point


def _sqrt(x):
    """float32's tl.sqrt is an approximation on GPUs; tl.sqrt_rn rounds correctly."""
    return "tl.sqrt" if x.dtype == torch.float64 else "tl.sqrt_rn"


class TritonOverrides:
    """The Triton expression for each pointwise op, given its operands (TritonCSEVariables).
    Ops that need a helper function return ``(expression, helper names)``."""

    @staticmethod
    def abs(x):
        return f"tl.abs({x})" if x.dtype != torch.bool else str(x)

    @staticmethod
    def neg(x):
        return f"-{x}"

    @staticmethod
    def exp(x):
        return f"tl.exp({x})"

    @staticmethod
    def log(x):
        return f"tl.log({x})"

    @staticmethod
    def log1p(x):
        return f"log1p({x})", {"log1p"}

    @staticmethod
    def expm1(x):
        return f"expm1({x})", {"expm1"}

    @staticmethod
    def sin(x):
        return f"tl.sin({x})"

    @staticmethod
    def cos(x):
        return f"tl.cos({x})"

    @staticmethod
    def tanh(x):
        return f"tanh({x})", {"tanh", "expm1"}

    @staticmethod
    def erf(x):
        return f"tl.erf({x})"

    @staticmethod
    def sqrt(x):
        return f"{_sqrt(x)}({x})"

    @staticmethod
    def rsqrt(x):
        return f"1.0 / {_sqrt(x)}({x})"

    @staticmethod
    def reciprocal(x):
        return f"1.0 / {x}"

    @staticmethod
    def floor(x):
        return f"tl.floor({x})" if _is_float(x) else str(x)

    @staticmethod
    def ceil(x):
        return f"tl.ceil({x})" if _is_float(x) else str(x)

    @staticmethod
    def trunc(x):
        return (f"trunc({x})", {"trunc"}) if _is_float(x) else str(x)

    @staticmethod
    def round(x):
        return (f"round_half_even({x})", {"round_half_even"}) if _is_float(x) else str(x)

    @staticmethod
    def sign(x):
        if _is_float(x):
            return f"sign({x})", {"sign"}
        return f"({x} > 0).to({triton_type(x.dtype)}) - ({x} < 0).to({triton_type(x.dtype)})"

    @staticmethod
    def bitwise_not(x):
        return f"{x} == 0" if x.dtype == torch.bool else f"~{x}"

    @staticmethod
    def add(a, b):
        return f"{a} | {b}" if a.dtype == torch.bool else f"{a} + {b}"

    @staticmethod
    def sub(a, b):
        return f"{a} - {b}"

    @staticmethod
    def mul(a, b):
        return f"{a} & {b}" if a.dtype == torch.bool else f"{a} * {b}"

    @staticmethod
    def div(a, b):
        return f"{a} / {b}"  # integers: TritonKernel.div

    @staticmethod
    def fmod(a, b):
        return f"{a} % {b}"  # Triton's float % is C's fmod; integers: TritonKernel.fmod

    @staticmethod
    def maximum(a, b):
        if a.dtype == torch.bool:
            return f"{a} | {b}"
        if _is_float(a):
            return f"maximum({a}, {b})", {"maximum"}
        return f"tl.maximum({a}, {b})"

    @staticmethod
    def minimum(a, b):
        if a.dtype == torch.bool:
            return f"{a} & {b}"
        if _is_float(a):
            return f"minimum({a}, {b})", {"minimum"}
        return f"tl.minimum({a}, {b})"

    @staticmethod
    def bitwise_and(a, b):
        return f"{a} & {b}"

    @staticmethod
    def bitwise_or(a, b):
        return f"{a} | {b}"

    @staticmethod
    def bitwise_xor(a, b):
        return f"{a} ^ {b}"

    @staticmethod
    def eq(a, b):
        return f"{a} == {b}"

    @staticmethod
    def ne(a, b):
        return f"{a} != {b}"

    @staticmethod
    def lt(a, b):
        return f"{a} < {b}"

    @staticmethod
    def le(a, b):
        return f"{a} <= {b}"

    @staticmethod
    def gt(a, b):
        return f"{a} > {b}"

    @staticmethod
    def ge(a, b):
        return f"{a} >= {b}"

    @staticmethod
    def where(pred, a, b):
        return f"tl.where({pred}, {a}, {b})"


# Exponents that torch computes with sqrt or products instead of pow (so that pow(-inf, 0.5)
# is nan, as in eager).
POW_SPECIAL = {0.5: "{sqrt}({a})", -0.5: "1.0 / {sqrt}({a})", -1.0: "1.0 / {a}",
               2.0: "{a} * {a}", 3.0: "{a} * {a} * {a}", -2.0: "1.0 / ({a} * {a})"}


# --------------------------------------------------------------------------- kernel bodies


class TritonBody(typing.NamedTuple):
    """One node of a kernel: its index in kernel variables, and the size of its ``r`` range."""

    node: object
    index: list  # the node's x variables, as expressions in xindex (and rindex)
    rindex: list  # its reduction variables, as expressions in rindex
    rnumel: typing.Optional[int]  # elements of its row; None: no row, one value per x

    @property
    def name(self):
        return self.node.name

    @property
    def data(self):
        return self.node.buffer.data

    @property
    def reduction_type(self):
        return self.data.reduction_type

    @property
    def src_dtype(self):
        return self.data.src_dtype

    @property
    def dtype(self):
        return self.data.dtype


def triton_groups(fused):
    """Split a FusedSchedulerNode's nodes into Triton kernels: (nodes, outer sizes) pairs.
    A reduction with loops of its own inside the outer loops gets a kernel of its own."""
    depth = len(fused.outer)
    groups, current = [], []
    for node in fused.nodes:
        if node.is_reduction() and len(node.ranges) > depth:
            if current:
                groups.append((current, fused.outer))
                current = []
            groups.append(([node], tuple(node.ranges)))
        else:
            current.append(node)
    if current:
        groups.append((current, fused.outer))
    return groups


def plan_bodies(nodes, outer):
    """The TritonBody of each node, for a kernel whose x dimension is ``outer`` flattened.
    Nodes without elements have no body."""
    depth = len(outer)
    xvar = Var("xindex", math.prod(outer))
    outer_index = unflatten(Expr.of(xvar), list(outer))
    bodies = []
    for node in nodes:
        if math.prod(node.ranges) == 0:
            continue
        own = list(node.reduction_ranges) if node.is_reduction() else list(node.ranges[depth:])
        rnumel = math.prod(own) if node.is_reduction() or math.prod(own) > 1 else None
        own_index = [Expr()] * len(own) if rnumel is None else unflatten(Expr.of(Var("rindex", rnumel)), own)
        if node.is_reduction():
            bodies.append(TritonBody(node, outer_index, own_index, rnumel))
        else:
            bodies.append(TritonBody(node, outer_index + own_index, [], rnumel))
    return xvar, bodies


def _substitution(body):
    """Node variables -> kernel expressions, for the node's dependencies."""
    mapping = dict(zip(body.node.index, body.index))
    mapping.update(zip(body.node.rindex, body.rindex))
    return mapping


class TritonKernel(Kernel):
    """Generates one ``@triton.jit`` function; the ops handler of its bodies.

    What the reduction functions below use (and assignment a09's, in their place):
    ``persistent``; ``compute(body)``, the body's value for the current tile; ``rmask(body)``;
    ``new_var(expr, dtype, dims)`` and ``new_name()``; ``writeline(line)``;
    ``reduction_loop(body)``; ``rindex_int64()``; ``ensure_tensor(value)``;
    ``rounded(expr, dtype)``; ``use_helper(name)``; ``store_result(body, value)``.
    """

    def __init__(self, nodes, outer, dtypes, local_buffers, local_readers, size_params=()):
        super().__init__()
        self.size_params = list(size_params)  # the size symbols, arguments of every kernel
        self.body = IndentedBuffer(indent="    ")
        self.name = "kernel"
        self.dtypes = dtypes  # buffer name -> dtype
        self.xvar, self.bodies = plan_bodies(nodes, outer)
        self.xnumel = self.xvar.size
        rows = [b.rnumel for b in self.bodies if b.rnumel is not None]
        self.tiled = bool(rows)  # 2-D [XBLOCK, RBLOCK] tiles
        self.rnumel = size_max(rows) if rows else 0
        self.persistent = self.tiled and self._fits_in_one_block(self.rnumel)
        self.register_locals = self._choose_register_locals(local_buffers, local_readers)
        self.registers = {}  # register-local buffer name -> its value
        self.args = {}  # pointer argument name -> True if written, in order of first use
        self.helpers = set()
        self.uses_error_flag = False
        self._masks = []  # conditions of the enclosing ops.masked calls
        self._current = None  # the TritonBody being generated
        self._rmasks = {}  # row size -> name of its mask in the current scope
        self._indirect_dims = {}  # gather index variable -> dims of its value

    @staticmethod
    def _fits_in_one_block(rnumel):
        """A row that one RBLOCK covers (for a symbolic row: for the traced size, then a guard;
        the launcher picks RBLOCK for each call's size)."""
        if isinstance(rnumel, SymbolicSize):
            return rnumel <= PERSISTENT_REDUCTION_MAX
        return _next_power_of_2(rnumel) <= PERSISTENT_REDUCTION_MAX

    @property
    def kind(self):
        """TorchInductor's kernel name prefixes: pointwise, persistent reduction, reduction."""
        return "poi" if not self.tiled else "per" if self.persistent else "red"

    # ------------------------------------------------------------------ planning

    def _choose_register_locals(self, local_buffers, local_readers):
        """The local buffers whose values can stay in registers (see the module docstring)."""
        members = {b.name: b for b in self.bodies}
        chosen = set()
        for name, elements in local_buffers.items():
            if name not in members or not local_readers.get(name, set()) <= set(members):
                continue
            if elements == 1 or self._read_in_place(members[name], local_readers[name], members):
                chosen.add(name)
        return chosen

    def _read_in_place(self, writer, readers, members):
        """True if a row buffer is written and read at the same rindex in a persistent kernel."""
        if not self.persistent or writer.node.is_reduction() or writer.rnumel is None:
            return False
        at_rindex = Expr.of(Var("rindex", writer.rnumel))
        if self._local(writer.node.read_writes.writes[0].index, writer) != at_rindex:
            return False
        for reader_name in readers:
            reader = members[reader_name]
            for dep in reader.node.read_writes.reads:
                if dep.name == writer.name and (not isinstance(dep, MemoryDep)
                                                or not known_equal(reader.rnumel, writer.rnumel)
                                                or self._local(dep.index, reader) != at_rindex):
                    return False
        return True

    def _local(self, index, body):
        """``index`` (in the node's variables) within one x iteration, in kernel variables."""
        return index.subs(_substitution(body)).subs({self.xvar: 0})

    # ------------------------------------------------------------------ shapes and masks

    def shape(self, dims):
        """The tile shape of a value varying along ``dims``."""
        if not self.tiled:
            return "[XBLOCK]" if "x" in dims else "[1]"
        return f"[{'XBLOCK' if 'x' in dims else '1'}, {'RBLOCK' if 'r' in dims else '1'}]"

    def body_dims(self, body=None):
        """The dims of a body's tile: a pointwise body over a row has ``{"x", "r"}``."""
        body = body or self._current
        return frozenset({"x"} if body.rnumel is None else {"x", "r"})

    def output_dims(self, body=None):
        """The dims of a body's stores: a reduction stores one value per x."""
        body = body or self._current
        return frozenset({"x"}) if body.node.is_reduction() else self.body_dims(body)

    def index_dims(self, index):
        """The dims an index expression varies along (a gather's index: those of its value)."""
        dims = set()
        for var in index.free_vars():
            if var.name == "xindex":
                dims.add("x")
            elif var.name == "rindex":
                dims.add("r")
            elif var.indirect:
                dims |= self._indirect_dims[var.name]
        return frozenset(dims)

    def rmask(self, body=None):
        """The name of the mask ``rindex < rnumel`` of a body's row."""
        body = body or self._current
        if body.rnumel not in self._rmasks:
            same = known_equal(body.rnumel, self.rnumel)
            name = "rmask" if same else f"rmask{body.rnumel}" if isinstance(body.rnumel, int) \
                else f"rmask_{len(self._rmasks)}"
            numel = "rnumel" if same else pysize(body.rnumel)
            self.writeline(f"{name} = rindex < {numel}")
            self._rmasks[body.rnumel] = name
        return self._rmasks[body.rnumel]

    def mask(self, dims, extra=True):
        """The lanes that are in range along ``dims`` (and inside the enclosing ops.masked)."""
        parts = []
        if "x" in dims:
            parts.append("xmask")
        if "r" in dims:
            parts.append(self.rmask())
        if extra:
            parts += [str(m) for m in self._masks]
        return " & ".join(parts)

    def mask_dims(self):
        """The dims the conditions of the enclosing ops.masked calls vary along."""
        dims = set()
        for m in self._masks:
            dims |= m.dims
        return dims

    # ------------------------------------------------------------------ values

    def writeline(self, line):
        """Append a line to the kernel, at the current indentation (inside a loop: in it)."""
        self.body.writeline(line)

    def new_var(self, expr, dtype, dims):
        """``tmpN = expr``, a value of ``dtype`` varying along ``dims``; or the variable that
        already holds the same expression (common subexpression elimination)."""
        key = (expr, dtype)
        if key not in self._cache:
            var = TritonCSEVariable(self.new_name(), dtype, dims)
            self.writeline(f"{var} = {expr}")
            self._cache[key] = var
        return self._cache[key]

    def ensure_tensor(self, x):
        """A literal as a typed tensor (a Python literal alone would be float32 or int32)."""
        if x.literal is None:
            return x
        return self.new_var(f"tl.full({self.shape(())}, {x.name}, {triton_type(compute_dtype(x.dtype))})",
                            x.dtype, ())

    def use_helper(self, *names):
        """Copy these functions of ``runtime/triton_helpers.py`` into the kernel's file."""
        self.helpers.update(names)

    def rounded(self, expr, dtype):
        """A float32 result rounded to the precision of a 16-bit float dtype, as eager rounds
        each op's result (computing stays in float32)."""
        if dtype == torch.bfloat16:
            self.use_helper("round_to_bfloat16")
            return f"round_to_bfloat16({expr})"
        if dtype == torch.float16:
            return f"({expr}).to(tl.float16).to(tl.float32)"
        return expr

    # ------------------------------------------------------------------ the ops handler

    def load(self, name, index):
        """``tl.load`` of the elements ``index`` of buffer ``name``, masked along the dims the
        index varies along and by the enclosing ops.masked conditions (a local buffer kept in
        registers is simply its value)."""
        if name in self.register_locals:
            return self.registers[name]
        self.args.setdefault(name, False)
        dtype = self.dtypes[name]
        index_dims = self.index_dims(index)
        dims = index_dims | self.mask_dims()
        self.helpers |= helpers_in_index(index)
        addresses = pointer(name, index)
        if dims != index_dims or not dims:  # masked where the index does not vary, or a scalar
            addresses = f"tl.broadcast_to({addresses}, {self.shape(dims)})"
        mask = self.mask(index_dims)
        expr = f"tl.load({addresses}" + (f", {mask}, other=0)" if mask else ")")
        if dtype in LOW_PRECISION:
            expr += ".to(tl.float32)"
        return self.new_var(expr, dtype, dims)

    def store(self, name, index, value):
        """``tl.store`` of a body's value, for the lanes in range (a local buffer kept in
        registers just remembers the value)."""
        if name in self.register_locals:
            self.registers[name] = value
            return
        self.args[name] = True
        self.helpers |= helpers_in_index(index)
        dims = self.output_dims()
        addresses = pointer(name, index)
        if self.index_dims(index) != dims:
            addresses = f"tl.broadcast_to({addresses}, {self.shape(dims)})"
        value = self.ensure_tensor(value)
        self.writeline(f"tl.store({addresses}, {value}, {self.mask(dims, extra=False)})")

    def constant(self, value, dtype):
        """A Python literal of ``dtype`` (typed by the tensor it meets; see ensure_tensor), or a
        size computed from the kernel's size arguments (a mean divides by it)."""
        if isinstance(value, SymbolicSize):
            if not value.expr.is_integer:
                raise SymbolicShapeError(f"the Triton generator computes no float size such as {value!r}")
            return self.new_var(f"tl.full({self.shape(())}, {pysize(value)}, "
                                f"{triton_type(compute_dtype(dtype))})", dtype, ())
        return TritonCSEVariable(triton_literal(value, dtype), dtype, (), literal=value)

    def index_expr(self, expr, dtype):
        expr = Expr.of(expr)
        self.helpers |= helpers_in_index(expr)
        dims = self.index_dims(expr)
        text = texpr(expr) if dims else f"tl.full({self.shape(())}, {texpr(expr)}, tl.int64)"
        return self.new_var(f"({text}).to({triton_type(compute_dtype(dtype))})", dtype, dims)

    def to_dtype(self, x, dtype):
        if x.dtype == dtype:
            return x
        x = self.ensure_tensor(x)
        if dtype == torch.bool:
            return self.new_var(f"{x} != 0", dtype, x.dims)
        target = compute_dtype(dtype)
        if compute_dtype(x.dtype) == target and dtype not in LOW_PRECISION:  # bfloat16 -> float32
            return TritonCSEVariable(x.name, dtype, x.dims)
        expr = f"{x}.to({triton_type(target)})" if compute_dtype(x.dtype) != target else str(x)
        return self.new_var(self.rounded(expr, dtype), dtype, x.dims)

    def indirect_indexing(self, x, size):
        """A gather's index: checked (error 1 if out of bounds), and never used out of bounds."""
        x = self.ensure_tensor(x)
        self.use_helper("check_index")
        self.uses_error_flag = True
        mask = self.mask(x.dims) or "True"
        var = self.new_var(f"check_index({x}.to(tl.int64), {size}, {mask}, error_flag)", torch.int64, x.dims)
        self._indirect_dims[var.name] = x.dims
        return Var(var.name, size, indirect=True)

    def masked(self, mask, body, other):
        """``body()`` where ``mask`` holds; its loads are masked with it (they may be out of
        bounds elsewhere), and ``other`` is the value elsewhere."""
        self._masks.append(mask)
        try:
            result = self.ensure_tensor(body())
        finally:
            self._masks.pop()
        return self.new_var(f"tl.where({mask}, {result}, {triton_literal(other, result.dtype)})",
                            result.dtype, mask.dims | result.dims)

    def div(self, a, b):
        if _is_float(a):
            return self._pointwise("div", a, b)
        return self._checked_integer_op("div_trunc_int", a, b)

    def fmod(self, a, b):
        if _is_float(a):
            return self._pointwise("fmod", a, b)
        return self._checked_integer_op("fmod_int", a, b)

    def _checked_integer_op(self, helper, a, b):
        a, b = self.ensure_tensor(a), self.ensure_tensor(b)
        self.use_helper(helper)
        self.uses_error_flag = True
        mask = self.mask(b.dims) or "True"
        return self.new_var(f"{helper}({a}, {b}, {mask}, error_flag)", a.dtype, a.dims | b.dims)

    def pow(self, a, b):
        if not _is_float(a):
            a, b = self.ensure_tensor(a), self.ensure_tensor(b)
            self.use_helper("pow_int")
            return self.new_var(f"pow_int({a}, {b})", a.dtype, a.dims | b.dims)
        if b.literal is not None and float(b.literal) in POW_SPECIAL:
            expr = POW_SPECIAL[float(b.literal)].format(a=a, sqrt=_sqrt(a))
            return self.new_var(self.rounded(expr, a.dtype), a.dtype, a.dims)
        a, b = self.ensure_tensor(a), self.ensure_tensor(b)
        self.use_helper("pow_float")
        expr = f"pow_float({a}.to(tl.float64), {b}.to(tl.float64))"  # float64: exp2(b*log2(a)) is exact enough
        if a.dtype != torch.float64:
            expr += ".to(tl.float32)"
        return self.new_var(self.rounded(expr, a.dtype), a.dtype, a.dims | b.dims)

    def __getattr__(self, name):
        if name.startswith("_") or not hasattr(TritonOverrides, name):
            raise AttributeError(name)
        return lambda *args: self._pointwise(name, *args)

    def _pointwise(self, name, *args):
        first = 1 if name == "where" else 0  # the operand that gives the result's dtype
        if all(a.literal is not None for a in args[first:]):  # Python literals alone: float32 or int32
            args = (*args[:first], self.ensure_tensor(args[first]), *args[first + 1:])
        result = getattr(TritonOverrides, name)(*args)
        if isinstance(result, tuple) and any(a.literal is not None for a in args):
            args = [self.ensure_tensor(a) for a in args]  # a helper's arguments are tensors
            result = getattr(TritonOverrides, name)(*args)
        expr, helpers = result if isinstance(result, tuple) else (result, ())
        self.helpers.update(helpers)
        dtype = torch.bool if name in _COMPARISONS else args[first].dtype
        dims = frozenset().union(*(a.dims for a in args))
        return self.new_var(self.rounded(expr, dtype), dtype, dims)

    # ------------------------------------------------------------------ bodies

    def compute(self, body=None):
        """Run a body's inner_fn under this handler: the value it computes for the current tile."""
        body = body or self._current
        with V.set_ops_handler(self):
            if body.node.is_reduction():
                return body.data.inner_fn(body.index, body.rindex)
            return body.data.inner_fn(body.index)

    def store_result(self, body, value):
        """Store a body's value (a reduction's result, or a pointwise value) into its buffer."""
        self.store(body.name, body.node.buffer.store_index(body.index), value)

    @contextlib.contextmanager
    def reduction_loop(self, body=None):
        """``for roffset in range(0, rnumel, RBLOCK):`` over a body's row (a looped kernel)."""
        body = body or self._current
        numel = "rnumel" if known_equal(body.rnumel, self.rnumel) else pysize(body.rnumel)
        self.writeline(f"for roffset in range(0, {numel}, RBLOCK):")
        saved_rmasks, saved_cache = self._rmasks, dict(self._cache)
        with self.body.indent():
            self.writeline("rindex = roffset + rbase")
            self._rmasks = {}
            try:
                yield
            finally:
                self._rmasks, self._cache = saved_rmasks, saved_cache

    def rindex_int64(self):
        """The position of each lane in the row, as int64 (the indices an argmax returns)."""
        return self.new_var("rindex.to(tl.int64)", torch.int64, {"r"})

    def _pointwise_body(self, body):
        self.store_result(body, self.compute(body))

    def _codegen_body(self, body):
        self._current = body
        self.writeline(f"# {body.node.describe()}")
        if body.node.is_reduction() and body.rnumel == 0:  # a sum or product of nothing
            self.store_result(body, self.constant(0 if body.reduction_type == "sum" else 1, body.dtype))
        elif body.node.is_reduction():
            codegen_reduction(self, body)
        elif body.rnumel is not None and not self.persistent:
            with self.reduction_loop(body):
                self._pointwise_body(body)
        else:
            self._pointwise_body(body)
        if body.name in self.args and self._read_later(body):
            self.writeline("tl.debug_barrier()")  # its rows are read back by other threads

    def _read_later(self, writer):
        later = self.bodies[self.bodies.index(writer) + 1:]
        return any(writer.name in b.node.read_names() for b in later)

    # ------------------------------------------------------------------ the function

    def codegen(self):
        """The ``@triton.jit`` function, as text."""
        self._header()
        for body in self.bodies:
            self._codegen_body(body)
        params = list(self.args) + (["error_flag"] if self.uses_error_flag else []) + self.size_params
        params += ["XBLOCK: tl.constexpr"] + (["RBLOCK: tl.constexpr"] if self.tiled else [])
        code = IndentedBuffer(indent="    ")
        code.writeline("@triton.jit")
        code.writeline(f"def {self.name}({', '.join(params)}):")
        code.lines += ["    " + line if line else line for line in self.body.lines]
        return code.getvalue()

    def _header(self):
        index_type = ".to(tl.int64)" if self._needs_int64() else ""
        self.writeline(f"xnumel = {pysize(self.xnumel)}")
        if self.tiled:
            self.writeline(f"rnumel = {pysize(self.rnumel)}")
        self.writeline(f"xoffset = tl.program_id(0){index_type} * XBLOCK")
        self.writeline(f"xindex = xoffset + tl.arange(0, XBLOCK){'[:, None]' if self.tiled else ''}")
        self.writeline("xmask = xindex < xnumel")
        if self.tiled:
            self.writeline(f"rbase = tl.arange(0, RBLOCK)[None, :]{index_type}")
            if self.persistent:
                self.writeline("rindex = rbase")
                self.writeline("rmask = rindex < rnumel")
                self._rmasks[self.rnumel] = "rmask"

    def _needs_int64(self):
        """Index arithmetic is int32 unless some index may not fit in an int32."""
        highest = self.xnumel * size_max([self.rnumel, 1])
        for body in self.bodies:
            mapping = _substitution(body)
            rw = body.node.read_writes
            for dep in rw.reads + rw.writes:
                if isinstance(dep, MemoryDep):
                    highest = size_max([highest, dep.index.subs(mapping).bounds()[1]])
        return highest > INT32_MAX


def known_equal(a, b):
    """Two row sizes that are equal for every size (no guard: different rows get their own mask)."""
    return known(sympy.Eq, a, b)


def _next_power_of_2(n):
    return 1 << max(n - 1, 0).bit_length()


# --------------------------------------------------------------------------- reductions


def reduction_identity(reduction_type, dtype):
    """The value a reduction starts from, as Triton source: the lanes past the end of a row hold
    it, so that they change nothing. ``dtype`` is the dtype of the values reduced."""
    if reduction_type == "sum":
        return "0"
    if reduction_type == "prod":
        return "1"
    largest = reduction_type in ("min", "argmin")
    if dtype == torch.bool:
        return "1" if largest else "0"  # bools are reduced as int8
    if dtype.is_floating_point:
        return 'float("inf")' if largest else 'float("-inf")'
    info = torch.iinfo(dtype)
    return str(info.max if largest else info.min)


def accumulator_dtype(reduction_type, dtype):
    """What values of ``dtype`` are reduced in: int64 for integer sums and products (wrapped back
    to the dtype at the end, as torch does), int8 for bools, float32 for 16-bit floats."""
    if dtype == torch.bool:
        return torch.int8
    if reduction_type in ("sum", "prod") and not dtype.is_floating_point:
        return torch.int64
    return compute_dtype(dtype)


def codegen_reduction(kernel, body):
    """Write the code of one reduction body into ``kernel``, and store its result (one value per
    row). The three functions it calls are the pieces of assignment a09."""
    if body.reduction_type.startswith("arg"):
        result = arg_reduction(kernel, body)
    elif kernel.persistent:
        result = persistent_reduction(kernel, body)
    else:
        result = looped_reduction(kernel, body)
    kernel.store_result(body, result)


def persistent_reduction(kernel, body):
    """A whole row is one tile: put the identity in the lanes past its end and reduce the tile
    along axis 1. Returns the result, one value per row (``[XBLOCK, 1]``)."""
    return _reduce_tile(kernel, body, _reduction_input(kernel, body))


def looped_reduction(kernel, body):
    """Loop over the row in chunks of RBLOCK, folding each chunk into a tile of partial results,
    lane by lane; reduce that tile along axis 1 after the loop."""
    acc = kernel.new_name("acc")
    acc_type = triton_type(accumulator_dtype(body.reduction_type, body.src_dtype))
    kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], "
                     f"{reduction_identity(body.reduction_type, body.src_dtype)}, {acc_type})")
    with kernel.reduction_loop(body):
        kernel.writeline(_combine(kernel, body.reduction_type, acc, _reduction_input(kernel, body)))
    return _reduce_tile(kernel, body, TritonCSEVariable(acc, body.src_dtype, {"x", "r"}))


def arg_reduction(kernel, body):
    """argmax/argmin: the index (in the row) of the first best value, or of the first nan. A
    persistent kernel reduces the row's values with their indices, ``rindex``. A looped one keeps
    each lane's best value so far and its index, and reduces those after the loop."""
    rtype = body.reduction_type
    if kernel.persistent:
        values, indices = _reduction_input(kernel, body), kernel.rindex_int64()
    else:
        acc = kernel.new_name("acc")
        acc_type = triton_type(accumulator_dtype(rtype, body.src_dtype))
        kernel.writeline(f"{acc} = tl.full([XBLOCK, RBLOCK], {reduction_identity(rtype, body.src_dtype)}, "
                         f"{acc_type})")
        kernel.writeline(f"{acc}_index = tl.zeros([XBLOCK, RBLOCK], tl.int64)")
        with kernel.reduction_loop(body):
            kernel.use_helper(f"{rtype}_update")
            value = _reduction_input(kernel, body)
            kernel.writeline(f"{acc}, {acc}_index = {rtype}_update({acc}, {acc}_index, {value}, "
                             f"{kernel.rindex_int64()})")
        values, indices = f"{acc}", f"{acc}_index"
    kernel.use_helper(f"{rtype}_first")
    return kernel.new_var(f"{rtype}_first({values}, {indices}, 1)[:, None]", torch.int64, {"x"})


def _reduction_input(kernel, body):
    """The tile of values to reduce: the body's value, as the accumulator type, broadcast to
    ``[XBLOCK, RBLOCK]`` (it may vary along x only, or be a constant), with the identity in the
    lanes past the end of the row."""
    value = kernel.ensure_tensor(kernel.compute(body))
    acc_type = triton_type(accumulator_dtype(body.reduction_type, body.src_dtype))
    expr = str(value)
    if triton_type(compute_dtype(value.dtype)) != acc_type:
        expr = f"{expr}.to({acc_type})"
    if value.dims != {"x", "r"}:
        expr = f"tl.broadcast_to({expr}, [XBLOCK, RBLOCK])"
    identity = reduction_identity(body.reduction_type, body.src_dtype)
    return kernel.new_var(f"tl.where({kernel.rmask(body)}, {expr}, {identity})", body.src_dtype, {"x", "r"})


def _combine(kernel, rtype, acc, values):
    """The line that folds a chunk of values into the accumulator tile, lane by lane."""
    if rtype == "sum":
        return f"{acc} = {acc} + {values}"
    if rtype == "prod":
        return f"{acc} = {acc} * {values}"
    helper = "maximum" if rtype == "max" else "minimum"  # nan-propagating, for floats
    kernel.use_helper(helper)
    return f"{acc} = {helper}({acc}, {values})"


def _reduce_tile(kernel, body, values):
    """Reduce a ``[XBLOCK, RBLOCK]`` tile along its rows: one value per row, ``[XBLOCK, 1]``."""
    rtype = body.reduction_type
    floating = body.src_dtype.is_floating_point
    if rtype == "sum":
        expr = f"tl.sum({values}, 1)"
    elif rtype == "prod":
        kernel.use_helper("multiply")
        expr = f"tl.reduce({values}, 1, multiply)"
    elif floating:
        kernel.use_helper(f"{rtype}_propagate_nan")
        expr = f"{rtype}_propagate_nan({values}, 1)"
    else:
        expr = f"tl.{rtype}({values}, 1)"
    result = f"{expr}[:, None]"
    if body.dtype == torch.bool:
        result = f"{result} != 0"
    elif not floating:
        # integer sums were made in int64 and tl.max in int32 at least: back to the dtype
        # (which wraps, as torch's integer sums do)
        result = f"{result}.to({triton_type(body.dtype)})"
    return kernel.new_var(kernel.rounded(result, body.dtype), body.dtype, {"x"})


# --------------------------------------------------------------------------- the kernels of a graph


class TritonKernelSource(typing.NamedTuple):
    """A generated kernel: the file's source and what its launcher needs to know."""

    name: str
    source: str
    args: list  # pointer arguments (buffer names), then "error_flag" if it checks errors
    written: list  # the buffers it writes
    xnumel: int  # (a SymbolicSize when the graph's sizes are symbolic)
    rnumel: int  # the longest row (0 for a pointwise kernel)
    kind: str  # "poi" (pointwise), "per" (persistent reduction) or "red" (looped reduction)
    size_params: list  # the size symbols it takes after ``args``


FILE_HEADER = "import triton\nimport triton.language as tl\n"


def kernel_file(kernel, kernel_source):
    """The text of a kernel's file: imports, the helpers it calls, the kernel."""
    parts = [FILE_HEADER]
    for name in _helper_closure(kernel.helpers):
        parts.append("\n@triton.jit\n" + inspect.getsource(getattr(triton_helpers, name)))
    parts.append("\n" + kernel_source)
    return "\n".join(parts)


def _helper_closure(names):
    """The helpers and the helpers they call, in the order they are defined in triton_helpers."""
    defined = [n for n, f in vars(triton_helpers).items() if inspect.isfunction(f)]
    found = set(names)
    for name in list(found):
        source = inspect.getsource(getattr(triton_helpers, name))
        found |= {n for n in defined if n != name and re.search(rf"\b{n}\(", source)}
    return [n for n in defined if n in found]


class TritonScheduling:
    """Turns the scheduled kernels of a graph into Triton kernels, one file each."""

    def __init__(self, scheduler, dtypes, size_params=()):
        self.scheduler = scheduler
        self.dtypes = dtypes
        self.size_params = list(size_params)

    def codegen(self):
        """scheduler kernel position -> list of TritonKernelSource (fused kernels only)."""
        kernels = {}
        count = 0
        readers = self._local_readers()
        for pos, fused in enumerate(self.scheduler.kernels):
            if not isinstance(fused, FusedSchedulerNode):
                continue
            kernels[pos] = []
            for nodes, outer in triton_groups(fused):
                kernel = self._make_kernel(count, nodes, outer, fused, readers[pos])
                if kernel.xnumel and kernel.bodies:  # else there is nothing to compute
                    kernels[pos].append(self._generate(kernel))
                    count += 1
        return kernels

    def _make_kernel(self, count, nodes, outer, fused, readers):
        kernel = TritonKernel(nodes, outer, self.dtypes, fused.local_buffers, readers, self.size_params)
        kernel.name = f"triton_{kernel.kind}_{count}"
        return kernel

    def _local_readers(self):
        """kernel position -> {local buffer name -> names of the nodes that read it}."""
        result = {}
        for pos, fused in enumerate(self.scheduler.kernels):
            if isinstance(fused, FusedSchedulerNode):
                result[pos] = {name: {n.name for n in fused.nodes if name in n.read_names()}
                               for name in fused.local_buffers}
        return result

    def _generate(self, kernel):
        source = kernel.codegen()
        args = list(kernel.args) + (["error_flag"] if kernel.uses_error_flag else [])
        written = [name for name, is_written in kernel.args.items() if is_written]
        return TritonKernelSource(kernel.name, kernel_file(kernel, source), args, written,
                                  kernel.xnumel, kernel.rnumel, kernel.kind, self.size_params)
