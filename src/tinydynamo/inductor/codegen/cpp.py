"""C++/OpenMP code generation for CPU tensors (chapter 10, "C++ code generation").

Each FusedSchedulerNode becomes one C++ function (:class:`CppKernel`):

    static void kernel0(const float* __restrict__ arg0_x, float* __restrict__ buf2) {
      #pragma omp parallel for
      for (int64_t x0 = 0; x0 < 4096; ++x0) {     // outer loops: shared, parallel
        float buf0;                                // a local buffer (the row max)
        float acc0 = -inf;                         // a reduction body
        #pragma omp simd reduction(max:acc0) ...
        for (int64_t r0 = 0; r0 < 1024; ++r0) { ... }
        buf0 = acc0;
        float acc1 = 0;                            // a loop group: a pointwise body (exp) and
        #pragma omp simd reduction(+:acc1)         // the reduction that reads it (the row sum)
        for (int64_t x1 = 0; x1 < 1024; ++x1) { ... buf2[1024*x0 + x1] = tmp3; ... }
        ...                                        // exp(x - max) went to the output's row
        for (int64_t x1 = 0; x1 < 1024; ++x1) { ... buf2[1024*x0 + x1] = tmp6 * tmp5; }
      }
    }

Consecutive kernels are called, in order, by one ``extern "C"`` entry point (a *segment*); the
Python wrapper calls a segment with ctypes and makes the extern calls (matmul, convolution,
random numbers: ATen ops) between segments. A graph without extern kernels is therefore one
foreign call. Why segments rather than one entry point that calls back into Python for each
extern: a callback would need the GIL, would wrap raw pointers back into tensors, and would tie
the C++ to Python's C API; a segment boundary costs one ctypes call, and the C++ stays plain.

The kernel class is the ops handler its loop bodies run under: ``ops.exp(x)`` becomes the line
``float tmp3 = expf(tmp2);`` (the expression strings come from :class:`CppOverrides`).
"""
import contextlib
import math
import re
import typing

import numpy as np
import torch

from ..codecache import prelude
from ..dependencies import MemoryDep
from ..indexing import Expr, Var, contiguous_strides
from ..scheduler import FusedSchedulerNode
from ..sizevars import SymbolicSize, same_sizes, size_max
from ..virtualized import V
from .common import CSEVariable, IndentedBuffer, Kernel, simplify_loops

# Parallelize a kernel's outer loop when it touches at least this many elements.
PARALLEL_MIN_ELEMENTS = 32768
# The pointer to the error flag of the running call, in every kernel that can find an error (an
# index out of range, an integer division by zero): the prelude's checking helpers write to it.
ERROR_FLAG = "td_error"

STORAGE_CTYPES = {
    torch.float32: "float", torch.float64: "double", torch.float16: "_Float16",
    torch.bfloat16: "td_bfloat16", torch.int64: "int64_t", torch.int32: "int32_t",
    # bool is stored as uint8_t (torch's layout too): GCC does not vectorize loads of C++ bool
    torch.int16: "int16_t", torch.int8: "int8_t", torch.uint8: "uint8_t", torch.bool: "uint8_t",
}
ROUND_TO = {torch.float16: "td_round_f16", torch.bfloat16: "td_round_bf16"}


def compute_ctype(dtype):
    """The C type values of ``dtype`` are computed in: float for 16-bit floats, bool for bool."""
    if dtype == torch.bool:
        return "bool"
    return "float" if dtype in ROUND_TO else STORAGE_CTYPES[dtype]


def load_expr(dtype, ref):
    if dtype == torch.bfloat16:
        return f"td_bf16_to_float({ref})"
    if dtype == torch.float16:
        return f"static_cast<float>({ref})"
    return ref


def store_expr(dtype, value):
    if dtype == torch.bfloat16:
        return f"td_float_to_bf16({value})"
    if dtype == torch.float16:
        return f"static_cast<_Float16>({value})"
    return str(value)


def cpp_literal(value, dtype):
    """A C++ literal for a Python scalar used as a value of ``dtype``."""
    if dtype == torch.bool:
        return "true" if value else "false"
    if not dtype.is_floating_point:
        value = int(value)
        if value == -2 ** 63:
            return "(-9223372036854775807L - 1)"
        return f"{value}L" if abs(value) >= 2 ** 31 else str(value)
    ctype = compute_ctype(dtype)
    value = torch.tensor(float(value), dtype=dtype).item()  # rounded to dtype's precision
    if math.isnan(value):
        return f"std::numeric_limits<{ctype}>::quiet_NaN()"
    if math.isinf(value):
        return f"{'-' if value < 0 else ''}std::numeric_limits<{ctype}>::infinity()"
    text = str(np.float32(value)) if ctype == "float" else repr(value)
    if "." not in text and "e" not in text:
        text += ".0"
    return text + ("f" if ctype == "float" else "")


def _p(x):
    """Parenthesize a negative literal operand."""
    text = str(x)
    return f"({text})" if text.startswith("-") else text


