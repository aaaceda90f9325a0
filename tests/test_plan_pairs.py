"""plan's mixed-GPU pairs (prefill pool on one accelerator, decode pool on another), against
hand computations: a pair costs its two pools' GPU-hours, each at its own GPU's price, and
its TTFT carries the hand-off of the prompt's KV over the slower NIC."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from perfgraph.cli.main import main
from perfgraph.output import plan_json, plan_pairs_report
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import plan_answer, plan_pairs, plan_pairs_answer
from perfgraph.whatif import plan_percentiles as pp
from perfgraph.whatif import plan_search as plan
from perfgraph.whatif.plan_pairs_answer import (
    BestPlanCost,
    MixedPair,
    MixedPairs,
    PairPool,
    PairSimulated,
)
from perfgraph.whatif.simulate.disagg import Pools, simulate_disagg
from perfgraph.whatif.simulate.summary import summarise

#: H100 (a 50 GB/s NIC) and B300 (100 GB/s), FP8, two TPs, two batches, disaggregated
SEARCH = ["hardware=h100-sxm,b300", "precision=fp8", "tp=1,2", "pp=1", "disaggregated=1",
          "concurrency=64,256"]
SPEC = ScenarioSpec(model="llama-3.3-70b", workload="chat-1k1k",
                    sets=(("kv_hop_overlap", "false"),))  # the KV sent whole: hop = bytes/bw


@pytest.fixture(scope="module")
def result() -> plan.Result:
    q = plan.question(SPEC, ["ttft=1s", "itl=40ms"], "10 request/s", "cost")
    return plan.run(SPEC, q, SEARCH, jobs=1)


def _sheet(result: plan.Result, row: int, **cells: str):  # noqa: ANN202
    choice = result.choices(row)
    sets = [(k, f"{v:g}") for k, v in choice.items() if isinstance(v, float)]
    price = plan.prices()[str(choice["hardware"])]
    return load(replace(result.spec, hardware=str(choice["hardware"]),
                        precision=str(choice["precision"]),
                        sets=(*result.spec.sets, *sets, ("gpu_hour_price", f"{price:g}"),
                              *cells.items()))).sheet


def test_a_pair_costs_its_pools_gpu_hours_and_waits_for_its_kv(result) -> None:  # noqa: ANN001
    found = plan_pairs.pairs(result, top=10)
    assert {(p.prefill_hardware, p.decode_hardware) for p in found} == {
        ("h100-sxm", "b300"), ("b300", "h100-sxm")}
    price = plan.prices()
    for p in found:
        a, b = result.choices(p.prefill.row), result.choices(p.decode.row)
        assert (a["hardware"], b["hardware"]) == (p.prefill_hardware, p.decode_hardware)
        # each pool's GPUs: its replicas × TP, at its own GPU's hourly price
        pre = _sheet(result, p.prefill.row, network_bandwidth="50 GB/s")  # the slower NIC
        dec = _sheet(result, p.decode.row)
        assert p.prefill.gpus == pre.magnitude("prefill_pool_replicas") * a["tp"]
        assert p.decode.gpus == dec.magnitude("decode_replicas_at_batch") * b["tp"]
        assert p.cost_rate == pytest.approx(p.prefill.gpus * price[p.prefill_hardware]
                                            + p.decode.gpus * price[p.decode_hardware])
        # TTFT: the prefill, its KV over 50 GB/s (whichever end is B300), the queue wait
        hop = pre.magnitude("kv_transfer_bytes", "B") / 50e9 * 1e3
        want = pre.magnitude("ttft", "ms") + hop + pre.magnitude("prefill_queue_wait", "ms")
        assert p.prefill.latency == pytest.approx(want, rel=1e-9)
        assert p.prefill.latency <= 1000 and p.decode.latency <= 40
        assert p.decode.latency == pytest.approx(dec.magnitude("itl_worst", "ms"))
    assert [p.cost_rate for p in found] == sorted(p.cost_rate for p in found)


def test_no_pairs_without_two_gpu_kinds_or_disaggregation() -> None:
    q = plan.question(SPEC, ["ttft=1s", "itl=40ms"], "10 request/s", "cost")
    one = plan.run(SPEC, q, ["hardware=h100-sxm", *SEARCH[1:]], jobs=1)
    together = plan.run(SPEC, q, [*SEARCH[:4], "disaggregated=0", SEARCH[5]], jobs=1)
    assert plan_pairs.pairs(one) == [] and plan_pairs.pairs(together) == []


def test_a_pair_is_simulated_on_its_two_sheets(result) -> None:  # noqa: ANN001
    best = plan_pairs.pairs(result, top=1)[0]

    def spec_of(row: int) -> ScenarioSpec:
        c = result.choices(row)
        return replace(result.spec, hardware=str(c["hardware"]), precision=str(c["precision"]),
                       sets=(*result.spec.sets, *((k, f"{v:g}") for k, v in c.items()
                                                  if isinstance(v, float))))

    slos = (pp.PercentileSlo("ttft", "p99", 5000.0, "ttft.p99=5s"),)
    [job] = plan_pairs.jobs(result, [best], spec_of, requests=60)
    got = pp.simulate_job(job, slos)
    decode, prefill = load(spec_of(best.decode.row)).sheet, load(spec_of(best.prefill.row)).sheet
    run = simulate_disagg(decode, prefill, job.setup,
                          Pools(best.prefill.replicas, best.decode.replicas, pp.ROUTER))
    want = summarise(run, decode).latency.ttft.p99
    assert got.values["ttft.p99"] == pytest.approx(want) and got.meets
    assert f"--disagg --prefill-hardware {best.prefill_hardware} --prefill-tp" in \
        pp.simulate_line(job)


def test_plan_answers_with_its_pairs(capsys) -> None:  # noqa: ANN001
    argv = ["plan", "--model", "llama-3.3-70b", "--workload", "chat-1k1k", "--set",
            "kv_hop_overlap=false", "--slo", "ttft=1s", "--slo", "itl=40ms", "--rate",
            "10 request/s", "--objective", "cost", "--format", "json"]
    for axis in SEARCH:
        argv += ["--search", axis]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    ans = doc["mixed_pairs"]
    # read back as the typed answer and written again: the same document
    assert plan_json.found_json(plan_answer.from_json(doc))["mixed_pairs"] == ans
    first = ans["pairs"][0]
    assert first["cost_rate"]["value"] == pytest.approx(
        first["prefill"]["cost_rate"]["value"] + first["decode"]["cost_rate"]["value"])
    assert first["prefill"]["hardware"] != first["decode"]["hardware"]
    assert ans["best_plan"]["deployment_gpus"] >= 1


#: two pairs, the first simulated; a best plan of $11.96/h on 4 GPUs
_POOL = PairPool("h100-sxm", "fp8", 1.0, 1.0, 64.0, 1, 1, 2.99, 175.16)
TYPED = MixedPairs((
    MixedPair("vllm", 2, 9.02, _POOL,
              PairPool("b200", "fp8", 2.0, 1.0, 256.0, 1, 2, 6.03, 16.87),
              PairSimulated({"ttft.p99": 905.87}, True, None)),
    MixedPair("vllm", 3, 12.01, replace(_POOL, hardware="b200", replicas=2, gpus=2),
              replace(_POOL, concurrency=None, latency=20.14))),
    BestPlanCost(11.96, 4.0))


def test_the_typed_pairs_render_their_values() -> None:
    doc = plan_pairs_report.as_json(TYPED)
    first = doc["pairs"][0]  # type: ignore[index]
    assert first["cost_rate"] == {"value": 9.02, "unit": "1/h"}
    assert first["prefill"]["ttft_at_rate"] == {"value": 175.16, "unit": "ms"}
    assert first["decode"]["itl_worst"] == {"value": 16.87, "unit": "ms"}
    assert first["decode"]["tp"] == 2.0 and first["decode"]["gpus"] == 2
    assert first["simulated"] == {"percentiles": {"ttft.p99": 905.87}, "meets": True,
                                  "error": None}
    assert "simulated" not in doc["pairs"][1]  # type: ignore[index]
    assert doc["best_plan"] == {"deployment_cost_rate": 11.96, "deployment_gpus": 4.0}
    assert plan_pairs_report.lines(TYPED, "cost").splitlines() == [
        "mixed-GPU pairs (prefill pool → decode pool), best first:",
        "  prefill 1 × h100-sxm TP1 PP1 → decode 1 × b200 TP2 PP1 batch 256 (fp8, vllm): "
        "2 GPUs, $9.02/h, TTFT 175.2 ms, ITL 16.9 ms",
        "    simulated: ttft.p99 905.9: meets the SLOs",
        "  prefill 2 × b200 TP1 PP1 → decode 1 × h100-sxm TP1 PP1 batch nan (fp8, vllm): "
        "3 GPUs, $12.01/h, TTFT 175.2 ms, ITL 20.1 ms",
        "  the best plan above: $11.96/h against the best pair's $9.02/h (the pair is better)"]
    assert plan_pairs_report.lines(TYPED, "gpus").splitlines()[-1] == \
        "  the best plan above: 4 GPUs against the best pair's 2 (the pair is better)"


def test_the_typed_pairs_read_back_from_their_json() -> None:
    doc = json.loads(json.dumps(plan_pairs_report.as_json(TYPED)))
    assert plan_pairs_answer.from_json(doc) == TYPED
    assert plan_pairs_answer.from_json({"pairs": [], "best_plan": None}) == \
        MixedPairs((), None)


def test_the_pairs_the_search_finds_are_typed(result: plan.Result) -> None:
    found = plan_pairs.pairs(result, top=2)
    ans = plan_pairs.answer(result, found)
    first, pick = ans.pairs[0], found[0]
    assert (first.gpus, first.cost_rate) == (pick.gpus, pick.cost_rate)
    assert first.prefill.hardware == pick.prefill_hardware
    assert first.decode.latency == pick.decode.latency and first.simulated is None
    assert ans.best_plan is not None and ans.best_plan.gpus >= 1
