"""One TOML per engine: an engine added as one file in a folder PERFGRAPH_ENGINES names is an
--engine (its memory rule), a --scheduler (the default under --engine), a --launch command,
a --bench tool and an entry of the help; a malformed file is one message naming the file,
the key and what was expected, exit 2; the shipped engines' tables hold what their docs say."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfgraph.cli.main import main
from perfgraph.errors import InputError
from perfgraph.scenario import engine_files
from perfgraph.scenario.loading import ScenarioSpec, engine_names, load
from perfgraph.whatif import bench, launch
from perfgraph.whatif.plan_percentiles import scheduler_for
from perfgraph.whatif.simulate.scheduler import policy, schedulers

#: an engine of its own: a memory rule (80 % of HBM, 1 GB reserve), an in-flight scheduler
#: without chunking, a command, a benchmark tool and a container
MINE = """
name = "Mine"
doc = "KV = 0.8 × HBM − weights − 1 GB"
aliases = ["mine"]

[values]
kv_memory_fraction = 0.8
kv_fraction_of_free = false
runtime_reserve = "1 GB"
cuda_graph_in_budget = false
startup_outside_budget = "0 GB"
block_size = 16
max_num_seqs = 128
max_num_batched_tokens = "4096 token"

[scheduler]
batching = "inflight"
chunked_prefill = false
preemption = "none"

[cuda_graph]
max_batch_size = 64
decode = true
mixed = false

[launch]
command = ["mine-serve", "{hf_id}"]
flags = [["--tp", "tp"], ["--pp", "pp"], ["--seqs", "batch"], ["--tokens", "tokens"],
         ["--mem", "mem_fraction"], ["--kv", "kv_dtype"]]
kv_dtype = { fp8 = "f8", auto = "bf16" }

[bench]
tool = "minebench"
command = ["mine-bench"]
flags = [["--url", "url"], ["--isl", "isl"], ["--osl", "osl"], ["--n", "requests"],
         ["--rate", "rate"]]
result_flag = "--out"
result = "mine.json"

[deploy]
image = "example/mine:1"
port = 9000
health = "/ready"
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(engine_files.FOLDERS_VARIABLE, str(tmp_path))
    return tmp_path


@pytest.fixture
def mine(folder: Path) -> Path:
    (folder / "mine.toml").write_text(MINE, encoding="utf-8")
    return folder


