"""What ``perfgraph plan`` hands on past the answer: the benchmark that checks the plan
(``--bench [TOOL]``) and its deployment files (``--deploy k8s|dynamo|llm-d --out-dir DIR``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.errors import InputError
from perfgraph.scenario.loading import Scenario
from perfgraph.whatif import bench, deploy, deploy_graphs, deploy_schema, launch


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bench", nargs="?", const="", choices=("", *bench.TOOLS), metavar="TOOL",
                   help="print the benchmark that measures the plan's question, writing a file "
                        "compare --plan reads (vllm, sglang, aiperf; default: the best plan's "
                        "engine's own)")
    p.add_argument("--deploy", action="append", choices=deploy.FORMATS, default=[],
                   metavar="FORMAT", help="write the best plan's deployment files: k8s "
                                          "(Deployment + Service per pool), dynamo "
                                          "(DynamoGraphDeployment), llm-d (Helm values); "
                                          "repeatable; needs --out-dir")
    p.add_argument("--out-dir", metavar="DIR", help="the folder --deploy writes into "
                                                    "(made if missing)")


def check_options(args: argparse.Namespace) -> None:
    """Bad --deploy/--out-dir input refused before the search runs."""
    if args.out_dir is not None and not args.deploy:
        raise InputError("--out-dir is where --deploy writes: give --deploy k8s|dynamo|llm-d",
                         name="--out-dir")
    if not args.deploy:
        return
    if not args.out_dir:
        raise InputError("--deploy writes files: give --out-dir DIR", name="--deploy")
    if Path(args.out_dir).exists() and not Path(args.out_dir).is_dir():
        raise InputError(f"--out-dir {args.out_dir} exists and is not a folder",
                         name="--out-dir")
    deploy_schema.require()


def question(ans: dict[str, Any], scenario: Scenario, engine: str) -> bench.BenchQuestion:
    """The benchmark's question from the plan's answer and its best scenario."""
    sheet = scenario.sheet
    rate = float(ans["question"]["request_rate"]["value"])
    port = deploy.config()["engines"][engine]["port"]
    return bench.BenchQuestion(model=launch.hf_id(scenario), url=f"localhost:{port}",
                               isl=round(sheet.magnitude("isl")), osl=round(sheet.magnitude("osl")),
                               rate=rate,
                               requests=bench.requests_for(sheet.magnitude("requests_in_flight")))


def tool_of(args: argparse.Namespace, engine: str) -> str:
    return str(args.bench or bench.ENGINE_TOOL[engine])


def benchmark_json(args: argparse.Namespace, ans: dict[str, Any], scenario: Scenario,
                   engine: str) -> dict[str, Any]:
    """``plan --format json``'s ``benchmark``: the question, the command and its result file
    (what ``compare --plan`` holds a measured run against)."""
    q = question(ans, scenario, engine)
    tool = tool_of(args, engine)
    return {**q.as_json(), "tool": tool, "command": " ".join(bench.words(tool, q)),
            "result": bench.result_path(tool)}


def run(args: argparse.Namespace, ans: dict[str, Any], scenario: Scenario, engine: str,
        pools: dict[str, int], recheck: str) -> None:
    """Print the benchmark command (text output) and write the deployment files."""
    if args.bench is not None and args.format != "json":
        print(bench.command(tool_of(args, engine), question(ans, scenario, engine)))
    if not args.deploy:
        return
    c = ans["best"]["choices"]
    reps = (f"{pools['prefill']} prefill + {pools['decode']} decode" if "prefill" in pools
            else str(pools["replicas"]))
    summary = (f"{engine} {c['hardware']} {c['precision']} tp={c['tp']:g} pp={c['pp']:g} "
               f"{'disaggregated' if c['disaggregated'] else 'aggregated'}, batch "
               f"{c['concurrency']:g}; {reps} replica(s) of "
               f"{int(ans['best']['values']['n_gpus']['value'])} GPU(s)")
    plan = deploy.plan_of(engine, scenario, pools, summary, recheck)
    out = Path(args.out_dir)
    files = [deploy_graphs.build(fmt, plan) for fmt in dict.fromkeys(args.deploy)]
    for f in files:  # every file checked before any is written
        deploy_schema.check(f.name, f.documents, f.schemas)
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        write_text_atomic(out / f.name, f.text(plan))
        print(f"perfgraph: wrote {out / f.name}", file=sys.stderr)
