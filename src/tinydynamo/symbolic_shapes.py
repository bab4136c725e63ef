"""Symbolic sizes: the ShapeEnv and its SymNode (book chapter 12, "Dynamic shapes").

PyTorch 2 compiles one graph for many sizes by tracing with sizes that are *symbols*. A tensor
whose batch dimension is dynamic is traced as a meta tensor of shape ``(s0, 64)``; every op run
on it computes its result's shape as an expression (``s0*64`` elements, ``s0 // 2`` rows...).
This module is tinydynamo's version of PyTorch's ``ShapeEnv`` and ``SymNode``
(``torch/fx/experimental/symbolic_shapes.py`` and ``sym_node.py``), written with ``sympy``:

- ``ShapeEnv`` hands out size symbols ``s0, s1, ...``, one per distinct size value seen (*duck
  sizing*: two dimensions that are both 8 when traced get the same symbol, and a guard keeps them
  equal). It specialises sizes 0 and 1, so each symbol is known to be at least 2. It remembers
  the concrete value each symbol had when traced (its *hint*) and the source it was read from.
- ``SymNode`` is what a ``torch.SymInt`` holds: an expression, its hint, and the ShapeEnv. torch
  calls its methods by name (``add``, ``mul``, ``eq``, ``guard_bool``...) from Python and from
  C++ meta kernels, which is how ``torch.empty((s0, 64), device="meta") @ w`` works at all.
- When Python code, a meta kernel, or a decomposition *branches* on a symbolic value
  (``if x.shape[0] > 1``), the branch taken is only right for some sizes: ``guard_bool`` decides
  it with the hints and records the condition as a guard, unless the symbols' ranges already
  decide it (``s0 == 1`` is False for every ``s0 >= 2``, with no guard). Code that needs a plain
  ``int`` (``range(n)``) specialises the symbol: the guard ``s0 == 6``.

The guards end up in the frame's guard function (``dynamo/guards.py``), written in terms of the
sources: ``L['x'].size()[0] >= 2 and L['x'].size()[0] % 2 == 0``.
"""
import dataclasses
import math
import operator

import sympy
import torch

from .utils import compile_lock, counters


class SymbolicShapeError(NotImplementedError):
    """A stage cannot trace a graph with symbolic sizes (a meta kernel that rejects them, a size
    expression it cannot compute). Dynamo then compiles the graph once per input shape instead."""


class FloorDiv(sympy.Function):
    """``a // b`` for integers, simplified when the division is exact (``(2*s0) // 2`` is ``s0``)."""

    is_integer = True

    @classmethod
    def eval(cls, base, divisor):
        if divisor == 1:
            return base
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(int(base) // int(divisor))
        quotient = sympy.cancel(base / divisor)
        if sympy.fraction(quotient)[1] == 1 and quotient.is_integer:
            return quotient
        if divisor.is_positive and not divisor.is_Number:  # (q*d - 1) // d is q - 1 for d >= 1
            quotient, remainder = sympy.div(base, divisor)
            if remainder == -1 and quotient.is_integer:
                return quotient - 1
        # (s0*s1*s2) // (4*s0) is (s1*s2) // 4: a factor common to both, never 0 (a product of
        # sizes), leaves the quotient, so its floor, unchanged.
        if base.is_polynomial() and divisor.is_polynomial() and not (base.has(sympy.Float) or divisor.has(sympy.Float)):
            common = sympy.gcd(base, divisor)
            if common != 1 and common.is_positive and common.free_symbols:
                base, divisor = sympy.cancel(base / common), sympy.cancel(divisor / common)
                if sympy.fraction(base)[1] == 1 and sympy.fraction(divisor)[1] == 1:
                    return FloorDiv(base, divisor)
        return None


# The Python operators of the expressions that guards and kernels print.
PYTHON_OPERATORS = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Lt: "<", sympy.Le: "<=", sympy.Gt: ">",
                    sympy.Ge: ">="}