def parallel_clause(outer, work):
    """Whether to run ``outer`` iterations of ``work`` elements each in parallel: "" (yes), None
    (no), or, when the sizes are symbolic, the OpenMP clause `` if(...)`` that decides at run
    time: a heuristic needs no guard."""
    if not outer > 1:
        return None
    total = outer * work
    if isinstance(total, int):
        return "" if total >= PARALLEL_MIN_ELEMENTS else None
    return f" if({total} >= {PARALLEL_MIN_ELEMENTS})"


_PARALLEL_IF = re.compile(r" if\((.*)\)$")


def branch_on_parallelism(lines):
    """A kernel whose parallelism depends on symbolic sizes (``omp parallel for if(s0 >= 32768)``)
    becomes two copies of its loops, parallel and serial, chosen at run time: an OpenMP ``if``
    clause that is false still starts a team of threads, which costs more than a small loop."""
    conditions = {match.group(1) for line in lines if (match := _PARALLEL_IF.search(line))}
    if len(conditions) != 1:
        return lines
    condition = conditions.pop()
    parallel = [line.replace(f" if({condition})", "") for line in lines]
    indent = lambda block: ["  " + line if line else line for line in block]  # noqa: E731
    return [f"if ({condition}) {{", *indent(parallel), "} else {", *indent(serial_loops(parallel)), "}"]


def serial_loops(lines):
    """``lines`` with their parallel pragmas made serial: a ``parallel for simd`` loop stays a
    simd loop, a ``parallel for`` loop becomes a plain loop."""
    serial = []
    for line in lines:
        if "#pragma omp parallel for" in line:
            if "simd" not in line:
                continue
            line = line.replace("parallel for simd", "simd")
        serial.append(line)
    return serial


def _is_float(x):
    return x.dtype.is_floating_point


def _math(name, x):
    """A C math function in x's precision: ``expf`` for float, ``exp`` for double."""
    return f"{name}{'f' if compute_ctype(x.dtype) == 'float' else ''}({x})"


def _one(x):
    return "1.0f" if compute_ctype(x.dtype) == "float" else "1.0"


class CppOverrides:
    """The C++ expression for each pointwise op, given its operands (CSEVariables)."""

    @staticmethod
    def abs(x):
        return f"std::abs({x})"

    @staticmethod
    def neg(x):
        return f"-{_p(x)}"

    @staticmethod
    def exp(x):
        return _math("td_exp", x)  # the prelude's exp, without glibc's slow path for tiny results

    @staticmethod
    def log(x):
        return _math("log", x)

    @staticmethod
    def log1p(x):
        return _math("log1p", x)

    @staticmethod
    def expm1(x):
        return _math("expm1", x)

    @staticmethod
    def sin(x):
        return _math("sin", x)

    @staticmethod
    def cos(x):
        return _math("cos", x)

    @staticmethod
    def tanh(x):
        return _math("tanh", x)

    @staticmethod
    def erf(x):
        return _math("erf", x)

    @staticmethod
    def sqrt(x):
        return f"std::sqrt({x})"

    @staticmethod
    def rsqrt(x):
        return f"{_one(x)} / std::sqrt({x})"

    @staticmethod
    def reciprocal(x):
        return f"{_one(x)} / {_p(x)}"

    @staticmethod
    def floor(x):
        return f"std::floor({x})" if _is_float(x) else str(x)

    @staticmethod
    def ceil(x):
        return f"std::ceil({x})" if _is_float(x) else str(x)

    @staticmethod
    def trunc(x):
        return f"std::trunc({x})" if _is_float(x) else str(x)

    @staticmethod
    def round(x):
        return f"std::nearbyint({x})" if _is_float(x) else str(x)  # halves to even

    @staticmethod
    def sign(x):
        if _is_float(x):
            return f"td_sign({x})"
        return f"static_cast<{compute_ctype(x.dtype)}>(({x} > 0) - ({x} < 0))"

    @staticmethod
    def bitwise_not(x):
        return f"!{x}" if x.dtype == torch.bool else f"~{_p(x)}"

    @staticmethod
    def add(a, b):
        return f"{a} || {b}" if a.dtype == torch.bool else f"{_p(a)} + {_p(b)}"

    @staticmethod
    def sub(a, b):
        return f"{_p(a)} - {_p(b)}"

    @staticmethod
    def mul(a, b):
        return f"{a} && {b}" if a.dtype == torch.bool else f"{_p(a)} * {_p(b)}"

    @staticmethod
    def div(a, b):
        if _is_float(a):
            return f"{_p(a)} / {_p(b)}"
        return f"td_div_trunc<{compute_ctype(a.dtype)}>({a}, {b}, {ERROR_FLAG})"

    @staticmethod
    def fmod(a, b):
        if _is_float(a):
            return f"std::fmod({a}, {b})"
        return f"td_fmod_int<{compute_ctype(a.dtype)}>({a}, {b}, {ERROR_FLAG})"

    @staticmethod
    def pow(a, b):
        if not _is_float(a):
            return f"td_ipow<{compute_ctype(a.dtype)}>({a}, {b})"
        # torch computes these constant exponents without pow (sqrt(-inf) is nan, pow's is inf)
        special = {0.5: f"std::sqrt({a})", -0.5: f"{_one(a)} / std::sqrt({a})", -1.0: f"{_one(a)} / {a}",
                   2.0: f"{a} * {a}", 3.0: f"{a} * {a} * {a}", -2.0: f"{_one(a)} / ({a} * {a})"}
        if getattr(b, "value", None) in special:
            return special[b.value]
        return f"pow{'f' if compute_ctype(a.dtype) == 'float' else ''}({a}, {b})"

    @staticmethod
    def maximum(a, b):
        if a.dtype == torch.bool:
            return f"{a} || {b}"
        if _is_float(a):
            return f"td_maximum({a}, {b})"
        return f"std::max<{compute_ctype(a.dtype)}>({a}, {b})"

    @staticmethod
    def minimum(a, b):
        if a.dtype == torch.bool:
            return f"{a} && {b}"
        if _is_float(a):
            return f"td_minimum({a}, {b})"
        return f"std::min<{compute_ctype(a.dtype)}>({a}, {b})"

    @staticmethod
    def bitwise_and(a, b):
        return f"{a} && {b}" if a.dtype == torch.bool else f"{_p(a)} & {_p(b)}"

    @staticmethod
    def bitwise_or(a, b):
        return f"{a} || {b}" if a.dtype == torch.bool else f"{_p(a)} | {_p(b)}"

    @staticmethod
    def bitwise_xor(a, b):
        return f"{a} != {b}" if a.dtype == torch.bool else f"{_p(a)} ^ {_p(b)}"

    @staticmethod
    def eq(a, b):
        return f"{_p(a)} == {_p(b)}"

    @staticmethod
    def ne(a, b):
        return f"{_p(a)} != {_p(b)}"

    @staticmethod
    def lt(a, b):
        return f"{_p(a)} < {_p(b)}"

    @staticmethod
    def le(a, b):
        return f"{_p(a)} <= {_p(b)}"

    @staticmethod
    def gt(a, b):
        return f"{_p(a)} > {_p(b)}"

    @staticmethod
    def ge(a, b):
        return f"{_p(a)} >= {_p(b)}"

    @staticmethod
    def where(pred, a, b):
        return f"{pred} ? {_p(a)} : {_p(b)}"

    @staticmethod
    def to_dtype(x, dtype):
        if _is_float(x) and not (dtype.is_floating_point or dtype == torch.bool):  # NaN, inf, 3e9
            return f"td_float_to_int<{compute_ctype(dtype)}>({x})"
        converted = f"static_cast<{compute_ctype(dtype)}>({x})"
        return f"{ROUND_TO[dtype]}({converted})" if dtype in ROUND_TO else converted


