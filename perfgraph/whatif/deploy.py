"""Deployment files from a plan: Kubernetes Deployments and Services, a Dynamo graph, llm-d values.

Every file is built as plain data (dicts and lists) and written with PyYAML's ``safe_dump``,
never from a string template. A plan value a field carries is recorded beside it as the file
is built (:class:`Fields`), and the file opens with a comment block that lists each such field
with the plan value it came from: PyYAML cannot write a comment beside a field, and a block
at the top keeps every trace in one place a reviewer reads first (ruamel.yaml could place
comments inline, at the price of a second YAML library for one feature). Fields the block does
not list are fixed defaults (labels, ports, probes), named as such in it.

The serving command in every file is the one ``plan --launch`` prints, word for word
(:func:`perfgraph.whatif.launch.words`); what a file adds after it (the role of a pool, the KV
connector, the address to listen on) is listed in the block as not a plan value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from perfgraph._infra.tomlfile import read
from perfgraph.errors import InputError
from perfgraph.scenario import engine_files
from perfgraph.scenario.loading import Scenario
from perfgraph.whatif import launch
from perfgraph.whatif.plan_answer import DisaggregatedPools, PlanPools

DEPLOY_FILE = Path(__file__).resolve().parent / "deploy.toml"
FORMATS = ("k8s", "dynamo", "llm-d")
GPU = "nvidia.com/gpu"
#: what each [launch] flag value is (scenario/engines/NAME.toml), in the plan's cells
VALUE_CELLS = {
    "tp": "tp (tensor parallel GPUs per replica)",
    "pp": "pp (pipeline stages per replica)",
    "ep": "ep (expert parallel GPUs)",
    "batch": "concurrency (the plan's batch: sequences in flight per replica)",
    "tokens": "launch_token_budget = max(isl, compute_bound_threshold) (tokens per "
              "scheduler step)",
    "mem_fraction": "gpu_memory_utilization",
    "free_fraction": "launch_free_fraction = (gpu_memory_utilization × hbm_capacity − "
                     "weights_bytes_per_gpu) ÷ (hbm_capacity − weights_bytes_per_gpu)",
    "kv_dtype": "kv_bytes (1 byte: fp8)",
}


def config() -> dict[str, Any]:
    """deploy.toml (probes, Dynamo's and llm-d's settings), and under ``engines`` each engine
    file's ``[deploy]``: its image, port, health endpoint, listen address and KV connector."""
    return {**_shared(), "engines": {e.name: e.deploy for e in engine_files.engines()
                                     if e.deploy is not None}}


@cache
def _shared() -> dict[str, Any]:
    data: dict[str, Any] = read(DEPLOY_FILE).data
    return data


def engine_deploy(engine: str, flag: str = "--deploy") -> dict[str, Any]:
    """The engine file's ``[deploy]``; an engine without one is refused, naming its file
    (and ``flag``, the option that needs it)."""
    found = engine_files.engine(engine)
    if found.deploy is None:
        raise InputError(f"{engine} has no [deploy] table (its image, port and health "
                         f"endpoint) in {found.path}", name=flag)
    return found.deploy


@dataclass(frozen=True)
class Pool:
    """One pool of identical replicas: ``serve`` (aggregated), ``prefill`` or ``decode``."""

    role: str
    replicas: int
    cell: str  # the plan value its replica count is


@dataclass(frozen=True)
class Plan:
    """What the files are built from: the best plan's engine, command, pools and GPUs."""

    engine: str
    name: str  # a DNS label for the objects
    model: str  # Hugging Face id
    scenario: Scenario
    pools: tuple[Pool, ...]
    gpus: int  # GPUs of one replica (n_gpus = tp × pp)
    summary: str  # one line: the plan in words
    recheck: str = ""  # the perfgraph eval line that re-checks it

    @property
    def disaggregated(self) -> bool:
        return any(p.role == "prefill" for p in self.pools)

    @property
    def pp(self) -> int:
        return int(self.scenario.sheet.magnitude("pp"))

    def command(self) -> list[str]:
        """The engine's command words (its [launch] ``command``), the model put in."""
        spec = launch.engine_spec(self.engine)
        return [w.replace("{hf_id}", self.model) for w in spec.command]

    def flags(self) -> list[tuple[str, str, str]]:
        return launch.flags(self.engine, self.scenario)

    def flag_words(self) -> list[str]:
        """The flags as argv words: each flag, then its value (none for a switch)."""
        return [w for flag, value, _ in self.flags() for w in ((flag, value) if value
                                                               else (flag,))]


