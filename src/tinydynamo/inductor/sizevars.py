"""Symbolic sizes in the loop IR: SymbolicSize and the SizeVarAllocator (chapter 12, "Dynamic shapes").

A graph traced with dynamic shapes reaches inductor with sizes such as ``(s0, 768)``. Inductor
compiles it once for every value of ``s0``: the kernels take the symbols as arguments
(``for (int64_t x0 = 0; x0 < s0; ++x0)``), and the wrapper reads them from the inputs of each
call (``s0 = arg0_x.size(0)``).

The lowering, the scheduler and the code generators were written for plain ints, and they keep
working on symbolic sizes because a size is a :class:`SymbolicSize`: a sympy expression that
does arithmetic like an int (``s0 * 768``, ``(s0 + 3) // 4``) and is printed as C (``s0*768``).
Where inductor *decides* something about a size (``if size == 1``, ``nbytes <= 64 KiB``), the
:class:`SizeVarAllocator` answers as TorchInductor's ``V.graph.sizevars`` does:

- statically, when the range analysis of chapter 4 settles it for every size (each symbol is at
  least 2, so ``s0 == 1`` is False, and ``s0*s1 >= s0`` is True);
- otherwise by the *hint*, the size the graph was traced with, and the condition becomes an
  **inductor guard**. The compiled graph checks its guards on every call; a call whose sizes fail
  them runs a variant compiled for its own sizes instead (``compile_fx.py``).

Code that needs a plain number (``range(size)``) cannot have a symbolic one: converting a
SymbolicSize to ``int`` raises :class:`SymbolicShapeError`, and the graph is compiled once per
size, as before dynamic kernels existed. Nothing silently uses a traced size.
"""
import math

import sympy

from ..symbolic_shapes import FloorDiv, ShapeEnv, SymbolicShapeError, to_python


class SymbolicSize:
    """A size, stride or offset that is an expression in size symbols."""

    __slots__ = ("expr", "sizevars")

    def __init__(self, expr, sizevars):
        self.expr = expr
        self.sizevars = sizevars

    # --- arithmetic makes new sizes ---------------------------------------------------------------

    def _binary(self, other, fn):
        other = _expr_of(other)
        if other is None:
            return NotImplemented
        return self.sizevars.wrap(fn(self.expr, other))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: b + a)

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: b * a)

    def __floordiv__(self, other):
        return self._binary(other, FloorDiv)

    def __rfloordiv__(self, other):
        return self._binary(other, lambda a, b: FloorDiv(b, a))

    def __mod__(self, other):
        return self._binary(other, sympy.Mod)

    def __rmod__(self, other):
        return self._binary(other, lambda a, b: sympy.Mod(b, a))

    def __neg__(self):
        return self.sizevars.wrap(-self.expr)

    # --- comparisons are decisions: static, or by the hint with a guard ---------------------------

    def _compare(self, other, relation):
        other = _expr_of(other)
        if other is None:
            return NotImplemented
        return self.sizevars.evaluate(relation(self.expr, other))

    def __eq__(self, other):
        return self._compare(other, sympy.Eq)

    def __ne__(self, other):
        return self._compare(other, sympy.Ne)

    def __lt__(self, other):
        return self._compare(other, sympy.Lt)

    def __le__(self, other):
        return self._compare(other, sympy.Le)

    def __gt__(self, other):
        return self._compare(other, sympy.Gt)

    def __ge__(self, other):
        return self._compare(other, sympy.Ge)

    def __bool__(self):
        return self.sizevars.evaluate(sympy.Ne(self.expr, 0))

    def __hash__(self):
        return hash(self.expr)

    # --- no silent use as a number ----------------------------------------------------------------

    def __index__(self):
        raise SymbolicShapeError(f"inductor needs the size {self.expr} as a number here")

    __int__ = __index__

    @property
    def hint(self):
        """Its value for the sizes the graph was traced with."""
        return int(self.sizevars.shape_env.hint(self.expr))

    def __str__(self):
        """C source (the generated kernels take the symbols as int64_t arguments)."""
        text = self.sizevars.to_c(self.expr)
        return text if isinstance(self.expr, sympy.Symbol) else f"({text})"

    def __format__(self, spec):
        return format(str(self), spec)

    def __repr__(self):
        return str(self.expr)