def to_python(expr, name_of):
    """``expr`` as Python source; ``name_of(symbol)`` names each symbol (a guard's local)."""
    def paren(e):
        text = to_python(e, name_of)
        return text if isinstance(e, sympy.Symbol) or e.is_Integer else f"({text})"
    if expr is sympy.true or expr is sympy.false:
        return str(bool(expr))
    if isinstance(expr, sympy.Symbol):
        return name_of(expr)
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Rational or expr.is_Float:
        return repr(float(expr))
    if isinstance(expr, sympy.Add):
        return " + ".join(paren(a) for a in expr.args)
    if isinstance(expr, sympy.Mul):
        numerator, denominator = sympy.fraction(expr)
        if denominator != 1:
            return f"{paren(numerator)} / {paren(denominator)}"
        return " * ".join(paren(a) for a in expr.args)
    if isinstance(expr, sympy.Pow):
        return f"{paren(expr.base)} ** {paren(expr.exp)}"
    if isinstance(expr, FloorDiv):
        return f"{paren(expr.args[0])} // {paren(expr.args[1])}"
    if isinstance(expr, sympy.Mod):
        return f"{paren(expr.args[0])} % {paren(expr.args[1])}"
    if isinstance(expr, (sympy.Max, sympy.Min)):
        return f"{type(expr).__name__.lower()}({', '.join(to_python(a, name_of) for a in expr.args)})"
    if isinstance(expr, sympy.floor):  # of a float expression (an upsampling scale)
        return f"int({paren(expr.args[0])} // 1)"
    if isinstance(expr, sympy.ceiling):
        return f"-int(-{paren(expr.args[0])} // 1)"
    if isinstance(expr, sympy.Abs):
        return f"abs({to_python(expr.args[0], name_of)})"
    if type(expr) in PYTHON_OPERATORS:
        return f"{paren(expr.lhs)} {PYTHON_OPERATORS[type(expr)]} {paren(expr.rhs)}"
    if isinstance(expr, (sympy.And, sympy.Or)):
        joiner = " and " if isinstance(expr, sympy.And) else " or "
        return joiner.join(paren(a) for a in expr.args)
    if isinstance(expr, sympy.Not):
        return f"not {paren(expr.args[0])}"
    raise NotImplementedError(f"tinydynamo cannot print the size expression {expr} as Python")


@dataclasses.dataclass
class ShapeGuard:
    """A condition on sizes that the trace relied on, and the Python line that needed it."""

    expr: sympy.Basic
    where: str


