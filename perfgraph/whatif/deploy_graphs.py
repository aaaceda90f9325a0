"""A plan as a Dynamo graph deployment (DynamoGraphDeployment, nvidia.com/v1alpha1) and as
values for the llm-d-modelservice Helm chart; see :mod:`perfgraph.whatif.deploy`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfgraph.errors import InputError
from perfgraph.whatif.deploy import (
    FORMATS,
    GPU,
    Fields,
    File,
    Plan,
    Pool,
    config,
    engine_deploy,
    kubernetes,
    probe,
)


def _dynamo_worker(plan: Plan, pool: Pool, fields: Fields, settings: dict[str, Any]
                   ) -> dict[str, Any]:
    engine = settings["engines"][plan.engine]
    name = plan.engine.capitalize() + ("Worker" if pool.role == "serve"
                                       else f"{pool.role.capitalize()}Worker")
    at = f"spec.services.{name}"
    flags = plan.flag_words()
    args = [engine["model_flag"], plan.model, *flags]
    fields.args(f"{at}.extraPodSpec.mainContainer.args", args, plan, 2)
    if pool.role != "serve":
        args += ["--disaggregation-mode", pool.role,
                 *engine_deploy(plan.engine)["kv_connector"]]
    gpus = str(fields.put(f"{at}.resources.limits.gpu", plan.gpus,
                          "n_gpus = tp × pp (GPUs of one worker)"))
    service: dict[str, Any] = {"componentType": "worker"}
    if pool.role != "serve":
        service["subComponentType"] = pool.role
    service.update({
        "replicas": fields.put(f"{at}.replicas", pool.replicas,
                               f"{pool.cell} ({pool.role} replicas)"),
        "envFromSecret": "hf-token-secret",
        "resources": {"requests": {"gpu": gpus}, "limits": {"gpu": gpus}},
        "extraPodSpec": {"mainContainer": {
            "image": engine["image"], "command": ["python3", "-m", engine["module"]],
            "args": args}}})
    return {name: service}


def dynamo(plan: Plan) -> File:
    """A Frontend and one worker service a pool: prefill and decode workers (their role by
    ``--disaggregation-mode``, the KV hand-off by the engine's connector) when disaggregated,
    one worker service when aggregated."""
    settings = config()["dynamo"]
    if plan.engine not in settings["engines"]:
        raise InputError(f"--deploy dynamo for {plan.engine}: Dynamo's TensorRT-LLM worker "
                         "reads its parallelism from an engine config file, which is not "
                         "generated; --deploy k8s serves the plan with trtllm-serve",
                         name="--deploy")
    fields = Fields()
    image = settings["engines"][plan.engine]["image"]
    services: dict[str, Any] = {"Frontend": {
        "componentType": "frontend", "replicas": 1, "extraPodSpec": {"mainContainer": {
            "image": image, "command": list(settings["frontend"]),
            "args": ["--http-port", str(settings["frontend_port"])]}}}}
    for pool in plan.pools:
        services.update(_dynamo_worker(plan, pool, fields, settings))
    doc = {"apiVersion": settings["api_version"], "kind": "DynamoGraphDeployment",
           "metadata": {"name": plan.name},
           "spec": {"backendFramework": plan.engine, "services": services}}
    extras = ["the Frontend (one replica: it routes, it serves no model)",
              "envFromSecret hf-token-secret (a Secret holding HF_TOKEN, for gated models)"]
    if plan.disaggregated:
        kv = " ".join(engine_deploy(plan.engine)["kv_connector"])
        extras.append(f"--disaggregation-mode prefill|decode and {kv} after the plan's flags "
                      "(each worker's role and the KV hand-off)")
    return File(f"{plan.name}-dynamo.yaml", "Dynamo: DynamoGraphDeployment (nvidia.com/v1alpha1)",
                (doc,), ("DynamoGraphDeployment",), tuple(fields.lines), tuple(extras))


# ------------------------------------------------------------------------------ llm-d


def _llm_d_pool(plan: Plan, pool: Pool | None, role: str, fields: Fields,
                settings: dict[str, Any]) -> dict[str, Any]:
    """The chart's ``decode`` or ``prefill`` block; ``pool`` None: not created."""
    if pool is None:
        return {"create": False, "replicas": 0}
    engine = engine_deploy(plan.engine)
    behind_proxy = plan.disaggregated and role == "decode"
    port = settings["proxy_port"] if behind_proxy else settings["service_port"]
    command = plan.command()
    args = plan.flag_words()
    at = f"{role}.containers[0]"
    fields.args(f"{at}.args", args, plan, 0)
    args += ["--port", str(port)]
    if plan.disaggregated:
        args += list(engine["kv_connector"])
    tensor = fields.put(f"{role}.parallelism.tensor", plan.gpus,
                        "n_gpus = tp (the chart gives a container parallelism.tensor GPUs)")
    gpus = str(tensor)
    return {"create": True,
            "replicas": fields.put(f"{role}.replicas", pool.replicas,
                                   f"{pool.cell} ({pool.role} replicas)"),
            "parallelism": {"tensor": tensor},
            "containers": [{
                "name": plan.engine, "image": engine["image"], "modelCommand": "custom",
                "command": command, "args": args,
                "ports": [{"containerPort": port, "protocol": "TCP"}],
                "resources": {"limits": {GPU: gpus}, "requests": {GPU: gpus}},
                "readinessProbe": probe(engine, "readiness", port),
                "livenessProbe": probe(engine, "liveness", port)}]}


def llm_d(plan: Plan) -> File:
    """Values for the llm-d-modelservice chart: the decode pool (every replica, aggregated),
    a prefill pool when disaggregated, the routing sidecar in front of decode then."""
    settings = config()["llm_d"]
    if plan.engine not in settings["engines"]:
        raise InputError(f"--deploy llm-d for {plan.engine}: the llm-d-modelservice chart "
                         "serves vLLM; --deploy k8s or dynamo serve the plan with "
                         f"{plan.engine}", name="--deploy")
    if plan.pp > 1:
        raise InputError(f"--deploy llm-d: the plan has pp={plan.pp}; the chart gives a pod "
                         "parallelism.dataLocal × parallelism.tensor GPUs and has no pipeline "
                         "stages; --deploy k8s serves it", name="--deploy")
    fields = Fields()
    by_role = {p.role: p for p in plan.pools}
    decode = by_role.get("decode", by_role.get("serve"))
    values = {"multinode": False,
              "modelArtifacts": {"name": plan.model, "uri": f"hf://{plan.model}"},
              "accelerator": {"type": "nvidia"},
              "routing": {"servicePort": settings["service_port"], "proxy": {
                  "enabled": plan.disaggregated, "connector": settings["proxy_connector"],
                  "targetPort": settings["proxy_port"]}},
              "decode": _llm_d_pool(plan, decode, "decode", fields, settings),
              "prefill": _llm_d_pool(plan, by_role.get("prefill"), "prefill", fields,
                                     settings)}
    extras = ["--port after the plan's flags (the chart's servicePort, or proxy.targetPort "
              "for decode behind the routing sidecar)"]
    if plan.disaggregated:
        kv = " ".join(engine_deploy(plan.engine)["kv_connector"])
        extras.append(f"{kv} (the KV hand-off)")
    return File(f"{plan.name}-llm-d-values.yaml",
                f"llm-d: values for the {settings['chart']} Helm chart", (values,),
                ("llm-d-values",), tuple(fields.lines), tuple(extras))


def build(fmt: str, plan: Plan) -> File:
    """The file of format ``fmt`` (:data:`~perfgraph.whatif.deploy.FORMATS`) for ``plan``."""
    makers: dict[str, Callable[[Plan], File]] = {"k8s": kubernetes, "dynamo": dynamo,
                                                 "llm-d": llm_d}
    if fmt not in makers:
        raise InputError(f"unknown --deploy format {fmt!r}; known: {', '.join(FORMATS)}",
                         name="--deploy")
    return makers[fmt](plan)
