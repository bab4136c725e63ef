"""Index expressions: the integer arithmetic that says where a loop reads and writes (chapter 8).

TorchInductor writes indices as sympy expressions. Ours are a tiny, fast stand-in with exactly
what a loop nest needs:

* :class:`Var`: a loop variable ``x0``, ``r0`` that runs over ``0 .. size-1`` (or, for an
  *indirect* variable, a value loaded from an index tensor, known to be in that range);
* :class:`Expr`: ``c0 + c1*a1 + c2*a2 + ...`` whose coefficients are sizes, where each atom
  ``a`` is a variable, a :class:`FloorDiv` ``(e // d)`` or a :class:`ModularIndexing` ``(e % d)``.

A size is an int, or with dynamic shapes a ``SymbolicSize`` such as ``s1`` (chapter 12): the
same code then builds ``s1*x0 + x1``. A simplification that depends on sizes is made only when it
holds for every size (``known``), so simplifying never adds a guard.

Every operation simplifies using the ranges of the variables, so that the ``//`` and ``%`` that
views introduce disappear when they are no-ops: reading a ``[4, 8]`` buffer through a flat index
``i`` gives ``(i // 8) * 8 + (i % 8)``, which simplifies back to ``i``.
"""
import re

import sympy

from ..utils import contiguous_strides  # noqa: F401 (inductor's modules and a08 import it from here)
from .sizevars import is_size, known, size_gcd, structural_key


class _Atom:
    """Arithmetic on an atom makes an Expr."""

    __slots__ = ()

    def __add__(self, other):
        return Expr.of(self) + other

    __radd__ = __add__

    def __sub__(self, other):
        return Expr.of(self) - other

    def __rsub__(self, other):
        return Expr.of(other) - Expr.of(self)

    def __mul__(self, factor):
        return Expr.of(self) * factor

    __rmul__ = __mul__

    def __neg__(self):
        return Expr.of(self) * -1


class Var(_Atom):
    """A loop variable taking the values ``0 .. size - 1``."""

    __slots__ = ("name", "size", "indirect", "_key")

    def __init__(self, name, size, indirect=False):
        self.name = name
        self.size = size
        self.indirect = indirect  # its value is computed in the kernel (gather), not a loop counter
        self._key = (0, _natural_key(name), structural_key(size))

    def bounds(self):
        return 0, max(self.size - 1, 0)

    def sort_key(self):
        return self._key

    def __eq__(self, other):
        return isinstance(other, Var) and self._key == other._key and self.indirect == other.indirect

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        return self.name

    __repr__ = __str__


class FloorDiv(_Atom):
    """The atom ``numerator // divisor`` (floor division, divisor > 0)."""

    __slots__ = ("numerator", "divisor", "_key")

    def __init__(self, numerator, divisor):
        self.numerator = numerator
        self.divisor = divisor
        self._key = (1, str(numerator), structural_key(divisor))

    def bounds(self):
        lo, hi = self.numerator.bounds()
        return lo // self.divisor, hi // self.divisor

    def sort_key(self):
        return self._key

    def __eq__(self, other):
        return isinstance(other, FloorDiv) and self._key == other._key and self.numerator == other.numerator

    def __hash__(self):
        return hash((1, self.numerator, self.divisor))

    def __str__(self):
        if self.numerator.bounds()[0] >= 0:  # C's / is floor division for non-negative numbers
            return f"({_parenthesized(self.numerator)} / {self.divisor})"
        return f"td_floordiv({self.numerator}, {self.divisor})"

    __repr__ = __str__


class ModularIndexing(_Atom):
    """The atom ``numerator % divisor`` (Python's modulo: always in ``0 .. divisor - 1``)."""

    __slots__ = ("numerator", "divisor", "_key")

    def __init__(self, numerator, divisor):
        self.numerator = numerator
        self.divisor = divisor
        self._key = (2, str(numerator), structural_key(divisor))

    def bounds(self):
        lo, hi = self.numerator.bounds()
        if lo >= 0:
            return 0, min(hi, self.divisor - 1)
        return 0, self.divisor - 1

    def sort_key(self):
        return self._key

    def __eq__(self, other):
        return (isinstance(other, ModularIndexing) and self._key == other._key
                and self.numerator == other.numerator)

    def __hash__(self):
        return hash((2, self.numerator, self.divisor))

    def __str__(self):
        if self.numerator.bounds()[0] >= 0:
            return f"({_parenthesized(self.numerator)} % {self.divisor})"
        return f"td_floormod({self.numerator}, {self.divisor})"

    __repr__ = __str__


