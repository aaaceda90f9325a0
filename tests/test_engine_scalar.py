"""The scalar compiler (engine/scalar.py) computes what Formula.compile computes: the same
value, bit for bit, or the same kind of failure, on every shipped formula and on the
corners of the language (issue 15: it is the sheet's fast path, Formula.compile the
reference)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from perfgraph.engine.formula import ARITHMETIC, Formula, parse
from perfgraph.engine.scalar import NESTED, compile_scalar
from perfgraph.scenario.loading import load

SHEET = load().sheet
SHIPPED = [d.formula for d in map(SHEET.declaration, SHEET.names) if d.formula is not None]
CORNERS = [
    "min(a)", "max(a, b, c)", "min(a, 2 * b)", "a < b < c", "a < b", "not a", "-a ** 2",
    "a if b else c", "a if b > c else 1 / c", "a and b or c", "a and not b", "(-8) ** 0.5",
    "a ** 0.5", "0 ** -1", "1 / a", "log(a)", "sqrt(a - b)", "exp(a * 1000)", "round(a / 3)",
    "ceil(a / b)", "floor(-a)", "abs(a - b)", "a * '3 GB'", "2 * FLOP / token ** 2",
    "a * 2 * 3 / b", "1 / 0 + a", "a - b - c + 1", "+a", "a == b", "a != b", "a >= b <= c",
    " + ".join(["a", "b"] * (NESTED + 5)), " * ".join(["a"] * (NESTED + 1)) + " / b",
    "log2(a) + log10(b)", "a * ms / s", "0 * a", "max(0, a - b) if c else 0 * token",
]


def outcome(formula: Formula, compiled: Any, env: dict[str, float]) -> str:
    try:
        return repr(float(compiled(env)))
    except ARITHMETIC as exc:
        return type(exc).__name__


def envs(names: set[str], seed: int) -> list[dict[str, float]]:
    rng = random.Random(seed)
    base = {n: SHEET.raw(n) for n in SHEET.names}
    out = [{"a": 2.0, "b": 3.0, "c": 5.0,
            **{n: v if isinstance(v, float) else 1.0 for n, v in base.items()}}]
    for _ in range(6):
        out.append({n: rng.choice([0.0, -1.0, 0.5, 3.0, 1e300, -0.0, math.nan, 7.25])
                    for n in names | {"a", "b", "c"}})
    return out


@pytest.mark.parametrize("formula", SHIPPED, ids=[f.text[:40] for f in SHIPPED])
def test_every_shipped_formula_computes_as_the_reference(formula: Formula) -> None:
    reference, fast = formula.compile(), compile_scalar(formula)
    for env in envs(set(formula.names), hash(formula.text) & 0xFFFF):
        assert outcome(formula, fast, env) == outcome(formula, reference, env)


@pytest.mark.parametrize("text", CORNERS)
def test_the_corners_of_the_language_compute_as_the_reference(text: str) -> None:
    formula = parse(text)
    reference, fast = formula.compile(), compile_scalar(formula)
    for env in envs(set(formula.names), 7):
        assert outcome(formula, fast, env) == outcome(formula, reference, env), env
