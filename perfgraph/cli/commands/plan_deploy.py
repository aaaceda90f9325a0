"""What ``perfgraph plan`` hands on past the answer: the benchmark that checks the plan
(``--bench [TOOL]``) and its deployment files (``--deploy k8s|dynamo|llm-d --out-dir DIR``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.errors import InputError
from perfgraph.scenario.loading import Scenario
from perfgraph.whatif import bench, deploy, deploy_graphs, deploy_schema, launch
from perfgraph.whatif.plan_answer import (
    DisaggregatedPools,
    PlanBenchmark,
    PlanFound,
    PlanPools,
    UnitValue,
)


def add_options(p: argparse.ArgumentParser) -> None:
    tools = list(bench.tools())
    p.add_argument("--bench", nargs="?", const="", choices=("", *tools), metavar="TOOL",
                   help="print the benchmark that measures the plan's question, writing a file "
                        f"compare --plan reads ({', '.join(tools)}; default: the best plan's "
                        "engine's own, as its engine file names it)")
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


def question(ans: PlanFound, scenario: Scenario, engine: str) -> bench.BenchQuestion:
    """The benchmark's question from the plan's answer and its best scenario."""
    sheet = scenario.sheet
    rate = ans.question.request_rate.value
    port = deploy.engine_deploy(engine, "--bench")["port"]
    return bench.BenchQuestion(model=launch.hf_id(scenario), url=f"localhost:{port}",
                               isl=round(sheet.magnitude("isl")), osl=round(sheet.magnitude("osl")),
                               rate=rate,
                               requests=bench.requests_for(sheet.magnitude("requests_in_flight")))


def tool_of(args: argparse.Namespace, engine: str) -> str:
    return str(args.bench or bench.engine_tool(engine))


def benchmark(args: argparse.Namespace, ans: PlanFound, scenario: Scenario,
              engine: str) -> PlanBenchmark:
    """``plan --format json``'s ``benchmark``: the question, the command and its result file
    (what ``compare --plan`` holds a measured run against)."""
    q = question(ans, scenario, engine)
    tool = tool_of(args, engine)
    return PlanBenchmark(q.isl, q.osl, q.model, q.url, UnitValue(q.rate, "request/s"),
                         q.requests, tool, " ".join(bench.words(tool, q)),
                         bench.result_path(tool))


def run(args: argparse.Namespace, ans: PlanFound, scenario: Scenario, engine: str,
        recheck: str) -> None:
    """Print the benchmark command (text output) and write the deployment files."""
    if args.bench is not None and args.format != "json":
        print(bench.command(tool_of(args, engine), question(ans, scenario, engine)))
    if not args.deploy:
        return
    best = ans.best
    summary = (f"{engine} {best.hardware} {best.precision} tp={best.tp:g} pp={best.pp:g} "
               f"{'disaggregated' if best.disaggregated else 'aggregated'}, batch "
               f"{best.batch:g}; {_replicas(best.pools)} replica(s) of "
               f"{int(best.gpus_per_replica)} GPU(s)")
    plan = deploy.plan_of(engine, scenario, best.pools, summary, recheck)
    out = Path(args.out_dir)
    files = [deploy_graphs.build(fmt, plan) for fmt in dict.fromkeys(args.deploy)]
    for f in files:  # every file checked before any is written
        deploy_schema.check(f.name, f.documents, f.schemas)
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        write_text_atomic(out / f.name, f.text(plan))
        print(f"perfgraph: wrote {out / f.name}", file=sys.stderr)


def _replicas(pools: PlanPools) -> str:
    if isinstance(pools, DisaggregatedPools):
        return f"{pools.prefill.replicas} prefill + {pools.decode.replicas} decode"
    return str(pools.replicas)