_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


# --------------------------------------------------------------------------- reductions

_REDUCTION_CLAUSE = {"sum": "+", "prod": "*", "max": "max", "min": "min"}


def accumulator_ctype(reduction_type, dtype):
    """Sums and products of integers accumulate in int64 (then wrap to the dtype, as torch)."""
    if reduction_type in ("sum", "prod") and not dtype.is_floating_point:
        return "int64_t"
    return compute_ctype(dtype)


def _tracks_nan(data):
    """A float max or min remembers whether it saw a nan (OpenMP's max reduction drops it)."""
    return data.reduction_type in ("max", "min") and data.src_dtype.is_floating_point


def reduction_init(reduction_type, dtype):
    ctype = compute_ctype(dtype)
    if reduction_type == "sum":
        return "0"
    if reduction_type == "prod":
        return "1"
    largest = reduction_type in ("min", "argmin")
    if dtype == torch.bool:
        return "true" if largest else "false"
    if dtype.is_floating_point:
        return f"{'' if largest else '-'}std::numeric_limits<{ctype}>::infinity()"
    return f"std::numeric_limits<{ctype}>::{'max' if largest else 'lowest'}()"


class _Body(typing.NamedTuple):
    """One node's loops inside a kernel: its index in kernel variables, and its own loops."""

    node: object
    index: list  # the node's index (its x variables), as expressions in kernel variables
    rindex: list  # the same for its reduction variables
    inner_vars: list  # loops of its own inside the outer loops (not reduced)
    reduction_vars: list
    reads: dict  # buffer name -> the indices the node reads it at, in kernel variables (None: unknown)
    write: Expr  # the index the node stores at, in kernel variables

    @property
    def own_vars(self):
        return self.inner_vars + self.reduction_vars

    def can_share_loops(self):
        """A pointwise body, or a reduction over all of its own loops that needs no serial order."""
        return bool(self.own_vars) and not (self.node.is_reduction() and (
            self.inner_vars or self.node.buffer.data.reduction_type.startswith("arg")))

    def renamed(self, mapping):
        """The same body with its own loop variables replaced (``mapping``: Var -> Var)."""
        indices = {name: None if found is None else [i.subs(mapping) for i in found]
                   for name, found in self.reads.items()}
        own = [mapping.get(v, v) for v in self.own_vars]
        inner, reduction = own[:len(self.inner_vars)], own[len(self.inner_vars):]
        return _Body(self.node, [e.subs(mapping) for e in self.index], [e.subs(mapping) for e in self.rindex],
                     inner, reduction, indices, self.write.subs(mapping))


def _body_reads(node, mapping):
    reads = {}
    for dep in node.read_writes.reads:
        if isinstance(dep, MemoryDep):
            found = reads.setdefault(dep.name, [])
            if found is not None:
                found.append(dep.index.subs(mapping))
        else:
            reads[dep.name] = None
    return reads


