"""The API server's event loop (``perfgraph.whatif.simulate.frontend``): one FIFO server for
requests' ingress and steps' streamed tokens, by hand, and what it does to a simulation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfgraph.output.simulate_report import as_json, table
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.frontend import Frontend
from perfgraph.whatif.simulate.summary import latency_samples, summarise


def _seen(fe: Frontend, until: float) -> list[tuple[int, float]]:
    """Every request the engine would see by ``until``, with when (no steps run)."""
    out = []
    while fe.waiting():
        t = fe.admit_next()
        if t > until:
            break
        out += [(rid, t) for rid in fe.pop_seen(t)]
    return out


def test_a_serial_front_end_turns_a_burst_into_a_stream() -> None:
    fe = Frontend(t_req=0.002)
    for i, t in enumerate([0.0, 0.0, 0.0, 0.010]):
        fe.send(t, i)
    got = _seen(fe, 1.0)
    assert [r for r, _ in got] == [0, 1, 2, 3]
    assert [t for _, t in got] == pytest.approx([0.002, 0.004, 0.006, 0.012])  # 4th: idle
    fe = Frontend(t_req=0.1)  # send order, not index order; ties keep theirs
    for i, t in enumerate([0.5, 0.0, 0.0]):
        fe.send(t, i)
    assert _seen(fe, 1.0) == [(1, pytest.approx(0.1)), (2, pytest.approx(0.2)),
                              (0, pytest.approx(0.6))]


def test_with_no_costs_the_loop_is_transparent() -> None:
    fe = Frontend()
    assert not fe.active
    fe.send(0.3, 0)
    fe.send(0.1, 1)
    assert fe.next_seen() == 0.1
    assert fe.pop_seen(0.2) == [1]
    ends = np.array([0.25, 0.5])
    assert fe.run(ends, 8) is ends
    assert fe.step(0.75, 3) == 0.75


def test_a_steps_tokens_reach_clients_half_way_through_serving_them() -> None:
    fe = Frontend(t_tok=0.001)
    # step 1 ends at 10 ms with 4 tokens: served 10–14 ms, its tokens out at 12 ms on average
    assert fe.step(0.010, 4) == pytest.approx(0.012)
    # step 2 ends at 12 ms while step 1 is still being served: it waits until 14 ms
    assert fe.step(0.012, 4) == pytest.approx(0.016)
    assert fe.free == pytest.approx(0.018)
    # step 3 ends at 30 ms with the loop idle
    assert fe.step(0.030, 2) == pytest.approx(0.031)


def test_a_request_sent_behind_a_step_waits_and_delays_the_next() -> None:
    fe = Frontend(t_req=0.0005, t_tok=0.001)
    assert fe.step(0.010, 4) == pytest.approx(0.012)  # the loop is busy until 14 ms
    fe.send(0.011, 7)  # sent at 11 ms: parsed 14–14.5 ms
    # the engine's next steps end at 12 and 20 ms with 2 tokens each: the request was ready
    # before the first of them ends, so it goes ahead of it, which waits until 14.5 ms
    assert fe.next_seen(np.array([0.012, 0.020]), 2) == pytest.approx(0.0145)
    out = fe.run(np.array([0.012, 0.020]), 2)
    assert out == pytest.approx([0.0155, 0.021])
    assert fe.pop_seen(0.0145) == [7]


def test_next_seen_counts_the_steps_that_end_before_the_request_and_commits_nothing() -> None:
    fe = Frontend(t_req=0.0005, t_tok=0.001)
    fe.send(0.0155, 3)
    ends = np.array([0.010, 0.012, 0.020])
    # steps ending at 10 and 12 ms (4 tokens each) keep the loop busy until 18 ms
    assert fe.next_seen(ends, 4) == pytest.approx(0.0185)
    assert fe.free == -np.inf and fe.sent == [(0.0155, 3)]
    fe.send(0.0, 4)  # a request already sent: it is seen first, at once
    assert fe.next_seen(ends, 4) == pytest.approx(0.0005)


def test_coalescing_a_waiting_output_takes_the_next_steps_tokens() -> None:
    fe = Frontend(t_tok=0.001, coalesce=True)
    assert fe.step(0.010, 4) == pytest.approx(0.012)  # served 10–14 ms
    assert fe.step(0.011, 4) == pytest.approx(0.016)  # waits: served 14–18 ms
    # the next step's 4 streams find that output still waiting: one chunk a stream
    # carries both tokens, so the waiting item still costs 4 ms, not 8
    assert fe.step(0.012, 4) == pytest.approx(0.016)
    assert fe.wait == pytest.approx(0.004)
    assert fe.busy == pytest.approx(0.008)  # two passes of 4 ms, not three
    # by 20 ms the waiting output has been served (14–18 ms): this step finds the loop idle
    assert fe.step(0.020, 2) == pytest.approx(0.021)
    plain = Frontend(t_tok=0.001)  # every token its own chunk: the queue only grows
    assert [plain.step(e, n) for e, n in ((0.010, 4), (0.011, 4), (0.012, 4), (0.020, 2))] \
        == pytest.approx([0.012, 0.016, 0.020, 0.023])


def test_coalesced_tokens_arrive_in_order() -> None:
    """A smaller step joining a waiting output (a prefill step's output, then the decodes
    alone) rides in the same chunks: its tokens arrive with the waiting ones, not before."""
    fe = Frontend(t_tok=1.0, coalesce=True)
    assert [fe.step(0, 10), fe.step(1, 10), fe.step(2, 2)] == [5, 15, 15]


@pytest.mark.parametrize("coalesce", [False, True])
def test_a_busy_loop_never_delivers_backwards_nor_works_past_the_run(coalesce: bool) -> None:
    sheet = _sheet()
    sheet.set("frontend_request_time", "1 ms")
    sheet.set("frontend_token_time", "2 ms/token")
    sheet.set("frontend_coalesce", coalesce)
    run = simulate(sheet, Setup(rate=20.0, requests=200, lengths="workload"))
    steps = run.engine.log.arrays()
    assert np.all(np.diff(steps["out"]) >= 0)
    s = summarise(run, sheet)
    v, w = latency_samples(run).itl
    assert v[w > 0].min() >= -1e-9  # 0 where a token rode in the chunk before it
    assert s.frontend is not None and 0.5 < s.frontend.busy_share <= 1.0


def test_coalescing_stops_at_a_request_queued_behind_the_waiting_output() -> None:
    fe = Frontend(t_req=0.0005, t_tok=0.001, coalesce=True)
    fe.step(0.010, 4)  # served 10–14 ms
    fe.step(0.011, 4)  # waiting, 14–18 ms
    fe.send(0.0115, 9)  # parsed after it: 18–18.5 ms
    assert fe.next_seen(np.array([0.012]), 4) == pytest.approx(0.0185)
    # the step ending at 12 ms comes after the request: a new waiting output, 18.5–22.5 ms
    assert fe.step(0.012, 4) == pytest.approx(0.0205)
    assert fe.pop_seen(0.019) == [9]


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_a_run_of_steps_is_the_same_as_its_steps_one_by_one(seed: int, coalesce: bool,
                                                            ) -> None:
    rng = np.random.default_rng(seed)
    ends = np.cumsum(rng.uniform(0.001, 0.02, size=200))
    sends = np.sort(rng.uniform(0, ends[-1], size=15))
    whole, one = Frontend(0.0007, 0.0002, coalesce), Frontend(0.0007, 0.0002, coalesce)
    for i, t in enumerate(sends):
        whole.send(float(t), i)
        one.send(float(t), i)
    seen = whole.next_seen(ends, 16)  # what the run will give the first request
    got = whole.run(ends, 16)
    each = [one.step(float(e), 16) for e in ends]
    assert seen == pytest.approx(min(one.ready)[0] if one.ready else np.inf)
    assert got == pytest.approx(each, rel=1e-12)
    assert [r for _, r in sorted(whole.ready)] == [r for _, r in sorted(one.ready)]
    assert [t for t, _ in sorted(whole.ready)] == pytest.approx([t for t, _ in sorted(one.ready)])
    assert whole.free == pytest.approx(one.free)


def _sheet():
    return load(ScenarioSpec()).sheet


def test_far_below_capacity_the_front_end_adds_its_times_to_ttft_not_tpot() -> None:
    base = _sheet()
    gap = 10 * base.magnitude("e2e_latency", "s")
    plain = simulate(base, Setup(rate=1 / gap, cv=0.0, requests=20)).engine.reqs.table()
    sheet = _sheet()
    sheet.set("frontend_request_time", "3 ms")
    sheet.set("frontend_token_time", "0.4 ms/token")
    t = simulate(sheet, Setup(rate=1 / gap, cv=0.0, requests=20)).engine.reqs.table()
    # alone, each request is parsed (3 ms), then each of its steps carries one token,
    # streamed 0.2 ms after the step ends: its first token 3.2 ms later, TPOT as before
    assert t["ttft"] == pytest.approx(plain["ttft"] + 0.0032, rel=1e-6)
    assert t["tpot"] == pytest.approx(plain["tpot"], rel=1e-6)
    # and the sheet's ttft counts the same 3.2 ms (frontend_latency)
    assert sheet.magnitude("frontend_latency", "ms") == pytest.approx(3.2)
    assert sheet.magnitude("ttft", "s") == pytest.approx(base.magnitude("ttft", "s") + 0.0032)
    assert t["ttft"] == pytest.approx(np.full(20, sheet.magnitude("ttft", "s")), rel=1e-3)


def test_a_slow_loop_caps_the_stream_at_one_token_per_token_time() -> None:
    sheet = _sheet()
    sheet.set("frontend_coalesce", False)  # every token its own chunk (vLLM V0)
    sheet.set("frontend_token_time", "5 ms/token")  # 8 streams: 40 ms a step, > the GPU's
    run = simulate(sheet, Setup(rate=float("inf"), requests=8, lengths="fixed"))
    steps, t = run.engine.log.arrays(), run.engine.reqs.table()
    full = steps["decodes"] == 8
    assert full.sum() > 900 and steps["dur"][full].max() < 0.040  # the loop is the bottleneck
    # once every stream decodes, the loop never idles: each step leaves 40 ms after the last
    busy = np.flatnonzero(full)[1:]
    assert np.diff(steps["out"])[busy - 1] == pytest.approx(np.full(busy.size, 0.040))
    assert float(np.nanmax(t["end"])) == pytest.approx(steps["out"][-1])
    assert steps["out"][-1] - steps["end"][-1] > 10.0  # the stream lags the GPU by seconds
    s = summarise(run, sheet)
    # TPOT counts from the first token, before every stream had joined: a little under 40
    assert 39.0 < s.latency.tpot.p50 <= 40.0
    assert s.latency.itl.p50 == pytest.approx(40.0, rel=1e-6)
    # the summary says the loop set the pace: busy nearly all the run, tokens seconds late
    f = s.frontend
    assert f is not None and f.busy_share > 0.95 and f.lag.max_ms > 10_000
    assert f.busy_share == pytest.approx(run.engine.frontend.busy / run.engine.frontend.free)
    out = table(s, "t", "")
    assert "saturated, the loop and not the GPU sets the pace" in out
    doc = json.loads(as_json(s, {}))["frontend"]
    assert doc["chunk_time"] == {"value": 5.0, "unit": "ms"} and doc["coalesce"] is False
    assert doc["lag"]["max"]["unit"] == "ms"


def test_coalescing_a_slow_loop_keeps_the_engines_pace_at_a_lag() -> None:
    sheet = _sheet()
    sheet.set("frontend_token_time", "5 ms/token")  # a chunk a stream; coalescing (default)
    run = simulate(sheet, Setup(rate=float("inf"), requests=8, lengths="fixed"))
    steps, t = run.engine.log.arrays(), run.engine.reqs.table()
    full = steps["decodes"] == 8
    # each 40 ms pass over the 8 streams carries the ~4 steps made meanwhile: the lag stays
    # under two passes, and TPOT is the GPU's step, not the loop's 40 ms
    assert (steps["out"] - steps["end"]).max() < 2 * 0.040 + 1e-9
    s = summarise(run, sheet)
    step = float(np.median(steps["dur"][full]))
    assert s.latency.tpot.p50 == pytest.approx(1e3 * step, rel=0.02)
    assert float(np.nanmax(t["end"])) == pytest.approx(steps["out"][-1])


def test_with_no_front_end_the_summary_says_nothing_of_it() -> None:
    sheet = _sheet()
    s = summarise(simulate(sheet, Setup(users=4, requests=20)), sheet)
    assert s.frontend is None
    assert "API server loop" not in table(s, "t", "")
    assert json.loads(as_json(s, {}))["frontend"] is None


def test_a_closed_loops_next_request_is_sent_when_the_last_token_arrives() -> None:
    sheet = _sheet()
    sheet.set("frontend_token_time", "1 ms/token")
    run = simulate(sheet, Setup(users=1, requests=3))
    t = run.engine.reqs.table()
    assert t["arrival"][1] == pytest.approx(t["end"][0])
    assert t["arrival"][2] == pytest.approx(t["end"][1])


def test_a_preempted_requests_gap_is_its_clients_from_delivery_to_delivery() -> None:
    # KV for ~40 sequences of 2048 tokens and 64 users: decoders are preempted and resume;
    # a loop of 0.5 ms a stream lags the engine by a varying amount
    sheet = load(ScenarioSpec(sets=())).sheet
    sheet.set("gpu_memory_utilization", 0.5)
    sheet.set("frontend_token_time", "0.5 ms/token")
    result = simulate(sheet, Setup(users=64, requests=300))
    e = result.engine
    gaps = np.asarray(e.log.gaps)
    assert e.preemptions > 0 and gaps.size > 0 and (gaps > 0).all()
    steps = e.log.arrays()
    lag = steps["out"] - steps["end"]
    assert np.ptp(lag) > 1e-3  # delivery times are not the steps' ends shifted
    outs = np.sort(steps["out"])
    for g in gaps:  # each gap is one step's delivery after another's
        later = outs + g
        at = np.clip(np.searchsorted(outs, later), 1, outs.size - 1)
        near = np.minimum(abs(outs[at] - later), abs(outs[at - 1] - later))
        assert near.min() < 1e-9
