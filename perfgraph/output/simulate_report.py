"""A simulation as people and tools read it: the summary (:class:`SimSummary`) as a table
or JSON (``perfgraph simulate``), and as the plain values the dashboard keeps its answers in
(:func:`summary_doc`, read back by :func:`summary_from_doc`); an explained step
(``--explain-step``) as text or JSON; the per-request rows (``--out``, Parquet) and the
Chrome / Perfetto trace (``--trace``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.output.parquet import write_frames
from perfgraph.whatif.simulate import Run
from perfgraph.whatif.simulate.sim_summary import (
    FrontendLoad,
    Latencies,
    LatencyStats,
    MeanMax,
    Overload,
    ReplicaLoad,
    SeriesPoint,
    SimSummary,
    SloLimits,
    SpeculationYield,
    TokenLag,
    field_names,
)
from perfgraph.whatif.simulate.step_sheet import ExplainedStep

LABELS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E"}
SATURATED = 0.95  # the API server's loop busy this share of the run: it sets the pace


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.4g}"


def _err(sim: float | None, measured: float) -> str:
    if sim is None or not measured:
        return "—"
    return f"{100 * (sim / measured - 1):+.0f}%"


def table(s: SimSummary, title: str, sheet_line: str) -> str:
    lines = [title + (" · PARTIAL (interrupted)" if s.partial else ""),
             f"{s.requests} requests ({s.measured} measured, {s.warmup} warm-up left out), "
             f"{s.steps} steps, {s.simulated_s:.4g} s simulated", ""]
    if s.overload:
        o = s.overload
        lines += [f"OVERLOADED: requests arrive at {o.offered:.4g} request/s, the system "
                  f"sustained {o.sustained:.4g} request/s; the queue grew by "
                  f"{o.queue_growth} requests over the run, so TTFT and E2E grow with the "
                  f"run's length and are not shown", ""]
    keys = s.latency.ttft.keys
    lines.append(f"  {'':10}" + "".join(f"{k:>10}" for k in keys))
    for name, st in s.latency.items():
        lines.append(f"  {LABELS[name] + ' (' + st.unit + ')':10}"
                     + "".join(f"{_num(st.get(k)):>10}" for k in keys))
    lines += ["", *_throughput_lines(s), *_engine_lines(s), *_measured_lines(s)]
    if s.dropped:
        lines.append(f"  dropped             {s.dropped} (a prompt larger than KV memory)")
    if s.replicas:
        lines += ["", *replica_lines(s.replicas)]
    return "\n".join([*lines, "", sheet_line]) + "\n"


def _throughput_lines(s: SimSummary) -> list[str]:
    return [f"  output throughput   {_num(s.output_throughput)} tok/s",
            f"  total throughput    {_num(s.total_throughput)} tok/s",
            f"  request throughput  {_num(s.request_throughput)} request/s",
            f"  goodput             {_num(s.goodput)} request/s "
            f"({100 * s.goodput_share:.3g} % of requests: TTFT ≤ "
            f"{_num(s.slo.ttft_ms)} ms, TPOT ≤ {_num(s.slo.itl_ms)} ms)",
            f"  preemptions         {s.preemptions}",
            f"  batch (decodes)     mean {_num(s.batch.mean)}, max {_num(s.batch.max)}",
            f"  KV in use           mean {_num(100 * s.kv_use.mean)} %, max "
            f"{_num(100 * s.kv_use.max)} %"]


def _measured_lines(s: SimSummary) -> list[str]:
    """The replayed run's own latencies beside the simulation's, with the error."""
    if not s.run_measured:
        return []
    lines = ["", f"  against the measured run ({s.measured_source}): simulated / measured "
                 f"(error)"]
    for metric, got in s.run_measured.items():
        sim = s.latency.of(metric)
        assert sim is not None  # the reader keeps ttft, tpot, itl, e2e only
        cells = [f"{k} {_num(sim.get(k))} / {_num(v)} ms ({_err(sim.get(k), v)})"
                 for k, v in got.items()]
        lines.append(f"  {LABELS[metric]:6}" + ", ".join(cells))
    return lines


def _engine_lines(s: SimSummary) -> list[str]:
    """What the summary says of speculation and of the API server's loop, when it has them."""
    lines: list[str] = []
    if s.speculation:
        sp = s.speculation
        lines.append(f"  speculation         mean {_num(sp.accepted)} tokens accepted a "
                     f"decode a step (k = {sp.k}; the sheet's spec_tokens_per_pass "
                     f"{_num(sp.expected)})")
    if s.frontend:
        f = s.frontend
        lines += [f"  API server loop     busy {_num(100 * f.busy_share)} % of the run "
                  f"({_num(f.request_ms)} ms a request, {_num(f.chunk_ms)} ms a chunk"
                  f"{', coalescing' if f.coalesce else ''})"
                  + (": saturated, the loop and not the GPU sets the pace"
                     if f.busy_share >= SATURATED else ""),
                  f"  token lag           mean {_num(f.lag.mean_ms)} ms, p99 "
                  f"{_num(f.lag.p99_ms)} ms, max {_num(f.lag.max_ms)} ms "
                  f"(from a step's end to its tokens reaching their clients)"]
    return lines


