"""What every code generator shares: text buffers, common subexpressions, loop simplification
(chapter 10, "C++ code generation").

A backend's kernel class (``CppKernel`` here; a ``TritonKernel`` later) is itself the ops handler
that loop bodies run under: each ``ops.<name>`` call returns a :class:`CSEVariable` naming a
temporary that holds the value, and writes the line that computes it, unless the same
expression was computed before in the same scope (common subexpression elimination).
"""
import contextlib
import itertools
import math

import sympy

from ..indexing import Expr, Var, unflatten
from ..sizevars import known


class IndentedBuffer:
    """Lines of code with an indentation level; lines can be inserted or replaced later."""

    def __init__(self, indent="  "):
        self.lines = []
        self._indent = indent
        self._level = 0

    def writeline(self, line):
        self.lines.append(f"{self._indent * self._level}{line}" if line else "")

    def writelines(self, lines):
        for line in lines:
            self.writeline(line)

    def insert(self, position, line, level):
        self.lines.insert(position, f"{self._indent * level}{line}")

    @property
    def level(self):
        return self._level

    @contextlib.contextmanager
    def indent(self, levels=1):
        self._level += levels
        try:
            yield
        finally:
            self._level -= levels

    def getvalue(self):
        return "\n".join(self.lines) + "\n"


class CSEVariable:
    """A value in generated code: the name (or literal) that holds it, and its dtype."""

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype

    def __str__(self):
        return self.name

    __repr__ = __str__


class Kernel:
    """Common subexpression elimination over the lines a kernel emits."""

    def __init__(self):
        self.body = IndentedBuffer()
        self._cache = {}
        self._counter = itertools.count()

    def new_name(self, prefix="tmp"):
        return f"{prefix}{next(self._counter)}"

    def cse(self, expr, dtype, declare):
        """A variable holding ``expr``; ``declare(name, expr)`` is the line that defines it."""
        key = (expr, dtype)
        if key not in self._cache:
            var = CSEVariable(self.new_name(), dtype)
            self.body.writeline(declare(var.name, expr))
            self._cache[key] = var
        return self._cache[key]

    @contextlib.contextmanager
    def cse_scope(self):
        """Values computed inside (a loop, a masked block) are not visible after it."""
        saved = dict(self._cache)
        try:
            yield
        finally:
            self._cache = saved


def simplify_loops(variables, exprs, prefix, start=0):
    """Fewer, longer loops over the same elements, as TorchInductor's ``simplify_loops``.

    Drops size-1 dimensions and merges neighbouring dimensions ``a, b`` when every index
    expression uses them as one: ``coeff(a) == coeff(b) * size(b)`` (e.g. both contiguous, or both
    broadcast). Returns the new loop variables (named ``prefix{start}``, ...) and a mapping from
    each old variable to an expression in the new ones.
    """
    mapping = {v: Expr() for v in variables if v.size == 1}
    groups = []
    for v in variables:
        if v.size == 1:
            continue
        if groups and _can_merge(groups[-1][-1], v, exprs):
            groups[-1].append(v)
        else:
            groups.append([v])
    new_vars = []
    for group in groups:
        var = Var(f"{prefix}{start + len(new_vars)}", math.prod(v.size for v in group))
        new_vars.append(var)
        for old, expr in zip(group, unflatten(Expr.of(var), [v.size for v in group])):
            mapping[old] = expr
    return new_vars, mapping


def _can_merge(outer, inner, exprs):
    for expr in exprs:
        if {outer, inner} & expr.vars_inside_atoms():
            return False
        if not known(sympy.Eq, expr.coefficient(outer), expr.coefficient(inner) * inner.size):
            return False
    return True
