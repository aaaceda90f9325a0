"""The summary as a table or JSON, the per-request Parquet rows and the Chrome trace."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from perfgraph.whatif.simulate import Run

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


def table(s: dict[str, Any], title: str, sheet_line: str) -> str:
    lines = [title + (" · PARTIAL (interrupted)" if s["partial"] else ""),
             f"{s['requests']} requests ({s['measured']} measured, {s['warmup']} warm-up left "
             f"out), "
             f"{s['steps']} steps, {s['simulated_s']:.4g} s simulated", ""]
    if s["overload"]:
        o = s["overload"]
        lines += [f"OVERLOADED: requests arrive at {o['offered']:.4g} request/s, the system "
                  f"sustained {o['sustained']:.4g} request/s; the queue grew by "
                  f"{o['queue_growth']} requests over the run, so TTFT and E2E grow with the "
                  f"run's length and are not shown", ""]
    keys = list(next(iter(s["latency"].values()))[1])
    lines.append(f"  {'':10}" + "".join(f"{k:>10}" for k in keys))
    for name, (unit, st) in s["latency"].items():
        lines.append(f"  {LABELS[name] + ' (' + unit + ')':10}"
                     + "".join(f"{_num(st.get(k)):>10}" for k in keys))
    lines += ["",
              f"  output throughput   {_num(s['output_throughput'])} tok/s",
              f"  total throughput    {_num(s['total_throughput'])} tok/s",
              f"  request throughput  {_num(s['request_throughput'])} request/s",
              f"  goodput             {_num(s['goodput'])} request/s "
              f"({100 * s['goodput_share']:.3g} % of requests: TTFT ≤ "
              f"{_num(s['slo']['ttft'])} ms, TPOT ≤ {_num(s['slo']['itl'])} ms)",
              f"  preemptions         {s['preemptions']}",
              f"  batch (decodes)     mean {_num(s['batch']['mean'])}, max "
              f"{_num(s['batch']['max'])}",
              f"  KV in use           mean {_num(100 * s['kv_use']['mean'])} %, max "
              f"{_num(100 * s['kv_use']['max'])} %"]
    lines += _engine_lines(s)
    if s.get("run_measured"):
        lines += ["", f"  against the measured run ({s['measured_source']}): simulated / "
                      f"measured (error)"]
        for metric, got in s["run_measured"].items():
            sim = s["latency"][metric][1]
            cells = [f"{k} {_num(sim.get(k))} / {_num(v)} ms ({_err(sim.get(k), v)})"
                     for k, v in got.items()]
            lines.append(f"  {LABELS[metric]:6}" + ", ".join(cells))
    if s["dropped"]:
        lines.append(f"  dropped             {s['dropped']} (a prompt larger than KV memory)")
    if s.get("replicas"):
        lines += ["", *replica_lines(s["replicas"])]
    return "\n".join([*lines, "", sheet_line]) + "\n"


def _engine_lines(s: dict[str, Any]) -> list[str]:
    """What the summary says of speculation and of the API server's loop, when it has them."""
    lines: list[str] = []
    if s.get("speculation"):
        sp = s["speculation"]
        lines.append(f"  speculation         mean {_num(sp['accepted'])} tokens accepted a "
                     f"decode a step (k = {sp['k']}; the sheet's spec_tokens_per_pass "
                     f"{_num(sp['expected'])})")
    if s.get("frontend"):
        f = s["frontend"]
        lines += [f"  API server loop     busy {_num(100 * f['busy_share'])} % of the run "
                  f"({_num(f['request_ms'])} ms a request, {_num(f['chunk_ms'])} ms a chunk"
                  f"{', coalescing' if f['coalesce'] else ''})"
                  + (": saturated, the loop and not the GPU sets the pace"
                     if f["busy_share"] >= SATURATED else ""),
                  f"  token lag           mean {_num(f['lag_ms']['mean'])} ms, p99 "
                  f"{_num(f['lag_ms']['p99'])} ms, max {_num(f['lag_ms']['max'])} ms "
                  f"(from a step's end to its tokens reaching their clients)"]
    return lines


