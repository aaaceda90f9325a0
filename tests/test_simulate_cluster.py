"""Replicas behind a router and disaggregated pools, against hand computations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from perfgraph.cli.main import main
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.simulate import Setup, link, simulate
from perfgraph.whatif.simulate.cluster import pool_of, simulate_replicas
from perfgraph.whatif.simulate.disagg import Pools, handoffs, hop_times, simulate_disagg
from perfgraph.whatif.simulate.lengths import Lengths
from perfgraph.whatif.simulate.requests import Requests
from perfgraph.whatif.simulate.router import Router
from perfgraph.whatif.simulate.step_sheet import StepSheet
from perfgraph.whatif.simulate.summary import summarise


@pytest.fixture(scope="module")
def sheet():  # noqa: ANN201
    return load().sheet


def _cli(capsys, *argv: str) -> tuple[int, str, str]:  # noqa: ANN001
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_two_replicas_round_robin_at_half_load_are_each_one_replica_at_half_the_rate(
        sheet) -> None:  # noqa: ANN001
    # constant gaps: round-robin hands each replica every other request, i.e. one replica's
    # run at half the rate, shifted by one gap: the same latencies, request for request
    one = simulate(sheet, Setup(rate=1.0, cv=0.0, requests=40)).engine.reqs.table()
    two = simulate_replicas(sheet, Setup(rate=2.0, cv=0.0, requests=80), 2, "round-robin")
    both = two.engine.reqs.table()
    for k in ("ttft", "tpot", "e2e"):
        for j in (0, 1):
            assert both[k][j::2] == pytest.approx(one[k], rel=1e-9), k
    s = summarise(two, sheet)
    assert [r.requests for r in s.replicas] == [40, 40]


@pytest.mark.parametrize("whole", [False, True])
def test_a_router_that_looks_steps_the_engine_to_each_arrival_and_changes_nothing(
        sheet, whole) -> None:  # noqa: ANN001
    # one replica behind least-outstanding is advanced to every arrival before it is sent:
    # the same run as the engine left alone (whole-prompt prefix hits drawn the same way)
    s = sheet.fork()
    s.set("prefix_hit_whole", whole)
    s.set("prefix_hit_rate", 0.5 if whole else 0.0)
    setup = Setup(rate=6.0, cv=2.0, requests=120, seed=3)
    alone = simulate(s, setup).engine
    pooled = simulate_replicas(s, setup, 1, "least-outstanding").engine
    a, b = alone.reqs.table(), pooled.reqs.table()
    for k in ("ttft", "tpot", "e2e"):
        assert b[k] == pytest.approx(a[k], rel=1e-9), k
    assert pooled.log.count == pytest.approx(alone.log.count, rel=0.02)


def test_least_outstanding_beats_round_robin_on_p99_ttft_under_bursts(sheet) -> None:  # noqa: ANN001
    # outputs of uneven length (osl_spread 2) make replicas' loads drift apart; bursts
    # (gamma CV 3) queue; least-outstanding sends a burst where the queue is short
    s = sheet.fork()
    s.set("osl_spread", 2)
    setup = Setup(rate=2.0, cv=3.0, requests=1000, seed=0, lengths="workload", max_seqs=8)
    p99 = {}
    for policy in ("round-robin", "least-outstanding"):
        run = simulate_replicas(s, setup, 4, policy)
        p99[policy] = summarise(run, s).latency.ttft.p99
    assert p99["least-outstanding"] < 0.95 * p99["round-robin"]


def test_router_picks() -> None:
    rr = Router("round-robin", 3)
    assert [rr.pick([9, 0, 0]) for _ in range(4)] == [0, 1, 2, 0]
    lor = Router("least-outstanding", 3)
    assert lor.pick([2, 1, 1]) == 1 and lor.pick([2, 1, 1]) == 2  # ties go round
    pre = Router("prefix", 3, abs_threshold=4, rel_threshold=1.5)
    assert pre.pick([5, 1, 3], home=2) == 2  # at home: 2 more than the idlest, not 4
    assert pre.pick([20, 15, 16], home=0) == 0  # 5 more than the idlest, but not 1.5×
    assert pre.pick([12, 6, 7], home=0) == 1  # 6 more and 2×: overloaded, the idlest
    assert pre.pick([2, 1, 1]) == 2  # no session yet: the idlest, ties in turn


def test_the_prefix_router_keeps_sessions_home_and_the_hit_rate_follows(sheet) -> None:  # noqa: ANN001
    s = sheet.fork()
    s.set("prefix_hit_rate", 0.75)
    setup = Setup(rate=2.0, cv=1.0, requests=200, seed=1, sessions=10)
    by = {}
    for policy in ("prefix", "round-robin"):
        run = simulate_replicas(s, setup, 2, policy)
        rows = run.replicas
        hits = sum(r.hit_rate * r.requests for r in rows)  # type: ignore[operator]
        by[policy] = (round(hits), summarise(run, s).latency.ttft.mean)
    # light load: every turn but each session's first finds its prefix at home
    assert by["prefix"][0] == 200 - 10
    # blind round-robin: a turn lands where its session's last one did about half the time
    assert 70 < by["round-robin"][0] < 130
    assert by["prefix"][1] < by["round-robin"][1]


def test_a_lone_disaggregated_request_waits_for_prefill_hop_and_first_decode_step() -> None:
    # prefill on H200 at TP 4, decode on the scenario's H100s at TP 2; the KV sent whole
    # after the prefill, over the network
    sets = (("kv_hop_overlap", "false"), ("ttft_overhead", "5 ms"))
    decode = load(ScenarioSpec(sets=sets)).sheet
    prefill = load(ScenarioSpec(hardware="h200", sets=(*sets, ("tp", "4")))).sheet
    run = simulate_disagg(decode, prefill, Setup(rate=1.0, requests=1), Pools())
    n = 1024
    P, D = StepSheet.from_sheet(prefill), StepSheet.from_sheet(decode)
    at_n = prefill.fork()
    at_n.set("isl", n)
    hop = at_n.magnitude("kv_transfer_bytes", "B") / min(
        prefill.magnitude("network_bandwidth", "B/s"),
        decode.magnitude("network_bandwidth", "B/s"))
    assert hop == pytest.approx(at_n.magnitude("kv_hop_exposed", "s"), rel=1e-12)
    assert hop_times(prefill, decode, np.array([n])) == pytest.approx([hop], rel=1e-12)
    # the whole prompt on the prefill replica; its last token on the decode replica
    expect = (P.time(0, n, n, 0, P.chunk_pairs(0, n), 1) + hop
              + D.time(0, 1, n, 0, D.chunk_pairs(n - 1, 1), 1) + 0.005)
    assert run.engine.reqs.table()["ttft"][0] == pytest.approx(expect, rel=1e-12)
    assert [r.pool for r in run.replicas] == ["prefill", "decode"]


@pytest.mark.parametrize(("start", "work", "want"), [
    ([0.0], [1.0], [1.0]),  # alone: the whole link
    ([0.0, 0.0], [1.0, 1.0], [2.0, 2.0]),  # together: half each, twice as long
    ([0.0, 0.5], [1.0, 1.0], [1.5, 2.0]),  # 0.5 s alone, then 0.5 at half, then alone
    ([0.0, 0.0], [1.0, 3.0], [2.0, 4.0]),  # the short one ends at 2; the long one's 2 left
    ([0.0, 5.0, math.nan], [1.0, 1.0, 1.0], [1.0, 6.0, math.nan]),  # apart; never started
])
def test_transfers_share_the_link_equally(start, work, want) -> None:
    got = link.shared(np.array(start), np.array(work))
    assert got == pytest.approx(want, nan_ok=True, rel=1e-12)


def test_two_prompts_handed_off_at_once_take_twice_as_long(sheet) -> None:  # noqa: ANN001
    # two 1024-token prompts arrive together, are prefilled in one step on the one prefill
    # replica, and leave over its link together: each hand-off takes two hops' time
    decode = sheet.fork()
    decode.set("kv_hop_overlap", False)
    n = 1024
    given = Lengths(np.array([n, n]), np.array([4, 4]), arrivals=np.array([0.0, 0.0]))
    run = simulate_disagg(decode, decode, Setup(given=given), Pools())
    hop = hop_times(decode, decode, np.array([n]))[0]
    P = D = StepSheet.from_sheet(decode)
    prefill = P.time(0, 2 * n, 2 * n, 0, 2 * P.chunk_pairs(0, n), 2)
    last = D.time(0, 2, 2 * n, 0, 2 * D.chunk_pairs(n - 1, 1), 2)
    ttft = run.engine.reqs.table()["ttft"]
    assert ttft == pytest.approx([prefill + 2 * hop + last + P.ttft_overhead] * 2, rel=1e-12)
    # on two prefill replicas, each prompt has its own replica's link: one hop each
    assert handoffs(np.array([1.0, 1.0]), np.array([0, 1]), np.array([hop, hop])) == \
        pytest.approx([1.0 + hop] * 2, rel=1e-12)
    assert handoffs(np.array([1.0, 1.0]), np.array([0, 0]), np.array([hop, hop])) == \
        pytest.approx([1.0 + 2 * hop] * 2, rel=1e-12)


def test_the_hop_runs_at_the_slower_end(sheet) -> None:  # noqa: ANN001
    slow = sheet.fork()
    slow.set("network_bandwidth", "10 GB/s")
    slow.set("kv_hop_overlap", False)
    fast = slow.fork()
    fast.set("network_bandwidth", "100 GB/s")
    n = np.array([512, 2048])
    at = slow.fork()
    want = []
    for x in n:
        at.set("isl", int(x))
        want.append(at.magnitude("kv_transfer_bytes", "B") / 10e9)
    assert hop_times(fast, slow, n) == pytest.approx(want, rel=1e-12)
    assert hop_times(slow, fast, n) == pytest.approx(want, rel=1e-12)


def test_cli_replicas_and_disagg(capsys) -> None:  # noqa: ANN001
    code, out, _ = _cli(capsys, "simulate", "--rate", "4 request/s", "--requests", "60",
                        "--replicas", "2", "--router", "least-outstanding", "-f", "json")
    assert code == 0
    doc = json.loads(out)
    assert [r["requests"] for r in doc["replicas"]] == [30, 30]
    code, out, _ = _cli(capsys, "simulate", "--rate", "4 request/s", "--requests", "40",
                        "--disagg", "--prefill-hardware", "h200", "--prefill-tp", "8",
                        "--prefill-replicas", "2", "--decode-replicas", "1")
    assert code == 0
    assert "disaggregated: 2 prefill (h200, tp 8) + 1 decode" in out
    assert "prefill 1" in out and "decode 0" in out


@pytest.mark.parametrize(("argv", "flag"), [
    (("--router", "prefix"), "--router"),
    (("--prefill-tp", "4"), "--prefill-tp"),
    (("--disagg", "--replicas", "2"), "--replicas"),
    (("--replicas", "0"), "--replicas"),
    (("--disagg", "--prefill-hardware", "h999"), "--prefill-hardware"),
])
def test_cli_refuses_pool_options_that_mean_nothing(capsys, argv, flag) -> None:  # noqa: ANN001
    code, out, err = _cli(capsys, "simulate", "--rate", "4 request/s", "--requests", "5",
                          *argv)
    assert code == 2 and flag in err and "Traceback" not in err and out == ""


def test_cli_refuses_a_closed_loop_pool(capsys) -> None:  # noqa: ANN001
    code, _, err = _cli(capsys, "simulate", "--users", "4", "--replicas", "2")
    assert code == 2 and "--users" in err


@pytest.mark.parametrize("host", ["10 GB", "0 GB"])
def test_an_evicted_prefix_comes_back_from_host_memory_at_pcie_bandwidth(sheet, host) -> None:  # noqa: ANN001
    # HBM's free blocks hold one session's 1,028 tokens, not two: session 0's third-turn
    # prefix is evicted by session 1's; with a host tier it is copied back (half the
    # prompt's KV over every GPU's PCIe link), without one the prompt is prefilled whole
    s = sheet.fork()
    s.set("prefix_hit_rate", 0.5)
    s.set("host_kv_capacity", host)
    bs = s.magnitude("block_size", "token")
    s.set("sim_kv_blocks", int(1600 // bs))
    n = 1024
    reqs = Requests(np.full(3, n), np.full(3, 4), np.array([0.0, 10.0, 20.0]))
    pool = pool_of(s, StepSheet.from_sheet(s), Setup(rate=1.0), reqs, 1, "prefix",
                   sessions=np.array([0, 1, 0]))
    assert pool.serve(np.asarray(reqs.arrival))
    model = StepSheet.from_sheet(s)
    ttft = reqs.table()["ttft"]
    if host == "0 GB":
        assert ttft[2] == pytest.approx(model.time(0, n, n, 0, model.chunk_pairs(0, n), 1))
        assert pool.hits.tolist() == [0]
        return
    reload = (512 * s.magnitude("kv_bytes_per_token", "B/token") * s.magnitude(
        "kv_replication") / (s.magnitude("n_gpus") * 64e9))
    step = model.time(0, 512, n, 0, model.chunk_pairs(512, 512), 1)
    assert ttft[2] == pytest.approx(reload + step, rel=1e-12)
    assert pool.hits.tolist() == [1] and pool.reloads.tolist() == [1]
    assert ttft[0] == pytest.approx(model.time(0, n, n, 0, model.chunk_pairs(0, n), 1))


def test_a_pools_trace_puts_each_replica_on_its_own_track(capsys, tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "steps.json"
    code, _, _ = _cli(capsys, "simulate", "--rate", "4 request/s", "--requests", "20",
                      "--replicas", "3", "--trace", str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert code == 0
    assert {e["tid"] for e in events if e["ph"] == "X"} == {1, 2, 3}