def loop_groups(bodies):
    """Consecutive bodies that can run in one loop nest: the same own loops, and every value a body
    reads from an earlier member was stored in the same iteration (softmax's exponentials and their
    sum: one pass over the row instead of two). Each body comes renamed to its group's variables."""
    groups = []
    for body in bodies:
        group = groups[-1] if groups else None
        if group and group[0].can_share_loops() and body.can_share_loops() \
                and same_sizes([v.size for v in body.own_vars], [v.size for v in group[0].own_vars]):
            renamed = body.renamed(dict(zip(body.own_vars, group[0].own_vars)))
            if all(_reads_same_iteration(renamed, member) for member in group):
                group.append(renamed)
                continue
        groups.append([body])
    return groups


def _reads_same_iteration(body, member):
    """Whether every read by ``body`` of ``member``'s buffer is of the element stored in the same
    iteration (never of a reduction's result, which is complete only after the loop)."""
    name = member.node.name
    if name not in body.reads:
        return True
    found = body.reads[name]
    return found is not None and not member.node.is_reduction() and all(i == member.write for i in found)


def row_hosts(bodies, local, outer_vars, dtypes):
    """Local rows that can live in the row of an output instead of on the stack: local name ->
    (output name, the output's offset of the row, in outer variables).

    Softmax's exponentials are stored in a local row, then scaled into the output: on the stack,
    the output is written only in that last pass, which waits on every cache miss of its stores
    with nothing else to do. Stored in the output's own row (as ATen's kernel does), the misses
    come during the exp pass, hidden behind its arithmetic, and the last pass scales in place
    (0.75 of the time of softmax over (4096, 1024) on 2 threads). The output's pointwise body
    must store each element where it reads the local row's same element, lay its row out as the
    local row is, in the same dtype; and no body after it may read the local row, which it
    overwrites."""
    hosts, taken = {}, set()
    outer_zero = {v: 0 for v in outer_vars}
    for position, body in enumerate(bodies):
        name = body.node.name
        if local.get(name, 1) == 1 or dtypes[name] not in (torch.float32, torch.float64):
            continue
        host = _host_body(body, bodies[position + 1:], local, taken, outer_zero, dtypes)
        if host is not None:
            taken.add(host.node.name)
            hosts[name] = (host.node.name, host.write.subs({v: 0 for v in host.inner_vars}))
    return hosts


def _host_body(member, later, local, taken, outer_zero, dtypes):
    """The last body that reads ``member``'s local row, if it can hold that row (see row_hosts)."""
    name = member.node.name
    readers = [i for i, body in enumerate(later) if name in body.reads]
    if not readers:
        return None
    host = later[readers[-1]]
    if (host.node.is_reduction() or host.node.name in local or host.node.name in taken
            or dtypes[host.node.name] != dtypes[name]
            or any(host.node.name in body.reads for body in later)
            or not same_sizes([v.size for v in host.inner_vars], [v.size for v in member.inner_vars])):
        return None
    renamed = host.renamed(dict(zip(host.inner_vars, member.inner_vars)))
    row = renamed.write - renamed.write.subs({v: 0 for v in member.inner_vars})
    local_write = member.write.subs(outer_zero)
    if row != local_write or renamed.reads[name] is None:
        return None
    return host if all(i.subs(outer_zero) == local_write for i in renamed.reads[name]) else None


def _node_exprs(node):
    rw = node.read_writes
    deps = [d.index for d in rw.reads + rw.writes if isinstance(d, MemoryDep)]
    return deps + list(rw.index_exprs)


