"""What a loop body reads and writes (chapter 9, "Scheduling and fusion").

The scheduler never looks inside a loop body's Python code. It runs the body once under a
recording ops handler, with symbolic loop variables as the index, and keeps what the loads
touched, as TorchInductor's ``dependencies.py`` does:

* ``MemoryDep(name, index)``: element ``index`` (an indexing.Expr over the loop variables) of
  buffer ``name``;
* ``StarDep(name)``: some element we cannot name in advance (a gather's index is data), or the
  whole buffer (an extern kernel's input).
"""
import itertools
import typing

from . import ir
from .indexing import Expr, Var
from .virtualized import V


class MemoryDep(typing.NamedTuple):
    name: str
    index: Expr


class StarDep(typing.NamedTuple):
    name: str


class ReadWrites(typing.NamedTuple):
    reads: list  # MemoryDep or StarDep, without repeats, in the order the body reads them
    writes: list
    index_exprs: list  # index expressions the body computes with (ops.index_expr)


class _RecordLoadStore:
    """An ops handler that records loads and index expressions and computes nothing."""

    def __init__(self):
        self.reads = {}
        self.index_exprs = []
        self._indirect = itertools.count()

    def load(self, name, index):
        if any(v.indirect for v in index.free_vars()):
            self.reads[StarDep(name)] = None
        else:
            self.reads[MemoryDep(name, index)] = None

    def index_expr(self, expr, dtype):
        self.index_exprs.append(Expr.of(expr))

    def indirect_indexing(self, x, size):
        return Var(f"ind{next(self._indirect)}", size, indirect=True)

    def masked(self, mask, body, other):
        return body()

    def __getattr__(self, name):
        return lambda *args: None


def extract_read_writes(buffer, index, rindex=()):
    """Reads and writes of a ComputedBuffer's body for loop variables ``index`` (+ ``rindex``)."""
    recorder = _RecordLoadStore()
    with V.set_ops_handler(recorder):
        if buffer.is_reduction():
            buffer.data.inner_fn(index, rindex)
        else:
            buffer.data.inner_fn(index)
    write = MemoryDep(buffer.name, buffer.store_index(index))
    return ReadWrites(list(recorder.reads), [write], recorder.index_exprs)


def extern_read_writes(kernel, output_names):
    """An extern kernel reads all of every input buffer and writes its outputs."""
    reads = {}
    for value in kernel.inputs():
        storage = value.data if isinstance(value, ir.ReinterpretView) else value
        reads[StarDep(storage.name)] = None
    return ReadWrites(list(reads), [StarDep(n) for n in output_names], [])
