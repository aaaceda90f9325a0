"""KV heads that TP cannot split are replicated: at TP16 Llama-3.1-70B's 8 KV heads sit on two
ranks each (kv_replication = 2), so every KV byte is written twice and read twice. Decode read
it so already; a prompt's prefill and a decode step's prompt chunk write it so too, and the
simulator reads, writes and holds it so. By hand: 80 layers × (K, V) × 8 heads × 128 × 1 byte
(FP8) = 163,840 B a token, one copy."""

from __future__ import annotations

import pytest

from perfgraph.engine.units import unit
from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate import _pool
from perfgraph.whatif.simulate.step_sheet import StepSheet
from tests.test_step_sheet import assert_the_step_is_the_sheets

KV_PER_TOKEN = 80 * 2 * 8 * 128


def sheet(*sets: str):  # noqa: ANN201
    return load(ScenarioSpec(model="llama-3.1-70b", hardware="h100-sxm", precision="fp8",
                             sets=tuple(parse_set(s) for s in ("tp=16", *sets)))).sheet


def test_a_prefill_writes_each_copy() -> None:
    s = sheet()
    assert s.magnitude("kv_bytes_per_token", "B/token") == KV_PER_TOKEN
    assert s.magnitude("kv_replication") == 2
    assert s.magnitude("prefill_bytes", "B") == pytest.approx(
        s.magnitude("prefill_weights_bytes", "B") + 1024 * KV_PER_TOKEN * 2, rel=1e-12)


def test_a_decode_steps_prompt_chunk_writes_each_copy() -> None:
    s = sheet("prefill_in_step=true", "concurrency=64")
    # 64 users, each prompt of 1024 spread over its 1024 output steps: 64 prompt tokens a step
    assert s.magnitude("chunk_step_tokens", "token") == pytest.approx(64)
    assert s.magnitude("step_prefill_bytes", "B") == pytest.approx(64 * KV_PER_TOKEN * 2,
                                                                   rel=1e-12)


def test_the_simulator_reads_writes_and_holds_each_copy() -> None:
    s = sheet("prefill_in_step=true", "concurrency=64")
    model = StepSheet.from_sheet(s)
    # a plain decode step of 64 sequences reading 1000 tokens each: every token twice
    cells = model.values(64, 0, 64_000, 64_000)
    assert cells["sim_kv_bytes"] / unit("B").factor == pytest.approx(
        64_000 * KV_PER_TOKEN * 2, rel=1e-12)
    assert_the_step_is_the_sheets(s)  # the decode step with its chunk, and a lone prompt
    bs = s.magnitude("block_size", "token")
    assert _pool(s).total == int(s.magnitude("kv_memory", "B") // (bs * KV_PER_TOKEN * 2))


def test_one_copy_when_the_heads_split() -> None:
    s = sheet("tp=8")
    assert s.magnitude("kv_replication") == 1
    assert s.magnitude("prefill_bytes", "B") == pytest.approx(
        s.magnitude("prefill_weights_bytes", "B") + 1024 * KV_PER_TOKEN, rel=1e-12)