class CppKernel(Kernel):
    """Generates one C++ function for a FusedSchedulerNode; the ops handler of its bodies."""

    def __init__(self, name, fused, dtypes, size_params=()):
        super().__init__()
        self.name = name
        self.fused = fused
        self.dtypes = dtypes  # buffer name -> dtype, for every buffer of the graph
        self.size_params = list(size_params)  # the size symbols, int64_t arguments
        self.local = fused.local_buffers
        self.hosts = {}  # local row -> (output, offset): see row_hosts
        self.outer_vars = []
        self.args = {}  # buffer name -> True if written; in order of first use

    # ------------------------------------------------------------------ the ops handler

    def _declare(self, dtype):
        return lambda name, expr: f"{compute_ctype(dtype)} {name} = {expr};"

    def _local_index(self, index):
        return index.subs({v: 0 for v in self.outer_vars})

    def _hosted(self, name, index):
        host, offset = self.hosts[name]
        return f"{host}[{offset + self._local_index(index)}]"

    def load(self, name, index):
        dtype = self.dtypes[name]
        if name in self.hosts:
            return self.cse(self._hosted(name, index), dtype, self._declare(dtype))
        if name in self.local:
            if self.local[name] == 1:
                return CSEVariable(name, dtype)
            return self.cse(f"{name}[{self._local_index(index)}]", dtype, self._declare(dtype))
        self.args.setdefault(name, False)
        return self.cse(load_expr(dtype, f"{name}[{index}]"), dtype, self._declare(dtype))

    def store(self, name, index, value):
        dtype = self.dtypes[name]
        if name in self.hosts:
            self.args[self.hosts[name][0]] = True
            self.body.writeline(f"{self._hosted(name, index)} = {value};")
            return
        if name in self.local:
            target = name if self.local[name] == 1 else f"{name}[{self._local_index(index)}]"
            self.body.writeline(f"{target} = {value};")
            return
        self.args[name] = True
        self.body.writeline(f"{name}[{index}] = {store_expr(dtype, value)};")

    def constant(self, value, dtype):
        if isinstance(value, SymbolicSize):  # a size used as a number (a mean divides by it)
            return CSEVariable(f"static_cast<{compute_ctype(dtype)}>({value})", dtype)
        literal = CSEVariable(cpp_literal(value, dtype), dtype)
        literal.value = value
        return literal

    def index_expr(self, expr, dtype):
        return self.cse(f"static_cast<{compute_ctype(dtype)}>({expr})", dtype, self._declare(dtype))

    def to_dtype(self, x, dtype):
        if x.dtype == dtype:
            return x
        return self.cse(CppOverrides.to_dtype(x, dtype), dtype, self._declare(dtype))

    def indirect_indexing(self, x, size):
        name = self.new_name("ind")
        self.body.writeline(f"int64_t {name} = td_check_index(static_cast<int64_t>({x}), {size}, {ERROR_FLAG});")
        return Var(name, size, indirect=True)

    def masked(self, mask, body, other):
        """``body()`` only where mask holds (its loads may be out of bounds elsewhere)."""
        name = self.new_name()
        position, level = len(self.body.lines), self.body.level
        self.body.writeline(f"if ({mask}) {{")
        with self.body.indent(), self.cse_scope():
            result = body()
            self.body.writeline(f"{name} = {result};")
        self.body.writeline("}")
        declaration = f"{compute_ctype(result.dtype)} {name} = {cpp_literal(other, result.dtype)};"
        self.body.insert(position, declaration, level)
        return CSEVariable(name, result.dtype)

    def where(self, pred, a, b):
        return self.cse(CppOverrides.where(pred, a, b), a.dtype, self._declare(a.dtype))

    def __getattr__(self, name):
        override = getattr(CppOverrides, name)

        def op(*args):
            dtype = torch.bool if name in _COMPARISONS else args[0].dtype
            expr = override(*args)
            if dtype in ROUND_TO:
                expr = f"{ROUND_TO[dtype]}({expr})"
            return self.cse(expr, dtype, self._declare(dtype))

        return op

    # ------------------------------------------------------------------ loops

    def _plan(self):
        """Simplify the outer loops (shared by all bodies) and each body's own loops."""
        fused = self.fused
        depth = len(fused.outer)
        all_exprs = [e for node in fused.nodes for e in _node_exprs(node)]
        self.outer_vars, outer_map = simplify_loops(fused.nodes[0].index[:depth], all_exprs, "x")
        bodies = []
        for node in fused.nodes:
            exprs = _node_exprs(node)
            inner_vars, inner_map = simplify_loops(node.index[depth:], exprs, "x", len(self.outer_vars))
            reduction_vars, reduction_map = simplify_loops(node.rindex, exprs, "r")
            index = [outer_map[v] for v in node.index[:depth]] + [inner_map[v] for v in node.index[depth:]]
            mapping = {**outer_map, **inner_map, **reduction_map}
            write = node.read_writes.writes[0].index.subs(mapping)
            bodies.append(_Body(node, index, [reduction_map[v] for v in node.rindex],
                                inner_vars, reduction_vars, _body_reads(node, mapping), write))
        return bodies

    @contextlib.contextmanager
    def _loop(self, var, pragma=None):
        if pragma:
            self.body.writeline(pragma)
        self.body.writeline(f"for (int64_t {var} = 0; {var} < {var.size}; ++{var}) {{")
        with self.body.indent():
            yield
        self.body.writeline("}")

    def _loops(self, stack, variables, pragmas):
        for var, pragma in zip(variables, pragmas):
            stack.enter_context(self._loop(var, pragma))

    def _parallel(self, bodies):
        outer = math.prod(v.size for v in self.outer_vars)
        work = size_max(math.prod(v.size for v in b.inner_vars + b.reduction_vars) for b in bodies)
        return parallel_clause(outer, work)

    def _outer_pragmas(self, bodies):
        """Pragmas for the outer loops: parallel over the outermost; when no body has loops of
        its own, the innermost outer loop is the one to vectorize."""
        n = len(self.outer_vars)
        pragmas = [None] * n
        simd_outer = all(not b.inner_vars and not b.reduction_vars for b in bodies)
        clause = self._parallel(bodies) if n else None
        if clause is not None:
            parallel_loops = n - 1 if simd_outer else n
            if parallel_loops == 0:
                pragmas[0] = "#pragma omp parallel for simd" + clause
                return pragmas
            pragmas[0] = ("#pragma omp parallel for" + (f" collapse({parallel_loops})" if parallel_loops > 1 else "")
                          + clause)
        if n and simd_outer:
            pragmas[-1] = "#pragma omp simd"
        return pragmas

    # ------------------------------------------------------------------ bodies

    def _pointwise_body(self, body):
        pragmas = [None] * len(body.inner_vars)
        if pragmas:
            pragmas[-1] = "#pragma omp simd"
        with self.cse_scope(), contextlib.ExitStack() as loops:
            self._loops(loops, body.inner_vars, pragmas)
            self._pointwise_step(body)

    def _pointwise_step(self, body):
        node = body.node
        with V.set_ops_handler(self):
            value = node.buffer.data.inner_fn(body.index)
        self.store(node.name, node.buffer.store_index(body.index), value)

    def _reduction_body(self, body, full_reduction):
        with contextlib.ExitStack() as inner_loops:
            self._loops(inner_loops, body.inner_vars, [None] * len(body.inner_vars))
            acc = self._start_reduction(body)
            pragmas = self._reduction_pragmas(body, acc, full_reduction)
            with self.cse_scope(), contextlib.ExitStack() as reduction_loops:
                self._loops(reduction_loops, body.reduction_vars, pragmas)
                self._reduction_step(body, acc)
            self._finish_reduction(body, acc)

    def _start_reduction(self, body):
        """Declare the accumulator (and its nan flag or index); return its name."""
        data = body.node.buffer.data
        acc = self.new_name("acc")
        self.body.writeline(f"{accumulator_ctype(data.reduction_type, data.src_dtype)} {acc} = "
                            f"{reduction_init(data.reduction_type, data.src_dtype)};")
        if _tracks_nan(data):
            self.body.writeline(f"int {acc}_nan = 0;")
        if data.reduction_type.startswith("arg"):
            self.body.writeline(f"int64_t {acc}_index = 0;")
        return acc

    def _reduction_step(self, body, acc):
        data = body.node.buffer.data
        with V.set_ops_handler(self):
            value = data.inner_fn(body.index, body.rindex)
        self._combine(data.reduction_type, acc, value, data.src_dtype, body)

    def _finish_reduction(self, body, acc):
        data = body.node.buffer.data
        if _tracks_nan(data):
            acc_type = accumulator_ctype(data.reduction_type, data.src_dtype)
            self.body.writeline(f"if ({acc}_nan) {acc} = std::numeric_limits<{acc_type}>::quiet_NaN();")
        result = f"{acc}_index" if data.reduction_type.startswith("arg") else acc
        self.store(body.node.name, body.node.buffer.store_index(body.index), CSEVariable(result, data.dtype))

    def _reduction_pragmas(self, body, acc, full_reduction):
        n = len(body.reduction_vars)
        pragmas = [None] * n
        if n == 0 or body.node.buffer.data.reduction_type.startswith("arg"):
            return pragmas  # argmax keeps the first maximum: a serial loop
        clause = self._reduction_clause(body, acc)
        parallel = parallel_clause(math.prod(v.size for v in body.reduction_vars), 1) if full_reduction else None
        if parallel is not None:
            collapse = f" collapse({n})" if n > 1 else ""
            pragmas[0] = f"#pragma omp parallel for simd{collapse} {clause}{parallel}"
        else:
            pragmas[-1] = f"#pragma omp simd {clause}"
        return pragmas

    @staticmethod
    def _reduction_clause(body, acc):
        data = body.node.buffer.data
        op = _REDUCTION_CLAUSE[data.reduction_type]
        if data.reduction_type in ("max", "min") and data.src_dtype == torch.bool:
            op = "||" if data.reduction_type == "max" else "&&"
        return f"reduction({op}:{acc})" + (f" reduction(|:{acc}_nan)" if _tracks_nan(data) else "")

    def _loop_group(self, group):
        """Bodies that share their own loops (see :func:`loop_groups`): one loop nest, one simd
        pragma that names every accumulator."""
        accumulators = {b.node.name: self._start_reduction(b) for b in group if b.node.is_reduction()}
        clauses = [self._reduction_clause(b, accumulators[b.node.name]) for b in group if b.node.is_reduction()]
        pragmas = [None] * len(group[0].own_vars)
        pragmas[-1] = " ".join(["#pragma omp simd", *clauses])
        with self.cse_scope(), contextlib.ExitStack() as loops:
            self._loops(loops, group[0].own_vars, pragmas)
            for body in group:
                if body.node.is_reduction():
                    self._reduction_step(body, accumulators[body.node.name])
                else:
                    self._pointwise_step(body)
        for body in group:
            if body.node.is_reduction():
                self._finish_reduction(body, accumulators[body.node.name])

    def _combine(self, rtype, acc, value, dtype, body):
        if rtype == "sum":
            self.body.writeline(f"{acc} = {acc} + {_p(value)};")
        elif rtype == "prod":
            self.body.writeline(f"{acc} = {acc} * {_p(value)};")
        elif dtype == torch.bool:
            self.body.writeline(f"{acc} = {acc} {'||' if rtype == 'max' else '&&'} {value};")
        elif rtype in ("max", "min"):
            self.body.writeline(f"{acc} = std::{rtype}({acc}, {value});")
            if dtype.is_floating_point:
                self.body.writeline(f"{acc}_nan |= ({value} != {value});")
        else:
            self._arg_update(rtype, acc, f"{acc}_index", value, dtype, body.node, body.rindex)

    # ------------------------------------------------------------------ column reductions

    def _column_tile(self):
        """How many output columns to reduce at once, for a kernel of reductions that read their
        input along rows but reduce down columns (a sum over the batch dimension); else None.

        Reducing one column at a time would read the input with a stride; instead the kernel
        keeps a tile of accumulators and, for each reduced row, updates them with contiguous,
        vectorized loads.
        """
        nodes = self.fused.nodes
        first = nodes[0]
        if not first.ranges or not same_sizes(self.fused.outer, first.ranges) or not first.rindex \
                or 0 in first.ranges:
            return None  # (no output element: nothing to tile)
        names = {n.name for n in nodes}
        if any(not n.is_reduction() or not same_sizes(n.ranges, first.ranges)
               or not same_sizes(n.reduction_ranges, first.reduction_ranges)
               or n.read_names() & names for n in nodes):
            return None
        column, row = first.index[-1], first.rindex[-1]
        reads = [d.index for n in nodes for d in n.read_writes.reads if isinstance(d, MemoryDep)]
        if not any(e.coefficient(column) == 1 for e in reads) or any(e.coefficient(row) == 1 for e in reads):
            return None
        if isinstance(column.size, SymbolicSize):
            return None  # a tile must divide the columns: only for a static number of columns
        return next((t for t in (column.size, 512, 256, 128, 64, 32, 16)
                     if t <= 512 and column.size % t == 0), None)

    def _column_reductions(self, tile):
        nodes = self.fused.nodes
        first = nodes[0]
        exprs = [e for node in nodes for e in _node_exprs(node)]
        outer_vars, outer_map = simplify_loops(first.index[:-1], exprs, "x")
        reduction_vars, reduction_map = simplify_loops(first.rindex, exprs, "r")
        tiles = first.index[-1].size // tile
        tile_var = Var(f"x{len(outer_vars)}", tiles)
        self.outer_vars = outer_vars + ([tile_var] if tiles > 1 else [])
        column = Var(f"x{len(self.outer_vars)}", tile)
        index = [outer_map[v] for v in first.index[:-1]] + [tile_var * tile + column if tiles > 1 else Expr.of(column)]
        rindex = [reduction_map[v] for v in first.rindex]
        accumulators = [self.new_name("acc") for _ in nodes]
        work = math.prod(v.size for v in reduction_vars) * tile
        parallel = parallel_clause(math.prod(v.size for v in self.outer_vars), work)
        pragmas = [None] * len(self.outer_vars)
        if parallel is not None:
            pragmas[0] = ("#pragma omp parallel for" + (f" collapse({len(pragmas)})" if len(pragmas) > 1 else "")
                          + parallel)
        with contextlib.ExitStack() as outer_loops:
            self._loops(outer_loops, self.outer_vars, pragmas)
            for node, acc in zip(nodes, accumulators):
                data = node.buffer.data
                self.body.writeline(f"{accumulator_ctype(data.reduction_type, data.src_dtype)} {acc}[{tile}];")
                if data.reduction_type.startswith("arg"):
                    self.body.writeline(f"int64_t {acc}_index[{tile}] = {{}};")
                with self._loop(column):
                    self.body.writeline(f"{acc}[{column}] = {reduction_init(data.reduction_type, data.src_dtype)};")
            with contextlib.ExitStack() as reduction_loops:
                self._loops(reduction_loops, reduction_vars, [None] * len(reduction_vars))
                with self._loop(column, "#pragma omp simd"), self.cse_scope(), V.set_ops_handler(self):
                    for node, acc in zip(nodes, accumulators):
                        value = node.buffer.data.inner_fn(index, rindex)
                        self._combine_elementwise(node, f"{acc}[{column}]", value, rindex)
            with self._loop(column):
                for node, acc in zip(nodes, accumulators):
                    data = node.buffer.data
                    result = f"{acc}_index[{column}]" if data.reduction_type.startswith("arg") else f"{acc}[{column}]"
                    self.store(node.name, node.buffer.store_index(index), CSEVariable(result, data.dtype))

    def _combine_elementwise(self, node, acc, value, rindex):
        """One accumulator per column: max and min need no nan flag, argmax no lanes."""
        data = node.buffer.data
        rtype, dtype = data.reduction_type, data.src_dtype
        if rtype in ("sum", "prod"):
            self.body.writeline(f"{acc} = {acc} {'+' if rtype == 'sum' else '*'} {_p(value)};")
        elif rtype in ("max", "min"):
            combined = getattr(CppOverrides, "maximum" if rtype == "max" else "minimum")(
                CSEVariable(acc, dtype), value)
            self.body.writeline(f"{acc} = {combined};")
        else:
            self._arg_update(rtype, acc, acc.replace("[", "_index[", 1), value, dtype, node, rindex)

    def _arg_update(self, rtype, acc, acc_index, value, dtype, node, rindex):
        better = ">" if rtype == "argmax" else "<"
        condition = f"{value} {better} {acc}"
        if dtype.is_floating_point:  # the first nan wins
            condition += f" || ({value} != {value} && {acc} == {acc})"
        strides = contiguous_strides(node.reduction_ranges)
        flat = sum((Expr.of(r) * s for r, s in zip(rindex, strides)), Expr())
        self.body.writeline(f"if ({condition}) {{ {acc} = {value}; {acc_index} = {flat}; }}")

    def _rows_and_pointwise(self):
        """The general form: outer loops, then each body's own loops."""
        bodies = self._plan()
        with contextlib.ExitStack() as outer_loops:
            self._loops(outer_loops, self.outer_vars, self._outer_pragmas(bodies))
            self.hosts = row_hosts(bodies, self.local, self.outer_vars, self.dtypes)
            for name, elements in self.local.items():
                if name in self.hosts:
                    continue
                ctype = compute_ctype(self.dtypes[name])
                self.body.writeline(f"{ctype} {name};" if elements == 1 else f"{ctype} {name}[{elements}];")
            groups = loop_groups(bodies) if self.outer_vars else [[body] for body in bodies]
            for group in groups:
                if len(group) > 1:
                    self._loop_group(group)
                elif group[0].node.is_reduction():
                    self._reduction_body(group[0], full_reduction=not self.outer_vars)
                else:
                    self._pointwise_body(group[0])

    # ------------------------------------------------------------------ the function

    def codegen(self):
        """The C++ function, as text."""
        tile = self._column_tile()
        if tile is not None:
            self._column_reductions(tile)
        else:
            self._rows_and_pointwise()
        params = ", ".join([self.param(name) for name in self.args]
                           + [f"const int64_t {s}" for s in self.size_params]
                           + ([f"int* __restrict__ {ERROR_FLAG}"] if self.reports_errors() else []))
        header = [f"// {self.name}: " + "; ".join(n.describe() for n in self.fused.nodes),
                  f"static void {self.name}({params}) {{"]
        code = IndentedBuffer()
        code.writelines(header)
        code.lines += ["  " + line if line else line for line in branch_on_parallelism(self.body.lines)]
        code.writeline("}")
        return code.getvalue()

    def reports_errors(self):
        """Whether the kernel's code checks something, so that it needs the call's error flag."""
        return any(ERROR_FLAG in line for line in self.body.lines)

    def param(self, name):
        const = "" if self.args[name] else "const "
        return f"{const}{STORAGE_CTYPES[self.dtypes[name]]}* __restrict__ {name}"