def _is_integer_expression(expr):
    """Sums, products, powers, floor divisions, remainders, maxima and minima of integers."""
    if expr.is_Integer or (isinstance(expr, sympy.Symbol) and expr.is_integer):
        return True
    if isinstance(expr, sympy.Pow) and not (expr.exp.is_Integer and expr.exp >= 0):
        return False
    return isinstance(expr, (sympy.Add, sympy.Mul, sympy.Pow, FloorDiv, sympy.Mod, sympy.Max, sympy.Min)) \
        and all(_is_integer_expression(a) for a in expr.args)


def _expr_of(value):
    if isinstance(value, SymbolicSize):
        return value.expr
    if isinstance(value, int):
        return sympy.Integer(value)
    return None


def is_size(value):
    """An int or a SymbolicSize."""
    return isinstance(value, (int, SymbolicSize))


def structural_key(size):
    """A key that orders and identifies sizes by their expression, deciding nothing."""
    return (0, size) if isinstance(size, int) else (1, str(size.expr))


class InductorShapeEnv(ShapeEnv):
    """Chapter 12's range analysis, plus what index arithmetic needs and dynamo's traces rarely
    do: floor divisions and remainders by a symbolic size (a row ``x // s1``)."""

    def bounds(self, expr):
        if isinstance(expr, (FloorDiv, sympy.Mod)) and not expr.args[1].is_Number:
            return self._symbolic_division_bounds(expr)
        return super().bounds(expr)

    def _symbolic_division_bounds(self, expr):
        """``a // b`` and ``a % b`` for a symbolic divisor ``b >= 1`` and ``a >= 0``: both lie in
        ``[0, a]``, and when ``a < b`` for every size the quotient is 0 (``(s1 - 1) // s1``)."""
        numerator, divisor = expr.args
        lo, hi = self.bounds(numerator)
        if lo < 0 or self.bounds(divisor)[0] < 1:
            return -sympy.oo, sympy.oo
        below_divisor = self.difference_bounds(divisor - numerator)[0] > 0
        if isinstance(expr, FloorDiv):
            return (sympy.Integer(0), sympy.Integer(0)) if below_divisor else (sympy.Integer(0), hi)
        return (lo, hi) if below_divisor else (sympy.Integer(0), hi)


class SizeVarAllocator:
    """The size symbols of one graph: their hints, the range analysis, and the inductor guards."""

    def __init__(self):
        self.shape_env = InductorShapeEnv(where=lambda: "inductor")

    def wrap(self, expr):
        """``expr`` as a size: a plain int when it has no symbol left."""
        expr = sympy.sympify(expr)
        if expr.is_Integer:
            return int(expr)
        if not expr.free_symbols or not _is_integer_expression(expr):
            raise SymbolicShapeError(f"inductor: {expr} is not an integer size expression")
        return SymbolicSize(expr, self)

    def convert(self, value):
        """A traced value (an int, a torch.SymInt, a tuple of them) in inductor's terms."""
        if isinstance(value, (tuple, list)):
            return type(value)(self.convert(v) for v in value)
        if isinstance(value, (bool, int, float)) or value is None:
            return value
        node = getattr(value, "node", None)
        if node is None or not hasattr(node, "expr"):
            return value
        if node.pytype not in (int, float):
            raise SymbolicShapeError(f"inductor: the symbolic {node.pytype.__name__} {node.expr} "
                                     "is not supported in kernels")
        env = node.shape_env  # ours, or torch's (behind torch.compile), which renamed the map
        hints = env.backed_var_to_val if hasattr(env, "backed_var_to_val") else env.var_to_val
        for symbol in node.expr.free_symbols:
            if symbol not in hints:  # an unbacked size (data-dependent, from torch's Dynamo)
                raise SymbolicShapeError(f"inductor: the size {symbol} has no hint")
            self.shape_env.var_to_val.setdefault(symbol, int(hints[symbol]))
        if node.pytype is float:  # a number computed from sizes (a mean's 1 / (n - 1)): a scalar
            return SymbolicSize(node.expr, self)
        return self.wrap(node.expr)

    def evaluate(self, condition):
        return self.shape_env.evaluate_condition(condition, "inductor")

    def statically_known(self, condition):
        """True only if ``condition`` holds for every size (never adds a guard)."""
        return self.shape_env.static_value(condition) is True

    @property
    def guards(self):
        """The conditions the compiled code relies on, beyond what every size satisfies."""
        return [guard.expr for guard in self.shape_env.guards]

    @property
    def symbols(self):
        """Every symbol, in order of name: the kernels' size arguments."""
        return sorted(self.shape_env.var_to_val, key=lambda s: (len(s.name), s.name))

    def to_python(self, value):
        """Python source for a size (the wrapper binds each symbol to a local of its name)."""
        if isinstance(value, SymbolicSize):
            return to_python(value.expr, lambda s: s.name)
        return repr(value)

    @staticmethod
    def condition_to_python(condition):
        return to_python(condition, lambda s: s.name)

    def to_c(self, expr):
        """C source for a size expression."""
        return _CPrinter(self.shape_env).print(expr)


