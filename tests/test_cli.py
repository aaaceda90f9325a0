"""The CLI contract: eval and explain in every format, and one clear message for bad input."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfgraph.cli.main import main
from perfgraph.engine.units import ureg
from tests.conftest import DATA

BAD = DATA / "bad"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    q = doc["quantities"]
    assert q["ttft"]["unit"] == "ms" and q["ttft"]["error"] is None
    assert q["ttft"]["value"] == pytest.approx(36.51, abs=0.01)
    assert q["throughput"]["value"] == pytest.approx(4948, abs=1)
    for name, entry in q.items():  # every unit parses once FLOP and token are defined
        ureg.parse_units(entry["unit"]) if entry["unit"] else None
        assert set(entry) == {"value", "unit", "error"}, name
    assert doc["scenario"] == {"model": "llama-3.1-70b", "hardware": "h100-sxm",
                               "workload": "chat-1k1k", "precision": "fp8"}


def test_eval_table_groups_with_readable_units(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval")
    assert code == 0
    assert "LATENCY" in out and "THROUGHPUT" in out
    assert "36.51 ms" in out and "3.35 TB/s" in out and "1.979 PFLOP/s" in out
    assert "70.55 GB" in out  # weights_bytes at FP8


def test_eval_csv_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "eval", "--format", "csv", "--only", "itl,ttft")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["name"] for r in rows] == ["itl", "ttft"]
    assert float(rows[1]["value"]) == pytest.approx(36.51, abs=0.01)
    _, out, _ = run(capsys, "eval", "--format", "markdown", "--group", "latency")
    assert "| `ttft` | 36.51 ms |" in out


def test_set_values_with_units_and_formulas(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "eval", "-f", "json", "--set", "hbm_bandwidth=4.8 TB/s",
                    "--set", "concurrency=floor(max_concurrency_paged)")
    q = json.loads(out)["quantities"]
    assert q["hbm_bandwidth"]["value"] == 4.8
    # floor of the paged capacity on 2 H100s as nvidia-smi reports them (81559 MiB each):
    # (0.9 × 2 × 85.52 GB − 70.55 GB of FP8 weights − 2 × 2.34 GB of vLLM's start-up
    # reserve) ÷ (1536 tokens × 163,840 B) = 312.8
    assert q["concurrency"]["value"] == 312


def test_precision_and_catalog_options(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "eval", "-f", "json", "--precision", "bf16", "--hardware", "h200",
                    "--model", "llama-3.1-8b", "--set", "tp=1")
    q = json.loads(out)["quantities"]
    assert q["weight_bytes"]["value"] == 2
    assert q["hbm_bandwidth"]["value"] == 4.8
    assert q["peak_flops"]["value"] == pytest.approx(989.4, rel=1e-3)
    # A --set of a precision-driven cell wins over --precision.
    _, out, _ = run(capsys, "eval", "-f", "json", "--precision", "bf16", "--set",
                    "weight_bytes=0.5 B")
    assert json.loads(out)["quantities"]["weight_bytes"]["value"] == 0.5


def test_scenario_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", str(DATA / "good" / "seed-worked-example.toml"),
                       "-f", "json", "--only", "throughput,e2e_latency")
    q = json.loads(out)["quantities"]
    assert code == 0
    assert q["throughput"]["value"] == pytest.approx(4980, abs=1)
    assert q["e2e_latency"]["value"] == pytest.approx(13.20, abs=0.005)


def test_explain_shows_the_seeds_derivation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "prefill_flops",
                       str(DATA / "good" / "seed-worked-example.toml"))
    assert code == 0
    assert "formula      isl * flops_per_token" in out
    assert "with values  1024 tok × 140 GFLOP/token" in out
    assert "result       143.4 TFLOP" in out
    assert "reads        isl = 1024 tok, flops_per_token = 140 GFLOP/token" in out
    assert "read by      decode_flops_per_step" not in out and "prefill_time" in out


def test_explain_an_input_says_where_it_was_set(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "explain", "isl")
    assert "input        1024 tok" in out and "chat-1k1k.toml:" in out


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "explain", "ttft", "-f", "json")
    doc = json.loads(out)
    assert doc["reads"] == ["ttft_prefill", "ttft_in_batch", "ttft_overhead", "frontend_latency"]
    assert "e2e_latency" in doc["read_by"]


def test_error_values_print_and_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "eval", str(DATA / "good" / "divide-by-zero.toml"), "-f",
                       "json")
    q = json.loads(out)["quantities"]
    assert code == 0
    assert q["throughput"]["value"] is None
    assert "division by zero" in q["throughput"]["error"]
    assert "depends on throughput" in q["throughput_per_gpu"]["error"]
    assert q["ttft"]["error"] is None


BAD_CASES = [
    ("toml-syntax.toml", ["toml-syntax.toml:4:", "TOML syntax error"]),
    ("unknown-name.toml", ["unknown-name.toml:2", "unknown name 'concurency'",
                           "did you mean 'concurrency'"]),
    ("cycle.toml", ["cycle.toml:3", "cycle", "prefill_time → ttft_prefill → ttft → prefill_time"]),
    ("dimension.toml", ["dimension.toml:2", "gives FLOP", "declared in ms"]),
    ("dimension-add.toml", ["cannot add or subtract B and FLOP"]),
    ("unknown-unit.toml", ["unknown-unit.toml:3", "unknown unit 'TQ'"]),
    ("dunder-import.toml", ["dunder-import.toml:4", "not allowed in a formula"]),
    ("attribute.toml", ["attribute access"]),
    ("huge-power.toml", ["exponent"]),
    ("unknown-model.toml", ["unknown-model.toml:2", "unknown model 'llama-9-70b'",
                            "known: deepseek-r1-0528, deepseek-v2.5, deepseek-v3"]),
    ("unknown-key.toml", ["unknown-key.toml:2", "did you mean 'model'"]),
    ("unknown-cell-value.toml", ["unknown-cell-value.toml:3", "no cell named 'concurency'"]),
    ("bad-cell-key.toml", ["bad-cell-key.toml:4", "did you mean 'formula'"]),
    ("value-paren.toml", ["value-paren.toml:3", "concurrency", "cannot read '64)'",
                          "expected a number and a unit"]),
    ("value-comma.toml", ["value-comma.toml:3", "hbm_bandwidth", "cannot read '3,35 TB/s'",
                          "expected a number and a unit"]),
    ("quoted-power.toml", ["quoted-power.toml:4", "huge_bandwidth",
                           "a number raised to a power"]),
    ("incomplete-model.toml", ["models/incomplete.toml: does not set n_active_params, "
                               "n_kv_heads: a model file must give each of its inputs a value"]),
    ("bool-for-number.toml", ["bool-for-number.toml:3", "hbm_bandwidth",
                              "true/false is for on/off cells; this one is a number in TB/s"]),
    ("sparse-without-experts.toml", ["models/sparse-without-experts.toml:8",
                                     "n_active_params: is 10,000,000,000, not n_params = "
                                     "70,000,000,000", "declares no routed experts",
                                     "n_routed_experts, n_experts_per_tok"]),
]


@pytest.mark.parametrize(("name", "expected"), BAD_CASES)
def test_bad_files(capsys: pytest.CaptureFixture[str], name: str,
                   expected: list[str]) -> None:
    code, out, err = run(capsys, "eval", str(BAD / name))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("perfgraph: error: ")
    for fragment in expected:
        assert fragment in err


def test_every_bad_fixture_has_a_case() -> None:
    assert {p.name for p in BAD.glob("*.toml")} == {n for n, _ in BAD_CASES}


@pytest.mark.parametrize(("argv", "expected"), [
    (["eval", "--set", "concurency=3"], "did you mean 'concurrency'"),
    (["eval", "--set", "isl"], "NAME=VALUE"),
    (["eval", "--set", "isl=3 GB"], "declared in token"),
    # shorthand Pint reads as physics: say how it read it
    (["eval", "--set", "isl=8k"], "(its units read as boltzmann_constant), but the cell is "
                                  "declared in token"),
    (["eval", "--set", "network_bandwidth=400 Gb/s"], "(its units read as gilbert / second)"),
    (["eval", "--hardware", "h1000"], "known: a100-40gb, a100-80gb"),
    (["eval", "--precision", "fp2"], "known: bf16, fp8, int8, fp4"),
    (["eval", "--precision", "fp4", "--hardware", "h100-sxm"], "no dense fp4"),
    (["eval", "--only", "ttf"], "did you mean 'ttft'"),
    (["explain", "thruput"], "no cell named 'thruput'"),
    (["eval", "no/such/scenario.toml"], "no such scenario file"),
    (["eval", "--set", "prefill_time=ttft"], "cycle"),
])
def test_bad_command_lines(capsys: pytest.CaptureFixture[str], argv: list[str],
                           expected: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert expected in err and "Traceback" not in err


def test_the_installed_command_exits_nonzero_without_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "perfgraph.cli.main", "eval",
                           str(BAD / "dunder-import.toml")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "not allowed in a formula" in proc.stderr
    assert not Path("/tmp/perfgraph-pwned").exists()


def test_import_model_writes_a_catalog_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # --force means one thing in every command: replace a file perfgraph keeps (one the
    # command read, or a catalog entry); here tmp_path stands for the models catalog
    monkeypatch.setattr("perfgraph.cli.main._catalog_folders", lambda: (tmp_path,))
    out = tmp_path / "my-8b.toml"
    code, _, _ = run(capsys, "import-model", str(DATA / "configs" / "llama-3.1-8b.json"),
                     "--slug", "my-8b", "--out", str(out))
    assert code == 0
    code, stdout, _ = run(capsys, "eval", "--model", str(out), "-f", "json", "--only",
                          "n_params,kv_bytes_per_token")
    q = json.loads(stdout)["quantities"]
    assert q["n_params"]["value"] == 8_030_261_248
    code, _, err = run(capsys, "import-model", str(DATA / "configs" / "llama-3.1-8b.json"),
                       "--out", str(out))
    assert code == 2 and "--force" in err and "catalog" in err
    code, _, _ = run(capsys, "import-model", str(DATA / "configs" / "llama-3.1-8b.json"),
                     "--out", str(out), "--force")
    assert code == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"hidden_size": 4096,')
    code, _, err = run(capsys, "import-model", str(bad))
    assert code == 2 and "not valid JSON" in err and "bad.json:1" in err


def test_a_cycle_made_by_a_set_is_blamed_on_the_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--set", "decode_step_time=itl"]) == 2
    assert capsys.readouterr().err == ("perfgraph: error: --set: formulas form a cycle: "
                                       "decode_step_time → itl → decode_step_time\n")


def test_a_scenario_files_unknown_precision_names_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "u.toml"
    scenario.write_text('# mine\nprecision = "fp2"\n')
    assert main(["eval", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perfgraph: error: {scenario}:2: precision: unknown precision "
                          "'fp2' (did you mean")


def test_precision_names_are_not_case_sensitive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--precision", "FP8", "--only", "weight_bytes"]) == 0
    assert "1 B" in capsys.readouterr().out


def test_a_folder_is_not_a_scenario_file(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"perfgraph: error: {tmp_path}: a folder, not a " \
                                      "scenario file\n"


def test_the_title_names_the_scenario_file(capsys: pytest.CaptureFixture[str]) -> None:
    # a workload file given as the scenario sets ISL 8192: the title must not read as 1k/1k
    root = Path(__file__).resolve().parent.parent
    assert main(["levers", str(root / "workloads" / "long-prompt-8k1k.toml")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(" · scenario Long prompt, 8k in / 1k out")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == "perfgraph 0.1.0\n"


def test_levers_json_names_the_scenario_as_eval_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["levers", "--format", "json"]) == 0
    levers_scenario = json.loads(capsys.readouterr().out)["scenario"]
    assert main(["eval", "--format", "json"]) == 0
    assert levers_scenario == json.loads(capsys.readouterr().out)["scenario"] == {
        "model": "llama-3.1-70b", "hardware": "h100-sxm", "workload": "chat-1k1k",
        "precision": "fp8"}