def replica_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Each replica's load: its requests, the share of the run its steps took (busy), its
    mean batch and KV use while busy, its requests' TTFT (a prefill replica's: to its own
    prefill's end) and, with sessions, the share that found their prefix there (and of
    those, copied back from host memory)."""
    hits = any(r["hit_rate"] is not None for r in rows)
    out = [f"  {'replica':12}{'requests':>14}{'busy':>9}{'batch':>8}{'KV use':>9}"
           f"{'TTFT p50':>10}{'TTFT p99':>10} ms"
           + ("   prefix hits (from host)" if hits else "")]
    for r in rows:
        out.append(f"  {r['pool'] + ' ' + str(r['replica']):12}"
                   f"{r['requests']:>7} ({100 * r['share']:3.0f} %)"
                   f"{_num(100 * r['busy']):>7} %{_num(r['batch']):>8}"
                   f"{_num(100 * r['kv_use']):>7} %{_num(r['ttft_p50']):>10}"
                   f"{_num(r['ttft_p99']):>10}"
                   + (f"      {_num(100 * r['hit_rate'])} % ({_num(100 * r['reload_rate'])} %)"
                      if hits else ""))
    return out


def as_json(s: dict[str, Any], scenario: dict[str, str], prediction: str = "roofline") -> str:
    """The summary as JSON; ``prediction`` says what timed the steps (the scenario's label:
    roofline, or the calibration with its domain verdict and band)."""
    def q(value: float | None, unit: str) -> dict[str, Any]:
        ok = value is not None and math.isfinite(value)
        return {"value": value if ok else None, "unit": unit}

    latency = {name: {k: q(v, unit) for k, v in st.items()}
               for name, (unit, st) in s["latency"].items()}
    doc = {"scenario": scenario, "prediction": prediction, "partial": s["partial"],
           "requests": s["requests"],
           "measured": s["measured"], "warmup": s["warmup"], "steps": s["steps"],
           "simulated": q(s["simulated_s"], "s"), "window": q(s["window_s"], "s"),
           "latency": latency,
           "output_throughput": q(s["output_throughput"], "token/s"),
           "total_throughput": q(s["total_throughput"], "token/s"),
           "request_throughput": q(s["request_throughput"], "request/s"),
           "goodput": q(s["goodput"], "request/s"),
           "goodput_share": q(s["goodput_share"], ""),
           "slo": {"ttft": q(s["slo"]["ttft"], "ms"), "itl": q(s["slo"]["itl"], "ms")},
           "preemptions": s["preemptions"], "dropped": s["dropped"],
           "batch": {k: q(v, "") for k, v in s["batch"].items()},
           "kv_use": {k: q(v, "") for k, v in s["kv_use"].items()},
           "speculation": None if not s.get("speculation") else {
               "k": s["speculation"]["k"],
               "accepted_per_step": q(s["speculation"]["accepted"], "token"),
               "spec_tokens_per_pass": q(s["speculation"]["expected"], "token")},
           "run_measured": {metric: {k: q(v, "ms") for k, v in got.items()}
                            for metric, got in (s.get("run_measured") or {}).items()},
           "frontend": _frontend_json(s.get("frontend"), q),
           "overloaded": s["overload"] is not None,
           "overload": None if not s["overload"] else {
               "offered": q(s["overload"]["offered"], "request/s"),
               "sustained": q(s["overload"]["sustained"], "request/s"),
               "queue_growth": s["overload"]["queue_growth"]},
           "series": {"unit": {"t": "s", "batch": "", "kv_use": ""},
                      "points": s["series"]},
           "replicas": [_replica_json(r, q) for r in s.get("replicas") or []]}
    return json.dumps(doc, indent=2) + "\n"


def _frontend_json(f: dict[str, Any] | None, q: Callable[[float | None, str], Any]) -> Any:
    return None if not f else {
        "request_time": q(f["request_ms"], "ms"), "chunk_time": q(f["chunk_ms"], "ms"),
        "coalesce": f["coalesce"], "busy_share": q(f["busy_share"], ""),
        "lag": {k: q(v, "ms") for k, v in f["lag_ms"].items()}}


def _replica_json(r: dict[str, Any], q: Callable[[float | None, str], Any]) -> dict[str, Any]:
    return {"pool": r["pool"], "replica": r["replica"], "requests": r["requests"],
            "share": q(r["share"], ""), "busy": q(r["busy"], ""), "batch": q(r["batch"], ""),
            "kv_use": q(r["kv_use"], ""), "ttft_p50": q(r["ttft_p50"], "ms"),
            "ttft_p99": q(r["ttft_p99"], "ms"),
            "hit_rate": None if r["hit_rate"] is None else q(r["hit_rate"], ""),
            "reload_rate": None if r["reload_rate"] is None else q(r["reload_rate"], "")}


ROW_UNITS = {"request": "", "arrival": "s", "first_token": "s", "end": "s", "isl": "token",
             "osl": "token", "ttft": "ms", "tpot": "ms", "e2e": "s", "preempted": ""}


def request_rows(run: Run) -> dict[str, np.ndarray]:
    t = run.engine.reqs.table()
    rows: dict[str, np.ndarray] = {"request": np.arange(len(t["isl"]), dtype=np.int64)}
    for k in ROW_UNITS:
        if k != "request":
            rows[k] = t[k] * (1e3 if ROW_UNITS[k] == "ms" else 1)
    return rows


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
