"""The one formula compiler (engine/formula/compile.py), in its scalar mode (Formula.compile,
the sheet's path) and its column mode (Formula.compile_columns, the sweep's): each corner of
the language gives the value computed here by hand, or fails as it should, with the message
that says why; and on every shipped formula the two modes agree, value for value (bit for
bit on floats, element for element on NumPy columns without NaN) and failure for failure."""

from __future__ import annotations

import math
import random
import zlib
from typing import Any

import numpy as np
import pytest

from perfgraph.engine.formula import ARITHMETIC, Formula, parse
from perfgraph.engine.formula.compile import NESTED
from perfgraph.errors import EvaluationError
from perfgraph.scenario.loading import load

SHEET = load().sheet
SHIPPED = [d.formula for d in map(SHEET.declaration, SHEET.names) if d.formula is not None]
ENV = {"a": 2.0, "b": 3.0, "c": 5.0, "zero": 0.0, "off": 0.0}
#: (formula, its value over ENV, computed by hand).
BY_HAND = [
    ("min(a)", 2.0), ("max(a, b, c)", 5.0), ("min(a, 2 * b)", 2.0), ("min(c, b, a, b)", 2.0),
    ("a < b < c", 1.0), ("a < b > c", 0.0), ("a < b", 1.0), ("b < a", 0.0), ("not a", 0.0),
    ("not zero", 1.0), ("-a ** 2", -4.0), ("a if b else c", 2.0), ("a if off else c", 5.0),
    ("a if b > c else 1 / c", 0.2), ("1 / zero if off else a", 2.0),
    ("a and b or c", 1.0), ("a and not b", 0.0), ("zero or off", 0.0),
    ("a ** 0.5", math.sqrt(2.0)), ("1 / a", 0.5), ("log(a)", math.log(2.0)),
    ("sqrt(c - a)", math.sqrt(3.0)), ("round(c / 3)", 2.0), ("ceil(c / a)", 3.0),
    ("floor(-c / a)", -3.0), ("abs(a - c)", 3.0),
    ("a * '3 GB'", 2 * 3e9 * 8),  # canonical information is the bit
    ("2 * FLOP / token ** 2", 2.0), ("a * 2 * 3 / b", 4.0), ("a - b - c + 1", -5.0),
    ("+a", 2.0), ("-a", -2.0), ("a == b", 0.0), ("a != b", 1.0), ("a >= b <= c", 0.0),
    ("log2(a) + log10(c * a)", 2.0), ("a * ms / s", 0.002), ("0 * a", 0.0),
    ("max(0, a - b) if c else 0 * token", 0.0), ("(a + b) * (c - a) / b ** 2", 15.0 / 9.0),
    ("exp(zero) + a ** b", 9.0),
    (" + ".join(["a", "b"] * (NESTED + 5)), 5.0 * (NESTED + 5)),
    (" * ".join(["a"] * (NESTED + 1)) + " / b", 2.0 ** (NESTED + 1) / 3.0),
    (" - ".join(["c"] * (NESTED + 3)), 5.0 - 5.0 * (NESTED + 2)),
]
#: (formula, what Formula.value says when it has no value over ENV).
FAILURES = [
    ("1 / zero", "division by zero in '1 / zero'"),
    ("1 / 0 + a", "division by zero in '1 / 0 + a'"),
    ("log(-a)", "a function's argument is outside its domain in 'log(-a)'"),
    ("sqrt(a - c)", "a function's argument is outside its domain"),
    ("exp(a * 1000)", "the result is too large in 'exp(a * 1000)'"),
    ("(-8) ** 0.5", "a negative number to a fractional power has no real value"),
    ("-c ** 0.5 if zero else (-c) ** 0.5", "no real value"),
    ("zero ** -1", "division by zero"),
    ("10.0 ** (a * 1000)", "the result is too large"),
]


def outcome(compiled: Any, env: dict[str, Any]) -> str:
    try:
        return repr(float(compiled(env)))
    except ARITHMETIC as exc:
        return type(exc).__name__


def envs(names: set[str], seed: int) -> list[dict[str, float]]:
    rng = random.Random(seed)
    base = {n: SHEET.raw(n) for n in SHEET.names}
    out = [{**ENV, **{n: v if isinstance(v, float) else 1.0 for n, v in base.items()}}]
    for _ in range(6):
        out.append({n: rng.choice([0.0, -1.0, 0.5, 3.0, 1e300, -0.0, math.nan, 7.25])
                    for n in names | set(ENV)})
    return out


@pytest.mark.parametrize(("text", "expected"), BY_HAND, ids=[t[:40] for t, _ in BY_HAND])
def test_each_corner_of_the_language_gives_the_hand_computed_value(text: str,
                                                                  expected: float) -> None:
    formula = parse(text)
    assert formula.compile()(ENV) == pytest.approx(expected, rel=1e-12)
    assert formula.compile_columns()(ENV) == pytest.approx(expected, rel=1e-12)
    assert formula.value(ENV) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("text", "message"), FAILURES, ids=[t for t, _ in FAILURES])
def test_a_formula_with_no_value_says_why(text: str, message: str) -> None:
    formula = parse(text)
    with pytest.raises(EvaluationError) as caught:
        formula.value(ENV)
    assert message in str(caught.value)
    assert outcome(formula.compile(), ENV) == outcome(formula.compile_columns(), ENV) \
        != repr(float("nan"))


def test_a_constant_subtree_is_computed_once_and_a_failing_one_when_evaluated() -> None:
    folded = parse("2 * FLOP / token ** 2").compile()
    assert folded({}) == 2.0  # reads no cell: the env may be empty
    with pytest.raises(ZeroDivisionError):
        parse("a + 1 / 0").compile()(ENV)


@pytest.mark.parametrize("formula", SHIPPED, ids=[f.text[:40] for f in SHIPPED])
def test_every_shipped_formula_computes_the_same_as_scalars_and_as_columns(
        formula: Formula) -> None:
    scalar, columns = formula.compile(), formula.compile_columns()
    # a seed of the text that is the same in every process (str's hash is salted per run)
    rows = envs(set(formula.names), zlib.crc32(formula.text.encode()))
    for env in rows:
        assert outcome(scalar, env) == outcome(columns, env), env
    # NumPy columns: where no input is NaN (a column's max(0, NaN) is NaN, Python's 0) and
    # every row has a value
    rows = [env for env in rows if not any(math.isnan(env[n]) for n in formula.names)]
    wanted = [outcome(scalar, env) for env in rows]
    if all(w not in {"nan", "inf", "-inf"} and w[0] in "-0123456789" for w in wanted):
        stacked = {n: np.array([env[n] for env in rows]) for n in formula.names}
        with np.errstate(all="ignore"):
            column = np.broadcast_to(columns(stacked), (len(rows),))
        # NumPy's vectorised pow may differ from libm's in the last bit or two (x ** 216:
        # 0.4212962962962963 against 0.42129629629629617), so within 1e-13, -0.0 == 0.0:
        # NumPy's ceil(-0.5) is -0.0, Python's 0
        assert [float(x) for x in column] == pytest.approx([float(w) for w in wanted],
                                                          rel=1e-13, abs=0)
