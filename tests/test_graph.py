"""The engine: recompute only what an edit reaches, pins, cycles, error values, units."""

from __future__ import annotations

import pytest

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import (
    CycleError,
    DimensionError,
    EvaluationError,
    FormulaSyntaxError,
    UnknownNameError,
)
from perfgraph.scenario.loading import load
from tests.conftest import cell


@pytest.fixture
def small() -> Sheet:
    return Sheet([
        cell("bytes", "GB", value=80),
        cell("bandwidth", "TB/s", value=3.35),
        cell("other", "token", value=5),
        cell("sweep", "ms", "bytes / bandwidth"),
        cell("rate", "1/s", "1 / sweep"),
        cell("unrelated", "token", "other * 2"),
    ])


def test_values_convert_between_declared_units(small: Sheet) -> None:
    assert small.magnitude("sweep") == pytest.approx(23.88, abs=0.01)
    assert small.magnitude("sweep", "s") == pytest.approx(0.02388, abs=1e-5)
    assert str(small.get("sweep").units) == "millisecond"


def test_an_edit_recomputes_only_its_descendants_in_order(small: Sheet) -> None:
    changed = small.set("bandwidth", "4.8 TB/s")
    assert changed == ["bandwidth", "sweep", "rate"]
    assert small.magnitude("sweep") == pytest.approx(80 / 4.8)
    assert small.magnitude("unrelated") == 10


def test_pin_a_computed_cell_to_a_value_then_unpin(small: Sheet) -> None:
    small.set("sweep", "10 ms")
    assert small.is_pinned("sweep")
    assert small.magnitude("rate") == pytest.approx(100)
    small.set("bytes", 160)  # no longer reaches rate: the pin cut the edge
    assert small.magnitude("rate") == pytest.approx(100)
    small.unpin("sweep")
    assert small.magnitude("sweep") == pytest.approx(160 / 3.35)


def test_pin_to_a_formula_rewires_the_graph(small: Sheet) -> None:
    small.set("sweep", "other * ms / token")
    assert small.precedents("sweep") == ["other"]
    assert "sweep" in small.dependents("other")
    assert set(small.set("other", 7)) == {"other", "sweep", "unrelated", "rate"}
    assert small.magnitude("sweep") == pytest.approx(7)


def test_a_pin_that_makes_a_cycle_is_refused_and_undone(small: Sheet) -> None:
    with pytest.raises(CycleError, match="sweep → rate → sweep|rate → sweep → rate"):
        small.set("sweep", "1 / rate")
    assert small.precedents("sweep") == ["bytes", "bandwidth"]
    assert small.magnitude("sweep") == pytest.approx(23.88, abs=0.01)


def test_a_pin_of_the_wrong_dimension_is_refused(small: Sheet) -> None:
    with pytest.raises(DimensionError, match=r"declared in ms"):
        small.set("sweep", "bytes * bandwidth")
    with pytest.raises(DimensionError, match="is B"):
        small.set("sweep", "3 GB")


def test_unknown_names_suggest_a_near_miss(small: Sheet) -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'bandwidth'"):
        small.set("bandwith", 1)
    with pytest.raises(UnknownNameError, match="did you mean 'bytes'"):
        small.set("sweep", "byts / bandwidth")


def test_errors_are_values_and_the_rest_computes(small: Sheet) -> None:
    small.set("bandwidth", 0)
    assert "division by zero" in small.error("sweep").message
    err = small.error("rate")
    assert err is not None and err.root == "sweep" and "depends on sweep" in err.message
    assert small.magnitude("unrelated") == 10
    with pytest.raises(EvaluationError):
        small.magnitude("rate")
    small.set("bandwidth", 2)
    assert small.error("rate") is None


def test_errors_of_dependents_name_the_root_once_not_nested() -> None:
    sheet = Sheet([
        cell("zero", "s", value=0),
        cell("rate", "1/s", "1 / zero"),
        cell("twice", "1/s", "2 * rate"),
        cell("thrice", "1/s", "3 * twice"),
        cell("sum", "1/s", "thrice + twice"),
    ])
    root = sheet.error("rate")
    assert root is not None and root.root == "rate" and root.cause == root.message
    assert sheet.error("twice").message == (
        "depends on rate, which failed: division by zero in '1 / zero'")
    for name, src in (("thrice", "twice"), ("sum", "thrice")):
        err = sheet.error(name)
        assert err is not None and err.root == "rate", name
        assert err.message == (f"depends on {src}, which failed "
                               "(root rate: division by zero in '1 / zero')"), name
        assert err.cause == "division by zero in '1 / zero'"
        assert err.message.count("depends on") == 1


def test_a_long_chain_of_terms_computes_and_renders() -> None:
    terms = 400
    text = " + ".join(["x"] * terms)
    sheet = Sheet([cell("x", "token", value=1), cell("total", "token", text)])
    assert sheet.magnitude("total") == terms
    assert sheet.declaration("total").formula.render(str).count("+") == terms - 1
    sheet.set("total", "-".join(["x"] * terms))
    assert sheet.magnitude("total") == 2 - terms