class ShapeEnv:
    """The symbols of one trace, what they stood for, and the guards recorded on them."""

    def __init__(self, where=lambda: "while compiling"):
        self.where = where  # () -> the user's file:line being traced, recorded with each guard
        self.var_to_val = {}  # symbol -> its value when traced (the hint)
        self.var_to_sources = {}  # symbol -> the sources it was read from, first one binds it
        self.val_to_var = {}  # value -> symbol (duck sizing)
        self.guards = []  # ShapeGuard, in the order recorded
        self.marked_dynamic = {}  # symbol -> the source the user marked dynamic (mark_dynamic)
        # A model asks the same questions again and again (ViT's forward: 7,213 conditions, 186
        # distinct), and deciding one can take sympy milliseconds: each is decided once.
        self.decided = {}  # condition -> True, False, or None (the hint decides, with a guard)

    # --- symbols --------------------------------------------------------------------------------

    def create_symbol(self, value, source, duck=True):
        """The symbol for a dynamic size ``value`` read at ``source`` (value >= 2). With ``duck``,
        a size equal to one seen before shares its symbol; int arguments get their own."""
        if value < 2:
            raise ValueError(f"sizes 0 and 1 are specialised, not symbolic (got {value} at {source})")
        symbol = self.val_to_var.get(value) if duck else None
        if symbol is None:
            symbol = sympy.Symbol(f"s{len(self.var_to_val)}", integer=True, positive=True)
            self.var_to_val[symbol] = value
            self.var_to_sources[symbol] = []
            if duck:
                self.val_to_var[value] = symbol
        self.var_to_sources[symbol].append(source)
        return symbol

    def mark_dynamic(self, symbol, source):
        """The user asked for ``source`` to be dynamic: a guard fixing ``symbol`` to one value is
        an error (``check_constraints``), not a silent specialisation."""
        self.marked_dynamic.setdefault(symbol, source)

    def create_symint(self, value, source, duck=True):
        return torch.SymInt(SymNode(self.create_symbol(value, source, duck), self, int, value))

    def hint(self, expr):
        """The value of ``expr`` with every symbol at its traced value."""
        return expr.xreplace(self.var_to_val) if expr.free_symbols else expr

    # --- deciding conditions --------------------------------------------------------------------

    def bounds(self, expr):
        """An interval (lo, hi) that holds ``expr`` for every value of the symbols (each >= 2)."""
        if expr.is_Number:
            return expr, expr
        if isinstance(expr, sympy.Symbol):
            return sympy.Integer(2), sympy.oo
        if isinstance(expr, sympy.Add):
            parts = [self.bounds(a) for a in expr.args]
            return sum(lo for lo, _ in parts), sum(hi for _, hi in parts)
        if isinstance(expr, sympy.Mul):
            lo, hi = self.bounds(expr.args[0])
            for arg in expr.args[1:]:
                lo, hi = multiply_intervals((lo, hi), self.bounds(arg))
            return lo, hi
        if isinstance(expr, sympy.Mod) and expr.args[1].is_Integer and expr.args[1] > 0:
            return sympy.Integer(0), expr.args[1] - 1
        if isinstance(expr, FloorDiv) and expr.args[1].is_Integer and expr.args[1] > 0:
            lo, hi = self.bounds(expr.args[0])
            return sympy.floor(lo / expr.args[1]), sympy.floor(hi / expr.args[1])
        if isinstance(expr, (sympy.Max, sympy.Min)):
            parts = [self.bounds(a) for a in expr.args]
            pick = max if isinstance(expr, sympy.Max) else min
            return pick(lo for lo, _ in parts), pick(hi for _, hi in parts)
        return -sympy.oo, sympy.oo

    def difference_bounds(self, difference):
        """Bounds of ``lhs - rhs``: the tighter of the expanded and the factored form's, since
        intervals forget that two terms share a symbol (``s0*s1 - s0`` is ``s0*(s1 - 1) >= 2``)."""
        difference = self.drop_trivial_mods(difference)
        lo1, hi1 = self.bounds(sympy.expand(difference))
        lo2, hi2 = self.bounds(sympy.factor(difference))
        return max(lo1, lo2), min(hi1, hi2)

    def drop_trivial_mods(self, expr):
        """``a % b`` is ``a`` when ``0 <= a < b`` for every size (``1 % s1``)."""
        def trivial(e):
            if not isinstance(e, sympy.Mod):
                return False
            lo, hi = self.bounds(e.args[0])
            return lo >= 0 and hi < self.bounds(e.args[1])[0]
        return expr.replace(trivial, lambda e: e.args[0])

    def static_value(self, condition):
        """True or False if ``condition`` holds or fails for every size, else None."""
        if condition is sympy.true or condition is sympy.false:
            return bool(condition)
        if type(condition) not in PYTHON_OPERATORS:
            return None
        lo, hi = self.difference_bounds(condition.lhs - condition.rhs)
        decided = {
            sympy.Eq: True if lo == hi == 0 else False if lo > 0 or hi < 0 else None,
            sympy.Ne: False if lo == hi == 0 else True if lo > 0 or hi < 0 else None,
            sympy.Lt: True if hi < 0 else False if lo >= 0 else None,
            sympy.Le: True if hi <= 0 else False if lo > 0 else None,
            sympy.Gt: True if lo > 0 else False if hi <= 0 else None,
            sympy.Ge: True if lo >= 0 else False if hi < 0 else None,
        }
        return decided[type(condition)]

    def evaluate_condition(self, condition, where):
        """Decide ``condition`` now: statically if the ranges decide it, else by the hints, and
        then record the outcome as a guard."""
        if condition in self.decided:
            known = self.decided[condition]
            return bool(self.hint(condition)) if known is None else known  # its guard is recorded
        known = self.static_value(condition)
        if known is None:
            known = self.static_value(self.simplify_condition(condition))
        self.decided[condition] = known
        if known is not None:
            return known
        outcome = bool(self.hint(condition))
        self.add_guard(condition if outcome else sympy.Not(condition), where)
        return outcome

    def specialize(self, expr, where):
        """``expr`` as a plain number, guarding that it keeps its traced value."""
        value = self.hint(expr)
        if expr.free_symbols:
            self.add_guard(sympy.Eq(expr, value), where)
        return value

    def add_guard(self, condition, where):
        condition = self.simplify_condition(condition)
        if self.static_value(condition) is True:
            return
        if all(g.expr != condition for g in self.guards):
            self.guards.append(ShapeGuard(condition, where))

    # --- simplifying guards ---------------------------------------------------------------------

    def simplify_condition(self, condition):
        """An equivalent, shorter form of a comparison of sizes: ``not (a == b)`` is ``a != b``;
        ``s0*((s1*s2) % 4) == 0`` is ``(s1*s2) % 4 == 0`` (a factor that is never 0 cannot make
        a product 0); ``x - 4*(x // 4) == 0`` is ``x % 4 == 0``."""
        if isinstance(condition, sympy.Not) and type(condition.args[0]) in NEGATIONS:
            inner = condition.args[0]
            condition = NEGATIONS[type(inner)](inner.lhs, inner.rhs)
        if type(condition) not in (sympy.Eq, sympy.Ne):
            return condition
        difference = _floordiv_remainders_as_mods(sympy.expand(condition.lhs - condition.rhs))
        factors = sympy.Mul.make_args(sympy.factor_terms(difference))
        kept = [f for f in factors if not self._never_zero(f)]
        if not kept:  # a product of factors that are never 0
            return sympy.false if type(condition) is sympy.Eq else sympy.true
        if len(kept) < len(factors):
            difference = _floordiv_remainders_as_mods(sympy.expand(sympy.Mul(*kept)))
        return type(condition)(*_split_sides(difference))

    def _never_zero(self, expr):
        lo, hi = self.difference_bounds(expr)
        return lo > 0 or hi < 0

    def simplified_guards(self):
        """The recorded guards less those the others imply: a guard ``e == c`` decides every
        other guard in which ``e`` appears, once ``c`` is put for it (``(s1*s2) // s3 == 4``
        makes ``(s1*s2) // s3 != 1`` and ``(s1*s2) // s3 >= 0`` redundant). Each guard is
        dropped only if the guards still kept imply it, so the conjunction is unchanged."""
        kept = list(self.guards)
        for guard in list(kept):
            others = [g for g in kept if g is not guard]
            if any(self._implies(other.expr, guard.expr) for other in others):
                kept.remove(guard)
        return kept

    def _implies(self, known, condition):
        """Does guard ``known`` imply ``condition``? Yes if putting what ``known`` says for an
        expression (``e == 4``: 4 for ``e``; ``x % 4 == 0``: ``4*(x // 4)`` for ``x``) into
        ``condition`` makes it true for every size."""
        if known == condition:
            return True
        substitution = _substitution(known)
        if substitution is None:
            return False
        replaced = condition.xreplace(substitution)
        if replaced == condition:
            return False
        return self.static_value(self.simplify_condition(replaced)) is True

    # --- mark_dynamic -----------------------------------------------------------------------------

    def check_constraints(self):
        """Raise ``ConstraintViolationError`` if a guard fixes a dimension the user marked dynamic
        (``if x.shape[0] == 5`` while ``x.shape[0]`` is 5), as torch.compile does."""
        for guard in self.guards:
            if type(guard.expr) is not sympy.Eq:
                continue
            for symbol, source in self.marked_dynamic.items():
                value = _solved_value(guard.expr, symbol)
                if value is not None:
                    raise ConstraintViolationError(
                        f"Constraints violated ({source.name()})! You marked {source.name()} as dynamic "
                        f"with tinydynamo.mark_dynamic, but your code specialized it to be a constant "
                        f"({value}) at {guard.where}. Either remove mark_dynamic or do not branch on "
                        f"that size.")

    # --- what torch's own Python helpers (guard_or_false, statically_known_true) call ---------

    def evaluate_sym_node(self, node, size_oblivious=False, fallback_value=None):
        return node.guard_bool() if node.pytype is bool else node.guard_int()

    def _maybe_evaluate_static(self, expr):
        return self.static_value(expr)


