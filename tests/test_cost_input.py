"""Cost per input token: the deployment's cost split by the GPU time each phase takes, held to
the seed's worked example by hand, and shown by ``perfgraph plan`` beside the other costs."""

from __future__ import annotations

import pytest

from perfgraph.engine.numbers import number
from perfgraph.output import plan_json, plan_text
from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.whatif import plan_report
from perfgraph.whatif import plan_search as plan
from tests.conftest import scenario

SEED_P = "7.00e10"


def test_input_and_output_costs_split_the_seeds_gpu_time_by_hand() -> None:
    sc = scenario(("n_params", SEED_P), ("n_active_params", SEED_P), ("gpu_hour_price", "2"))
    v = sc.sheet.magnitude
    # the seed's example (70B FP8, 2 × H100, 64 users, 1024 in, 1024 out): a prompt takes
    # 36.22 ms of the replica at the compute-bound prefill rate; its 1024 output tokens take
    # 1024 × 12.85 ms ÷ 64 = 205.60 ms of decode steps shared with 63 others
    prefill, decode = 36.22, 1024 * 12.851 / 64
    share = prefill / (prefill + decode)  # 0.1498
    assert v("input_gpu_share") == pytest.approx(share, rel=2e-3)
    # 2 GPUs × $2/h = $4/h; the replica completes 4980 tok/s ÷ 1024 = 4.863 requests/s:
    # input  $4/h × 0.1498 ÷ (4980 prompt tok/s × 3600 s/h) × 10⁶ = $0.0334 per Mtok
    # output $4/h × 0.8502 ÷ (4980 output tok/s × 3600 s/h) × 10⁶ = $0.1897 per Mtok
    per_mtok = 4 / (4980 * 3600) * 1e6  # $0.2231: the whole cost on one kind of token
    assert v("cost_per_mtok_input") == pytest.approx(per_mtok * share, rel=3e-3)
    assert v("cost_per_mtok_output_share") == pytest.approx(per_mtok * (1 - share), rel=3e-3)
    # the existing cell keeps its meaning: the whole cost on the output tokens
    assert v("cost_per_mtok_output") == pytest.approx(per_mtok, rel=3e-3)
    # and the split adds up to the cost of a request
    assert 1024 * v("cost_per_mtok_input") + 1024 * v("cost_per_mtok_output_share") == \
        pytest.approx(1024 * v("cost_per_mtok_output"), rel=1e-12)


@pytest.fixture(scope="module")
def priced() -> plan.Result:
    spec = ScenarioSpec(model="llama-3.1-8b", hardware="h100-sxm", precision="fp8",
                        workload="chat-1k1k")
    q = plan.question(spec, ["itl=100ms"], "2 request/s", "cost")
    return plan.run(spec, q, ("tp=1", "pp=1", "disaggregated=0", "concurrency=8,16"), jobs=1)


def test_plan_shows_the_input_cost_beside_the_others(priced: plan.Result) -> None:
    ans = plan_report.answer(priced, 1)
    best = plan_json.found_json(ans)["best"]["values"]
    assert best["cost_per_mtok_input"]["value"] > 0
    assert best["cost_per_mtok_input"]["value"] < best["cost_per_mtok_output"]["value"]
    table = plan_text.table(ans)
    header = next(line for line in table.splitlines() if "$/Mtok in" in line)
    cols = header.split()
    assert cols.index("in") < cols.index("out") < cols.index("all")
    row = next(line for line in table.splitlines() if line.strip().startswith("best"))
    assert number(best["cost_per_mtok_input"]["value"], 3) in row.split()
