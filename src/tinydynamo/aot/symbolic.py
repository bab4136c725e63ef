"""Symbolic sizes as graph values (chapter 6, and chapter 7 reuses it).

When dynamo marks a dimension dynamic, a graph input's size is a ``torch.SymInt``: a Python
int stand-in whose ``.node.expr`` is a sympy expression over size symbols (``s0``, ``2*s0``,
``s0*s1``). Tracing with such sizes, an op's arguments may contain SymInts
(``view(x, [s0*s1, -1])``). A graph cannot hold a SymInt as a literal: it would bake in the
size of one call. So every SymInt argument becomes a *graph value*:

* a free symbol is read from the graph inputs: the SymInt input whose expression is that
  symbol, or else ``aten.sym_size.int(x, dim)`` of the first input tensor ``x`` with that
  symbol as a size (or ``aten.sym_stride.int`` for a stride). A backward graph may receive a
  symbol only inside a sum (a size ``s0 + s1``, with ``s1`` known): it is solved for,
  ``s0 = (s0 + s1) - s1``;
* a compound expression becomes ``operator.add`` / ``operator.mul`` / ``operator.floordiv``
  ... nodes over its parts, each expression emitted once (``SymbolicValues`` caches them).

PyTorch's ``make_fx`` does the same job differently: it tracks every SymInt the program
computes to the proxy that computed it (``torch/fx/experimental/proxy_tensor.py``).
tinydynamo rebuilds the value from its expression, which needs only ``.node.expr``.

At run time the sizes are plain ints again: ``bind_symbols`` pairs the symbols of the traced
(symbolic) inputs with a call's concrete inputs, and ``evaluate`` computes an expression.
"""
import math
import operator

import sympy
import torch
import torch.fx as fx

from ..symbolic_shapes import SymbolicShapeError

aten = torch.ops.aten

SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)

# sympy (and size-arithmetic) expression types -> the Python operation that computes them.
# Matched by class name: PyTorch's ShapeEnv and tinydynamo's define their own FloorDiv, Mod...
_OPERATIONS = {
    "Add": operator.add,
    "Mul": operator.mul,
    "FloorDiv": operator.floordiv,
    "Mod": operator.mod,
    "PythonMod": operator.mod,
    "Max": torch.sym_max,
    "Min": torch.sym_min,
    "Pow": operator.pow,
    "PowByNatural": operator.pow,
    # a SymFloat computed from sizes (BatchNorm's n / (n - 1)):
    "IntTrueDiv": operator.truediv,
    "FloatTrueDiv": operator.truediv,
    "ToFloat": torch.sym_float,
    "FloorToInt": math.floor,
    "CeilToInt": math.ceil,
    "floor": math.floor,  # tinydynamo's ShapeEnv uses sympy's own floor, ceiling and Abs
    "ceiling": math.ceil,
    "Abs": abs,
}
_ANY_NUMBER_OF_TERMS = {"Add", "Mul", "Max", "Min"}

# The ops a symbolic graph computes sizes with (the targets ``SymbolicValues`` emits).
SIZE_OPS = frozenset({
    aten.sym_size.int, aten.sym_stride.int, aten.sym_numel.default, *_OPERATIONS.values(),
    operator.sub, operator.neg,
})
SIZE_TYPES = (torch.SymInt, torch.SymFloat)

# A size whose hint (its value in the example inputs) is unknown: PyTorch guesses 8192 too.
_UNKNOWN_SIZE_HINT = 8192


def is_symbolic(value):
    """Is ``value`` a SymInt (SymFloat, SymBool), or a tensor with a symbolic size or stride?"""
    if isinstance(value, SYM_TYPES):
        return True
    if isinstance(value, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in (*value.shape, *value.stride()))
    return False


def hint(size):
    """The concrete value of an int or SymInt, for cost estimates (never for the graph)."""
    if isinstance(size, torch.SymInt):
        value = size.node.hint
        return _UNKNOWN_SIZE_HINT if value is None else int(value)
    return int(size)


def _sizes_of(value):
    """(kind, dim, size) for each size and stride of a tensor; a number or SymInt (SymFloat)
    is its own."""
    if isinstance(value, (int, float, *SIZE_TYPES)):
        return [("number", None, value)]
    if isinstance(value, torch.Tensor):
        return [*(("size", d, s) for d, s in enumerate(value.shape)),
                *(("stride", d, s) for d, s in enumerate(value.stride()))]
    return []


