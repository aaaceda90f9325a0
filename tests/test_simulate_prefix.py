"""Prefix-cache hits as whole prompts (``prefix_hit_whole``) and the per-run hit rates of
repeated benchmark runs (``perfgraph.whatif.simulate.prefix``), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from perfgraph.errors import InputError
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.simulate import Setup, simulate
from perfgraph.whatif.simulate.prefix import run_hit_rates, server_hit_rate, virtual_engine_hit
from perfgraph.whatif.simulate.summary import summarise


def test_per_run_rates_from_a_lifetime_counter() -> None:
    # the PP server's log (lws-run-1.sh) at the end of its runs 01, 04, 16, inf
    got = run_hit_rates([0.0, 0.2797, 0.4665, 0.5850])
    # run 2: 2·0.2797 = 0.5594; run 3: 3·0.4665 − 0.5594 = 0.8401; run 4: 2.34 − 1.3995
    assert got == pytest.approx([0.0, 0.5594, 0.8401, 0.9405])
    assert run_hit_rates([0.5, 0.25]) == [0.5, 0.0]  # a falling counter clips at zero
    with pytest.raises(InputError, match="expected a share"):
        run_hit_rates([1.5])


def test_a_prompt_hits_only_on_an_engine_that_served_it() -> None:
    assert virtual_engine_hit(1, 2) == 0  # first sending: nowhere cached
    assert virtual_engine_hit(2, 2) == 0.5
    assert virtual_engine_hit(4, 2) == 0.875  # 1 − ½³
    assert virtual_engine_hit(3, 4) == pytest.approx(1 - 0.75 ** 2)
    assert virtual_engine_hit(5, 1) == 1  # one cache (V1, no PP): every resend hits
    with pytest.raises(InputError):
        virtual_engine_hit(0, 2)


def test_the_server_rate_weighs_the_logged_engine_by_its_share() -> None:
    # engine 0 logged 94.05% on the fourth sending; engine 1's expectation is 1 − ½³
    assert server_hit_rate(0.9405, 4, 2) == pytest.approx((0.9405 + 0.875) / 2)
    # four engines: the logged one is a quarter of the requests
    assert server_hit_rate(1.0, 2, 4) == pytest.approx((1.0 + 3 * 0.25) / 4)
    assert server_hit_rate(0.3, 9, 1) == 0.3  # one engine: its counter is the server's
    with pytest.raises(InputError, match="expected a share"):
        server_hit_rate(-0.1, 2, 2)


def _ttfts(whole: bool, hit: float, n: int = 40) -> np.ndarray:
    sheet = load(ScenarioSpec()).sheet
    sheet.set("prefix_hit_whole", whole)
    sheet.set("prefix_hit_rate", hit)
    gap = 10 * sheet.magnitude("e2e_latency", "s")  # each request alone in the engine
    run = simulate(sheet, Setup(rate=1 / gap, cv=0.0, requests=n))
    assert summarise(run, sheet).preemptions == 0
    return np.asarray(run.engine.reqs.table()["ttft"])


def test_whole_prompt_hits_are_all_or_nothing() -> None:
    sheet = load(ScenarioSpec()).sheet
    isl, bs = round(sheet.magnitude("isl", "token")), round(sheet.magnitude("block_size", "token"))
    cold = _ttfts(False, 0.0)
    assert cold == pytest.approx(np.full(40, sheet.magnitude("ttft", "s")), rel=1e-3)
    # a cached prompt reuses its full blocks, (isl − 1) // bs · bs tokens: the same start as
    # the share (start + ½) / isl of every prompt
    start = (isl - 1) // bs * bs
    warm = _ttfts(False, (start + 0.5) / isl)
    assert _ttfts(True, 1.0) == pytest.approx(warm, rel=1e-9)
    assert warm[0] < 0.5 * cold[0]
    half = _ttfts(True, 0.5)
    hot = np.isclose(half, warm[0], rtol=1e-9)
    assert np.all(hot | np.isclose(half, cold[0], rtol=1e-9))  # each one or the other
    assert 0.25 < hot.mean() < 0.75
    assert _ttfts(True, 0.0) == pytest.approx(cold, rel=1e-9)  # nothing drawn, as before
