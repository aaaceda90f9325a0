"""The grammar of unit expressions and quantity strings, checked token by token before Pint
is handed anything, so that it never evaluates user arithmetic."""

from __future__ import annotations

import re

from perfgraph.engine.units.table import unknown_names
from perfgraph.errors import UnitError

#: Said after every quantity that cannot be read.
EXPECTED_QUANTITY = "expected a number and a unit, like '3.35 TB/s'"
#: How big a unit exponent may be: the formula language's bound on constant exponents.
MAX_UNIT_EXPONENT = 64
#: At most this many unit names in one unit expression, and parentheses this deep.
MAX_UNIT_NAMES = 16
MAX_UNIT_PARENS = 4
MAX_QUANTITY_LENGTH = 200

#: One number: optional sign, ASCII digits with an optional decimal point, optional exponent.
_NUMBER = re.compile(r"\s*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
#: The tokens of a unit expression. A name is letters (µ included) and underscores, no
#: digits, so that ``m2`` or ``s1`` is never read as a power or a product.
_UNIT_TOKEN = re.compile(r"\s*(?:(?P<name>[^\W\d_][^\W\d]*|%)|(?P<pow>\*\*|\^)"
                         r"|(?P<op>[*/·])|(?P<open>\()|(?P<close>\))|(?P<int>[+-]?[0-9]+))")
_WORD = re.compile(r"[^\W\d_][^\W\d]*")


class _Refused(Exception):
    """Why a unit expression is outside the grammar (the caller adds what was expected)."""


def _lex(text: str, start: int) -> list[tuple[str, str, int]]:
    """``(kind, text, column)`` for each token of ``text[start:]``; columns count from 1."""
    tokens: list[tuple[str, str, int]] = []
    pos = start
    while text[pos:].strip():
        match = _UNIT_TOKEN.match(text, pos)
        if match is None or match.lastgroup is None:
            at = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise _Refused(f"unexpected {text[at]!r} at column {at + 1}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind), match.start(kind) + 1))
        pos = match.end()
    return tokens


class _UnitGrammar:
    """A unit expression, checked token by token and written out again for Pint::

        expression := factor (("*" | "/" | "·") factor)*
        factor     := (NAME | "(" expression ")") [("**" | "^") INTEGER]  |  "1"
        NAME       := a unit the registry knows (SI prefixes included), or "%"

    ``1`` may only open a declared unit (``1/s``); an exponent is a whole number within
    ±MAX_UNIT_EXPONENT. Pint is handed nothing else, so it never evaluates user arithmetic.
    """

    def __init__(self, tokens: list[tuple[str, str, int]], *, allow_one: bool) -> None:
        self.tokens = tokens
        self.allow_one = allow_one
        self.at = 0
        self.out: list[str] = []
        self.names: list[str] = []

    def peek(self, kind: str | None = None) -> tuple[str, str, int] | None:
        tok = self.tokens[self.at] if self.at < len(self.tokens) else None
        return tok if tok is not None and (kind is None or tok[0] == kind) else None

    def take(self) -> tuple[str, str, int]:
        self.at += 1
        return self.tokens[self.at - 1]

    def read(self) -> str:
        self.expression(0)
        if self.at < len(self.tokens):
            kind, word, col = self.tokens[self.at]
            if kind in ("name", "open", "int"):
                raise _Refused(f"'*' or '/' expected before {word!r} at column {col}")
            raise _Refused(f"unexpected {word!r} at column {col}")
        if len(self.names) > MAX_UNIT_NAMES:
            raise _Refused(f"more than {MAX_UNIT_NAMES} unit names")
        return "".join(self.out)

    def expression(self, depth: int) -> None:
        self.factor(depth, first=True)
        while self.peek("op"):
            self.out.append("/" if self.take()[1] == "/" else "*")
            self.factor(depth, first=False)

    def factor(self, depth: int, *, first: bool) -> None:
        tok = self.peek()
        if tok is None:
            raise _Refused("a unit is missing at the end")
        kind, word, col = tok
        if kind == "one" or (kind == "int" and word == "1" and first and depth == 0
                             and self.allow_one):
            self.out.append(self.take()[1])
            return
        if kind == "name":
            self.take()
            self.names.append(word)
            self.out.append("percent" if word == "%" else word)
        elif kind == "open":
            if depth >= MAX_UNIT_PARENS:
                raise _Refused(f"parentheses nested more than {MAX_UNIT_PARENS} deep")
            self.take()
            self.out.append("(")
            self.expression(depth + 1)
            if not self.peek("close"):
                raise _Refused(f"'(' at column {col} is not closed")
            self.out.append(self.take()[1])
        else:
            raise _Refused(f"{word!r} at column {col} is not a unit")
        self.power()

    def power(self) -> None:
        if not self.peek("pow"):
            return
        _, word, col = self.take()
        exp = self.peek("int")
        if exp is None:
            raise _Refused(f"a whole-number exponent expected after {word!r} at column {col}")
        self.take()
        digits = exp[1].lstrip("+-")
        if len(digits) > 3 or int(digits) > MAX_UNIT_EXPONENT:
            raise _Refused(f"the exponent {exp[1]} at column {exp[2]} is beyond "
                           f"±{MAX_UNIT_EXPONENT}")
        self.out.append(f"**{int(exp[1])}")



def vet_unit_expression(text: str) -> str:
    """A declared unit (``"TB/s"``, ``"1/s"``, ``"%"``, ``""``) in the form Pint is given.

    UnitError when it is outside :class:`_UnitGrammar` or names an unknown unit.
    """
    try:
        grammar = _UnitGrammar(_lex(text, 0), allow_one=True)
        vetted = grammar.read() if text.strip() else ""
    except _Refused as why:
        raise UnitError(f"cannot read the unit {text!r} ({why}); expected unit names "
                        "joined by * and /, like 'TB/s'", unit=text) from None
    unknown = unknown_names(grammar.names) if vetted else []
    if unknown:
        raise UnitError(f"unknown unit {text!r}", unit=text, unknown=tuple(unknown))
    return vetted


def reads_as_quantity(text: str) -> bool:
    """True when every word of ``text`` is a unit: whatever is wrong with it, it was meant
    as a quantity (``3,35 TB/s``), not as a formula of cells."""
    return not unknown_names(_WORD.findall(text))


def vetted_quantity(text: str) -> tuple[float, str]:
    """The number of a quantity and its unit expression, checked against the grammar and
    the registry (UnitError otherwise): only such an expression ever reaches Pint."""
    if len(text) > MAX_QUANTITY_LENGTH:
        raise UnitError(f"cannot read {text[:40]!r}…: longer than {MAX_QUANTITY_LENGTH} "
                        f"characters; {EXPECTED_QUANTITY}", unit=text)
    number = _NUMBER.match(text)
    try:
        if number is None:
            raise _Refused("it does not start with a number")
        tokens = _lex(text, number.end())
        if tokens and tokens[0][0] == "pow":
            raise _Refused(f"a number raised to a power ({tokens[0][1]!r} at column "
                           f"{tokens[0][2]}) is not a quantity")
        if len(tokens) > 1 and tokens[0][0] == "op" and tokens[0][1] != "/":
            del tokens[0]  # "2 * GB", "2·GB": the number times the unit
        elif tokens and tokens[0][0] == "op":
            tokens.insert(0, ("one", "1", tokens[0][2]))  # "2 /s": two per second
        grammar = _UnitGrammar(tokens, allow_one=False)
        vetted = grammar.read() if tokens else ""
    except _Refused as why:
        raise UnitError(f"cannot read {text!r} ({why}); {EXPECTED_QUANTITY}",
                        unit=text) from None
    unknown = unknown_names(grammar.names) if tokens else []
    if unknown:
        raise UnitError(f"cannot read {text!r}: unknown unit "
                        f"{', '.join(repr(u) for u in unknown)}; {EXPECTED_QUANTITY}",
                        unit=text, unknown=tuple(unknown))
    return float(number.group(1)), vetted

