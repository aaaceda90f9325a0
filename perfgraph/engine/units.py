"""The one unit registry, and the conversions the engine needs.

perfgraph adds two base dimensions to Pint's: ``[flop]`` (unit ``FLOP``) and ``[token]``
(unit ``token``). Everything the engine computes is a plain float (or a NumPy column) in
canonical units; this module turns declared unit strings into the factor and dimensionality
that let it do so, once, when a sheet compiles.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import pint

from perfgraph.errors import PerfgraphError, UnitError


def _definitions() -> str:
    """Pint's default definitions (constants inlined), with ``bit`` a dimension of its own."""
    folder = Path(pint.__file__).parent
    text = (folder / "default_en.txt").read_text(encoding="utf-8")
    text = text.replace("@import constants_en.txt",
                        (folder / "constants_en.txt").read_text(encoding="utf-8"))
    return text.replace("\nbit = []", "\nbit = [information]")


def _registry() -> pint.UnitRegistry[Any]:
    """Pint's default units, except that ``bit`` (hence ``B``) is a dimension of its own.

    Pint declares ``bit = []``, dimensionless, so bytes would silently mix with plain
    numbers; a sheet must reject ``weights_bytes + n_params``.

    Parsing Pint's definitions takes ~0.4 s, most of a cold ``perfgraph eval``; so they are
    written once to the user's cache folder (named by their hash) and Pint caches what it
    parsed from that file beside it. Where the cache cannot be written or read, the
    registry is built from the text, as before.
    """
    text = _definitions()
    registry = _cached_registry(text)
    if registry is None:
        registry = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=False)
        registry.load_definitions(text.splitlines())
    if registry.byte.dimensionless:  # pragma: no cover - a Pint whose file we did not expect
        raise RuntimeError("could not give bytes a dimension in this version of Pint")
    return registry


def _cached_registry(text: str) -> pint.UnitRegistry[Any] | None:
    try:
        from platformdirs import user_cache_dir

        folder = Path(user_cache_dir("perfgraph"))
        digest = hashlib.sha256(f"{pint.__version__}\n{text}".encode()).hexdigest()[:16]
        path = folder / f"units-{digest}.txt"
        if not path.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{path.name}.{os.getpid()}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        return pint.UnitRegistry(str(path), cache_folder=folder / "pint",
                                 autoconvert_offset_to_baseunit=False)
    except Exception:  # noqa: BLE001 - any trouble with the cache: build without it
        return None


ureg = _registry()
ureg.define("FLOP = [flop] = flop = FLOPs = flops")
ureg.define("token = [token] = tokens = tok")
ureg.define("request = [request] = requests = req")

Q_ = ureg.Quantity

#: The unit names a formula may use bare (``2 * FLOP / token``, ``0 * ms``). A fixed list, so
#: that no cell name is ever read as a unit (Pint knows ``a`` as a year and ``pp`` as a point);
#: a cell may not be named after one of these.
FORMULA_UNITS = frozenset(
    [p + base for p in ("", "k", "M", "G", "T", "P", "E") for base in ("FLOP", "B", "bit")]
    + ["KiB", "MiB", "GiB", "TiB", "token", "tokens", "request", "requests",
       "s", "ms", "us", "ns"])


class Unit:
    """A declared unit: its text, its dimensionality and its factor to canonical units."""

    __slots__ = ("text", "dims", "factor", "pint_unit")

    def __init__(self, text: str) -> None:
        self.text = text
        if not isinstance(text, str):
            raise UnitError(f"a unit must be text, not {type(text).__name__}")
        vetted = vet_unit_expression(text)
        try:
            unit = ureg.parse_units(vetted) if vetted else ureg.dimensionless
            base = (1 * unit).to_base_units()
            factor = float(base.magnitude)
        except (pint.PintError, ArithmeticError, AttributeError, TypeError, ValueError,
                AssertionError, SyntaxError, RecursionError) as exc:
            raise UnitError(f"unknown unit {text!r}", unit=text) from exc
        if not math.isfinite(factor) or factor == 0:
            raise UnitError(f"the unit {text!r} has no finite size", unit=text)
        self.pint_unit = unit
        self.dims = Dims.of(unit)
        self.factor = factor

    def __repr__(self) -> str:
        return f"Unit({self.text!r})"