def plan_of(engine: str, scenario: Scenario, pools: PlanPools, summary: str,
            recheck: str = "") -> Plan:
    """A :class:`Plan` from ``plan``'s pools (one pool of replicas, or prefill and decode)."""
    launch.engine_spec(engine)  # refuses an unknown engine, or one with no command
    engine_deploy(engine)
    made: tuple[Pool, ...]
    if isinstance(pools, DisaggregatedPools):
        made = (Pool("prefill", pools.prefill.replicas, "prefill_pool_replicas"),
                Pool("decode", pools.decode.replicas, "decode_replicas_at_batch"))
    else:
        made = (Pool("serve", pools.replicas, "deployment_replicas"),)
    gpus = int(scenario.sheet.magnitude("tp")) * int(scenario.sheet.magnitude("pp"))
    return Plan(engine, dns_name(f"{scenario.model.slug}-{engine}"), launch.hf_id(scenario),
                scenario, made, gpus, summary, recheck)


def dns_name(text: str) -> str:
    """``text`` as a DNS-1123 label short enough for a ``-prefill`` suffix."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return name[:45].rstrip("-") or "perfgraph"


@dataclass
class Fields:
    """The plan values a file's fields carry, recorded as the file is built."""

    lines: list[tuple[str, str, str]] = field(default_factory=list)  # (path, value, from)

    def put(self, path: str, value: Any, source: str) -> Any:
        self.lines.append((path, str(value), source))
        return value

    def args(self, path: str, words: list[str], plan: Plan, start: int) -> None:
        """Trace each flag value of the serving command in ``words`` (from index ``start``)."""
        at = start
        for flag, value, key in plan.flags():
            assert words[at] == flag, (words, flag)
            if value:  # a switch carries no value to trace
                assert words[at + 1] == value, (words, flag, value)
                self.put(f"{path}[{at + 1}]", value, f"{flag}: {VALUE_CELLS[key]}")
            at += 2 if value else 1


@dataclass(frozen=True)
class File:
    """One generated file: its documents, the schema of each, and the header's traces."""

    name: str
    title: str
    documents: tuple[dict[str, Any], ...]
    schemas: tuple[str, ...]  # a key of deploy_schema.SCHEMAS per document
    fields: tuple[tuple[str, str, str], ...]
    extras: tuple[str, ...] = ()  # what the file adds that is not a plan value

    def header(self, plan: Plan) -> str:
        width = max((len(f"{p} = {v}") for p, v, _ in self.fields), default=0)
        lines = [f"perfgraph plan → {self.title}", f"plan: {plan.summary}"]
        lines += [f"re-check: {plan.recheck}"] if plan.recheck else []
        lines += ["Fields set from the plan (field = value ← plan value); every other field "
                  "is a fixed default:"]
        lines += [f"  {f'{p} = {v}':<{width}}  ← {s}" for p, v, s in self.fields]
        lines += [f"Not from the plan: {x}" for x in self.extras]
        return "".join(f"# {line}".rstrip() + "\n" for line in lines)

    def text(self, plan: Plan) -> str:
        import yaml

        class Dumper(yaml.SafeDumper):
            def ignore_aliases(self, data: Any) -> bool:  # each label map written out
                return True

        body = yaml.dump_all(list(self.documents), Dumper=Dumper, sort_keys=False,
                             width=1000)
        return self.header(plan) + body


# ------------------------------------------------------------------------------ Kubernetes


