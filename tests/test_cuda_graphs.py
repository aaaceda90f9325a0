"""CUDA graphs in the step model: the engine file's [cuda_graph] table as cells; a decode
batch above the engine's largest captured one runs eagerly and pays every kernel's launch
(kernels_per_step × eager_kernel_step_time), one within it replays a graph and does not. With
eager_kernel_step_time at its default 0 the roofline is unchanged. A step that carries prompt
tokens runs eagerly where the engine captures no mixed graph (TensorRT-LLM, SGLang, ATOM): its
prefill, its chunk steps and their share of the decode steps pay the launches too."""

from __future__ import annotations

import pytest

from perfgraph.scenario.loading import ScenarioSpec, load, parse_set
from perfgraph.whatif.simulate.step_sheet import StepSheet


def _sheet(engine: str, *sets: str):  # noqa: ANN202
    return load(ScenarioSpec(engine=engine, sets=tuple(parse_set(s) for s in sets))).sheet


def test_the_engine_files_graph_table_is_cells() -> None:
    trt, vllm = _sheet("trtllm"), _sheet("vllm")
    assert trt.magnitude("cuda_graph_max_batch") == 128
    assert trt.magnitude("cuda_graph_decode") and not trt.magnitude("cuda_graph_mixed")
    assert vllm.magnitude("cuda_graph_max_batch") == 512 and vllm.magnitude("cuda_graph_mixed")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "atom"])
def test_zero_in_the_roofline(engine: str) -> None:
    sheet = _sheet(engine, "concurrency=1000")  # above every engine's captured batch
    assert sheet.magnitude("eager_step_time", "ms") == 0


@pytest.mark.parametrize(("batch", "extra_ms"), [(128, 0.0), (129, 1.92)])
def test_a_batch_above_the_captured_one_pays_every_kernels_launch(
        batch: int, extra_ms: float) -> None:
    # TensorRT-LLM captures decode batches up to 128; Llama 70B at TP 2 launches 80 layers ×
    # (6 attention + 4 MLP + 2 all-reduce) = 960 kernels: 960 × 2 µs = 1.92 ms on every
    # decode step of a batch of 129, nothing at 128
    eager = _sheet("trtllm", f"concurrency={batch}", "eager_kernel_step_time=2 us")
    graphed = _sheet("trtllm", f"concurrency={batch}")
    assert eager.magnitude("kernels_per_step") == 960
    assert eager.magnitude("decode_step_time", "ms") - graphed.magnitude(
        "decode_step_time", "ms") == pytest.approx(extra_ms, abs=1e-9)


def test_the_simulators_step_follows_the_engines_graphs() -> None:
    """A decode-only step of 129 runs eagerly under TensorRT-LLM, one of 128 does not, and a
    step carrying a prompt chunk runs eagerly (its context steps are not captured); vLLM's
    piecewise graphs cover the mixed step."""
    def extra(engine: str, decodes: int, prompt: int) -> float:
        on = StepSheet.from_sheet(_sheet(engine, "eager_kernel_step_time=2 us"))
        off = StepSheet.from_sheet(_sheet(engine))
        kv = decodes * 1536 + prompt
        args = (decodes, prompt, kv, decodes * 1536, float(prompt * prompt), 1 if prompt else 0)
        return (on.time(*args) - off.time(*args)) * 1e3

    assert extra("trtllm", 128, 0) == pytest.approx(0.0, abs=1e-9)
    assert extra("trtllm", 129, 0) == pytest.approx(1.92, rel=1e-9)
    assert extra("trtllm", 64, 512) == pytest.approx(1.92, rel=1e-9)
    assert extra("vllm", 64, 512) == pytest.approx(0.0, abs=1e-9)


def _delta(engine: str, cell: str, *sets: str) -> float:
    """What eager_kernel_step_time = 2 µs adds to ``cell`` (ms)."""
    return _sheet(engine, *sets, "eager_kernel_step_time=2 us").magnitude(cell, "ms") \
        - _sheet(engine, *sets).magnitude(cell, "ms")


def test_a_prefill_run_eagerly_pays_every_kernels_launch() -> None:
    # Llama 70B at TP 2 under TensorRT-LLM: its 960 kernels launched one by one, 960 × 2 µs
    # = 1.92 ms on the prompt's prefill and so on its TTFT; vLLM replays prefill from a
    # piecewise graph: nothing
    trt = _sheet("trtllm", "tp=2", "concurrency=64", "eager_kernel_step_time=2 us")
    assert trt.magnitude("prefill_eager_kernels") == 960
    assert trt.magnitude("prefill_eager_step_time", "ms") == pytest.approx(1.92, rel=1e-9)
    assert _delta("trtllm", "prefill_time", "tp=2", "concurrency=64") == \
        pytest.approx(1.92, rel=1e-9)
    assert _delta("trtllm", "ttft", "tp=2", "concurrency=64") == pytest.approx(1.92, rel=1e-9)
    vllm = _sheet("vllm", "tp=2", "eager_kernel_step_time=2 us")
    assert vllm.magnitude("prefill_eager_kernels") == 0
    assert _delta("vllm", "ttft", "tp=2") == pytest.approx(0.0, abs=1e-9)
    # prompts that do not ride the decode steps leave the decode step alone
    assert _delta("trtllm", "decode_step_time", "tp=2", "concurrency=64") == \
        pytest.approx(0.0, abs=1e-9)


def test_a_chunk_step_run_eagerly_pays_every_kernels_launch() -> None:
    # the same with prompts riding the decode steps, timed apart (as calibration runs them):
    # each step that carries a chunk pays 1.92 ms, on the prompt's TTFT; the decode step's
    # mean over the steps with and without a chunk (1 in 1024 / 63 others) leaves it out;
    # a batch of 129 above the 128 captured already pays them on every step
    sets = ("tp=2", "concurrency=64", "prefill_in_step=true", "prefill_chunk_steps=true")
    on = _sheet("trtllm", *sets, "eager_kernel_step_time=2 us")
    assert on.magnitude("chunk_step_share") == pytest.approx(63 / 1024, rel=1e-9)
    assert on.magnitude("chunk_eager_step_time", "ms") == pytest.approx(1.92, rel=1e-9)
    assert _delta("trtllm", "chunk_step_time", *sets) == pytest.approx(1.92, rel=1e-9)
    assert _delta("trtllm", "decode_step_time", *sets) == pytest.approx(0.0, abs=1e-9)
    # its TTFT: the one chunk step, 1.92 ms, and half a decode step's wait (unchanged)
    assert _delta("trtllm", "ttft", *sets) == pytest.approx(1.92, rel=1e-9)
    above = _sheet("trtllm", *sets[:1], "concurrency=129", *sets[2:],
                   "eager_kernel_step_time=2 us")
    assert above.magnitude("chunk_eager_step_time", "ms") == 0