class ConstraintViolationError(RuntimeError):
    """A dimension marked dynamic by the user was specialised by the traced code."""


NEGATIONS = {sympy.Eq: sympy.Ne, sympy.Ne: sympy.Eq, sympy.Lt: sympy.Ge, sympy.Le: sympy.Gt,
             sympy.Gt: sympy.Le, sympy.Ge: sympy.Lt}


def _floordiv_remainders_as_mods(expr):
    """``x - k*(x // k)`` (in a sum) is ``x % k``."""
    if not isinstance(expr, sympy.Add):
        return expr
    terms = list(sympy.Add.make_args(expr))
    for term in list(terms):
        coefficient, rest = term.as_independent(FloorDiv, as_Add=False)
        if not isinstance(rest, FloorDiv):
            continue
        x, k = rest.args
        if coefficient == -k and x in terms and term in terms:
            terms.remove(term)
            terms.remove(x)
            terms.append(sympy.Mod(x, k))
    return sympy.Add(*terms)


def _split_sides(expr):
    """``a - b`` as (a, b), with the numbers on the right: readable guards (``s0 == 2*s1``)."""
    terms = sympy.Add.make_args(expr)
    if all(t.is_number or t.could_extract_minus_sign() for t in terms):
        terms = sympy.Add.make_args(-expr)  # (an equality or inequality: the sign does not matter)
    lhs = [t for t in terms if not t.is_number and not t.could_extract_minus_sign()]
    rhs = [-t for t in terms if t not in lhs]
    return sympy.Add(*lhs), sympy.Add(*rhs)


