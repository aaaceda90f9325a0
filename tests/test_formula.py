"""The formula language: a table of formulas and what they give, and what is refused."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgraph.errors import DimensionError, FormulaSyntaxError
from perfgraph.formula import FUNCTIONS, parse
from perfgraph.units import Dims, unit

ENV = {"a": 2.0, "b": 8.0, "flag": 1.0, "zero": 0.0}

VALUES = [
    ("a + b * 2", 18.0),
    ("(a + b) * 2", 20.0),
    ("b / a / 2", 2.0),
    ("a ** 3", 8.0),
    ("-a + +b", 6.0),
    ("min(a, b, 5)", 2.0),
    ("max(a, b)", 8.0),
    ("ceil(b / 3)", 3.0),
    ("floor(b / 3)", 2.0),
    ("sqrt(b * 2)", 4.0),
    ("log2(b)", 3.0),
    ("abs(a - b)", 6.0),
    ("a if flag else b", 2.0),
    ("a if zero else b", 8.0),
    ("a < b", 1.0),
    ("a < b < 1", 0.0),
    ("a < b and b < 10", 1.0),
    ("not flag", 0.0),
    ("a if zero > 0 else b / zero if zero else 7", 7.0),  # the untaken branch never runs
    ("1e3 * a", 2000.0),
    ("'2 GB' / '1 GB'", 2.0),
]


@pytest.mark.parametrize(("text", "expected"), VALUES)
def test_values(text: str, expected: float) -> None:
    assert parse(text).compile()(ENV) == pytest.approx(expected)


def test_names_are_the_cells_read_not_units_or_functions() -> None:
    f = parse("2 * FLOP / token * n_params + max(isl, osl) * 0")
    assert f.names == ("n_params", "isl", "osl")


REFUSED = [
    ("__import__('os')", "leading underscore"),
    ("a.__class__", "attribute access"),
    ("a[0]", "indexing"),
    ("(lambda: 1)()", "Lambda"),
    ("[x for x in a]", "ListComp"),
    ("print(a)", "unknown function 'print'"),
    ("min(a, key=b)", "keyword argument"),
    ("a ** 1000", "exponent"),
    ("10 ** 10 ** 10", "exponent"),
    ("a +", "invalid formula"),
    ("a; b", "invalid formula"),
    ("a := 3", "invalid formula"),
    ("'rm -rf /'", "cannot read"),
    ("sqrt(a, b)", "takes 1 argument"),
    ("b'bytes'", "constant"),
    ("{a: b}", "Dict"),
    ("a if b", "invalid formula"),
    ("sqrt", "without a call"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(FormulaSyntaxError, match=message):
        parse(text)


def test_runtime_overflow_is_an_error_not_a_hang() -> None:
    f = parse("a if zero else b ** 60")
    with pytest.raises(OverflowError):
        f.compile()({"a": 1e300, "b": 1e300, "zero": 0.0})


def dims(**units: str):
    return lambda name: unit(units[name]).dims


@pytest.mark.parametrize(("text", "units", "expected"), [
    ("x / t", {"x": "B", "t": "s"}, "B/s"),
    ("2 * FLOP / token * n", {"n": ""}, "FLOP/token"),
    ("max(0, x - y)", {"x": "token", "y": "token"}, "token"),
    ("x ** 2", {"x": "s"}, "s**2"),
    ("sqrt(x)", {"x": "s**2"}, "s"),
    ("x if x > y else y", {"x": "ms", "y": "s"}, "s"),
    ("ceil(x / y)", {"x": "token", "y": "token"}, "dimensionless"),
])
def test_dimensions(text: str, units: dict[str, str], expected: str) -> None:
    got = parse(text).dims(dims(**units))
    assert str(got) == expected


@pytest.mark.parametrize(("text", "units", "message"), [
    ("x + y", {"x": "B", "y": "FLOP"}, "cannot add or subtract B and FLOP"),
    ("x < y", {"x": "B", "y": "s"}, "cannot compare"),
    ("max(x, y)", {"x": "token", "y": "s"}, "cannot take max"),
    ("log(x)", {"x": "B"}, "dimensionless argument"),
    ("x ** y", {"x": "B", "y": ""}, "computed power"),
    ("y ** x", {"x": "B", "y": ""}, "exponent must be dimensionless"),
    ("x if y else z", {"x": "B", "y": "", "z": "s"}, "cannot choose between"),
])
def test_dimension_errors(text: str, units: dict[str, str], message: str) -> None:
    with pytest.raises(DimensionError, match=message):
        parse(text).dims(dims(**units))


def test_render_substitutes_values_and_uses_times_and_divide() -> None:
    f = parse("isl * flops_per_token / (tp * peak)")
    shown = f.render(lambda n: {"isl": "1024 tok"}.get(n, n.upper()))
    assert shown == "1024 tok × FLOPS_PER_TOKEN ÷ (TP × PEAK)"


def test_columns_and_scalars_agree() -> None:
    import numpy as np

    f = parse("max(a, b) / a if flag else ceil(b)").compile()
    column = f({"a": np.array([1.0, 2.0, 4.0]), "b": np.array([3.0, 3.0, 3.0]), "flag": 1.0})
    scalars = [f({"a": a, "b": 3.0, "flag": 1.0}) for a in (1.0, 2.0, 4.0)]
    assert list(column) == pytest.approx(scalars)


# ---------------------------------------------------------------- property tests
_NAMES = st.sampled_from(["a", "b", "flag", "zero"])
_LEAVES = st.one_of(_NAMES, st.integers(0, 9).map(str), st.sampled_from(["2.5", "1e3"]))


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "<", ">=", " and "]),
                       children).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    calls = st.tuples(st.sampled_from(sorted(FUNCTIONS)), children).map(
        lambda t: f"{t[0]}({t[1]})")
    cond = st.tuples(children, children, children).map(
        lambda t: f"({t[0]} if {t[1]} else {t[2]})")
    return st.one_of(binary, calls, cond, children.map(lambda c: f"-{c}"))


EXPRESSIONS = st.recursive(_LEAVES, _combine, max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(EXPRESSIONS)
def test_generated_expressions_parse_to_allowlisted_trees(text: str) -> None:
    f = parse(text)
    assert set(f.names) <= set(ENV)
    try:
        result = f.compile()(ENV)
    except (ZeroDivisionError, ValueError, OverflowError):
        return  # arithmetic failures become a cell's error value
    assert isinstance(result, float)
    assert not math.isnan(result) or True


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=60), st.binary(max_size=60).map(
    lambda b: b.decode("latin-1"))))
def test_random_text_parses_or_raises_the_formula_syntax_error(text: str) -> None:
    try:
        f = parse(text)
    except FormulaSyntaxError:
        return
    # Whatever parsed uses only allowlisted names: cells, units, functions.
    for name in f.names:
        assert name.isidentifier() and not name.startswith("_")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(
    ["a", "b", "(", ")", "+", "*", "**", ".", "_", "[", "]", "__", "lambda", ":", ",",
     "import", "os", "'1 GB'", "if", "else", "min", "9"]), max_size=14))
def test_token_soup_never_escapes_the_language(tokens: list[str]) -> None:
    text = " ".join(tokens)
    try:
        f = parse(text)
    except FormulaSyntaxError:
        return
    assert all(not n.startswith("_") for n in f.names)
    try:
        f.compile()(dict.fromkeys(f.names, 1.0))
    except (ZeroDivisionError, ValueError, OverflowError, TypeError):
        pass


def test_dims_none_is_dimensionless() -> None:
    assert Dims.none().dimensionless
