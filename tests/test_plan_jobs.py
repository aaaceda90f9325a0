"""plan's search on threads: the same answer, bit for bit, with 1 or N workers and with any
chunk size; the grid's columns are the product's rows (last axis fastest), however cut."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgraph.cli.main import main
from perfgraph.engine.declarations import Declaration
from perfgraph.engine.formula import parse
from perfgraph.engine.sheet import Sheet
from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.whatif import grid
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif import sweep_axes as sweep

SPEC = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k")
SEARCH = ("engine=vllm,sglang", "hardware=h200,b200,a100-80gb", "tp=1,2,4", "pp=1,2",
          "concurrency=1..64")
ARGS = ["plan", "--model", "llama-3.3-70b", "--workload", "chat-1k1k", "--slo", "ttft=1s",
        "--slo", "itl=30ms", "--rate", "20 request/s", "--format", "json", "--top", "8",
        *[a for s in SEARCH for a in ("--search", s)]]


def _run(jobs: int) -> plan.Result:
    q = plan.question(SPEC, ["ttft=1s", "itl=30ms"], "20 request/s")
    return plan.run(SPEC, q, SEARCH, jobs=jobs)


def _same(a: plan.Result, b: plan.Result) -> None:
    assert a.searched == b.searched
    for x, y in [(a.rows, b.rows), (a.objective_all, b.objective_all),
                 (a.violation_all, b.violation_all)]:
        assert np.array_equal(x, y, equal_nan=True)
    assert a.values.keys() == b.values.keys()
    for n in a.values:
        assert np.array_equal(a.values[n], b.values[n], equal_nan=True), n
    for n in a.family_best:
        assert np.array_equal(a.family_best[n], b.family_best[n], equal_nan=True), n
    assert a.best_reached == b.best_reached


def test_one_and_two_workers_give_the_same_json_answer(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(plan, "CHUNK_ROWS", 1000)  # many chunks, so the threads interleave
    answers = []
    for jobs in ("1", "2"):
        assert main([*ARGS, "--jobs", jobs]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    # engines × accelerator items × tp × pp × aggregated or not × batch
    assert answers[0]["searched"] % (2 * 3 * 2 * 2 * 64) == 0
    assert answers[0]["feasible"] > 0 and answers[0]["frontier"]


def test_the_search_is_the_same_for_any_worker_count_and_chunk_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _run(1)
    assert reference.feasible > 0
    monkeypatch.setattr(plan, "CHUNK_ROWS", 997)  # not a multiple of any axis's period
    for jobs in (1, 2, 3):
        _same(reference, _run(jobs))


def test_jobs_below_one_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--jobs", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--jobs" in err[0]


def _gathered(axes: list[grid.AnyAxis], start: int, stop: int) -> dict[str, np.ndarray]:
    """The product's rows by index arithmetic: what grid_columns must give."""
    where = grid.indices(axes, start, stop)
    out: dict[str, np.ndarray] = {}
    for axis in axes:
        if isinstance(axis, grid.Block):
            table = np.asarray(axis.rows, dtype=float)
            out.update({n: table[where[axis.name], j] for j, n in enumerate(axis.names)})
        elif not isinstance(axis, grid.Choice):
            out[axis.name] = np.asarray(axis.values, dtype=float)[where[axis.name]]
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.lists(st.integers(1, 7), max_size=3), st.booleans(),
       st.data())
def test_grid_columns_are_the_rows_of_the_product_however_cut(
        items: int, lengths: list[int], choice: bool, data: st.DataObject) -> None:
    axes: list[grid.AnyAxis] = [grid.Choice("engine", ("a", "b"))] if choice else []
    axes.append(grid.Block("hw", ("x", "y"), tuple(f"h{i}" for i in range(items)),
                           tuple((float(i), -2.0 * i) for i in range(items))))
    axes += [sweep.Axis(f"c{k}", tuple(float(10 * k + v) for v in range(n)))
             for k, n in enumerate(lengths)]
    total = grid.size(axes)
    start = data.draw(st.integers(0, total - 1))
    stop = data.draw(st.integers(start + 1, total))
    got, want = grid.grid_columns(axes, start, stop), _gathered(axes, start, stop)
    assert got.keys() == want.keys()
    for name in want:
        assert np.array_equal(got[name], want[name]), name


def _cell(name: str, unit: str, formula: str | None = None,
          value: float | None = None) -> Declaration:
    return Declaration(name=name, unit=unit, value=value,
                       formula=parse(formula) if formula else None)


SMALL = [_cell("bw", "TB/s", value=1.0), _cell("cap", "GB", value=80.0),
         _cell("tp", "", value=1.0), _cell("batch", "", value=1.0),
         _cell("per_gpu", "GB", "140 * GB / tp"), _cell("room", "GB", "cap - per_gpu"),
         _cell("step", "ms", "per_gpu / bw + batch * 0.01 * ms"),
         _cell("fits", "", "room / cap"), _cell("rate", "1/s", "batch / step * min(fits, 1)")]
SMALL_AXES = (grid.Block("hw", ("bw", "cap"), ("a", "b", "c"),
                         ((3.35, 80.0), (4.8, 141.0), (8.0, 192.0))),
              sweep.Axis("tp", (1.0, 2.0, 4.0)), sweep.Axis("batch", tuple(range(1, 9))))


@pytest.mark.parametrize("chunk", [1, 7, 8, 24, 50, 72, 1000])
def test_boxes_cover_the_product_once_and_evaluate_as_flat_columns(chunk: int) -> None:
    """Each box's N-D columns give, cell for cell, what the flat rows give."""
    sheet = Sheet(SMALL)
    assert grid.broadcasts(sheet, SMALL_AXES, ["rate", "fits", "step"])
    spans = grid.box_spans(SMALL_AXES, chunk)
    assert [a for a, _ in spans[1:]] == [b for _, b in spans[:-1]]
    assert spans[0][0] == 0 and spans[-1][1] == grid.size(SMALL_AXES)
    assert all(b - a <= max(chunk, 8) for a, b in spans)  # a box holds one batch run at least
    for a, b in spans:
        flat = grid.evaluate_box(sheet, SMALL_AXES, a, b, ["rate", "fits", "cap"], False)
        box = grid.evaluate_box(sheet, SMALL_AXES, a, b, ["rate", "fits", "cap"], True)
        for name in flat:
            assert box[name].shape == (b - a,)
            assert np.array_equal(box[name], flat[name], equal_nan=True), name


def test_a_comparison_whose_reads_differ_in_shape_broadcasts() -> None:
    """A comparison folds its failed reads into one mask: with the accelerator's column
    first and the batch's after, the mask takes the larger shape (it was in place, and an
    N-D box could not evaluate it)."""
    sheet = Sheet([*SMALL, _cell("big", "", "cap > batch * GB")])
    assert grid.broadcasts(sheet, SMALL_AXES, ["big"])
    n = grid.size(SMALL_AXES)
    flat = grid.evaluate_box(sheet, SMALL_AXES, 0, n, ["big"], False)
    box = grid.evaluate_box(sheet, SMALL_AXES, 0, n, ["big"], True)
    assert np.array_equal(box["big"], flat["big"], equal_nan=True)


def test_a_sheet_that_cannot_broadcast_falls_back_to_flat_columns(monkeypatch) -> None:
    sheet = Sheet(SMALL)

    def refuse(*args: object, **kwargs: object) -> None:
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(sheet, "evaluate_columns", refuse)
    assert not grid.broadcasts(sheet, SMALL_AXES, ["rate"])