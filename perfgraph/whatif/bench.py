"""The benchmark that checks a plan: the ``vllm bench serve``, ``sglang.bench_serving`` or
AIPerf command that sends the plan's question (its ISL and OSL, Poisson arrivals at its
request rate, enough requests for a steady state) to the deployment and writes a result file
``perfgraph compare --plan`` and ``perfgraph calibrate`` read. Flags are data: each engine
file's ``[bench]`` names the tool that measures it and may define one (its command, flags and
result file; scenario/engines/NAME.toml).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from perfgraph.errors import InputError
from perfgraph.scenario import engine_files
from perfgraph.scenario.engine_files import Bench

#: requests sent: this many times the requests in flight (the sheet's requests_in_flight,
#: Little's law: rate × E2E), so that the ramp at the start and the drain at the end are a
#: small part of the run
TURNOVERS = 10
MIN_REQUESTS = 100


@dataclass(frozen=True)
class BenchQuestion:
    """What the benchmark asks the deployment: the plan's question."""

    model: str  # Hugging Face id
    url: str  # host:port where the deployment answers
    isl: int
    osl: int
    rate: float  # request/s
    requests: int


def requests_for(in_flight: float) -> int:
    """Requests enough for a steady state: TURNOVERS × the requests in flight (the sheet's
    ``requests_in_flight``), at least MIN_REQUESTS."""
    return max(MIN_REQUESTS, math.ceil(TURNOVERS * in_flight)) if math.isfinite(in_flight) \
        else MIN_REQUESTS


def tools() -> dict[str, Bench]:
    """The benchmark tools the engine files define, by name."""
    return {e.bench.tool: e.bench for e in engine_files.engines() if e.bench is not None}


def engine_tool(engine: str) -> str:
    """The tool that measures ``engine`` (its file's ``[bench] tool``)."""
    found = engine_files.engine(engine)
    if found.bench_tool is None:
        raise InputError(f"{engine} names no benchmark tool ([bench] tool in {found.path}); "
                         f"give one: --bench {' | '.join(tools())}", name="--bench")
    return found.bench_tool


def tool_spec(tool: str) -> Bench:
    known = tools()
    if tool not in known:
        raise InputError(f"unknown benchmark tool {tool!r}; known: {', '.join(known)}",
                         name="--bench")
    return known[tool]


def result_path(tool: str) -> str:
    """The file the tool's result lands in (AIPerf: inside its artifact directory)."""
    spec = tool_spec(tool)
    return str(Path(spec.result, spec.result_file)) if spec.result_file else spec.result


def words(tool: str, q: BenchQuestion) -> list[str]:
    spec = tool_spec(tool)
    values = {"model": q.model, "url": q.url, "base_url": f"http://{q.url}",
              "isl": str(q.isl), "osl": str(q.osl), "rate": f"{q.rate:g}",
              "requests": str(q.requests)}
    out = list(spec.command)
    for flag, key in spec.flags:
        out += [flag, values[key]]
    return [*out, *spec.tail, spec.result_flag, spec.result]


def command(tool: str, q: BenchQuestion) -> str:
    """Shell lines: a comment saying what it measures and where the result goes, then the
    command."""
    line = " ".join(shlex.quote(w) for w in words(tool, q))
    return (f"# the plan's question: ISL {q.isl}, OSL {q.osl}, {q.rate:g} request/s (Poisson), "
            f"{q.requests} requests; then: perfgraph compare --plan plans.json "
            f"{result_path(tool)}\n{line}")
