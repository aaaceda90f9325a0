"""plan --slo ttft.p99=…: the analytic search's best candidates simulated, the first whose
simulated percentiles meet every SLO chosen; on a process pool, or on Ray."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgraph.cli.main import main
from perfgraph.errors import InputError
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import plan_percentiles as pp
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.cluster import simulate_replicas
from perfgraph.whatif.simulate.disagg import Pools, simulate_disagg
from perfgraph.whatif.simulate.summary import summarise

#: a small space: H100 at TP2 or TP4, two batches (rows 0-3 of the search)
SPACE = ["--hardware", "h100-sxm", "--search", "hardware=h100-sxm", "--search",
         "precision=fp8", "--search", "tp=2,4", "--search", "pp=1", "--search",
         "disaggregated=0", "--search", "concurrency=16,32"]


@pytest.mark.parametrize(("given", "analytic"), [
    (["ttft.p99=2s", "itl.p99=60ms"], ["ttft=2s", "itl=60ms"]),
    (["ttft=1s", "ttft.p99=2s"], ["ttft=1s"]),  # a plain SLO of the metric wins
    (["ttft.p90=1s", "ttft.p99=3s"], ["ttft=3s"]),  # the loosest bounds the mean
    (["ttft.p50=1s", "itl.p99=50ms"], ["itl=50ms"]),  # a median bounds no mean
    (["tpot.p99=40ms"], ["itl=40ms"]),
])
def test_each_percentile_bounds_its_mean_in_the_search(given, analytic):
    plain, percentile = pp.split_slos(given)
    assert pp.analytic_texts(plain, percentile) == analytic


def test_percentile_limits_read_in_the_summarys_units():
    sheet = load().sheet
    _, percentile = pp.split_slos(["TTFT.P99 = 2 s", "e2e.p90=40s", "itl.p99.9=60ms"])
    slos = pp.percentile_slos(percentile, sheet)
    assert [(s.name, s.limit) for s in slos] == [("ttft.p99", 2000.0), ("e2e.p90", 40.0),
                                                 ("itl.p99.9", 60.0)]
    with pytest.raises(InputError, match=r"--slo ttft.p99=fast"):
        pp.percentile_slos(pp.split_slos(["ttft.p99=fast"])[1], sheet)


def test_the_first_candidate_that_meets_every_slo_is_chosen(monkeypatch):
    slos = (pp.PercentileSlo("ttft", "p99", 100.0, "ttft.p99=100ms"),)
    measured = {0: 150.0, 1: 90.0, 2: 80.0, 3: 70.0}  # row → simulated ttft.p99 (ms)
    monkeypatch.setattr(pp, "simulate_job", lambda job, s: pp.Outcome(
        job.row, {"ttft.p99": measured[job.row]}, measured[job.row] <= 100.0))
    jobs = lambda rows: [pp.Job(r, ScenarioSpec(), Setup(), 1) for r in rows]  # noqa: E731
    held = pp.hold([0, 3, 1, 2], lambda r: r == 3, jobs, slos, candidates=2, workers=1)
    # row 3 (disaggregated) is passed over; 0 misses; 1 is the first that meets
    assert [o.row for o in held.outcomes] == [0, 1] and held.skipped == 1
    assert held.chosen == 1
    none = pp.hold([0], lambda r: False, jobs, slos, candidates=1, workers=1)
    assert none.chosen is None and not none.outcomes[0].meets


def test_each_deployment_is_simulated_once_at_its_largest_batch():
    # rows in rank order: keys 7 (batches 4, 64, 64), 5 (8, 16), 9 (2); a deployment is
    # simulated once, at its largest batch (the better ranked of a tie), deployments in
    # the order of their best row
    key = np.array([7, 5, 7, 9, 5, 7])
    batch = np.array([4.0, 8.0, 64.0, 2.0, 16.0, 64.0])
    assert pp.representatives(key, batch, 5).tolist() == [2, 4, 3]
    assert pp.representatives(key, batch, 2).tolist() == [2, 4]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), min_size=1, max_size=40),
       st.integers(1, 8))
def test_representatives_agree_with_grouping_row_by_row(rows, limit):
    groups: dict[int, list[tuple[int, int]]] = {}
    for i, (k, b) in enumerate(rows):
        groups.setdefault(k, []).append((i, b))
    want = [max(m, key=lambda ib: ib[1])[0] for m in groups.values()][:limit]
    key, batch = (np.array(c) for c in zip(*rows, strict=True))
    assert pp.representatives(key, batch.astype(float), limit).tolist() == want


def test_the_answer_re_simulates_to_what_it_says(capsys):
    code = main(["plan", *SPACE, "--slo", "ttft.p99=3s", "--slo", "itl.p99=80ms",
                 "--rate", "4 request/s", "--simulate", "3", "--requests", "300",
                 "--jobs", "2", "--format", "json"])
    assert code == 0
    ans = json.loads(capsys.readouterr().out)
    sim = ans["simulated"]
    assert sim["simulated"] <= 3 and sim["chosen_rank"] is not None
    chosen = sim["candidates"][sim["chosen_rank"] - 1]
    assert chosen["meets"] and all(not c["meets"] for c in
                                   sim["candidates"][:sim["chosen_rank"] - 1])
    best = ans["best"]
    choices, values = best["choices"], best["values"]
    replicas = values["deployment_replicas"]["value"]
    spec = ScenarioSpec(hardware=choices["hardware"], precision=choices["precision"],
                        engine=choices["engine"],
                        sets=tuple((k, f"{choices[k]:g}") for k in ("tp", "pp",
                                                                      "concurrency")))
    sheet = load(spec).sheet
    budget = int(sheet.magnitude("max_num_batched_tokens", "token"))  # the engine's, 8192
    setup = Setup(rate=4, requests=300, scheduler="vllm", token_budget=budget)
    # the whole deployment: its replicas behind the least-outstanding router
    run = (simulate_replicas(sheet, setup, int(replicas), "least-outstanding")
           if replicas > 1 else simulate(sheet, setup))
    latency = summarise(run, sheet).latency
    again = {"ttft.p99": latency.ttft.p99, "itl.p99": latency.itl.p99}
    assert again == pytest.approx(chosen["percentiles"])
    assert again["ttft.p99"] <= 3000 and again["itl.p99"] <= 80


def test_a_pool_and_one_process_give_the_same_outcomes():
    slos = (pp.PercentileSlo("itl", "p99", 80.0, "itl.p99=80ms"),)
    specs = [ScenarioSpec(hardware="h100-sxm", sets=(("tp", str(tp)), ("concurrency", "16")))
             for tp in (2, 4)]
    jobs = [pp.Job(i, s, Setup(rate=2.0, requests=200), 1) for i, s in enumerate(specs)]
    here = pp.run_jobs(jobs, slos, workers=1)
    pool = pp.run_jobs(jobs, slos, workers=2)
    assert here == pool and all(math.isfinite(o.values["itl.p99"]) for o in here)


def test_p50_alone_is_refused_with_the_reason(capsys):
    assert main(["plan", "--slo", "ttft.p50=1s", "--rate", "4 request/s"]) == 2
    err = capsys.readouterr().err
    assert "p50" in err and "Traceback" not in err


def test_the_ray_path_gives_the_same_answer():
    pytest.importorskip("ray")
    slos = (pp.PercentileSlo("itl", "p99", 80.0, "itl.p99=80ms"),)
    jobs = [pp.Job(0, ScenarioSpec(hardware="h100-sxm", sets=(("tp", "2"),
                                                               ("concurrency", "16"))),
                   Setup(rate=2.0, requests=200), 1)]
    assert pp.run_jobs(jobs, slos, ray_address="local") == pp.run_jobs(jobs, slos, workers=1)


@pytest.mark.parametrize(("replicas", "pools"), [(2, None), (1, (1, 2))])
def test_a_candidate_is_simulated_whole_replicas_or_pools(replicas, pools):
    # the job simulates the deployment it stands for: its replicas behind the router, or a
    # disaggregated one's two pools; its re-run line says so
    slos = (pp.PercentileSlo("ttft", "p99", 5000.0, "ttft.p99=5s"),)
    spec = ScenarioSpec(sets=(("concurrency", "16"),
                              ("disaggregated", "1" if pools else "0")))
    setup = Setup(rate=3.0, requests=60)
    job = pp.Job(0, spec, setup, replicas, pools)
    got = pp.simulate_job(job, slos)
    sheet = load(spec).sheet
    run = (simulate_disagg(sheet, sheet, setup, Pools(1, 2, "least-outstanding")) if pools
           else simulate_replicas(sheet, setup, 2, "least-outstanding"))
    want = summarise(run, sheet).latency.ttft.p99
    assert got.values["ttft.p99"] == pytest.approx(want) and got.meets
    line = pp.simulate_line(job)
    assert ("--disagg --prefill-replicas 1 --decode-replicas 2" in line if pools
            else "--replicas 2 --router least-outstanding" in line)
    assert "--rate '3 request/s'" in line
