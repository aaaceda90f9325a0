"""What a new user types carelessly: each case is one clear line on stderr naming the file,
option or value, exit 2, no traceback, and no file overwritten (or, where the input is
fine after all, the answer)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from perfgraph.cli.main import COMMANDS, build_parser, main
from tests.conftest import DATA

MEASURED = DATA / "measured" / "inferencemax_llama70b_fp8"
GOOD_RUN = MEASURED / "1k1k" / "H100.json"
LLAMA_8B_CONFIG = DATA / "configs" / "llama-3.1-8b.json"


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line ``perfgraph ARGV`` refuses with (exit 2, no traceback)."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfgraph: error: "), err
    return lines[0]


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ crashes, validated first

def test_a_lengths_row_of_a_trillion_tokens_is_refused_naming_file_line_and_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = write(tmp_path / "l.csv", "arrival_s,isl,osl\n0,1000000000000,100\n")
    line = refused(capsys, "simulate", "--lengths", csv, "--rate", "1 request/s")
    assert f"{csv}:2: isl: 1000000000000 tokens in one request" in line


def test_a_run_whose_every_request_is_dropped_reports_no_latency_not_a_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = write(tmp_path / "l.csv", "arrival_s,isl,osl\n0,10000000,100\n")  # > the KV pool
    assert main(["simulate", "--lengths", str(csv), "--rate", "1 request/s",
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["dropped"] == 1 and summary["measured"] == 0


@pytest.mark.parametrize("argv, words", [
    (["--requests", "100000000000", "--users", "4"],
     ["--requests", "100,000,000,000", "10,000,000 at most"]),
    (["--users", "20000000"], ["--users", "10,000,000 at most"]),
    # no arrivals at all: said first, before a billion requests are drawn
    (["--requests", "1000000000"], ["--rate", "--users", "--lengths fixed"]),
    (["--requests", "1000"], ["--rate", "--users"]),
])
def test_simulate_refuses_what_cannot_run_before_any_work(
        capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]) -> None:
    line = refused(capsys, "simulate", *argv)
    for word in words:
        assert word in line


def test_import_model_refuses_a_field_no_model_has(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = json.loads(LLAMA_8B_CONFIG.read_text(encoding="utf-8"))
    config["hidden_size"] = 1e300
    path = write(tmp_path / "config.json", json.dumps(config))
    line = refused(capsys, "import-model", path)
    assert f"{path}: config.json field 'hidden_size' is 1e+300" in line


# ------------------------------------------------------------------------- files destroyed

def test_simulate_never_writes_over_its_lengths_file(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = "arrival_s,isl,osl\n0,100,20\n0.5,120,30\n"
    csv = write(tmp_path / "l.csv", text)
    line = refused(capsys, "simulate", "--lengths", csv, "--out", tmp_path / "." / "l.csv")
    assert "--out" in line and "--lengths" in line and "--force" in line
    assert csv.read_text(encoding="utf-8") == text
    # --force, which the refusal suggests, is an option simulate has
    assert main(["simulate", "--lengths", str(csv), "--out", str(csv), "--force"]) == 0
    assert csv.read_bytes()[:4] == b"PAR1"


def test_simulate_refuses_one_file_for_out_and_trace(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.parquet"
    line = refused(capsys, "simulate", "--users", "2", "--requests", "4", "--out", out,
                   "--trace", out)
    assert f"--trace: {out} is also the --out file" in line
    assert not out.exists()


def test_plan_refuses_to_write_over_its_scenario_and_has_the_force_it_suggests(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write(tmp_path / "s.toml", 'model = "llama-3.1-8b"\n')
    line = refused(capsys, "plan", scenario, "--slo", "itl=50ms", "--rate", "1 request/s",
                   "--out", scenario)
    assert "SCENARIO.toml" in line and "--force" in line
    assert scenario.read_text(encoding="utf-8") == 'model = "llama-3.1-8b"\n'
    args = build_parser("plan").parse_args(["plan", "--slo", "itl=50ms", "--rate", "1/s",
                                            "--force"])
    assert args.force


def test_force_means_the_same_in_every_command_that_has_it() -> None:
    helps = set()
    for command in COMMANDS:
        sub = build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        for action in sub._actions:
            if "--force" in action.option_strings:
                helps.add(action.help)
    assert len(helps) == 1
    assert "read" in next(iter(helps)) and "catalog" in next(iter(helps))


# ------------------------------------------------------------------- wrong input accepted

def test_a_prices_file_with_unknown_names_is_refused_with_near_misses(tmp_path: Path) -> None:
    from perfgraph.errors import ProblemsError
    from perfgraph.whatif.plan_search import prices

    path = write(tmp_path / "p.toml", "[prices.h100-sx]\nusd_per_gpu_hour = 1.0\n"
                                      "[prices.h200]\nusd_per_gpu_hr = 2\n")
    with pytest.raises(ProblemsError) as caught:
        prices(str(path))
    text = str(caught.value)
    assert f"{path}:1: h100-sx: no accelerator 'h100-sx'" in text
    assert "did you mean 'h100-sxm'" in text
    assert "unknown key in [prices.h200] (did you mean 'usd_per_gpu_hour'?)" in text
    misspelt_table = write(tmp_path / "q.toml", "[price.h200]\nusd_per_gpu_hour = 1.0\n")
    with pytest.raises(Exception, match=r"q.toml:1: price: unknown table \(did you mean "
                                        r"'prices'\?\)"):
        prices(str(misspelt_table))
    good = write(tmp_path / "g.toml", "[prices.h200]\nusd_per_gpu_hour = 1.5\n")
    assert prices(str(good))["h200"] == 1.5


def test_eval_group_takes_any_case_and_refuses_an_unknown_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, "eval", "--group", "NOPE")
    assert "--group: no group 'NOPE'" in line and "hardware" in line and "latency" in line
    assert "did you mean 'hardware'" in refused(capsys, "eval", "--group", "hardwre")
    assert main(["eval", "--group", "HARDWARE", "--format", "json"]) == 0
    quantities = json.loads(capsys.readouterr().out)["quantities"]
    assert "hbm_bandwidth" in quantities and "itl" not in quantities


def test_tui_gives_back_the_scenario_that_measured_took_in(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.toml"  # the scenario is loaded, so its error names it
    line = refused(capsys, "tui", "--measured", MEASURED, missing)
    assert f"{missing}: no such scenario file" in line
    line = refused(capsys, "tui", "--measured", MEASURED, "a.toml", "b.toml")
    assert "one scenario file at most, got a.toml, b.toml" in line


def test_plot_gives_back_the_scenario_that_measured_took_in() -> None:
    from perfgraph.cli.commands import plot

    args = build_parser("plot").parse_args(["plot", "concurrency", "--measured",
                                            str(MEASURED), "s.toml", "--out", "x.svg"])
    plot.check(args)
    assert args.files == ["s.toml"] and args.measured == [str(MEASURED)]


@pytest.mark.parametrize("argv, words", [
    (["compare", "missing.json", GOOD_RUN], ["missing.json: no such file"]),
    (["calibrate", "nope.json", "--out", "c.toml"], ["nope.json: no such file"]),
    (["calibrate", GOOD_RUN, "--holdout", "missing.json", "--out", "c.toml"],
     ["missing.json: --holdout: no such file"]),
    (["compare", "/dev/zero"], ["/dev/zero: a character device"]),
])
def test_measured_files_that_are_not_there_are_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        argv: list[object], words: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    line = refused(capsys, *argv)
    for word in words:
        assert word in line
    assert not (tmp_path / "c.toml").exists()


def test_calibrate_says_which_file_has_no_run_and_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = write(tmp_path / "e.json", "{}")
    line = refused(capsys, "calibrate", empty, "--out", tmp_path / "c.toml")
    assert f"no run in {empty}: {empty}: the JSON content matches no known" in line


def test_calibrate_never_writes_into_a_catalog_folder(capsys: pytest.CaptureFixture[str]) -> None:
    from perfgraph.scenario.catalog import catalog_dir

    out = catalog_dir("hardware") / "h100-sxm.vllm.toml"
    line = refused(capsys, "calibrate", GOOD_RUN, "--out", out)
    assert "--out" in line and "hardware catalog" in line
    assert not out.exists()


# ------------------------------------------------------------- messages that name the thing

def test_a_lengths_csv_with_a_byte_order_mark_reads_and_a_header_alone_says_no_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfgraph.whatif.simulate.lengths import read_file

    bom = write(tmp_path / "bom.csv", b"\xef\xbb\xbfarrival_s,isl,osl\n0,100,20\n1,200,40\n")
    found = read_file(str(bom))
    assert found.isl.tolist() == [100, 200] and found.osl.tolist() == [20, 40]
    header = write(tmp_path / "h.csv", "arrival_s,isl,osl\n")
    line = refused(capsys, "simulate", "--lengths", header)
    assert f"{header}: the CSV has a header but no rows" in line
    empty = write(tmp_path / "e.csv", "")
    assert f"{empty}: the CSV is empty" in refused(capsys, "simulate", "--lengths", empty)


def test_out_through_a_link_to_a_pipe_writes_into_the_pipe() -> None:
    from perfgraph._infra.atomic import write_text_atomic

    read, write_end = os.pipe()
    try:  # /dev/stdout of `perfgraph eval --out /dev/stdout | cat` is such a link
        write_text_atomic(f"/proc/self/fd/{write_end}", "itl 12.93 ms\n")
        os.close(write_end)
        assert os.read(read, 100) == b"itl 12.93 ms\n"
    finally:
        os.close(read)
        try:
            os.close(write_end)
        except OSError:
            pass


@pytest.mark.parametrize("argv, what", [
    (["eval", "FIFO"], "FIFO: a named pipe (FIFO), not a scenario file"),
    (["eval", "--model", "/dev/zero"], "a character device, not a model file"),
    (["simulate", "--lengths", "/dev/zero"], "/dev/zero: a character device, not a lengths file"),
    (["simulate", "--lengths", "FIFO"], "a named pipe (FIFO), not a lengths file"),
    (["import-model", "/dev/zero"], "/dev/zero: a character device, not a config.json file"),
    (["eval", "--calibration", "FIFO"], "a named pipe (FIFO), not a calibration file"),
])
def test_a_fifo_or_a_device_is_named_for_what_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], what: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = [str(fifo) if a == "FIFO" else a for a in argv]
    assert what.replace("FIFO:", f"{fifo}:") in refused(capsys, *argv)


def test_a_toml_with_a_byte_order_mark_reads(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write(tmp_path / "s.toml", b'\xef\xbb\xbfmodel = "llama-3.1-8b"\n')
    assert main(["eval", str(scenario), "--only", "n_params", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["quantities"]["n_params"]["value"] == \
        8_030_261_248


# --------------------------------------------------------------------------------- help

def test_help_lists_every_engine_and_precision_there_is(
        capsys: pytest.CaptureFixture[str]) -> None:
    from perfgraph.scenario.loading import engine_names, precisions

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in (*engine_names(), *precisions().data):
        assert name in text
    assert {"atom", "nvfp4", "mxfp4"} <= set(text.replace(",", " ").split())


@pytest.mark.parametrize("command, options", [
    ("simulate", ["--seed", "--format", "--arrivals", "--scheduler"]),
    ("plan", ["--objective", "--format"]),
])
def test_options_say_what_they_do_and_their_default(command: str, options: list[str]) -> None:
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    for action in sub._actions:
        if set(action.option_strings) & set(options):
            assert action.help and "(default: " in action.help, action.option_strings


def test_compare_and_calibrate_take_the_scenario_among_the_runs_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perfgraph.cli.commands.compare import check_runs

    for command in ("compare", "calibrate"):
        args = build_parser(command).parse_args(
            [command, str(GOOD_RUN), "s.toml", *(["--out", "x.toml"] * (command == "calibrate"))])
        check_runs(args)
        assert args.scenario == "s.toml" and args.runs == [str(GOOD_RUN)]
    args = build_parser("compare").parse_args(["compare", str(GOOD_RUN), "--scenario", "s.toml"])
    check_runs(args)
    assert args.scenario == "s.toml"
    line = refused(capsys, "compare", GOOD_RUN, "a.toml", "--scenario", "b.toml")
    assert "one scenario file at most, got b.toml, a.toml" in line
    assert "a.toml: no measured run given" in refused(capsys, "compare", "a.toml")


def test_explain_format_table_is_what_text_was(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "itl", "--format", "table"]) == 0
    table = capsys.readouterr().out
    assert main(["explain", "itl", "--format", "text"]) == 0
    assert capsys.readouterr().out == table and table.startswith("itl: ")


# ----------------------------------------------------------------- what commands report

def test_a_closed_loop_reports_the_sheet_at_its_users() -> None:
    from perfgraph.cli.commands.simulate import _sheet_line
    from perfgraph.scenario.loading import ScenarioSpec, load

    sheet = load().sheet
    at_8 = load(ScenarioSpec(sets=(("concurrency", "8"),))).sheet
    line = _sheet_line(sheet, 8)
    assert line.endswith("at concurrency 8")
    assert f"itl {at_8.magnitude('itl'):.4g} ms" in line
    assert sheet.magnitude("concurrency") == 64  # the scenario's own sheet is untouched
    assert _sheet_line(sheet, None).endswith("at concurrency 64")


def test_compare_auto_with_no_profile_is_held_against_the_roofline(
        capsys: pytest.CaptureFixture[str]) -> None:
    from perfgraph.measured.comparison import compare_runs, reference
    from perfgraph.measured.reading import read_measured
    from perfgraph.measured.setup import Baseline
    from perfgraph.scenario.loading import ScenarioSpec

    runs = read_measured([str(DATA / "measured" / "a100_vllm_llama33_70b" / "01_tp8_pp1")]).runs
    base = Baseline.from_spec(ScenarioSpec(precision="bf16", calibration="auto"))
    found = compare_runs(runs, base, levers=False)
    assert reference(found, base) == "roofline"
    notes = [n for c in found for n in c.setup.notes]
    assert any("no shipped profile for a100-40gb" in n for n in notes)
    assert not any(n.startswith("calibrated by") for n in notes)
    h100 = read_measured([str(GOOD_RUN)]).runs
    assert reference(compare_runs(h100, base, levers=False), base).startswith(
        "calibrated: h100-sxm.vllm")  # the label names the profile that predicted the runs


def test_calibrate_with_a_holdout_that_cannot_be_compared_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a100 = DATA / "measured" / "a100_vllm_llama33_70b"  # FP8, the default, is not on A100
    out = tmp_path / "c.toml"
    line = refused(capsys, "calibrate", GOOD_RUN, "--holdout", a100, "--out", out)
    assert f"--holdout: no run of {a100} could be compared" in line
    assert not out.exists()
