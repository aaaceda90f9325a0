"""``perfgraph plan``: the cheapest deployment that meets the SLOs at a request rate."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from perfgraph.cli.options import add_scenario_options, spec_from_args
from perfgraph.errors import InputError
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif import launch, plan, plan_report

EPILOG = """\
The default space: the scenario's engine (--engine, default vllm), every catalog accelerator
at every precision its [peak_flops] table has, tp=1,2,4,8,16, pp=1,2,4,8, disaggregated=0,1
and concurrency=1..1024 (the batch; rows past what KV holds are searched and refused).
--search NAME=V1,V2,… (sweep's axis syntax, ranges too) replaces an axis or adds one
(engine=vllm,sglang,trtllm, hardware=, precision=, or any cell: spec_k=0,2,4).
TTFT counts the prefill queue wait at the rate (prefill_queueing on: M/D/1 per server).
Exit 0 with a plan; 1 when no candidate meets the SLOs (the SLO out of reach, then the best
each family reached); 2 on bad input.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="search deployments for the cheapest that meets SLOs",
                       description="Search every candidate deployment exactly and answer "
                                   "with the best that meets the SLOs at the request rate.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_scenario_options(p)
    p.add_argument("--slo", action="append", default=[], metavar="NAME=VALUE",
                   help="ttft=1s, itl=50ms, e2e=30s (repeatable)")
    p.add_argument("--rate", required=True, metavar="RATE", help='"20 request/s"')
    p.add_argument("--search", action="append", default=[], metavar="NAME=VALUES",
                   help="an axis of the space (repeatable)")
    p.add_argument("--objective", choices=tuple(plan.OBJECTIVES), default="gpus")
    p.add_argument("--top", type=int, default=5, help="runners-up to show (default 5)")
    p.add_argument("--format", "-f", choices=("table", "json", "markdown"), default="table")
    p.add_argument("--out", metavar="FILE.parquet", help="write every feasible plan here")
    p.add_argument("--launch", nargs="?", const="", choices=("", *launch.ENGINES),
                   metavar="ENGINE", help="print the best plan's serving command (default: "
                                          "the best plan's engine)")
    p.add_argument("--prices", metavar="FILE", help="your own $/GPU-hour (prices.toml shape)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="threads that evaluate the space (default: the cores); the answer is "
                        "the same with any N")
    p.set_defaults(func=run)


def best_spec(result: plan.Result, i: int, prices_file: str | None) -> ScenarioSpec:
    """The scenario of feasible row ``i``: what ``perfgraph eval`` re-checks."""
    choice = result.choices(int(result.rows[i]))
    price = plan.prices(prices_file).get(str(choice["hardware"]), 0.0)
    cells = [(k, _text(v)) for k, v in choice.items()
             if k not in ("engine", "hardware", "precision")]
    return replace(result.spec, hardware=str(choice["hardware"]),
                   precision=str(choice["precision"]), engine=str(choice["engine"]),
                   sets=(*result.spec.sets, *cells, ("gpu_hour_price", _text(price))))


def _text(x: object) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def eval_line(spec: ScenarioSpec) -> str:
    parts = ["perfgraph eval"] + [f"--{k} {v}" for k, v in (
        ("model", spec.model), ("hardware", spec.hardware), ("workload", spec.workload),
        ("precision", spec.precision), ("engine", spec.engine)) if v]
    parts += [f"--set '{n}={v}'" for n, v in spec.sets]
    return " ".join(parts)


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise InputError("--top must be 0 or more")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be 1 or more, got {args.jobs}")
    if not args.slo:
        raise InputError("plan needs at least one --slo (ttft=1s, itl=50ms, e2e=30s)")
    spec = spec_from_args(args)
    q = plan.question(spec, args.slo, args.rate, args.objective)
    result = plan.run(spec, q, args.search, args.prices, args.jobs)
    if result.feasible == 0:
        if args.format == "json":
            print(json.dumps(plan_report.no_plan(result), indent=2))
        else:
            print("\n".join([plan_report.unreachable(result), *plan_report.family_lines(result),
                             *plan_report.skipped_line(result.unpriced)]))
        return 1
    ans = plan_report.answer(result, args.top)
    best = best_spec(result, int(result.order()[0]), args.prices)
    scenario = load(best)
    ans["prediction"] = scenario.prediction  # the best plan's label: roofline or calibrated
    if args.out:
        _write(result, args.out)
    if args.format == "json":
        print(json.dumps(ans, indent=2))
    else:
        print(plan_report.table(ans) if args.format == "table" else plan_report.markdown(ans))
        print(f"\nthe best plan's numbers: {ans['prediction']}")
        print(f"re-check the best plan: {eval_line(best)}")
    if args.launch is not None:
        print(launch.command(args.launch or str(best.engine), scenario, _pools(ans)))
    return 0


def _pools(ans: dict) -> dict[str, int]:
    v = {k: int(x["value"]) for k, x in ans["best"]["values"].items()
         if k.endswith("replicas") or k.endswith("batch")}
    if ans["best"]["choices"]["disaggregated"]:
        return {"prefill": v["prefill_pool_replicas"], "decode": v["decode_replicas_at_batch"]}
    return {"replicas": v["deployment_replicas"]}


def _write(result: plan.Result, path: str) -> None:
    import polars as pl

    from perfgraph._infra.atomic import write_atomic

    choices = [result.choices(int(r)) for r in result.rows]
    frame = pl.DataFrame(choices).with_columns(
        *[pl.Series(n, result.values[n]) for n in result.values])
    write_atomic(path, lambda tmp: frame.write_parquet(tmp))