def _help(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_the_engine_file_is_the_memory_rule(mine: Path) -> None:
    assert engine_names() == ["atom", "mine", "sglang", "trtllm", "vllm"]
    sheet = load(ScenarioSpec(engine="mine", sets=(("tp", "2"),))).sheet
    hbm, weights = sheet.magnitude("hbm_total", "GB"), sheet.magnitude("weights_bytes", "GB")
    # 0.8 × 171.04 GB − 70.55 GB − 2 × 1 GB = 64.28 GB
    assert sheet.magnitude("kv_memory", "GB") == pytest.approx(0.8 * hbm - weights - 2.0)
    assert sheet.magnitude("max_num_batched_tokens", "token") == 4096


def test_the_help_lists_it_everywhere(mine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "atom, mine, sglang, trtllm or vllm" in _help(capsys, "eval")
    assert "atom, mine, sglang, trtllm, vllm, static" in _help(capsys, "simulate")
    text = _help(capsys, "plan")
    assert "serving command: atom, mine, sglang, trtllm, vllm" in text
    assert "(atom, minebench, sglang, aiperf, vllm;" in text


def test_its_scheduler_is_the_default_under_its_engine(
        mine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "mine" in schedulers() and scheduler_for("mine") == "mine"
    sheet = load(ScenarioSpec(engine="mine")).sheet
    pol = policy("mine", sheet, None, None)
    # in-flight, unchunked: one budget for decodes and whole prompts, concurrency (64) plus
    # the roofline's chunk (threshold − B: 295.4 − 64 → 232) when no budget is given
    chunk = math.ceil(sheet.magnitude("chunk_size", "token"))
    assert (pol.mixed, pol.chunked, pol.static) == (True, False, False)
    assert pol.fixed == 64 + chunk and pol.max_seqs == 64
    assert main(["simulate", "--engine", "mine", "--rate", "2 request/s",
                 "--requests", "20"]) == 0
    assert " · mine · open loop" in capsys.readouterr().out


def test_its_launch_flags_come_from_its_file(mine: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    scenario = load(ScenarioSpec(engine="mine"))
    # the default scenario: Llama 3.1 70B FP8 (kv_bytes 1: an FP8 KV cache), TP2, 64 users,
    # ISL 1024 (the budget: max(1024, 295.4) tokens), gpu_memory_utilization 0.9
    assert launch.words("mine", scenario) == [
        "mine-serve", "meta-llama/Llama-3.1-70B", "--tp", "2", "--pp", "1",
        "--seqs", "64", "--tokens", "1024", "--mem", "0.90", "--kv", "f8"]
    assert main(["plan", "--engine", "mine", "--slo", "itl=50ms", "--rate", "1 request/s",
                 "--search", "tp=2", "--search", "concurrency=8", "--launch", "--bench"]) == 0
    out = capsys.readouterr().out
    assert "mine-serve meta-llama/Llama-3.1-70B --tp 2 --pp 1 --seqs 8" in out
    assert "mine-bench --url localhost:9000 --isl 1024 --osl 1024" in out


def test_its_bench_tool_and_container(mine: Path) -> None:
    from perfgraph.whatif import deploy

    assert bench.engine_tool("mine") == "minebench"
    q = bench.BenchQuestion("m/x", "localhost:9000", 10, 20, 1.5, 100)
    assert bench.words("minebench", q) == ["mine-bench", "--url", "localhost:9000", "--isl",
                                           "10", "--osl", "20", "--n", "100", "--rate", "1.5",
                                           "--out", "mine.json"]
    assert deploy.engine_deploy("mine")["image"] == "example/mine:1"


def test_a_file_in_the_folder_replaces_a_shipped_engine(folder: Path) -> None:
    (folder / "vllm.toml").write_text(MINE.replace('"Mine"', '"my vLLM"'), encoding="utf-8")
    assert engine_files.engine("vllm").title == "my vLLM"
    assert engine_files.engine("vllm").scheduling == engine_files.Scheduling(
        "inflight", False, "none")


@pytest.mark.parametrize(("old", "new", "words"), [
    ('batching = "inflight"', 'batching = "sometimes"',
     ["[scheduler] batching is 'sometimes'", "expected one of 'mixed', 'prefill-first', "
      "'inflight'"]),
    ("chunked_prefill = false\n", "",
     ["[scheduler] chunked_prefill is missing", "expected true or false"]),
    ('["--tp", "tp"]', '["--tp", "tensor"]',
     ["[launch] flags is ['--tp', 'tensor']", "expected a value among tp, pp"]),
    ("max_batch_size = 64", 'max_batch_size = "64"',
     ["[cuda_graph] max_batch_size is '64'", "expected a whole number"]),
    ("[deploy]", "[deploys]", ["unknown key 'deploys' (did you mean 'deploy'?)"]),
    ('auto = "bf16" }', 'auto = "bf16" }\ndisagregation_flag = "--role"',
     ["unknown key 'disagregation_flag' in [launch] (did you mean 'disaggregation_flag'?)"]),
])
def test_a_malformed_engine_file_is_one_message(
        folder: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
        words: list[str]) -> None:
    assert old in MINE
    (folder / "bad.toml").write_text(MINE.replace(old, new, 1), encoding="utf-8")
    assert main(["eval", "--engine", "bad"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(folder / "bad.toml") in err, err
    assert all(w in err for w in words), err


def test_a_folder_that_is_not_one_is_one_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(engine_files.FOLDERS_VARIABLE, str(tmp_path / "nope"))
    assert main(["eval"]) == 2
    assert f"PERFGRAPH_ENGINES: {tmp_path / 'nope'} is not a folder" in capsys.readouterr().err


def test_an_engine_without_a_scheduler_cannot_be_simulated(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = MINE.replace('[scheduler]\nbatching = "inflight"\nchunked_prefill = false\n'
                        'preemption = "none"\n', "")
    (folder / "plain.toml").write_text(text, encoding="utf-8")
    assert main(["eval", "--engine", "plain"]) == 0  # its memory rule is enough for eval
    capsys.readouterr()
    assert main(["simulate", "--engine", "plain", "--rate", "1 request/s",
                 "--requests", "10"]) == 2
    assert "--scheduler: plain has no [scheduler] table" in capsys.readouterr().err


def test_an_engine_without_a_serving_command_says_why(folder: Path) -> None:
    text = MINE.replace('[launch]\n', '[launch]\nrefuse = "its flags are not documented"\n')
    (folder / "quiet.toml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="no serving command for quiet: its flags are not "
                                         "documented"):
        launch.words("quiet", load(ScenarioSpec(engine="quiet")))


def test_atom_launches_from_its_documented_flags() -> None:
    scenario = load(ScenarioSpec(engine="atom", sets=(("tp", "8"), ("concurrency", "128"))))
    assert launch.words("atom", scenario) == [
        "python", "-m", "atom.entrypoints.openai_server", "--model",
        "meta-llama/Llama-3.1-70B", "--tensor-parallel-size", "8",
        "--max-num-seqs", "128", "--max-num-batched-tokens", "1024",
        "--gpu-memory-utilization", "0.90", "--kv_cache_dtype", "fp8"]
    with pytest.raises(InputError, match="atom has no pipeline-parallel flag"):
        launch.words("atom", load(ScenarioSpec(engine="atom", sets=(("pp", "2"),))))


def test_expert_parallel_and_dp_attention_flags_when_the_plan_uses_them() -> None:
    spec = ScenarioSpec(model="deepseek-v3", engine="sglang", hardware="h200",
                        sets=(("tp", "8"), ("ep", "8"), ("dp_attention", "true")))
    words = launch.words("sglang", load(spec))
    assert words[words.index("--ep-size") + 1] == "8" and "--enable-dp-attention" in words
    assert "--enable-expert-parallel" in launch.words("vllm", load(
        ScenarioSpec(model="deepseek-v3", hardware="h200", sets=(("tp", "8"), ("ep", "8")))))


def test_simulate_runs_the_engines_own_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    # before, --scheduler was vllm whatever --engine said
    assert main(["simulate", "--engine", "sglang", "--rate", "2 request/s",
                 "--requests", "20"]) == 0
    assert " · sglang · open loop" in capsys.readouterr().out
    assert scheduler_for("atom") == "atom" and scheduler_for(None) == "vllm"


def test_a_plan_without_a_container_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--engine", "atom", "--hardware", "mi300x", "--slo", "itl=50ms",
                 "--rate", "1 request/s", "--search", "tp=2", "--search", "concurrency=8",
                 "--bench"]) == 2
    err = capsys.readouterr().err
    assert "--bench: atom has no [deploy] table" in err and "atom.toml" in err


@pytest.mark.parametrize(("engine", "batching", "chunked"), [
    ("vllm", "mixed", True), ("sglang", "prefill-first", True),
    ("trtllm", "inflight", True), ("atom", "prefill-first", False)])
def test_each_shipped_engine_has_its_scheduler(engine: str, batching: str,
                                               chunked: bool) -> None:
    rule = engine_files.engine(engine).scheduling
    assert rule is not None and (rule.batching, rule.chunked_prefill) == (batching, chunked)
    pol = policy(engine, load(ScenarioSpec(engine=engine)).sheet, None, None)
    assert pol.mixed == (batching != "prefill-first") and pol.chunked == chunked


def test_the_launch_physics_are_cells() -> None:
    sheet = load(ScenarioSpec(sets=(("tp", "1"),))).sheet
    hbm, weights = sheet.magnitude("hbm_capacity", "GB"), sheet.magnitude(
        "weights_bytes_per_gpu", "GB")
    # (0.9 × 85.52 − 70.55) ÷ (85.52 − 70.55) = 0.428
    assert sheet.magnitude("launch_free_fraction") == pytest.approx(
        (0.9 * hbm - weights) / (hbm - weights))
    assert sheet.magnitude("launch_token_budget", "token") == 1024