class _CPrinter:
    def __init__(self, shape_env):
        self.shape_env = shape_env

    def paren(self, expr):
        text = self.print(expr)
        return text if isinstance(expr, sympy.Symbol) or (expr.is_Integer and expr >= 0) else f"({text})"

    def print(self, expr):
        if isinstance(expr, sympy.Symbol):
            return expr.name
        if expr.is_Integer:
            return f"{int(expr)}L" if abs(int(expr)) >= 2 ** 31 else str(int(expr))
        if expr.is_Float:
            return repr(float(expr))
        if expr.is_Rational:
            return f"{expr.p}.0 / {expr.q}.0"
        if isinstance(expr, sympy.Add):
            return " + ".join(self.paren(a) for a in expr.args)
        if isinstance(expr, sympy.Mul):
            return "*".join(self.paren(a) for a in expr.args)
        if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
            return "*".join([self.paren(expr.base)] * int(expr.exp))
        if isinstance(expr, sympy.Pow):  # a scalar such as attention's head_dim ** -0.5
            return f"std::pow(static_cast<double>({self.print(expr.base)}), {self.print(expr.exp)})"
        if isinstance(expr, (FloorDiv, sympy.Mod)) and self._non_negative(*expr.args):
            return f"{self.paren(expr.args[0])} {'/' if isinstance(expr, FloorDiv) else '%'} {self.paren(expr.args[1])}"
        if isinstance(expr, (FloorDiv, sympy.Mod)):  # Python's rounding, from the prelude
            helper = "td_floordiv" if isinstance(expr, FloorDiv) else "td_floormod"
            return f"{helper}({self.print(expr.args[0])}, {self.print(expr.args[1])})"
        if isinstance(expr, (sympy.Max, sympy.Min)):
            name = "std::max" if isinstance(expr, sympy.Max) else "std::min"
            printed = self.print(expr.args[0])
            for arg in expr.args[1:]:
                printed = f"{name}<int64_t>({printed}, {self.print(arg)})"
            return printed
        raise SymbolicShapeError(f"inductor cannot print the size expression {expr} as C")

    def _non_negative(self, *exprs):
        return all(self.shape_env.bounds(e)[0] >= 0 for e in exprs)


def known(relation, a, b):
    """``relation(a, b)`` (``sympy.Eq``, ``sympy.Lt``...) for every size: a simplification that
    is only worth making when it is always right asks this, and so adds no guard."""
    if isinstance(a, int) and isinstance(b, int):
        return bool(relation(a, b))
    sizevars = (a if isinstance(a, SymbolicSize) else b).sizevars
    return sizevars.statically_known(relation(_expr_of(a), _expr_of(b)))


def same_sizes(a, b):
    """Two lists of sizes that are the same for every size (and add no guard)."""
    return len(a) == len(b) and all(known(sympy.Eq, x, y) for x, y in zip(a, b))


def size_max(sizes):
    """The largest of ``sizes``: ``Max(s0, s1)`` when that depends on the sizes (no guard)."""
    sizes = list(sizes)
    if all(isinstance(s, int) for s in sizes):
        return max(sizes)
    sizevars = next(s for s in sizes if isinstance(s, SymbolicSize)).sizevars
    return sizevars.wrap(sympy.Max(*[_expr_of(s) for s in sizes]))


def size_gcd(a, b):
    """The greatest common divisor of two sizes (``gcd(8*s1, 12) == 4``, ``gcd(s0*s1, s1) == s1``)."""
    if isinstance(a, int) and isinstance(b, int):
        return math.gcd(a, b)
    sizevars = (a if isinstance(a, SymbolicSize) else b).sizevars
    return sizevars.wrap(sympy.gcd(_expr_of(a), _expr_of(b)))
