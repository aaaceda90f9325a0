"""Sweeps and Parquet export: axes, the product, the file (read back by Polars and pyarrow),
units in its metadata, equality with `perfgraph eval`, and one clear message per bad input."""

from __future__ import annotations

import io
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from perfgraph.cli.commands.sweep import ProgressBar
from perfgraph.cli.main import main
from perfgraph.errors import CatalogError, InputError, PerfgraphError, UnknownNameError
from perfgraph.output import parquet as export
from perfgraph.output import sweep_file
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import sweep_axes as sweep

from .conftest import DATA

SEED = str(DATA / "good" / "seed-worked-example.toml")


@pytest.fixture(scope="module")
def default_sheet():
    return load().sheet


def axis(text: str, sheet) -> tuple:
    return sweep.parse_axis(text, sheet).values


# ------------------------------------------------------------------ axes
@pytest.mark.parametrize("text, values", [
    ("concurrency=1,2,4", (1, 2, 4)),
    ("concurrency=1..512:x2", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)),
    ("concurrency=1..600:*2", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)),
    ("tp=1..8:+1", (1, 2, 3, 4, 5, 6, 7, 8)),
    ("tp=1..4", (1, 2, 3, 4)),
    ("spec_alpha=0.5..0.8:+0.1", (0.5, 0.6, 0.7, 0.8)),
    ("concurrency=1, 3..9:x3, 100", (1, 3, 9, 100)),
    ("hbm_bandwidth=3.35 TB/s,4800 GB/s", (3.35, 4.8)),
    ("osl=2048", (2048,)),
    ("chunked_prefill=off,on", (0, 1)),
    ("hardware=h100-sxm,h200,b200", ("h100-sxm", "h200", "b200")),
    ("precision=bf16,fp8", ("bf16", "fp8")),
])
def test_axis_values(text, values, default_sheet):
    assert axis(text, default_sheet) == pytest.approx(values) if not isinstance(
        values[0], str) else axis(text, default_sheet) == values


@pytest.mark.parametrize("text, error, says", [
    ("concurency=1,2", UnknownNameError, "did you mean 'concurrency'"),
    ("hardware=h100,h200", CatalogError, "unknown hardware 'h100'"),
    ("model=llama-9", CatalogError, "known: "),
    ("precision=fp6", CatalogError, "unknown precision 'fp6'"),
    ("concurrency=8..1", InputError, "empty range '8..1'"),
    ("concurrency=1..8:+0", InputError, "step must be above 0"),
    ("concurrency=0..8:x2", InputError, "START > 0 and FACTOR > 1"),
    ("concurrency=1..1e12", InputError, "more than the limit of 50,000,000"),
    ("concurrency=one..2", InputError, "'one' is not a number"),
    ("concurrency=1,,2", InputError, "empty value"),
    ("concurrency", InputError, "--axis expects NAME=V1,V2"),
    ("concurrency=floor(max_concurrency_paged)", InputError, "must be numbers"),
    ("hbm_bandwidth=3 s", PerfgraphError, "TB/s"),
    ("concurrency=1..10:", InputError, "malformed range '1..10:': expected START..STOP"),
    ("concurrency=..5", InputError, "malformed range '..5'"),
    ("concurrency=1..", InputError, "malformed range '1..'"),
    ("concurrency=1...5", InputError, "malformed range '1...5'"),
    ("concurrency=1..4..8", InputError, "malformed range '1..4..8'"),
    ("concurrency=1..8:y2", InputError, "START..STOP:xFACTOR or START..STOP:+STEP"),
    ("concurrency=1..8:x", InputError, "malformed range '1..8:x'"),
    ("concurrency=1.2.3", InputError, "malformed value '1.2.3': expected a number"),
    ("concurrency=2, 1/2", InputError, "malformed value '1/2'"),
])
def test_bad_axis_says_what_is_wrong(text, error, says, default_sheet):
    with pytest.raises(error, match=None) as caught:
        sweep.parse_axis(text, default_sheet)
    assert says in str(caught.value)


def test_product_beyond_the_limit_names_the_limit():
    with pytest.raises(InputError) as caught:
        sweep.plan(ScenarioSpec(), ["concurrency=1..100000", "tp=1..1000"])
    assert "100,000,000 points" in str(caught.value)
    assert f"{sweep.MAX_POINTS:,}" in str(caught.value)


def test_an_axis_given_twice_is_refused():
    with pytest.raises(InputError, match="given twice"):
        sweep.plan(ScenarioSpec(), ["tp=1,2", "tp=4"])