class SymbolicValues:
    """Turns SymInts into nodes of ``graph``: its inputs provide the symbols."""

    def __init__(self, graph):
        self.graph = graph
        self.nodes = {}  # sympy expression -> the node computing it
        self.sources = {}  # expression -> (graph input node, "size" | "stride", dim)
        self._solving = set()  # symbols being solved for (see _solve)

    def add_input(self, node, value):
        """Note which sizes graph input ``node`` (with example ``value``) provides."""
        for kind, dim, size in _sizes_of(value):
            if not isinstance(size, SIZE_TYPES):
                continue
            if kind == "number":
                self.nodes.setdefault(size.node.expr, node)
            else:
                self.sources.setdefault(size.node.expr, (node, kind, dim))

    def node_of(self, value):
        """A graph value for ``value``: a node for a SymInt; ``value`` itself otherwise."""
        if isinstance(value, torch.SymBool):
            raise SymbolicShapeError(
                f"tinydynamo: a symbolic SymBool ({value}) used as an op argument; "
                "only symbolic sizes (SymInt, SymFloat) are supported")
        if not isinstance(value, SIZE_TYPES):
            return value
        return self._emit(value.node.expr)

    def _emit(self, expr):
        if expr.is_Integer:
            return int(expr)
        if expr.is_Float or expr.is_Rational:  # an exponent: attention's head_dim ** -0.5
            return float(expr)
        if expr in self.nodes:
            return self.nodes[expr]
        if expr in self.sources:
            node = self._read_size(*self.sources[expr])
        elif isinstance(expr, sympy.Symbol):
            node = self._solve(expr)
        else:
            node = self._compute(expr)
        self.nodes[expr] = node
        return node

    def _read_size(self, source, kind, dim):
        op = aten.sym_size.int if kind == "size" else aten.sym_stride.int
        val = source.meta["val"].shape[dim] if kind == "size" else source.meta["val"].stride(dim)
        return self._call(op, (source, dim), val)

    def _solve(self, symbol):
        """A symbol that no input provides alone: find an input size ``symbol + rest`` whose
        ``rest`` can be computed, and subtract it."""
        self._solving.add(symbol)
        try:
            for known in [*self.nodes, *self.sources]:
                rest = known - symbol
                if symbol in known.free_symbols and symbol not in rest.free_symbols \
                        and not rest.free_symbols & self._solving:
                    total, part = self._emit(known), self._emit(rest)
                    return self._call(operator.sub, (total, part), _val(total) - _val(part))
        finally:
            self._solving.discard(symbol)
        raise SymbolicShapeError(
            f"tinydynamo: size symbol {symbol} is neither a SymInt input of the graph nor a "
            "size or stride of an input tensor (or a sum with one); unsupported")

    def _compute(self, expr):
        name = type(expr).__name__
        if name not in _OPERATIONS:
            raise SymbolicShapeError(f"tinydynamo: cannot compute the size expression {expr} "
                                      f"({name}) in a graph; unsupported")
        op = _OPERATIONS[name]
        parts = [self._emit(arg) for arg in expr.args]
        if name not in _ANY_NUMBER_OF_TERMS:
            return self._call(op, tuple(parts), op(*map(_val, parts)))
        node = parts[0]
        for part in parts[1:]:
            node = self._call(op, (node, part), op(_val(node), _val(part)))
        return node

    def _call(self, op, args, val):
        node = self.graph.call_function(op, args)
        node.meta["val"] = val
        node.meta["device"] = None
        return node


def _val(value):
    return value.meta["val"] if isinstance(value, fx.Node) else value


def bind_symbols(symbolic_values, concrete_values):
    """{symbol: int}: the value each size symbol takes in ``concrete_values`` (real tensors and
    ints), paired position by position with ``symbolic_values`` (what was traced). A symbol
    seen only in a sum (``s0 + s1 == 7`` and ``s1 == 3``) is solved for."""
    equations = []  # (expression, the int it equals)
    for symbolic, concrete in zip(symbolic_values, concrete_values):
        for (_, _, size), value in zip(_sizes_of(symbolic), [size for _, _, size in _sizes_of(concrete)]):
            if isinstance(size, torch.SymInt) and isinstance(value, int):
                equations.append((size.node.expr, value))
    bindings = {}
    solved = True
    while solved:
        solved = False
        for expr, value in equations:
            unknown = expr.free_symbols - bindings.keys()
            if len(unknown) != 1:
                continue
            symbol = unknown.pop()
            rest = expr.xreplace({s: sympy.Integer(v) for s, v in bindings.items()}) - symbol
            if symbol not in rest.free_symbols and rest.is_Integer:  # expr is symbol + a number
                bindings[symbol] = value - int(rest)
                solved = True
    return bindings


def evaluate(value, bindings):
    """The number a SymInt (SymFloat) stands for, given the symbols' values; other values are
    returned as they are."""
    if not isinstance(value, SIZE_TYPES):
        return value
    result = value.node.expr.xreplace({s: sympy.Integer(v) for s, v in bindings.items()})
    if not result.is_number:
        raise RuntimeError(f"tinydynamo: the size {value.node.expr} depends on unbound symbols {result.free_symbols}")
    return int(result) if isinstance(value, torch.SymInt) else float(result)