def test_a_formula_nested_too_deeply_is_refused_with_the_limit() -> None:
    sheet = Sheet([cell("x", "", value=2), cell("y", "", "x")])
    with pytest.raises(FormulaSyntaxError, match="nested more than 100 levels"):
        sheet.set("y", "-" * 150 + "x")
    with pytest.raises(FormulaSyntaxError, match="nested more than 100 levels"):
        sheet.set("y", "min(" * 120 + "x" + ")" * 120)
    assert sheet.magnitude("y") == 2


def test_fork_is_independent(small: Sheet) -> None:
    twin = small.fork()
    twin.set("bytes", 1)
    assert small.magnitude("bytes") == 80
    assert twin.magnitude("sweep") < small.magnitude("sweep")


def test_restore_undoes_a_pin(small: Sheet) -> None:
    before = small.declaration("sweep")
    small.set("sweep", "1 ms")
    small.restore(before)
    assert not small.is_pinned("sweep")
    assert small.magnitude("sweep") == pytest.approx(23.88, abs=0.01)


def test_columns_match_scalar_evaluation() -> None:
    import numpy as np

    sheet = load().sheet
    conc = np.array([1.0, 8.0, 64.0, 256.0])
    columns = sheet.evaluate_columns({"concurrency": conc}, len(conc))
    for i, c in enumerate(conc):
        sheet.set("concurrency", c)
        for name in ("itl", "throughput", "kv_bytes_total", "non_overlapped_prefill_tokens"):
            assert columns[name][i] == pytest.approx(sheet.magnitude(name)), name


def test_columns_give_nan_where_a_row_fails() -> None:
    import numpy as np

    sheet = load().sheet
    columns = sheet.evaluate_columns({"concurrency": np.array([0.0, 64.0])}, 2)
    assert np.isnan(columns["throughput"][0])
    assert columns["throughput"][1] == pytest.approx(sheet.magnitude("throughput"))


def test_a_constant_branch_does_not_hide_a_failed_row() -> None:
    import numpy as np

    # y reads x, which fails where b = 0; the choice takes its constant branch in every row
    sheet = Sheet([cell("on", "", value=0), cell("b", "", value=1), cell("x", "", "1 / b"),
                   cell("y", "", "x if on > 0 else 0")])
    columns = sheet.evaluate_columns({"b": np.array([0.0, 2.0])}, 2)
    sheet.set("b", 0)
    assert sheet.error("y") is not None  # as the scalar path says: y reads a failed cell
    assert np.isnan(columns["y"][0]) and columns["y"][1] == 0


def test_every_vocabulary_result_is_a_cell_of_the_default_sheet() -> None:
    vocabulary = """ridge_point compute_bound_threshold weights_bytes flops_per_token
    prefill_time ttft kv_bytes_per_token avg_context kv_bytes_per_seq decode_step_time itl
    e2e_latency throughput throughput_per_gpu decode_intensity prefill_intensity
    attainable_flops hbm_sweep_time kv_crossover_context max_concurrency_naive
    max_concurrency_paged non_overlapped_prefill_tokens chunk_size tp_collectives_per_token
    tp_comm_time_per_token pp_bubble_fraction kv_transfer_time spec_tokens_per_pass mfu
    mbu""".split()
    sheet = load().sheet
    for name in vocabulary:
        decl = sheet.declaration(name)
        assert decl.formula is not None and decl.doc and decl.source, name
        assert sheet.error(name) is None, name


def test_models_with_their_own_kv_formula() -> None:
    from tests.conftest import scenario

    sc = scenario(model="deepseek-v3", precision="fp8", hardware="h200")
    # MLA: one 512 + 64 latent per layer, 61 layers, 1 byte each at FP8
    assert sc.sheet.magnitude("kv_bytes_per_token", "B/token") == 61 * (512 + 64)
    assert sc.sheet.magnitude("n_active_params") < sc.sheet.magnitude("n_params") / 10


def test_notebook_api_reads_cells_as_quantities() -> None:
    import perfgraph

    sc = perfgraph.load(model="llama-3.1-8b", precision="bf16", hardware="h100-sxm",
                        set={"tp": 1, "concurrency": 1, "isl": 16, "osl": 16})
    itl = sc.sheet.get("itl")
    assert str(itl.units) == "millisecond"
    # batch 1 on one H100: 16.06 GB of bf16 weights over 3.35 TB/s
    assert itl.to("ms").magnitude == pytest.approx(16.06e9 / 3.35e12 * 1e3, rel=0.01)
    sc.sheet.set("concurrency", 128)
    assert sc.sheet.get("throughput").to("token/s").magnitude > 100 * 200