def test_grid_columns_are_the_product_last_axis_fastest():
    axes = (sweep.Axis("concurrency", (1.0, 2.0, 3.0)), sweep.Axis("tp", (1.0, 2.0)),
            sweep.Axis("isl", (10.0, 20.0, 30.0, 40.0)))
    rows = list(itertools.product(*(a.values for a in axes)))
    for start, stop in [(0, 24), (5, 17), (23, 24)]:
        columns = sweep.grid_columns(axes, start, stop)
        got = list(zip(*(columns[a.name] for a in axes), strict=True))
        assert got == rows[start:stop]


# ------------------------------------------------------------------ the file
@pytest.fixture(scope="module")
def seed_sweep(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "seed.parquet"
    plan = sweep.plan(ScenarioSpec(file=SEED),
                      ["concurrency=16..128:x2", "tp=1,2,4", "hardware=h100-sxm,h200"])
    sweep_file.write(plan, path)
    return path


def test_sweep_has_the_seed_numbers_at_the_seed_point(seed_sweep):
    frame = pl.read_parquet(seed_sweep)
    assert frame.height == 4 * 3 * 2
    row = frame.filter((pl.col("hardware") == "h100-sxm") & (pl.col("concurrency") == 64)
                       & (pl.col("tp") == 2))
    assert row.height == 1
    # seeds/how-fast-can-llm-inference-go: 36.22 ms TTFT, 12.85 ms ITL, 4,980 tok/s
    assert row["ttft"][0] == pytest.approx(36.22, abs=0.005)
    assert row["itl"][0] == pytest.approx(12.85, abs=0.005)
    assert row["throughput"][0] == pytest.approx(4980, abs=1)
    assert row["throughput_per_gpu"][0] == pytest.approx(2490, abs=1)


def test_columns_are_the_vocabulary_and_units_survive_polars_and_pyarrow(seed_sweep):
    sheet = load(ScenarioSpec(file=SEED)).sheet
    names = sheet.names
    frame = pl.read_parquet(seed_sweep)
    assert frame.columns == [*export.CHOICE_COLUMNS, *names]
    units = json.loads(pl.read_parquet_metadata(seed_sweep)[export.UNITS_KEY])
    assert units == {n: sheet.declaration(n).unit for n in names}
    assert units["itl"] == "ms" and units["hbm_bandwidth"] == "TB/s"
    table = pq.read_table(seed_sweep)
    assert table.column_names == frame.columns
    assert json.loads(table.schema.metadata[b"perfgraph.units"]) == units
    assert table.schema.field("ttft").metadata == {b"unit": b"ms"}
    assert json.loads(pq.read_metadata(seed_sweep).metadata[b"perfgraph.units"]) == units
    assert table.column("itl").to_pylist() == frame["itl"].to_list()
    assert table.num_rows == 24


def test_a_catalog_axis_works_like_a_numeric_one(seed_sweep):
    frame = pl.read_parquet(seed_sweep)
    by_hw = frame.filter(pl.col("concurrency") == 64).group_by("hardware").agg(
        pl.col("hbm_bandwidth").first(), pl.col("itl").min())
    bandwidth = dict(zip(by_hw["hardware"], by_hw["hbm_bandwidth"], strict=True))
    assert bandwidth == {"h100-sxm": pytest.approx(3.35), "h200": pytest.approx(4.8)}
    itl = dict(zip(by_hw["hardware"], by_hw["itl"], strict=True))
    assert itl["h200"] < itl["h100-sxm"]


def _rows_equal_eval(frame: pl.DataFrame, rows: list[int], cell_axes: list[str]) -> None:
    loaded: dict[tuple[str, ...], object] = {}
    for i in rows:
        row = frame.row(i, named=True)
        combo = tuple(row[k] for k in export.CHOICE_COLUMNS)
        if combo not in loaded:
            loaded[combo] = load(ScenarioSpec(**dict(zip(export.CHOICE_COLUMNS, combo,
                                                         strict=True)))).sheet
        sheet = loaded[combo].fork()
        for name in cell_axes:
            sheet.set(name, row[name])
        for name in sheet.names:
            if sheet.error(name):
                assert math.isnan(row[name]), (i, name)
            else:
                assert row[name] == pytest.approx(sheet.magnitude(name), rel=1e-12), (i, name)


def test_random_rows_equal_eval_at_that_point(tmp_path):
    path = tmp_path / "random.parquet"
    axes = ["concurrency=0..512:+8", "tp=1,2,4,8", "isl=128..8192:x4", "spec_k=0,2",
            "hardware=h100-sxm,b200", "precision=bf16,fp8"]
    sweep_file.write(sweep.plan(ScenarioSpec(), axes), path)
    frame = pl.read_parquet(path)
    assert frame.height == 65 * 4 * 4 * 2 * 2 * 2
    assert frame["throughput"].is_nan().sum() > 0  # concurrency = 0 fails, as eval does
    rows = np.random.default_rng(5).choice(frame.height, 40, replace=False).tolist()
    rows += frame.with_row_index().filter(pl.col("concurrency") == 0)["index"][:3].to_list()
    _rows_equal_eval(frame, rows, ["concurrency", "tp", "isl", "spec_k"])


def test_chunks_join_up_exactly(default_sheet):
    plan = sweep.plan(ScenarioSpec(), ["concurrency=1..100", "tp=1,2,4"])
    units = export.units(default_sheet, default_sheet.names)
    whole = pl.concat(sweep_file.frames(plan, units, chunk_rows=10_000))
    pieces = list(sweep_file.frames(plan, units, chunk_rows=7))
    assert len(pieces) == math.ceil(300 / 7)
    assert pl.concat(pieces).equals(whole)


OWN = str(Path(__file__).parent / "data" / "good" / "model-own-cells.toml")


def test_a_model_that_declares_its_own_cells_gets_a_column(tmp_path):
    path = tmp_path / "models.parquet"
    sweep_file.write(sweep.plan(ScenarioSpec(), [f"model=llama-3.1-70b,{OWN}"]), path,
                only=["vision_tokens", "kv_bytes_per_token"])
    frame = pl.read_parquet(path)
    assert frame["model"].to_list() == ["llama-3.1-70b", OWN]
    assert math.isnan(frame["vision_tokens"][0]) and frame["vision_tokens"][1] == 576
    # 2 x 80 layers x 8 KV heads x 128 x 1 B (FP8) = 163,840 B/token for both; the fixture
    # declares the cell in B/token, the column stays in the scenario's kB/token
    assert frame["kv_bytes_per_token"].to_list() == pytest.approx([163.84, 163.84])
    assert json.loads(pl.read_parquet_metadata(path)[export.UNITS_KEY]) == {
        "vision_tokens": "token", "kv_bytes_per_token": "kB/token"}


def test_an_axis_is_read_in_the_column_unit_whatever_a_model_declares(tmp_path):
    path = tmp_path / "kv.parquet"
    plan = sweep.plan(ScenarioSpec(),
                      ["model=llama-3.1-70b,deepseek-v3", "kv_bytes_per_token=100"])
    sweep_file.write(plan, path, only=["kv_bytes_per_token", "kv_bytes_per_seq"])
    frame = pl.read_parquet(path)
    assert frame["kv_bytes_per_token"].to_list() == pytest.approx([100, 100])
    # 1536 tokens x 100 kB/token = 153.6 MB for both
    assert frame["kv_bytes_per_seq"].to_list() == pytest.approx([153.6, 153.6])


# ------------------------------------------------------------------ the CLI
def test_cli_sweep_writes_parquet(tmp_path, capsys):
    out = tmp_path / "cli.parquet"
    code = main(["sweep", "--axis", "concurrency=1..512:x2", "--axis", "tp=1,2,4,8",
                 "--axis", "hardware=h100-sxm,h200,b200", "--out", str(out)])
    assert code == 0
    assert "wrote 120 rows" in capsys.readouterr().err
    frame = pl.read_parquet(out)
    assert frame.height == 120
    assert sorted(frame["tp"].unique().to_list()) == [1, 2, 4, 8]
    assert set(frame["hardware"]) == {"h100-sxm", "h200", "b200"}


def test_cli_sweep_without_out_prints_csv(capsys):
    assert main(["sweep", "--axis", "tp=1,2", "--only", "tp,itl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "model,hardware,workload,precision,engine,tp,itl"
    assert [line.split(",")[5] for line in lines[1:]] == ["1.0", "2.0"]
    itl = [float(line.split(",")[6]) for line in lines[1:]]
    assert itl[0] > itl[1]


@pytest.mark.parametrize("argv, says", [
    (["--axis", "concurency=1,2"], "did you mean 'concurrency'"),
    (["--axis", "hardware=h999"], "unknown hardware 'h999'"),
    (["--axis", "concurrency=9..1"], "empty range"),
    (["--axis", "concurrency=1..100000", "--axis", "tp=1..1000"], "limit of 50,000,000"),
    (["--axis", "tp=1,2", "--only", "itll"], "did you mean 'itl'"),
    (["--axis", "tp=1,2", "--out", "/no/such/folder/x.parquet"], "no such folder"),
])
def test_cli_bad_input_one_line_exit_2(argv, says, capsys):
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_combination_that_fails_part_way_leaves_nothing_behind(tmp_path, capsys):
    out = tmp_path / "fp4.parquet"
    out.write_bytes(b"the old file")
    code = main(["sweep", "--axis", "hardware=b200,a100-80gb", "--axis", "precision=fp4",
                 "--axis", "tp=1,2", "--out", str(out)])
    assert code == 2
    assert "has no dense fp4 figure" in capsys.readouterr().err
    assert out.read_bytes() == b"the old file"
    assert [p.name for p in tmp_path.iterdir()] == ["fp4.parquet"]


def test_a_combination_that_cannot_load_is_found_before_any_row(capsys):
    code = main(["sweep", "--axis", "hardware=b200,a100-80gb", "--axis", "precision=fp4",
                 "--axis", "tp=1,2", "--only", "itl"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""  # no b200 rows first
    assert err.startswith("perfgraph: error: the sweep's combination hardware=a100-80gb, "
                          "precision=fp4 cannot load: ")
    assert "has no dense fp4 figure" in err and err.count("\n") == 1


@pytest.mark.parametrize("models", [[OWN, "llama-3.1-70b"], ["llama-3.1-70b", OWN]])
def test_a_combination_without_a_cell_axis_is_named(models):
    with pytest.raises(InputError) as caught:
        sweep.plan(ScenarioSpec(model=OWN),
                   ["vision_tokens=256,512", f"model={','.join(models)}"])
    assert "the sweep's combination model=llama-3.1-70b has no cell named 'vision_tokens'" \
        in str(caught.value)


def test_plan_keeps_the_scenarios_it_loaded():
    plan = sweep.plan(ScenarioSpec(), ["hardware=h100-sxm,h200", "tp=1,2"])
    assert set(plan.loaded) == set(plan.specs())
    assert [label for label, _ in plan.combinations()] == ["hardware=h100-sxm",
                                                           "hardware=h200"]


# ------------------------------------------------------------------ output file and format
def test_a_csv_out_gets_csv_and_other_names_parquet(tmp_path, capsys):
    assert main(["sweep", "--axis", "tp=1,2", "--only", "tp,itl", "--out",
                 str(tmp_path / "x.csv")]) == 0
    lines = (tmp_path / "x.csv").read_text().splitlines()
    assert lines[0] == "model,hardware,workload,precision,engine,tp,itl" and len(lines) == 3
    assert main(["sweep", "--axis", "tp=1,2", "--only", "itl", "--out",
                 str(tmp_path / "x.data")]) == 0
    assert pl.read_parquet(tmp_path / "x.data").height == 2
    assert main(["sweep", "--axis", "tp=1,2", "--only", "itl", "--format", "csv", "--out",
                 str(tmp_path / "y.txt")]) == 0
    assert (tmp_path / "y.txt").read_text().startswith("model,")
    capsys.readouterr()


@pytest.mark.parametrize("argv, says", [
    (["sweep", "--axis", "tp=1,2", "--format", "csv", "--out", "s.parquet"],
     "--format csv does not match --out s.parquet"),
    (["sweep", "--axis", "tp=1,2", "--format", "parquet", "--out", "s.csv"],
     "--format parquet does not match --out s.csv"),
    (["sweep", "--axis", "tp=1,2", "--out", "s.json"], "it writes parquet or csv"),
    (["sweep", "--axis", "tp=1,2", "--out", ""], "--out needs a file name"),
    (["sweep", "--axis", "tp=1,2", "--format", "parquet"], "needs --out"),
    (["eval", "--format", "json", "--out", "e.parquet"],
     "--format json does not match --out e.parquet"),
    (["eval", "--format", "parquet", "--out", "e.csv"], "does not match --out e.csv"),
    (["eval", "--out", ""], "--out needs a file name"),
])
def test_out_and_format_that_disagree_are_refused(argv, says, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and says in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_eval_out_takes_the_format_from_the_suffix(tmp_path, capsys):
    assert main(["eval", "--only", "itl", "--out", str(tmp_path / "e.parquet")]) == 0
    assert pl.read_parquet(tmp_path / "e.parquet").columns[-1] == "itl"
    assert main(["eval", "--only", "itl", "--out", str(tmp_path / "e.json")]) == 0
    assert "itl" in json.loads((tmp_path / "e.json").read_text())["quantities"]
    assert main(["eval", "--only", "itl", "--out", str(tmp_path / "e.txt")]) == 0
    assert (tmp_path / "e.txt").read_text().startswith("Llama 3.1 70B")
    assert capsys.readouterr().out == ""


def test_progress_bar_draws_once_the_sweep_takes_a_moment():
    stream = io.StringIO()
    bar = ProgressBar(1000, stream, delay=0)
    bar(400)
    bar(600)
    bar.close()
    text = stream.getvalue()
    assert "1,000/1,000 points" in text and text.endswith("\n")
    quiet = io.StringIO()
    slow = ProgressBar(1000, quiet, delay=60)
    slow(1000)
    slow.close()
    assert quiet.getvalue() == ""


# ------------------------------------------------------------------ eval --format parquet
def test_eval_parquet_is_one_row_equal_to_eval_json(tmp_path, capsys):
    out = tmp_path / "eval.parquet"
    assert main(["eval", SEED, "--format", "parquet", "--out", str(out)]) == 0
    assert main(["eval", SEED, "--format", "json"]) == 0
    quantities = json.loads(capsys.readouterr().out)["quantities"]
    frame = pl.read_parquet(out)
    assert frame.height == 1
    assert frame["precision"][0] == "fp8" and frame["hardware"][0] == "h100-sxm"
    for name, q in quantities.items():
        assert frame[name][0] == pytest.approx(q["value"], rel=1e-12), name
    assert frame["ttft"][0] == pytest.approx(36.22, abs=0.005)
    units = json.loads(pq.read_table(out).schema.metadata[b"perfgraph.units"])
    assert units == {n: q["unit"] for n, q in quantities.items()}


def test_eval_parquet_marks_failed_cells_nan(tmp_path):
    out = tmp_path / "zero.parquet"
    assert main(["eval", str(DATA / "good" / "divide-by-zero.toml"), "--format", "parquet",
                 "--out", str(out)]) == 0
    frame = pl.read_parquet(out)
    assert math.isnan(frame["throughput"][0])
    assert frame["ttft"][0] > 0


def test_eval_parquet_needs_out(capsys):
    assert main(["eval", "--format", "parquet"]) == 2
    assert "--format parquet needs --out" in capsys.readouterr().err


def imported(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return set(done.stdout.split())


def test_eval_without_parquet_never_imports_polars():
    quiet = "import contextlib, io\nfrom perfgraph.cli.main import main\n"
    assert "polars" not in imported(
        f"{quiet}with contextlib.redirect_stdout(io.StringIO()): main(['eval'])")
    assert "polars" not in imported(
        "import perfgraph.cli.commands.evaluate, perfgraph.output.parquet")


@pytest.mark.parametrize(("axis", "expected"), [
    ("tp=0,1", "tp: axis 'tp=0,1': 0 is out of range: expected a whole number of at least 1"),
    ("gpu_memory_utilization=0.5..1.5:+0.5", "1.5 is out of range: expected a fraction above "
                                             "0 and at most 1"),
    ("chunked_prefill=0,2", "2 is out of range: expected on or off"),
])
def test_an_axis_value_an_input_cannot_hold_is_refused(capsys, axis, expected) -> None:
    # what --set refuses, an axis refuses: the sweep never evaluates a TP of 0
    assert main(["sweep", "--axis", axis, "--only", "itl"]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1


def test_only_evaluates_what_the_selected_columns_read():
    """``sweep --only``: the wanted cells, equal to the full evaluation's, and nothing else
    computed (issue 15: 39 of the 123 cells the axes reach feed these eight)."""
    sheet = load().sheet
    plan = sweep.plan(ScenarioSpec(), ["concurrency=1..50", "tp=1,2,4", "isl=512..4096:+512"])
    grid = sweep.grid_columns(plan.cell_axes, 0, plan.points)
    only = ["ttft", "itl", "e2e_latency", "throughput", "throughput_per_gpu",
            "decode_step_time", "kv_bytes_per_seq", "max_concurrency_paged"]
    full = sheet.evaluate_columns(grid, plan.points)
    some = sheet.evaluate_columns(grid, plan.points, only=only)
    assert list(some) == only
    for name in only:
        assert np.array_equal(some[name], full[name], equal_nan=True), name
    computed = sheet._varying(grid, tuple(only))
    assert "mfu" not in computed and "prefill_intensity" not in computed
    assert len(computed) < len(sheet._varying(grid, None)) / 2