def _substitution(equation):
    """{expression: what ``equation`` says it equals}, or None."""
    if type(equation) is not sympy.Eq:
        return None
    lhs, rhs = (equation.rhs, equation.lhs) if equation.lhs.is_number else (equation.lhs, equation.rhs)
    if lhs.is_number or not rhs.is_number:
        return None
    if isinstance(lhs, sympy.Mod) and rhs == 0 and lhs.args[1].is_Integer:
        x, k = lhs.args
        return {x: k * FloorDiv(x, k)}
    return {lhs: rhs}


def _solved_value(equation, symbol):
    """The one value of ``symbol`` that ``equation`` (over that symbol alone) allows, or None."""
    if equation.free_symbols != {symbol}:
        return None
    try:
        polynomial = sympy.Poly(equation.lhs - equation.rhs, symbol)
    except sympy.PolynomialError:
        return None
    if polynomial.degree() != 1:
        return None
    a, b = polynomial.all_coeffs()
    value = -b / a
    return int(value) if value.is_Integer else value


def multiply_intervals(a, b):
    products = [x * y if not (x == 0 or y == 0) else sympy.Integer(0) for x in a for y in b]
    return min(products), max(products)


# --- SymNode ------------------------------------------------------------------------------------

def _int_truediv(a, b):
    return a / b


def _python_floordiv(a, b):
    return FloorDiv(a, b) if a.is_integer and b.is_integer else sympy.floor(a / b)


