"""plan --deploy: every format, for an aggregated and a disaggregated plan, validates against its
published schema (shipped in perfgraph/whatif/schemas) and carries the plan's GPUs, replicas
and engine flags, read back from the YAML."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
pytest.importorskip("jsonschema")

from perfgraph.cli.main import main  # noqa: E402
from perfgraph.whatif import deploy_schema  # noqa: E402

BASE = ["plan", "--model", "llama-3.3-70b", "--hardware", "h100-sxm", "--precision", "fp8",
        "--slo", "ttft=1s", "--slo", "itl=50ms", "--search", "pp=1", "--top", "0"]
AGG = [*BASE, "--rate", "4 request/s", "--search", "tp=2,4", "--search", "disaggregated=0"]
DISAGG = [*BASE, "--rate", "10 request/s", "--search", "tp=2", "--search", "disaggregated=1"]
FORMATS = ("k8s", "dynamo", "llm-d")


def _plan(args: list[str], tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """The plan as JSON, its --launch line(s), and the three files it writes."""
    assert main([*args, "--format", "json"]) == 0
    ans = json.loads(capsys.readouterr().out)
    deploy = [w for f in FORMATS for w in ("--deploy", f)]
    assert main([*args, "--launch", *deploy, "--out-dir", str(tmp)]) == 0
    out = capsys.readouterr()
    launch = [line for line in out.out.splitlines() if line.startswith("vllm serve ")]
    files = {f: next(tmp.glob(f"*-{f}*.yaml")) for f in FORMATS}
    assert all(f"wrote {p}" in out.err for p in files.values())
    return {"ans": ans, "launch": shlex.split(launch[0]), "files": files}


def _expected(ans: dict) -> dict:
    c, v = ans["best"]["choices"], ans["best"]["values"]
    gpus = int(c["tp"]) * int(c["pp"])
    assert gpus == int(v["n_gpus"]["value"])
    pools = ({"prefill": int(v["prefill_pool_replicas"]["value"]),
              "decode": int(v["decode_replicas_at_batch"]["value"])} if c["disaggregated"]
             else {"serve": int(v["deployment_replicas"]["value"])})
    return {"gpus": gpus, "pools": pools, "tp": int(c["tp"]), "batch": int(c["concurrency"])}


def _flags_in(args: list[str], launch: list[str], start: int) -> None:
    """``args`` carries the plan's flags exactly as --launch prints them, in order."""
    flags = launch[start:]
    assert args[:len(flags)] == flags


def _valid(docs: list[dict], kinds: list[str]) -> None:
    for doc, kind in zip(docs, kinds, strict=True):
        assert deploy_schema.problems(doc, kind) == [], kind


@pytest.mark.parametrize("args", [AGG, DISAGG], ids=["aggregated", "disaggregated"])
def test_every_format_validates_and_carries_the_plan(args, tmp_path, capsys) -> None:
    got = _plan(args, tmp_path, capsys)
    want = _expected(got["ans"])
    launch = got["launch"]  # vllm serve MODEL --flag value …
    assert (want["pools"].keys() == {"prefill", "decode"}) == (args is DISAGG)

    k8s = list(yaml.safe_load_all(got["files"]["k8s"].read_text()))
    _valid(k8s, [d["kind"] for d in k8s])
    deployments = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d
                   for d in k8s if d["kind"] == "Deployment"}
    assert {r: d["spec"]["replicas"] for r, d in deployments.items()} == want["pools"]
    assert len([d for d in k8s if d["kind"] == "Service"]) == len(want["pools"])
    for d in deployments.values():
        box = d["spec"]["template"]["spec"]["containers"][0]
        assert box["image"] == "vllm/vllm-openai:latest"
        assert box["resources"]["limits"]["nvidia.com/gpu"] == str(want["gpus"])
        assert box["command"] + box["args"][:len(launch) - 3] == launch
        assert box["readinessProbe"]["httpGet"]["path"] == "/health"

    dgd = yaml.safe_load(got["files"]["dynamo"].read_text())
    _valid([dgd], ["DynamoGraphDeployment"])
    workers = {s.get("subComponentType", "serve"): s for s in dgd["spec"]["services"].values()
               if s["componentType"] == "worker"}
    assert {r: s["replicas"] for r, s in workers.items()} == want["pools"]
    for role, s in workers.items():
        assert s["resources"]["limits"]["gpu"] == str(want["gpus"])
        main_args = s["extraPodSpec"]["mainContainer"]["args"]
        assert main_args[:2] == ["--model", launch[2]]
        _flags_in(main_args[2:], launch, 3)
        if role != "serve":
            assert main_args[-4:-2] == ["--disaggregation-mode", role]
            assert "NixlConnector" in main_args[-1]

    values = yaml.safe_load(got["files"]["llm-d"].read_text())
    _valid([values], ["llm-d-values"])
    pools = {r: values[r]["replicas"] for r in ("prefill", "decode") if values[r]["create"]}
    expected = {("decode" if r == "serve" else r): n for r, n in want["pools"].items()}
    assert pools == expected
    for role in pools:
        block = values[role]
        box = block["containers"][0]
        # the chart gives a container parallelism.dataLocal (default 1) × tensor GPUs
        assert block["parallelism"]["tensor"] * block["parallelism"].get("dataLocal", 1) == \
            want["gpus"] == int(box["resources"]["limits"]["nvidia.com/gpu"])
        assert box["modelCommand"] == "custom" and box["command"] == launch[:3]
        _flags_in(box["args"], launch, 3)