def _parenthesized(expr):
    if len(expr.terms) == 1 and expr.const == 0 and expr.terms[0][1] == 1:
        return str(expr)
    return f"({expr})"


def _natural_key(name):
    """Sort x2 before x10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


class Expr:
    """An integer affine combination of atoms: ``const + sum(coeff * atom)``. Immutable."""

    __slots__ = ("terms", "const", "_str")

    def __init__(self, terms=(), const=0):
        self.terms = terms  # tuple of (atom, coeff), sorted by atom, no zero coefficients
        self.const = const
        self._str = None

    @staticmethod
    def of(value):
        """An Expr for a size (an int or a SymbolicSize), an atom or an Expr."""
        if isinstance(value, Expr):
            return value
        if is_size(value):
            return Expr((), value)
        return Expr(((value, 1),), 0)

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other):
        other = Expr.of(other)
        coeffs = dict(self.terms)
        for atom, c in other.terms:
            coeffs[atom] = coeffs.get(atom, 0) + c
        return _build(coeffs, self.const + other.const)

    __radd__ = __add__

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-Expr.of(other))

    def __rsub__(self, other):
        return Expr.of(other) - self

    def __mul__(self, factor):
        assert is_size(factor), f"index expressions are affine: cannot multiply by {factor!r}"
        if factor == 0:
            return Expr()
        return Expr(tuple((a, c * factor) for a, c in self.terms), self.const * factor)

    __rmul__ = __mul__

    # ------------------------------------------------------------------ queries

    def bounds(self):
        """(lowest, highest) value over all values of the variables."""
        lo = hi = self.const
        for atom, c in self.terms:
            a_lo, a_hi = atom.bounds()
            lo += c * (a_lo if c > 0 else a_hi)
            hi += c * (a_hi if c > 0 else a_lo)
        return lo, hi

    def coefficient(self, var):
        """The coefficient of ``var`` as a plain term (0 if it does not appear that way)."""
        for atom, c in self.terms:
            if atom == var:
                return c
        return 0

    def free_vars(self):
        """Every Var in the expression, including those inside // and %."""
        found = set()
        for atom, _ in self.terms:
            if isinstance(atom, Var):
                found.add(atom)
            else:
                found |= atom.numerator.free_vars()
        return found

    def vars_inside_atoms(self):
        """The Vars that appear inside a // or % (their coefficient alone does not describe them)."""
        found = set()
        for atom, _ in self.terms:
            if not isinstance(atom, Var):
                found |= atom.numerator.free_vars()
        return found

    def is_constant(self):
        return not self.terms

    def subs(self, mapping):
        """Replace Vars by Exprs (or ints) and simplify."""
        if not mapping:
            return self
        result = Expr((), self.const)
        for atom, c in self.terms:
            if isinstance(atom, Var):
                replacement = mapping.get(atom, atom)
            elif isinstance(atom, FloorDiv):
                replacement = floordiv(atom.numerator.subs(mapping), atom.divisor)
            else:
                replacement = mod(atom.numerator.subs(mapping), atom.divisor)
            result = result + Expr.of(replacement) * c
        return result

    # ------------------------------------------------------------------ identity and printing

    def __eq__(self, other):
        if is_size(other):
            return not self.terms and self.const == other
        return isinstance(other, Expr) and self.terms == other.terms and self.const == other.const

    def __hash__(self):
        return hash((self.terms, self.const))

    def __str__(self):
        """C syntax: ``1024*x0 + r0 + 3``."""
        if self._str is None:
            parts = []
            for atom, c in self.terms:
                text = str(atom)
                parts.append(text if c == 1 else f"-{text}" if c == -1 else f"{c}*{text}")
            if self.const or not parts:
                parts.append(str(self.const))
            self._str = " + ".join(parts).replace("+ -", "- ")
        return self._str

    __repr__ = __str__