# --------------------------------------------------------------------------- the whole module


class Segment(typing.NamedTuple):
    """An ``extern "C"`` entry point that runs consecutive kernels in order."""

    name: str
    params: list  # buffer names passed as pointers, in order
    uses_workspace: bool
    size_params: list  # then the size symbols, as int64_t


class CppModule(typing.NamedTuple):
    kernels_source: str  # the generated kernels and entry points
    segments: dict  # kernel position of the segment's first kernel -> Segment
    kernel_count: int

    @property
    def source(self):
        """The whole file: the prelude, then the kernels."""
        return prelude() + "\n" + self.kernels_source


class CppScheduling:
    """Turns the scheduled kernels of a graph into one C++ source file."""

    def __init__(self, scheduler, dtypes, size_params=()):
        self.scheduler = scheduler
        self.dtypes = dtypes
        self.size_params = list(size_params)  # symbol names: every kernel takes them all

    def codegen(self):
        kernels = self.scheduler.kernels
        parts = []
        segments = {}
        run = []  # (position, CppKernel) of the segment being collected
        count = 0
        for pos, kernel in enumerate(kernels + [None]):
            if isinstance(kernel, FusedSchedulerNode):
                cpp_kernel = CppKernel(f"kernel{count}", kernel, self.dtypes, self.size_params)
                parts.append(cpp_kernel.codegen())
                run.append((pos, cpp_kernel))
                count += 1
                continue
            if run:
                segment, source = self._segment(f"segment{len(segments)}", [k for _, k in run])
                segments[run[0][0]] = segment
                parts.append(source)
                run = []
        return CppModule("\n".join(parts), segments, count)

    def _segment(self, name, cpp_kernels):
        offsets = self.scheduler.workspace_offsets
        written, order = set(), {}
        for k in cpp_kernels:
            for buffer, is_written in k.args.items():
                order.setdefault(buffer, None)
                if is_written:
                    written.add(buffer)
        params = [b for b in order if b not in offsets]
        in_workspace = [b for b in order if b in offsets]
        signature = [f"{'' if b in written else 'const '}{STORAGE_CTYPES[self.dtypes[b]]}* {b}" for b in params]
        if in_workspace:
            signature.append("char* workspace")
        signature += [f"int64_t {s}" for s in self.size_params]
        code = IndentedBuffer()
        code.writeline(f'extern "C" int {name}({", ".join(signature)}) {{')
        with code.indent():
            code.writeline(f"int {ERROR_FLAG} = TD_OK;  // this call's own")
            for b in in_workspace:
                ctype = STORAGE_CTYPES[self.dtypes[b]]
                code.writeline(f"{ctype}* {b} = reinterpret_cast<{ctype}*>(workspace + {offsets[b]});")
            for k in cpp_kernels:
                args = [*k.args, *self.size_params] + ([f"&{ERROR_FLAG}"] if k.reports_errors() else [])
                code.writeline(f"{k.name}({', '.join(args)});")
            code.writeline(f"return {ERROR_FLAG};")
        code.writeline("}")
        return Segment(name, params, bool(in_workspace), self.size_params), code.getvalue()