def test_the_header_traces_each_plan_field(tmp_path, capsys) -> None:
    got = _plan(AGG, tmp_path, capsys)
    want = _expected(got["ans"])
    text = got["files"]["k8s"].read_text()
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert head[0].startswith("# perfgraph plan → Kubernetes")
    assert any(f"spec.replicas = {want['pools']['serve']}" in h and "deployment_replicas" in h
               for h in head)
    assert any(f"nvidia.com/gpu = {want['gpus']}" in h and "n_gpus" in h for h in head)
    assert any(f"args[5] = {want['batch']}" in h and "--max-num-seqs: concurrency" in h
               for h in head)
    assert "&id" not in text  # every map written out, no YAML anchors


def test_a_misspelt_or_undeclared_field_fails_its_schema() -> None:
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"replica": 2, "selector": {}, "template": {"spec": {"containers": [
               {"name": "vllm"}]}}}}
    assert any("replica" in p for p in deploy_schema.problems(doc, "Deployment"))
    dgd = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
           "spec": {"services": {"W": {"replicas": 1, "gpus": "2"}}}}
    assert deploy_schema.problems(dgd, "DynamoGraphDeployment") == [
        "spec.services.W.gpus: not declared by the schema (the API server would drop it)"]


@pytest.mark.parametrize("extra, says", [
    (["--deploy", "k8s"], "--deploy writes files: give --out-dir DIR"),
    (["--out-dir", "x"], "--out-dir is where --deploy writes"),
    (["--deploy", "llm-d", "--out-dir", "{tmp}", "--search", "engine=sglang"],
     "the llm-d-modelservice chart serves vLLM"),
    (["--deploy", "dynamo", "--out-dir", "{tmp}", "--search", "engine=trtllm"],
     "Dynamo's TensorRT-LLM worker"),
])
def test_bad_deploy_input_exits_2_with_one_line(extra, says, tmp_path, capsys) -> None:
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    assert main([*AGG, *extra]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_an_out_dir_that_is_a_file_is_refused(tmp_path, capsys) -> None:
    target = tmp_path / "f"
    target.write_text("keep")
    assert main([*AGG, "--deploy", "k8s", "--out-dir", str(target)]) == 2
    assert "is not a folder" in capsys.readouterr().err and target.read_text() == "keep"


@pytest.mark.parametrize("engine, formats", [("sglang", ("k8s", "dynamo")),
                                             ("trtllm", ("k8s",))])
@pytest.mark.parametrize("pools", [{"replicas": 3}, {"prefill": 2, "decode": 1}],
                         ids=["aggregated", "disaggregated"])
def test_sglang_and_trtllm_pools_carry_the_launch_words(engine, formats, pools) -> None:
    from perfgraph.scenario.loading import ScenarioSpec, load
    from perfgraph.whatif import deploy, deploy_graphs, launch
    from perfgraph.whatif.plan_answer import DisaggregatedPools, GpuPool

    scenario = load(ScenarioSpec(model="llama-3.3-70b", hardware="h200", precision="fp8",
                                 engine=engine, sets=(("tp", "2"), ("concurrency", "51"))))
    typed = (DisaggregatedPools(GpuPool(pools["prefill"], "h200"), GpuPool(pools["decode"], "h200"))
             if "prefill" in pools else GpuPool(pools["replicas"], "h200"))
    plan = deploy.plan_of(engine, scenario, typed, "a plan")
    words = launch.words(engine, scenario)
    for fmt in formats:
        f = deploy_graphs.build(fmt, plan)
        docs = list(yaml.safe_load_all(f.text(plan)))
        _valid(docs, list(f.schemas))
        if fmt == "k8s":
            boxes = [d["spec"]["template"]["spec"]["containers"][0] for d in docs
                     if d["kind"] == "Deployment"]
            assert all(b["command"] + b["args"][:len(words) - len(b["command"])] == words
                       for b in boxes)
            assert all(b["args"][-2:] == ["--host", "0.0.0.0"] for b in boxes)
            assert [d["spec"]["replicas"] for d in docs if d["kind"] == "Deployment"] == \
                list(pools.values())
        else:
            workers = [s for s in docs[0]["spec"]["services"].values()
                       if s["componentType"] == "worker"]
            assert [w["replicas"] for w in workers] == list(pools.values())
            args = [w["extraPodSpec"]["mainContainer"]["args"] for w in workers]
            assert all(a[:len(words) - 3] == words[3:] for a in args)  # --model-path MODEL …
            if "prefill" in pools:
                assert [a[-4:] for a in args] == [
                    ["--disaggregation-mode", role, "--disaggregation-transfer-backend", "nixl"]
                    for role in ("prefill", "decode")]