# method name -> (sympy function, Python function on hints, result type or None for "same as self")
BINARY_METHODS = {
    "add": (operator.add, operator.add, None),
    "sub": (operator.sub, operator.sub, None),
    "mul": (operator.mul, operator.mul, None),
    "mod": (sympy.Mod, operator.mod, None),
    "floordiv": (_python_floordiv, operator.floordiv, None),
    "int_floordiv": (_python_floordiv, operator.floordiv, int),
    "truediv": (_int_truediv, operator.truediv, float),
    "int_truediv": (_int_truediv, operator.truediv, float),
    "float_truediv": (_int_truediv, operator.truediv, float),
    "pow": (operator.pow, operator.pow, None),
    "pow_by_natural": (operator.pow, operator.pow, int),
    "float_pow": (operator.pow, operator.pow, float),
    "sym_max": (sympy.Max, max, None),
    "sym_min": (sympy.Min, min, None),
    "eq": (sympy.Eq, operator.eq, bool),
    "ne": (sympy.Ne, operator.ne, bool),
    "lt": (sympy.Lt, operator.lt, bool),
    "le": (sympy.Le, operator.le, bool),
    "gt": (sympy.Gt, operator.gt, bool),
    "ge": (sympy.Ge, operator.ge, bool),
    "sym_and": (sympy.And, lambda a, b: a and b, bool),
    "sym_or": (sympy.Or, lambda a, b: a or b, bool),
    "and_": (sympy.And, lambda a, b: a and b, bool),
    "or_": (sympy.Or, lambda a, b: a or b, bool),
}
UNARY_METHODS = {
    "neg": (operator.neg, operator.neg, None),
    "abs": (sympy.Abs, abs, None),
    "sym_not": (sympy.Not, operator.not_, bool),
    "sym_float": (lambda e: e, float, float),
    "sym_int": (sympy.floor, int, int),
    "floor": (sympy.floor, math.floor, int),
    "ceil": (sympy.ceiling, math.ceil, int),
    "trunc": (sympy.floor, math.trunc, int),
    "sym_sqrt": (sympy.sqrt, math.sqrt, float),
}