class Dims:
    """Hashable dimensionality: a sorted tuple of (dimension, exponent)."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[str, float], ...]) -> None:
        self.items = items

    @classmethod
    def of(cls, unit: Any) -> Dims:
        """The Dims of a Pint unit."""
        return cls(tuple(sorted((k, float(v)) for k, v in dict(unit.dimensionality).items())))

    @classmethod
    def none(cls) -> Dims:
        return cls(())

    def __mul__(self, other: Dims) -> Dims:
        out = dict(self.items)
        for k, v in other.items:
            out[k] = out.get(k, 0) + v
        return Dims(tuple(sorted((k, v) for k, v in out.items() if v != 0)))

    def __truediv__(self, other: Dims) -> Dims:
        return self * other ** -1

    def __pow__(self, exp: float) -> Dims:
        return Dims(tuple((k, v * exp) for k, v in self.items if v * exp != 0))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dims) and _close(self.items, other.items)

    def __hash__(self) -> int:
        return hash(tuple(k for k, _ in self.items))

    @property
    def dimensionless(self) -> bool:
        return not self.items

    def __str__(self) -> str:
        """The dimensions written as perfgraph's units: ``FLOP/token``, ``B/s``."""
        if not self.items:
            return "dimensionless"
        up = [_power(_DIM_UNIT.get(k, k), v) for k, v in self.items if v > 0]
        down = [_power(_DIM_UNIT.get(k, k), -v) for k, v in self.items if v < 0]
        text = "*".join(up) or "1"
        if down:
            text += "/" + (down[0] if len(down) == 1 else "(" + "*".join(down) + ")")
        return text


_DIM_UNIT = {"[information]": "B", "[time]": "s", "[flop]": "FLOP", "[token]": "token",
             "[request]": "request"}


def _power(name: str, exp: float) -> str:
    return name if exp == 1 else f"{name}**{exp:g}"


def _close(a: tuple[tuple[str, float], ...], b: tuple[tuple[str, float], ...]) -> bool:
    return len(a) == len(b) and all(
        ka == kb and math.isclose(va, vb) for (ka, va), (kb, vb) in zip(a, b, strict=True)
    )


@lru_cache(maxsize=512)
def unit(text: str) -> Unit:
    """The parsed :class:`Unit` for ``text`` (cached: a sheet names few units)."""
    return Unit(text)


def formula_unit(name: str) -> Unit | None:
    """The unit a bare name in a formula stands for, or None if it is not one we allow."""
    return unit(name) if name in FORMULA_UNITS else None


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


def _unknown_names(names: list[str]) -> list[str]:
    unknown: list[str] = []
    for name in names:
        try:
            known = name == "%" or name in ureg
        except (pint.PintError, AttributeError, TypeError, ValueError):  # pragma: no cover
            known = False
        if not known and name not in unknown:
            unknown.append(name)
    return unknown


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
    unknown = _unknown_names(grammar.names) if vetted else []
    if unknown:
        raise UnitError(f"unknown unit {text!r}", unit=text, unknown=tuple(unknown))
    return vetted


def reads_as_quantity(text: str) -> bool:
    """True when every word of ``text`` is a unit: whatever is wrong with it, it was meant
    as a quantity (``3,35 TB/s``), not as a formula of cells."""
    return not _unknown_names(_WORD.findall(text))


def parse_quantity(text: str) -> tuple[float, Dims]:
    """``"3.35 TB/s"`` → (magnitude in canonical units, its Dims). UnitError on anything else.

    A quantity is exactly one number followed by an optional unit expression (see
    :class:`_UnitGrammar`; ``"2 * GB"`` is two gigabytes, ``"2 /s"`` two per second). Both
    are checked here, before Pint sees the unit, so ``"64 64"``, ``"3,35 TB/s"`` or
    ``"9**9**9 B"`` are refused, not read as some other number.
    """
    if not isinstance(text, str):
        raise UnitError(f"expected a quantity as text, not {type(text).__name__}")
    return _parse_quantity(text)


@lru_cache(maxsize=1024)
def _parse_quantity(text: str) -> tuple[float, Dims]:
    number, vetted = _vetted(text)
    declared = unit(vetted)
    value = number * declared.factor
    if not math.isfinite(value):
        raise UnitError(f"cannot read {text!r}: the number is too large; "
                        f"{EXPECTED_QUANTITY}", unit=text)
    return value, declared.dims


def _vetted(text: str) -> tuple[float, str]:
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
    unknown = _unknown_names(grammar.names) if tokens else []
    if unknown:
        raise UnitError(f"cannot read {text!r}: unknown unit "
                        f"{', '.join(repr(u) for u in unknown)}; {EXPECTED_QUANTITY}",
                        unit=text, unknown=tuple(unknown))
    return float(number.group(1)), vetted


def units_read_as(text: str) -> str | None:
    """How Pint names the units of a quantity that reads (``"8k"`` → ``boltzmann_constant``,
    ``"400 Gb/s"`` → ``gilbert / second``), for messages; None if it does not read."""
    try:
        vetted = _vetted(text)[1]
        return str(ureg.Unit(vetted)) if vetted else None
    except (PerfgraphError, pint.PintError, ValueError, TypeError, AttributeError):
        return None
