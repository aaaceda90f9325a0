"""Lazy evaluation: an edit marks what it reaches stale, a read computes what it needs.

Each read after any sequence of edits must give what a full evaluation gives; a failure
must still be the failing cell's error value, named by the cells that read it; and the
graph layer works without NetworkX (topological order, reach, cycles).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgraph.engine.declarations import Declaration
from perfgraph.engine.graph import find_cycle, reach, topological
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import CellError, DeclarationError, InputError
from perfgraph.scenario.loading import load
from tests.conftest import cell

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def small() -> Sheet:
    return Sheet([
        cell("a", "", value=2),
        cell("b", "", value=4),
        cell("ratio", "", "a / b"),
        cell("inverse", "", "1 / ratio"),
        cell("twice", "", "2 * inverse"),
        cell("other", "", "b + 1"),
    ])


def full(sheet: Sheet) -> dict[str, float | CellError]:
    """Every value as a full evaluation (of a fork) gives it: the oracle."""
    twin = sheet.fork()
    twin.recompute()
    return {name: twin.raw(name) for name in twin.names}


def test_a_read_computes_only_what_it_reads_of_what_an_edit_reached(small: Sheet) -> None:
    assert small.assign({"a": 3, "b": 6}) == ["a", "b", "ratio", "other", "inverse", "twice"]
    assert small.magnitude("ratio") == 0.5
    assert "twice" in small._stale and "ratio" not in small._stale  # not read yet
    assert small.magnitude("twice") == 4.0
    assert small.magnitude("other") == 7.0
    assert not small._stale


def test_a_failure_is_the_cells_error_and_its_readers_name_it(small: Sheet) -> None:
    small.set("a", 0)
    assert small.magnitude("ratio") == 0
    error = small.error("twice")  # read first: the lazy path computes inverse on the way
    assert error is not None and "inverse" in error.message
    root = small.error("inverse")
    assert root is not None and "division by zero" in root.message
    small.set("a", 1)  # fixed again: the error values go
    assert small.error("twice") is None and small.magnitude("twice") == 8.0


def test_an_input_given_the_value_it_holds_changes_nothing(small: Sheet) -> None:
    small.magnitude("twice")
    assert small.set("a", 2) == ["a", "ratio", "inverse", "twice"]  # what it reaches
    assert not small._stale  # but nothing is computed again
    small.set("a", 0.0)
    small.error("twice")  # division by zero: read all the same
    assert not small._stale
    small.set("a", -0.0)  # another float (1 / -0.0 is not 1 / 0.0): computed again
    assert small._stale == {"a", "ratio", "inverse", "twice"}
    assert small.magnitude("ratio") == 0 and math.copysign(1, small.magnitude("ratio")) == -1


def test_a_refused_number_leaves_the_input_as_it_was(small: Sheet) -> None:
    with pytest.raises(InputError, match="finite"):
        small.set("a", math.inf)
    bounded = Sheet([Declaration(name="n", unit="", value=1, domain="count"),
                     cell("m", "", "2 * n")])
    with pytest.raises(DeclarationError, match="whole number"):
        bounded.set("n", 1.5)
    assert small.magnitude("ratio") == 0.5 and bounded.magnitude("m") == 2


def test_a_fork_shares_plans_but_not_what_it_changes(small: Sheet) -> None:
    twin = small.fork()
    twin.set("ratio", "b / a")  # rewires the twin's graph only
    small.set("a", 1)
    twin.set("a", 1)
    assert small.magnitude("twice") == 8.0
    assert twin.magnitude("twice") == 0.5
    assert small.precedents("ratio") == ["a", "b"]


def test_the_plan_caches_stay_bounded() -> None:
    from perfgraph.engine.graph import MAX_CACHED

    plans = load().sheet._plans
    everything = frozenset(plans.order)
    for name in plans.order * 2:  # more distinct answers than the bound
        plans.edit(frozenset(), (name,))
        plans.read(everything, name)
        assert len(plans._edits) + len(plans._reads_of) <= MAX_CACHED + 1
    assert 2 * len(plans.order) > MAX_CACHED
    steps, after = plans.read(everything, "itl")  # answers stay right across a clear
    assert {name for name, _, _ in steps} == everything - after and steps[-1][0] == "itl"


DEFAULT = load().sheet
INPUTS = st.fixed_dictionaries({}, optional={
    "concurrency": st.sampled_from([1, 7, 64, 256, 0.5]),
    "tp": st.sampled_from([1, 2, 4, 8, 3]),
    "isl": st.sampled_from([1, 512, 4096, 100_000]),
    "osl": st.sampled_from([1, 128, 1024]),
    "spec_alpha": st.sampled_from([0.5, 0.9]),
})
READS = st.lists(st.sampled_from(DEFAULT.names), max_size=6)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(INPUTS, READS), min_size=1, max_size=6))
def test_any_edits_and_reads_give_what_a_full_evaluation_gives(
        steps: list[tuple[dict[str, float], list[str]]]) -> None:
    sheet = DEFAULT.fork()
    for values, reads in steps:
        sheet.assign(values)
        oracle = full(sheet)
        for name in reads:
            got, want = sheet.raw(name), oracle[name]
            if isinstance(want, CellError):
                assert isinstance(got, CellError) and got.message == want.message
            else:
                assert got == want, name
    assert {n: repr(v) for n, v in full(sheet).items()} == \
        {n: repr(sheet.raw(n)) for n in sheet.names}


def test_the_graph_walks() -> None:
    reads = {"a": (), "b": ("a",), "c": ("a", "b"), "d": ("c",)}
    dependents = {"a": ("b", "c"), "b": ("c",), "c": ("d",), "d": ()}
    assert topological(reads, reads, dependents) == ["a", "b", "c", "d"]
    assert reach(dependents, ["b"]) == {"b", "c", "d"}
    assert reach(reads, ["c"]) == {"a", "b", "c"}
    assert find_cycle(["a"], dependents) is None
    looped = {**dependents, "d": ("b",)}  # b → c → d → b
    assert len(topological(reads, {**reads, "b": ("a", "d")}, looped)) == 1
    assert find_cycle(["a", "b"], looped) == ["b", "c", "d"]
    assert find_cycle(["x"], {"x": ("x",)}) == ["x"]


def test_the_networkx_view_has_the_sheets_edges(small: Sheet) -> None:
    graph = small.graph
    assert set(graph.edges) == {("a", "ratio"), ("b", "ratio"), ("ratio", "inverse"),
                                ("inverse", "twice"), ("b", "other")}
    assert small.downstream("ratio") == {"inverse", "twice"}
    assert small.dependents("b") == ["other", "ratio"]


def loaded_modules(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    return set(result.stdout.split())


def test_eval_imports_neither_networkx_nor_pint_nor_polars() -> None:
    modules = loaded_modules("import contextlib, io\nfrom perfgraph.cli.main import main\n"
                             "with contextlib.redirect_stdout(io.StringIO()):\n"
                             "    main(['eval'])")
    assert "perfgraph.engine.sheet" in modules
    assert not {"networkx", "polars", "pint"} & modules


def test_a_small_sweep_to_parquet_does_not_import_polars(tmp_path: Path) -> None:
    modules = loaded_modules(
        "from perfgraph.whatif import sweep_axes as sweep\nfrom perfgraph.scenario.loading import "
        "ScenarioSpec\nfrom perfgraph.output import sweep_file\n"
        "plan = sweep.plan(ScenarioSpec(), ['concurrency=1..100'])\n"
        f"sweep_file.write(plan, {str(tmp_path / 'x.parquet')!r})")
    assert (tmp_path / "x.parquet").is_file()
    assert "pyarrow" in modules and "polars" not in modules and "numpy.ma" not in modules
