"""The serving command for a plan: the engine file's ``[launch]`` command and flags
(``scenario/engines/NAME.toml``), each flag's value a plan value read from a cell."""

from __future__ import annotations

import math
import shlex

from perfgraph.errors import InputError
from perfgraph.scenario import engine_files
from perfgraph.scenario.loading import Scenario
from perfgraph.whatif.plan_answer import DisaggregatedPools, PlanPools


def engines() -> list[str]:
    """The engines whose files the folder holds (``plan --launch`` takes any of them)."""
    return engine_files.names()


def plan_values(scenario: Scenario) -> dict[str, str | None]:
    """The flag values of a plan, read from its scenario's cells; None leaves the flag out
    (expert parallelism and DP attention when the plan does not use them), "" writes the
    flag alone (a switch)."""
    m = scenario.sheet.magnitude
    ep = int(m("ep")) if "ep" in scenario.sheet.names else 1
    dp_attention = "dp_attention" in scenario.sheet.names and bool(m("dp_attention"))
    return {"tp": str(int(m("tp"))), "pp": str(int(m("pp"))),
            "ep": str(ep) if ep > 1 else None, "ep_switch": "" if ep > 1 else None,
            "dp_attention": "" if dp_attention else None,
            "batch": str(int(m("concurrency"))),
            "tokens": str(int(math.ceil(m("launch_token_budget", "token")))),
            "mem_fraction": f"{m('gpu_memory_utilization'):.2f}",
            "free_fraction": f"{m('launch_free_fraction'):.2f}",
            "kv_dtype": "fp8" if m("kv_bytes", "B") == 1 else "auto"}


def engine_spec(engine: str) -> engine_files.Launch:
    """The engine file's ``[launch]``: its command and flags; an engine without one is
    refused with the reason its file gives."""
    found = engine_files.engine(engine)
    if found.launch is None:
        why = found.no_launch or "its file has no [launch] table"
        raise InputError(f"no serving command for {engine}: {why} ({found.path})",
                         name="--launch")
    return found.launch


def hf_id(scenario: Scenario) -> str:
    """The model's Hugging Face id (its catalog slug where the entry names none)."""
    return str(scenario.model.doc.data.get("hf_id", scenario.model.slug))


def flags(engine: str, scenario: Scenario) -> list[tuple[str, str, str]]:
    """(flag, value, plan value key) of the engine's serving command, in its file's order;
    a switch's value is ""."""
    spec = engine_spec(engine)
    values = plan_values(scenario)
    if spec.kv_dtype:
        values["kv_dtype"] = spec.kv_dtype[str(values["kv_dtype"])]
    keys = {key for _, key in spec.flags}
    if values["pp"] != "1" and "pp" not in keys:
        raise InputError(f"{engine} has no pipeline-parallel flag (its file's [launch]): the "
                         f"plan has pp = {values['pp']}; search pp=1 for {engine}",
                         name="--launch")
    return [(flag, value, key) for flag, key in spec.flags
            if (value := values[key]) is not None]


def words(engine: str, scenario: Scenario) -> list[str]:
    """The serving command as argv words: the engine's command, then each flag and value."""
    out = [w.replace("{hf_id}", hf_id(scenario)) for w in engine_spec(engine).command]
    for flag, value, _ in flags(engine, scenario):
        out += [flag, value] if value else [flag]
    return out


def command(engine: str, scenario: Scenario, pools: PlanPools) -> str:
    """Shell lines: a comment with the replica count (or xPyD pools), then the command."""
    spec = engine_spec(engine)
    line = " ".join(shlex.quote(w) for w in words(engine, scenario))
    if isinstance(pools, DisaggregatedPools) and spec.disaggregation_flag:
        flag = spec.disaggregation_flag
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
