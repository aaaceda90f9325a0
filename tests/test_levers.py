"""Levers by symptom: the seeds' situations fire the seeds' symptoms, the seed's lever comes
first with the seed's gain, a healthy scenario gets no advice, and a bad playbook is one
clear error naming file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgraph.cli.main import main
from perfgraph.errors import PerfgraphError
from perfgraph.scenario.catalog import catalog_names
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load
from perfgraph.whatif import lever_advice as levers
from perfgraph.whatif.playbook import STAGES, Lever, check, load_playbook
from tests.conftest import DATA, scenario


def from_file(name: str, *sets: tuple[str, object]) -> Scenario:
    return load(ScenarioSpec(file=str(DATA / "good" / name),
                             sets=tuple((k, str(x)) for k, x in sets)))


def effects(advice: levers.Advice) -> dict[str, levers.Effect]:
    return {e.cell: e for e in advice.effects}


def ids(sc: Scenario) -> list[str]:
    return [s.id for s in levers.symptoms(sc.sheet)]


# ---------------------------------------------------------------- the seeds' situations
def test_naive_kv_on_the_8b_card_paged_kv_first_3_6x() -> None:
    # tests/data/good/serving-8b-naive-kv.toml: the inputs the seed implies (see that file).
    sc = from_file("serving-8b-naive-kv.toml")
    assert "kv_reservations_cap_batch" in ids(sc)
    first = levers.diagnose(sc.sheet)[0]
    assert first.lever.id == "paged_kv" and first.error is None
    e = effects(first)
    assert e["concurrency"].before == 55 and e["concurrency"].after == 752  # ~57 → ~760
    assert e["decode_throughput"].ratio == pytest.approx(3.6, rel=0.04)  # "~3.6×"
    assert e["itl"].before == pytest.approx(6.1, rel=0.01)
    assert e["itl"].after == pytest.approx(22.6, rel=0.01)


def test_memory_bound_8b_decode_int8_weights_double_the_ceiling() -> None:
    # 8B BF16 on one H100, batch already at the ITL SLO (so batching up is in effect):
    # "8B INT8: 209 → ~419 tok/s" (the seed rounds 8.0e9 params; 8.03e9 gives 417).
    sc = scenario(("tp", 1), ("isl", 512), ("osl", 512), ("concurrency",
                  "decode_batch_at_itl_slo"), model="llama-3.1-8b", precision="bf16")
    assert "decode_memory_bound" in ids(sc)
    first = levers.diagnose(sc.sheet)[0]
    assert first.lever.id == "int8_weights"
    ceiling = effects(first)["single_stream_ceiling"]
    assert (ceiling.before, ceiling.after) == (pytest.approx(209, rel=0.005),
                                               pytest.approx(418, rel=0.005))
    assert ceiling.ratio == pytest.approx(2.0)


def test_70b_bf16_on_one_card_needs_tensor_parallelism_first() -> None:
    sc = scenario(("tp", 1), precision="bf16")
    assert ids(sc) == ["model_does_not_fit"]  # nothing else is judged on a model that won't fit
    advice = levers.diagnose(sc.sheet)
    assert [a.lever.id for a in advice] == ["tp_to_fit", "int8_weights"]
    e = effects(advice[0])
    assert (e["model_fits"].before, e["model_fits"].after) == (0, 1)
    assert (e["n_gpus"].before, e["n_gpus"].after) == (1, 2)


def test_long_prompt_without_chunking_chunked_prefill_first() -> None:
    # tests/data/good/serving-8b-long-prompt.toml: compute_efficiency 0.51, as the seed's
    # 260 ms implies. Chunked prefill at 512: "ITL 260 → 23 ms", "TTFT +40%".
    sc = from_file("serving-8b-long-prompt.toml")
    assert ids(sc)[0] == "long_prompts_stall_decodes"
    first = levers.diagnose(sc.sheet)[0]
    assert first.lever.id == "chunked_prefill" and first.lever.stage == "scheduling"
    stall, ttft = effects(first)["decode_stall"], effects(first)["ttft_long"]
    assert stall.before == pytest.approx(260, rel=0.03)
    assert stall.after == pytest.approx(23, rel=0.03)
    assert ttft.ratio == pytest.approx(1.4, abs=0.03)


def test_low_mbu_says_measure_first() -> None:
    # A run that streams half of peak bandwidth in decode: MBU 50% < 60%.
    sc = scenario(("bandwidth_efficiency", 0.5))
    assert "mbu_low" in ids(sc)
    first = levers.diagnose(sc.sheet)[0]
    assert first.lever.id == "profile" and first.lever.stage == "measure"
    assert effects(first)["decode_headroom"].before == pytest.approx(2)  # 1 / MBU
    assert effects(first)["mbu"].ratio == 1  # measuring changes nothing; it tells you


def test_blind_routing_of_multi_turn_chat_kv_aware_routing_first() -> None:
    # The routing test's inputs (turn 20, 1,300 tokens a turn, 95.8% prefix hits), served by
    # 4 replicas behind a blind router.
    sc = scenario(("chat_turn", 20), ("turn_tokens", 1300), ("prefix_hit_rate", 0.958),
                  ("replicas", 4))
    assert "prefix_reuse_blind_routing" in ids(sc)
    first = levers.diagnose(sc.sheet)[0]
    assert first.lever.id == "kv_aware_routing"
    assert effects(first)["ttft_routed"].after == pytest.approx(39, rel=0.01)


def test_speculation_on_a_compute_bound_decode_turn_it_off() -> None:
    sc = from_file("levers-healthy.toml", ("spec_k", 4))
    assert ids(sc) == ["speculation_on_saturated_compute"]
    (only,) = levers.diagnose(sc.sheet)
    assert only.lever.id == "spec_off"
    assert effects(only)["throughput"].ratio > 1.3  # drafts no longer eat the FLOPs


def test_a_healthy_scenario_gets_no_advice() -> None:
    sc = from_file("levers-healthy.toml")
    assert ids(sc) == []
    assert levers.diagnose(sc.sheet) == []


# ---------------------------------------------------------------- the default scenario
def test_default_scenario_advice_is_computed_by_the_graph() -> None:
    sc = scenario()
    advice = levers.diagnose(sc.sheet)
    assert {"decode_memory_bound", "batch_below_slo"} <= set(ids(sc))
    assert advice, "the default scenario gets advice"
    stages = [STAGES.index(a.lever.stage) for a in advice]
    assert stages == sorted(stages)  # measure → structural → scheduling → cost
    assert len({a.lever.id for a in advice}) == len(advice)  # each lever once
    for a in advice:  # every effect is the graph, evaluated with the lever applied
        fork = sc.sheet.fork()
        levers.apply(fork, a.lever)
        for e in a.effects:
            assert e.before == sc.sheet.magnitude(e.cell)
            assert e.after == fork.magnitude(e.cell)
    spec = next(a for a in advice if a.lever.id == "spec_decode")
    assert effects(spec)["itl"].ratio == pytest.approx(1 / 2.7731)
    assert sc.sheet.magnitude("spec_k") == 0  # diagnose never touches the sheet


def test_levers_already_in_effect_are_left_out() -> None:
    sc = scenario()  # FP8 weights and KV already: the quantization levers change nothing
    assert not {"int8_weights", "fp8_kv"} & {a.lever.id for a in levers.diagnose(sc.sheet)}


# ---------------------------------------------------------------- apply and undo
def test_apply_then_restore_puts_the_sheet_back() -> None:
    sc = scenario()
    before = {n: sc.sheet.raw(n) for n in sc.sheet.names}
    lever = load_playbook().lever("tp_double")
    previous = levers.apply(sc.sheet, lever)
    assert sc.sheet.magnitude("tp") == 4
    assert sc.sheet.declaration("tp").formula is None  # "tp * 2" read tp once: a value
    assert sc.sheet.magnitude("itl") == pytest.approx(before["itl"] / 2 * 1e3)
    for decl in previous:
        sc.sheet.restore(decl)
    assert {n: sc.sheet.raw(n) for n in sc.sheet.names} == before


def test_a_live_formula_pin_stays_live() -> None:
    sc = from_file("serving-8b-naive-kv.toml")
    lever = Lever("x", "batch to what fits", "structural", "none",
                  (("concurrency", "floor(max_concurrency)"),), ("concurrency",))
    levers.apply(sc.sheet, lever)
    assert sc.sheet.declaration("concurrency").formula.text == "floor(max_concurrency)"
    sc.sheet.set("paged_kv", True)
    assert sc.sheet.magnitude("concurrency") == 752


def test_a_pin_that_fails_undoes_the_others_and_says_which_lever() -> None:
    sc = scenario()
    before = {n: sc.sheet.raw(n) for n in sc.sheet.names}
    bad = Lever("loop", "a cycle", "cost", "none",
                (("spec_k", "4"), ("isl", "ttft / ms * token")), ("itl",))
    with pytest.raises(PerfgraphError, match="cycle") as err:
        levers.apply(sc.sheet, bad)
    assert str(err.value).startswith("lever loop: pin isl = 'ttft / ms * token': formulas "
                                     "form a cycle")
    assert {n: sc.sheet.raw(n) for n in sc.sheet.names} == before
    effects_, error = levers.evaluate(sc.sheet, bad)
    assert error is not None and "cycle" in error
    assert all(e.after is None for e in effects_)


# ---------------------------------------------------------------- the playbook
@pytest.mark.parametrize("model", catalog_names("model"))
@pytest.mark.parametrize("hardware", catalog_names("hardware"))
def test_the_shipped_playbook_checks_against_every_catalog_sheet(model: str,
                                                                 hardware: str) -> None:
    sc = scenario(model=model, hardware=hardware, precision="bf16")
    check(load_playbook(), sc.sheet)
    for a in levers.diagnose(sc.sheet):
        assert a.error is None, (a.lever.id, a.error)


GOOD_LEVER = '''
[levers.fp8]
title = "FP8 weights"
stage = "cost"
tradeoff = "measure quality"
pins = { weight_bytes = "1 B" }
watch = ["itl"]
'''

BAD_PLAYBOOKS = [  # (text, line of the error, what the message must say)
    ('[symptoms.s]\ntitle = "t"\ncondition = "decode_compute_bond == 0"\nlevers = ["fp8"]\n'
     + GOOD_LEVER, 3, "unknown name 'decode_compute_bond'"),
    ('[symptoms.s]\ntitle = "t"\ncondition = "itl + 1"\nlevers = ["fp8"]\n' + GOOD_LEVER,
     3, "cannot add or subtract"),
    ('[symptoms.s]\ntitle = "t"\ncondition = "itl"\nlevers = ["fp8"]\n' + GOOD_LEVER,
     3, "must be true or false"),
    ('[symptoms.s]\ntitle = "t"\ncondition = "itl >"\nlevers = ["fp8"]\n' + GOOD_LEVER,
     3, "invalid formula"),
    ('[symptoms.s]\ntitle = "t"\ncondition = "itl > itl_slo"\nlevers = ["fp9"]\n'
     + GOOD_LEVER, 4, "unknown lever 'fp9'"),
    ('[symptoms.s]\ntitle = "t"\ncondition = "itl > itl_slo"\nlevers = []\nlever = 1\n',
     5, "unknown key 'lever'"),
    (GOOD_LEVER.replace('weight_bytes = "1 B"', 'weight_byte = "1 B"'), 6,
     "no cell named 'weight_byte'"),
    (GOOD_LEVER.replace('"1 B"', '"3 ms"'), 6, "weight_bytes: '3 ms' is s"),
    (GOOD_LEVER.replace('"1 B"', '"itl * 2"'), 6, "declared in B"),
    (GOOD_LEVER.replace('"cost"', '"costly"'), 4, "unknown stage 'costly'"),
    (GOOD_LEVER.replace('["itl"]', '["itll"]'), 7, "no cell named 'itll'"),
    (GOOD_LEVER.replace('tradeoff = "measure quality"\n', ''), 2, "missing key 'tradeoff'"),
    ('[symptom.s]\ntitle = "t"\n', 1, "unknown table 'symptom'"),
    ('[levers.x\n', 1, "TOML syntax error"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD_PLAYBOOKS)
def test_a_bad_playbook_is_one_error_naming_file_and_line(tmp_path: Path, text: str,
                                                          line: int, message: str) -> None:
    path = tmp_path / "levers.toml"
    path.write_text(text)
    with pytest.raises(PerfgraphError) as err:
        levers.diagnose(scenario().sheet, load_playbook(path))
    assert err.value.file == str(path) and err.value.line == line
    assert message in str(err.value)


def test_a_bad_playbook_on_the_command_line_exits_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "levers.toml"
    path.write_text(BAD_PLAYBOOKS[0][0])
    assert main(["levers", "--playbook", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and f"{path}:3" in err and "Traceback" not in err
    assert "did you mean 'decode_compute_bound'" in err


# ---------------------------------------------------------------- the command
def test_levers_command_prints_computed_gains(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["levers"]) == 0
    out = capsys.readouterr().out
    assert "SYMPTOMS" in out and "Decode is memory-bound" in out
    spec = next(a for a in levers.diagnose(scenario().sheet) if a.lever.id == "spec_decode")
    itl = effects(spec)["itl"]
    assert f"itl {itl.before:.4g} ms → {itl.after:.4g} ms (×0.361)" in out
    assert out.index("[structural") < out.index("[cost")


def test_levers_command_on_a_seed_situation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["levers", "-m", "llama-3.1-8b", "-p", "bf16", "-s", "tp=1", "-s", "isl=512",
                 "-s", "osl=512", "-s", "concurrency=decode_batch_at_itl_slo"]) == 0
    out = capsys.readouterr().out
    assert "1. INT8 weights [cost; for: Decode is memory-bound]" in out
    assert "single_stream_ceiling 208.6 tok/s → 417.2 tok/s (×2.0)" in out


def test_levers_command_json_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["levers", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {s["id"] for s in data["symptoms"]} >= {"decode_memory_bound"}
    first = data["advice"][0]
    assert set(first) == {"symptom", "lever", "effects", "error", "brings"}
    assert all(set(e) == {"cell", "unit", "before", "after", "ratio"} for e in first["effects"])
    assert main(["levers", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("## Llama 3.1 70B") and "| # | lever | stage |" in md


def test_levers_command_with_nothing_to_advise(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["levers", str(DATA / "good" / "levers-healthy.toml")]) == 0
    assert "No symptom holds" in capsys.readouterr().out
    assert main(["levers", str(DATA / "good" / "levers-healthy.toml"), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["advice"] == []


def test_levers_command_bad_scenario_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["levers", "--set", "concurrancy=8"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "did you mean 'concurrency'" in err and "Traceback" not in err


# ---------------------------------------------------------------- what advice must not say
def test_a_lever_that_fits_the_weights_but_not_the_batch_says_so() -> None:
    # 70B BF16 on one H100: TP 2 fits the weights, but its KV holds ~16.2 of the 64
    # sequences, so the ITL it computes at B = 64 comes with that warning. By hand, per
    # GPU: 0.9 x 81559 MiB (what nvidia-smi reports) - 70.55e9 x 2 B / 2 = 6.42 GB, less
    # vLLM's start-up reserve of 2.34 GB (activations of 8192 tokens 8192 x 2 B x
    # (4 x 8192 + 3 x 28,672.67 / 2) = 1.24 GB, logits 3 x 256 x 128,256 x 4 B = 0.39 GB,
    # non-torch 0.2 GB, CUDA graphs 0.5 GB) = 4.08 GB of KV room; 327,680 B/token / 2 x
    # 1536 tokens (mean context) = 252 MB a sequence → 16.2 (25.5 without the reserve).
    # (With the datasheet's 80e9 B it was 5.75: the decimal-GB error of issue 11.)
    sc = scenario(("tp", 1), model="llama-3.1-70b", precision="bf16")
    first = levers.diagnose(sc.sheet)[0]
    assert first.lever.id == "tp_to_fit"
    assert effects(first)["max_concurrency"].after == pytest.approx(16.21, abs=0.01)
    assert [s.id for s in first.brings] == ["batch_does_not_fit"]


def test_regimes_are_not_brought_on() -> None:
    book = load_playbook()
    regimes = {s.id for s in book.symptoms if s.regime}
    assert regimes == {"mbu_low", "decode_memory_bound", "kv_dominates_decode",
                       "batch_below_slo"}
    for a in levers.diagnose(scenario(("tp", 1), model="llama-3.1-70b",
                                      precision="bf16").sheet):
        assert not regimes & {s.id for s in a.brings}


def test_batching_up_is_not_advised_when_prefill_bounds_throughput() -> None:
    # 8K prompts at B = 64: prefill no longer hides in the decodes' spare compute, so a
    # bigger batch only raises ITL (throughput stays at 3747 tok/s)
    sc = scenario(workload="long-prompt-8k1k")
    assert v(sc, "non_overlapped_prefill_tokens", "token") > 0
    fork = sc.sheet.fork()
    levers.apply(fork, load_playbook().lever("batch_to_slo"))
    assert fork.magnitude("concurrency") > 64
    assert fork.magnitude("throughput") == pytest.approx(sc.sheet.magnitude("throughput"),
                                                         rel=1e-3)
    assert "batch_below_slo" not in ids(sc)
    assert "batch_to_slo" not in {a.lever.id for a in levers.diagnose(sc.sheet)}


def test_kv_caps_batch_only_where_some_batch_turns_decode_compute_bound() -> None:
    # at a 1536-token mean context the 70B's KV reads keep decode memory-bound at any
    # batch (decode_compute_bound_batch = 0): capping the batch below 295 costs nothing
    sc = scenario()
    assert v(sc, "decode_compute_bound_batch") == 0
    assert "kv_caps_batch" not in ids(sc)
    short = scenario(("isl", 128), ("osl", 128), ("gpu_memory_utilization", 0.45))
    assert 0 < v(short, "max_concurrency") < v(short, "decode_compute_bound_batch")
    assert "kv_caps_batch" in ids(short)


def test_kv_dominated_decode_is_named() -> None:
    sc = scenario(workload="long-prompt-8k1k")
    assert v(sc, "kv_share_of_decode_bytes") > 0.5
    assert "kv_dominates_decode" in ids(sc)


def test_unchanged_watched_cells_are_printed_as_unchanged(capsys) -> None:
    # doubling TP halves ITL (collectives overlap) but not the tokens/s each GPU makes
    assert main(["levers", "--set", "itl_slo=10 ms"]) == 0
    out = capsys.readouterr().out
    tp = out[out.index("Double tensor parallelism"):]
    assert "itl 12.93 ms → 6.467 ms (×0.5)" in tp
    assert "throughput_per_gpu unchanged" in tp.split("trade-off")[0]
    assert main(["levers", "--model", "llama-3.1-70b", "--precision", "bf16",
                 "--set", "tp=1"]) == 0
    assert "brings on: The batch does not fit in KV memory" in capsys.readouterr().out


def v(sc: Scenario, name: str, unit: str | None = None) -> float:
    return sc.sheet.magnitude(name, unit)


def test_no_decode_advice_with_nothing_in_flight() -> None:
    # concurrency 0 (tests/data/good/divide-by-zero.toml): no decode step to be memory-bound
    sc = from_file("divide-by-zero.toml")
    assert v(sc, "concurrency") == 0
    held = set(ids(sc))
    assert not held & {"decode_memory_bound", "kv_dominates_decode", "mbu_low"}
    assert "spec_decode" not in {a.lever.id for a in levers.diagnose(sc.sheet)}
