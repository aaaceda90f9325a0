"""The serving command for a plan: vLLM, SGLang or TensorRT-LLM, flags from launch.toml."""

from __future__ import annotations

import math
import shlex
from pathlib import Path
from typing import Any

from perfgraph._infra.tomlfile import read
from perfgraph.errors import InputError
from perfgraph.scenario.loading import Scenario
from perfgraph.whatif.plan_answer import DisaggregatedPools, PlanPools

LAUNCH_FILE = Path(__file__).resolve().parent / "launch.toml"
ENGINES = ("vllm", "sglang", "trtllm")


def plan_values(scenario: Scenario) -> dict[str, str]:
    """The flag values of a plan, read from its scenario's cells."""
    sheet = scenario.sheet
    tokens = max(sheet.magnitude("isl"), sheet.magnitude("compute_bound_threshold"))
    weights = sheet.magnitude("weights_bytes_per_gpu", "GB")
    hbm = sheet.magnitude("hbm_capacity", "GB")
    util = sheet.magnitude("gpu_memory_utilization")
    return {"tp": str(int(sheet.magnitude("tp"))), "pp": str(int(sheet.magnitude("pp"))),
            "batch": str(int(sheet.magnitude("concurrency"))),
            "tokens": str(int(math.ceil(tokens))), "mem_fraction": f"{util:.2f}",
            "free_fraction": f"{max(0.0, (util * hbm - weights) / (hbm - weights)):.2f}",
            "kv_dtype": "fp8" if sheet.magnitude("kv_bytes", "B") == 1 else "auto"}


def engine_spec(engine: str) -> dict[str, Any]:
    """launch.toml's table for ``engine``: its command, flags and sources."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    spec: dict[str, Any] = read(LAUNCH_FILE).data[engine]
    return spec


def hf_id(scenario: Scenario) -> str:
    """The model's Hugging Face id (its catalog slug where the entry names none)."""
    return str(scenario.model.doc.data.get("hf_id", scenario.model.slug))


def flags(engine: str, scenario: Scenario) -> list[tuple[str, str, str]]:
    """(flag, value, plan value key) of the engine's serving command, in launch.toml order."""
    spec = engine_spec(engine)
    values = plan_values(scenario)
    if "kv_dtype" in spec:
        values["kv_dtype"] = spec["kv_dtype"][values["kv_dtype"]]
    return [(flag, values[key], key) for flag, key in spec["flags"]]


def words(engine: str, scenario: Scenario) -> list[str]:
    """The serving command as argv words: the engine's command, then each flag and value."""
    out = [w.replace("{hf_id}", hf_id(scenario)) for w in engine_spec(engine)["command"]]
    for flag, value, _ in flags(engine, scenario):
        out += [flag, value]
    return out


def command(engine: str, scenario: Scenario, pools: PlanPools) -> str:
    """Shell lines: a comment with the replica count (or xPyD pools), then the command."""
    spec = engine_spec(engine)
    line = " ".join(shlex.quote(w) for w in words(engine, scenario))
    if isinstance(pools, DisaggregatedPools) and "disaggregation_flag" in spec:
        flag = spec["disaggregation_flag"]
        return "\n".join(f"# {pool.replicas} {role} replica(s):\n{line} {flag} {role}"
                         for role, pool in (("prefill", pools.prefill), ("decode", pools.decode)))
    if isinstance(pools, DisaggregatedPools):
        p, d = pools.prefill.replicas, pools.decode.replicas
        head = (f"# disaggregated {p}P{d}D: run this on {p} prefill and {d} decode replicas; "
                f"wire the KV hand-off with the engine's own disaggregation options (not "
                f"generated)")
    else:
        head = f"# {pools.replicas} replica(s) of this command behind a router"
    return f"{head}\n{line}"