def _build(coeffs, const):
    """Make a normalized Expr: drop zero terms, sort, and fold (e//d)*d + e%d back into e."""
    coeffs = {a: c for a, c in coeffs.items() if c != 0}
    while True:
        folded = _fold_div_mod(coeffs)
        if folded is None:
            break
        coeffs, numerator, factor = folded
        for atom, c in numerator.terms:
            coeffs[atom] = coeffs.get(atom, 0) + c * factor
        const += numerator.const * factor
        coeffs = {a: c for a, c in coeffs.items() if c != 0}
    return Expr(tuple(sorted(coeffs.items(), key=lambda item: item[0].sort_key())), const)


def _fold_div_mod(coeffs):
    """Find k*(e % d) + k*d*(e // d) in ``coeffs``; return (coeffs without them, e, k) or None."""
    for atom, c in coeffs.items():
        if isinstance(atom, ModularIndexing):
            quotient = floordiv(atom.numerator, atom.divisor)
            if len(quotient.terms) != 1 or quotient.const != 0 or quotient.terms[0][1] != 1:
                continue
            partner = quotient.terms[0][0]
            if coeffs.get(partner) == c * atom.divisor:
                rest = {a: k for a, k in coeffs.items() if a != atom and a != partner}
                return rest, atom.numerator, c
    return None


def _split(expr, divisor):
    """Split expr into (quotient part, remainder part) where expr = divisor*quotient + remainder
    and the remainder's terms have coefficients not divisible by divisor."""
    quotient, remainder = {}, {}
    for atom, c in expr.terms:
        if c % divisor == 0:
            quotient[atom] = c // divisor
        else:
            remainder[atom] = c
    return (_build(quotient, expr.const // divisor), _build(remainder, expr.const % divisor))


def _common_factor(expr, divisor):
    g = divisor
    for _, c in expr.terms:
        g = size_gcd(g, c)
    return size_gcd(g, expr.const)


def _divide_exactly(expr, g):
    return Expr(tuple((a, c // g) for a, c in expr.terms), expr.const // g)


def floordiv(expr, divisor):
    """``expr // divisor``, simplified using the variables' ranges."""
    expr = Expr.of(expr)
    assert is_size(divisor) and divisor > 0, divisor
    if divisor == 1:
        return expr
    quotient, rest = _split(expr, divisor)
    lo, hi = rest.bounds()
    if known(sympy.Eq, lo // divisor, hi // divisor):  # the remainder never crosses a multiple of divisor
        return quotient + lo // divisor
    g = _common_factor(rest, divisor)
    if known(sympy.Gt, g, 1):
        rest, divisor = _divide_exactly(rest, g), divisor // g
    if len(rest.terms) == 1 and rest.const == 0 and rest.terms[0][1] == 1 \
            and isinstance(rest.terms[0][0], FloorDiv):  # (e // a) // b == e // (a*b)
        inner = rest.terms[0][0]
        return quotient + FloorDiv(inner.numerator, inner.divisor * divisor)
    return quotient + FloorDiv(rest, divisor)


def mod(expr, divisor):
    """``expr % divisor`` (Python's modulo), simplified using the variables' ranges."""
    expr = Expr.of(expr)
    assert is_size(divisor) and divisor > 0, divisor
    if divisor == 1:
        return Expr()
    _, rest = _split(expr, divisor)
    lo, hi = rest.bounds()
    if known(sympy.Ge, lo, 0) and known(sympy.Lt, hi, divisor):
        return rest
    g = _common_factor(rest, divisor)
    if known(sympy.Gt, g, 1):
        return mod(_divide_exactly(rest, g), divisor // g) * g
    return Expr.of(ModularIndexing(rest, divisor))


def flatten(index, sizes):
    """The row-major flat position of ``index`` in a tensor of ``sizes``."""
    return sum((Expr.of(i) * s for i, s in zip(index, contiguous_strides(sizes))), Expr())


def unflatten(flat, sizes):
    """The index whose row-major flat position in a tensor of ``sizes`` is ``flat``."""
    return [mod(floordiv(flat, stride), size) if size > 0 else Expr()
            for size, stride in zip(sizes, contiguous_strides(sizes))]