def replica_lines(rows: Sequence[ReplicaLoad]) -> list[str]:
    """Each replica's load: its requests, the share of the run its steps took (busy), its
    mean batch and KV use while busy, its requests' TTFT (a prefill replica's: to its own
    prefill's end) and, with sessions, the share that found their prefix there (and of
    those, copied back from host memory)."""
    hits = any(r.hit_rate is not None for r in rows)
    out = [f"  {'replica':12}{'requests':>14}{'busy':>9}{'batch':>8}{'KV use':>9}"
           f"{'TTFT p50':>10}{'TTFT p99':>10} ms"
           + ("   prefix hits (from host)" if hits else "")]
    for r in rows:
        out.append(f"  {r.pool + ' ' + str(r.replica):12}"
                   f"{r.requests:>7} ({100 * r.share:3.0f} %)"
                   f"{_num(100 * r.busy):>7} %{_num(r.batch):>8}"
                   f"{_num(100 * r.kv_use):>7} %{_num(r.ttft_p50):>10}"
                   f"{_num(r.ttft_p99):>10}"
                   + (f"      {_num(_pct(r.hit_rate))} % ({_num(_pct(r.reload_rate))} %)"
                      if hits else ""))
    return out


def _pct(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _q(value: float | None, unit: str) -> dict[str, Any]:
    """A number with its unit; null where it is missing or not finite."""
    ok = value is not None and math.isfinite(value)
    return {"value": value if ok else None, "unit": unit}


def as_json(s: SimSummary, scenario: dict[str, str], prediction: str = "roofline") -> str:
    """The summary as JSON; ``prediction`` says what timed the steps (the scenario's label:
    roofline, or the calibration with its domain verdict and band)."""
    doc = {"scenario": scenario, "prediction": prediction, "partial": s.partial,
           "requests": s.requests, "measured": s.measured, "warmup": s.warmup,
           "steps": s.steps, "simulated": _q(s.simulated_s, "s"),
           "window": _q(s.window_s, "s"),
           "latency": {name: {k: _q(v, st.unit) for k, v in st.items()}
                       for name, st in s.latency.items()},
           "output_throughput": _q(s.output_throughput, "token/s"),
           "total_throughput": _q(s.total_throughput, "token/s"),
           "request_throughput": _q(s.request_throughput, "request/s"),
           "goodput": _q(s.goodput, "request/s"),
           "goodput_share": _q(s.goodput_share, ""),
           "slo": {"ttft": _q(s.slo.ttft_ms, "ms"), "itl": _q(s.slo.itl_ms, "ms")},
           "preemptions": s.preemptions, "dropped": s.dropped,
           "batch": {"mean": _q(s.batch.mean, ""), "max": _q(s.batch.max, "")},
           "kv_use": {"mean": _q(s.kv_use.mean, ""), "max": _q(s.kv_use.max, "")},
           "speculation": _speculation_json(s.speculation),
           "run_measured": {metric: {k: _q(v, "ms") for k, v in got.items()}
                            for metric, got in s.run_measured.items()},
           "frontend": _frontend_json(s.frontend),
           "overloaded": s.overload is not None,
           "overload": None if not s.overload else {
               "offered": _q(s.overload.offered, "request/s"),
               "sustained": _q(s.overload.sustained, "request/s"),
               "queue_growth": s.overload.queue_growth},
           "series": {"unit": {"t": "s", "batch": "", "kv_use": ""},
                      "points": [asdict(p) for p in s.series]},
           "replicas": [_replica_json(r) for r in s.replicas]}
    return json.dumps(doc, indent=2) + "\n"


def _speculation_json(sp: SpeculationYield | None) -> Any:
    return None if not sp else {"k": sp.k, "accepted_per_step": _q(sp.accepted, "token"),
                                "spec_tokens_per_pass": _q(sp.expected, "token")}


def _frontend_json(f: FrontendLoad | None) -> Any:
    return None if not f else {
        "request_time": _q(f.request_ms, "ms"), "chunk_time": _q(f.chunk_ms, "ms"),
        "coalesce": f.coalesce, "busy_share": _q(f.busy_share, ""),
        "lag": {"mean": _q(f.lag.mean_ms, "ms"), "p99": _q(f.lag.p99_ms, "ms"),
                "max": _q(f.lag.max_ms, "ms")}}


def _replica_json(r: ReplicaLoad) -> dict[str, Any]:
    return {"pool": r.pool, "replica": r.replica, "requests": r.requests,
            "share": _q(r.share, ""), "busy": _q(r.busy, ""), "batch": _q(r.batch, ""),
            "kv_use": _q(r.kv_use, ""), "ttft_p50": _q(r.ttft_p50, "ms"),
            "ttft_p99": _q(r.ttft_p99, "ms"),
            "hit_rate": None if r.hit_rate is None else _q(r.hit_rate, ""),
            "reload_rate": None if r.reload_rate is None else _q(r.reload_rate, "")}


#: Fields the plain form leaves out: the replayed run is ``perfgraph simulate``'s alone.
_NOT_PLAIN = ("run_measured", "measured_source")


def summary_doc(s: SimSummary) -> dict[str, Any]:
    """The summary as plain JSON values, as the dashboard keeps its answers: each latency
    ``[unit, {stat: value}]``, the other parts objects named as their fields."""
    doc = {f.name: getattr(s, f.name) for f in fields(s) if f.name not in _NOT_PLAIN}
    f = s.frontend
    doc.update(
        latency={name: [st.unit, dict(st.items())] for name, st in s.latency.items()},
        slo={"ttft": s.slo.ttft_ms, "itl": s.slo.itl_ms},
        batch=asdict(s.batch), kv_use=asdict(s.kv_use),
        speculation=None if s.speculation is None else asdict(s.speculation),
        series=[asdict(p) for p in s.series],
        overload=None if s.overload is None else asdict(s.overload),
        frontend=None if f is None else {
            "request_ms": f.request_ms, "chunk_ms": f.chunk_ms, "coalesce": f.coalesce,
            "busy_share": f.busy_share,
            "lag_ms": {"mean": f.lag.mean_ms, "p99": f.lag.p99_ms, "max": f.lag.max_ms}},
        replicas=[asdict(r) for r in s.replicas])
    return doc


def summary_from_doc(doc: Mapping[str, Any]) -> SimSummary:
    """:func:`summary_doc`'s inverse."""
    f, sp, o = doc["frontend"], doc["speculation"], doc["overload"]
    return SimSummary(**{
        **{k: doc[k] for k in field_names(SimSummary) if k not in _NOT_PLAIN},
        "latency": Latencies(**{name: LatencyStats(unit, **{k.replace(".", "_"): v
                                                            for k, v in st.items()},
                                                   keys=tuple(st))
                                for name, (unit, st) in doc["latency"].items()}),
        "slo": SloLimits(doc["slo"]["ttft"], doc["slo"]["itl"]),
        "batch": MeanMax(**doc["batch"]), "kv_use": MeanMax(**doc["kv_use"]),
        "speculation": None if sp is None else SpeculationYield(**sp),
        "series": tuple(SeriesPoint(**p) for p in doc["series"]),
        "overload": None if o is None else Overload(**o),
        "frontend": None if f is None else FrontendLoad(
            f["request_ms"], f["chunk_ms"], f["coalesce"], f["busy_share"],
            TokenLag(f["lag_ms"]["mean"], f["lag_ms"]["p99"], f["lag_ms"]["max"])),
        "replicas": tuple(ReplicaLoad(**r) for r in doc["replicas"])})


ROW_UNITS = {"request": "", "arrival": "s", "first_token": "s", "end": "s", "isl": "token",
             "osl": "token", "ttft": "ms", "tpot": "ms", "e2e": "s", "preempted": ""}


def request_rows(run: Run) -> dict[str, np.ndarray]:
    t = run.engine.reqs.table()
    rows: dict[str, np.ndarray] = {"request": np.arange(len(t["isl"]), dtype=np.int64)}
    for k in ROW_UNITS:
        if k != "request":
            rows[k] = t[k] * (1e3 if ROW_UNITS[k] == "ms" else 1)
    return rows


def step_text(step: ExplainedStep) -> str:
    """A step as ``explain`` shows a cell: its inputs, then each cell's formula, the formula
    with the step's values (or the step cell it reads in its place), and the result."""
    out = [f"step {step.number:,} of {step.steps:,}: ends at {step.end_s:.6g} s, takes "
           f"{step.duration_s * 1e3:.4g} ms", "inputs"]
    out += [f"  {c.name} = {c.shown}" for c in step.cells if c.formula is None]
    for c in step.cells:
        if c.formula is None:
            continue
        out.append(f"{c.name}: {c.doc}")
        if c.bound:
            out.append(f"  formula      {c.formula}   (the step's, in place of its own)")
        else:
            out += [f"  formula      {c.formula}", f"  with values  {c.substituted}"]
        out.append(f"  result       {c.shown}")
    return "\n".join(out) + "\n"


def step_json(step: ExplainedStep) -> str:
    return json.dumps({"step": step.number, "steps": step.steps, "end_s": step.end_s,
                       "duration_s": step.duration_s, "cells": [asdict(c) for c in step.cells]},
                      indent=2) + "\n"


def write_requests(path: str, run: Run) -> None:
    """``--out``: one Parquet row per request, each column with its unit."""
    import polars as pl

    # float64 throughout: the Parquet writer's Arrow schema knows floats and strings
    frame = pl.DataFrame({k: v.astype("float64") for k, v in request_rows(run).items()})
    write_frames(path, lambda: iter([frame]), dict(frame.schema), ROW_UNITS)


def write_trace(path: str, run: Run) -> None:
    """``--trace``: the Chrome / Perfetto trace, whole or not at all."""
    write_text_atomic(path, trace(run))


def trace(run: Run) -> str:
    """Chrome / Perfetto trace JSON: one slice per step, counters for batch and KV use; a
    pool's replicas each on a track (and counter) of their own."""
    st = run.engine.log.arrays()
    start = (st["end"] - st["dur"]) * 1e6
    track = st.get("replica", np.zeros(start.size)) + 1
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "perfgraph simulate"}}]
    for ts, dur, d, p, kv, tid in zip(start.tolist(), (st["dur"] * 1e6).tolist(),
                                      st["decodes"].tolist(), st["prefill"].tolist(),
                                      st["kv"].tolist(), track.tolist(), strict=True):
        name = "prefill+decode" if p and d else ("prefill" if p else "decode")
        events.append({"name": name, "ph": "X", "pid": 1, "tid": int(tid),
                       "ts": round(ts, 3), "dur": round(dur, 3),
                       "args": {"decodes": int(d), "prefill_tokens": int(p)}})
        events.append({"name": "batch" if tid == 1 else f"batch {int(tid) - 1}", "ph": "C",
                       "pid": 1, "ts": round(ts, 3),
                       "args": {"decodes": int(d), "kv_use_pct": round(100 * kv, 2)}})
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}) + "\n"