def _labels(plan: Plan, pool: Pool) -> dict[str, str]:
    return {"app.kubernetes.io/name": plan.name, "app.kubernetes.io/component": pool.role,
            "app.kubernetes.io/managed-by": "perfgraph"}


def probe(engine: dict[str, Any], kind: str, port: Any) -> dict[str, Any]:
    """A readiness or liveness probe on the engine's health endpoint (deploy.toml)."""
    return {"httpGet": {"path": engine["health"], "port": port}, **config()["probes"][kind]}


def role_words(plan: Plan, pool: Pool) -> tuple[list[str], list[str]]:
    """What a pool's command adds after the plan's flags: the pool's role (SGLang's
    ``--disaggregation-mode``, as ``--launch`` prints it) and the engine's KV connector;
    then the address to listen on where the engine binds only localhost."""
    spec = launch.engine_spec(plan.engine)
    engine = engine_deploy(plan.engine)
    role: list[str] = []
    if pool.role != "serve":
        role = [spec.disaggregation_flag, pool.role] if spec.disaggregation_flag else []
        role += engine.get("kv_connector", [])
    return role, list(engine.get("listen", []))


def _container(plan: Plan, pool: Pool, fields: Fields, at: str) -> dict[str, Any]:
    engine = engine_deploy(plan.engine)
    command = plan.command()
    args = plan.flag_words()
    role, listen = role_words(plan, pool)
    fields.args(f"{at}.args", args, plan, 0)
    gpus = str(fields.put(f"{at}.resources.limits.{GPU}", plan.gpus,
                          "n_gpus = tp × pp (GPUs of one replica)"))
    return {"name": plan.engine, "image": engine["image"], "command": command,
            "args": [*args, *role, *listen],
            "ports": [{"name": "http", "containerPort": engine["port"]}],
            "resources": {"limits": {GPU: gpus}, "requests": {GPU: gpus}},
            "readinessProbe": probe(engine, "readiness", "http"),
            "livenessProbe": probe(engine, "liveness", "http"),
            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}


def _deployment(plan: Plan, pool: Pool, fields: Fields, doc: int) -> dict[str, Any]:
    labels = _labels(plan, pool)
    name = plan.name if pool.role == "serve" else f"{plan.name}-{pool.role}"
    replicas = fields.put(f"[{doc}] spec.replicas", pool.replicas,
                          f"{pool.cell} ({pool.role} replicas)")
    at = f"[{doc}] spec.template.spec.containers[0]"
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [_container(plan, pool, fields, at)],
                         "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}}}


def _service(plan: Plan, pool: Pool) -> dict[str, Any]:
    labels = _labels(plan, pool)
    name = plan.name if pool.role == "serve" else f"{plan.name}-{pool.role}"
    port = engine_deploy(plan.engine)["port"]
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
            "spec": {"selector": labels,
                     "ports": [{"name": "http", "port": port, "targetPort": "http"}]}}


def kubernetes(plan: Plan) -> File:
    """A Deployment and a Service per pool (one pool aggregated, prefill and decode
    disaggregated), the serving command ``--launch`` prints in each."""
    fields = Fields()
    docs: list[dict[str, Any]] = []
    for pool in plan.pools:
        docs += [_deployment(plan, pool, fields, len(docs)), _service(plan, pool)]
    extras = [f"{' '.join(w)} after the plan's flags ({why})" for w, why in (
        (role_words(plan, p)[0], f"the {p.role} pool's role and KV hand-off")
        for p in plan.pools) if w]
    listen = role_words(plan, plan.pools[0])[1]
    if listen:
        extras.append(f"{' '.join(listen)} (the engine binds localhost by default; the probes "
                      "and the Service reach the pod's address)")
    unwired = engine_deploy(plan.engine).get("disaggregation_note")
    if plan.disaggregated and unwired:
        extras.append(unwired)
    return File(f"{plan.name}-k8s.yaml",
                "Kubernetes: an apps/v1 Deployment and a v1 Service per pool",
                tuple(docs), tuple(d["kind"] for d in docs), tuple(fields.lines),
                tuple(dict.fromkeys(extras)))