class SymNode:
    """What a ``torch.SymInt`` (or SymBool, SymFloat) holds: ``expr`` over the ShapeEnv's
    symbols, its Python type, and ``hint``, its value when traced."""

    def __init__(self, expr, shape_env, pytype, hint):
        self.expr = sympy.sympify(expr)
        self.shape_env = shape_env
        self.pytype = pytype
        self._hint = hint  # torch's own Python helpers read this name

    @property
    def hint(self):
        return self._hint

    # --- what torch asks of every node ---------------------------------------------------------

    def is_int(self):
        return self.pytype is int

    def is_float(self):
        return self.pytype is float

    def is_bool(self):
        return self.pytype is bool

    def is_nested_int(self):
        return False

    def is_symbolic(self):
        return bool(self.expr.free_symbols)

    def is_constant(self):
        return False

    def has_hint(self):
        return True

    def nested_int(self):
        return None

    def maybe_as_int(self):
        return int(self.expr) if self.pytype is int and self.expr.is_Integer else None

    def maybe_as_float(self):
        return None

    def maybe_as_bool(self):
        return bool(self.expr) if self.expr in (sympy.true, sympy.false) else None

    def wrap_int(self, value):
        return SymNode(sympy.Integer(value), self.shape_env, int, value)

    def wrap_float(self, value):
        return SymNode(sympy.Float(value), self.shape_env, float, value)

    def wrap_bool(self, value):
        return SymNode(sympy.true if value else sympy.false, self.shape_env, bool, value)

    def clone(self):
        return self

    def str(self):
        return str(self.expr)

    __str__ = str

    def __repr__(self):
        return f"SymNode({self.expr}, hint={self.hint})"

    def _graph_repr(self):
        return str(self.expr)

    # --- arithmetic: build the expression and its hint ------------------------------------------

    def _binary(self, method, other):
        to_expr, on_hints, result_type = BINARY_METHODS[method]
        if result_type is None:
            result_type = float if float in (self.pytype, other.pytype) else int
        expr = to_expr(self.expr, other.expr)
        return SymNode(expr, self.shape_env, result_type, on_hints(self.hint, other.hint))

    def _unary(self, method):
        to_expr, on_hint, result_type = UNARY_METHODS[method]
        return SymNode(to_expr(self.expr), self.shape_env, result_type or self.pytype, on_hint(self.hint))

    def __getattr__(self, name):
        """``add``, ``mul``, ``eq``, ``neg``...: one method per entry of the tables above."""
        if name in BINARY_METHODS:
            return lambda other: self._binary(name, other)
        if name in UNARY_METHODS:
            return lambda: self._unary(name)
        raise AttributeError(f"tinydynamo's SymNode has no method {name!r}")

    def sym_sum(self, args):
        total = self.wrap_int(0)
        for arg in args:
            total = total.add(arg)
        return total

    def sym_ite(self, then_node, else_node):
        return then_node if self.bool_() else else_node

    # --- layout queries of symbolic tensors ------------------------------------------------------

    def is_contiguous(self, sizes, strides):
        return self._dense_in_order(sizes, strides, list(range(len(sizes)))[::-1])

    def is_channels_last_contiguous_2d(self, sizes, strides):
        return self._dense_in_order(sizes, strides, [1, 3, 2, 0]) if len(sizes) == 4 else self.wrap_bool(False)

    def is_channels_last_contiguous_3d(self, sizes, strides):
        return self._dense_in_order(sizes, strides, [1, 4, 3, 2, 0]) if len(sizes) == 5 else self.wrap_bool(False)

    is_channels_last_strides_2d = is_channels_last_contiguous_2d
    is_channels_last_strides_3d = is_channels_last_contiguous_3d

    def is_non_overlapping_and_dense(self, sizes, strides):
        order = sorted(range(len(sizes)), key=lambda d: (strides[d].hint, sizes[d].hint))
        return self._dense_in_order(sizes, strides, order)

    def is_non_overlapping_and_dense_indicator(self, sizes, strides):
        dense = self.is_non_overlapping_and_dense(sizes, strides)
        return SymNode(sympy.Integer(1) if dense.bool_() else sympy.Integer(0), self.shape_env, int,
                       int(dense.hint))

    def _dense_in_order(self, sizes, strides, innermost_first):
        """Whether the strides are those of a dense tensor laid out innermost dimension first."""
        expected = sympy.Integer(1)
        conditions = []
        for dim in innermost_first:
            size, stride = sizes[dim].expr, strides[dim].expr
            conditions.append(sympy.Or(sympy.Eq(size, 1), sympy.Eq(stride, expected)))
            expected = expected * size
        expr = sympy.And(*conditions)
        return SymNode(expr, self.shape_env, bool, bool(self.shape_env.hint(expr)))

    # --- turning a symbolic value into a Python one ----------------------------------------------

    def guard_bool(self, file=None, line=None):
        if self.expr in (sympy.true, sympy.false):
            return bool(self.expr)
        return self.shape_env.evaluate_condition(self.expr, self.shape_env.where())

    def guard_int(self, file=None, line=None):
        return int(self.shape_env.specialize(self.expr, self.shape_env.where()))

    def guard_float(self, file=None, line=None):
        return float(self.shape_env.specialize(self.expr, self.shape_env.where()))

    def statically_known_true(self, file=None, line=None):
        return self.shape_env.static_value(self.expr) is True

    guard_size_oblivious = guard_bool
    guard_or_false = guard_bool
    guard_or_true = guard_bool
    expect_true = guard_bool

    def bool_(self):
        return self.guard_bool()

    def int_(self):
        return self.guard_int()


def is_symbolic(value):
    """A SymInt/SymFloat/SymBool whose value depends on a symbol."""
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)) and value.node.is_symbolic()


class SizeSpecializations:
    """Compiled variants of one graph, one per distinct sizes of the arguments it is called with:
    how a compiler that knows only concrete sizes serves a graph traced with symbolic ones.
    ``compile_variant(args)`` compiles for the sizes, strides, dtypes and int values of ``args``
    the first time they are seen; ``stats()["size_specializations"]`` counts the variants."""

    def __init__(self, compile_variant):
        self.compile_variant = compile_variant
        self.variants = {}

    @staticmethod
    def key(args):
        return tuple((tuple(a.shape), a.stride(), a.dtype, a.device) if isinstance(a, torch.Tensor) else a
                     for a in args)

    def variant(self, args):
        """The variant for the sizes of ``args``, compiled now if it is new."""
        key = self.key(args)
        if key not in self.variants:
            with compile_lock:  # threads calling with the same new sizes compile them once
                if key not in self.variants:
                    counters["size_specializations"] += 1
                    self.variants[key] = self.compile_variant(args)
        return self.variants[key]

    def __call__(self, *args):
        return self.variant(args)(*args)
