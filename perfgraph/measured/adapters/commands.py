"""The ``<result>.commands`` file that vLLM's benchmark scripts (``run-performance-benchmarks``
style harnesses, as in surajssd/llm-k8s) write beside a result JSON: ``{"client_command": …,
"gpu_type": "Standard_ND96asr_v4 x 2"}``. It names the machine (an Azure VM size × nodes) and,
in ``--result-filename tp4_pp2_…``, the server's TP and PP, which the result JSON lacks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .base import Adapter, Context, Document, MeasuredFileError, MeasuredRun, Runs, first_record

#: Azure VM sizes → (the GPU they hold, GPUs a node). Source: Microsoft Learn, "ND A100 v4
#: series" (Standard_ND96asr_v4: 8 × NVIDIA A100 40GB, NVLink 3.0, 200 Gb/s HDR InfiniBand
#: per GPU) and "NDm A100 v4 series" (Standard_ND96amsr_A100_v4: 8 × A100 80GB).
AZURE_SKUS = {"nd96asr_v4": ("NVIDIA A100-SXM4-40GB", 8),
              "nd96amsr_a100_v4": ("NVIDIA A100-SXM4-80GB", 8)}
MAX_BYTES = 64 * 1024


def commands_file(doc: Document) -> dict[str, Any] | None:
    """What the ``.commands`` file beside the result says (gpu, tp, pp, gpus, notes); None
    when there is none or it cannot be read (the result is read without it)."""
    path = Path(doc.source).with_suffix(".commands")
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {"notes": []}
    _machine(str(data.get("gpu_type") or ""), out, path.name)
    m = re.search(r"--result-filename\s+\S*?tp(\d+)_pp(\d+)", str(data.get("client_command", "")))
    if m:
        out["tp"], out["pp"] = int(m.group(1)), int(m.group(2))
        out["gpus"] = out["tp"] * out["pp"]
        out["notes"].append(f"TP {out['tp']} × PP {out['pp']} from the --result-filename in "
                            f"{path.name} (the result JSON does not say)")
    return out


def _machine(gpu_type: str, out: dict[str, Any], name: str) -> None:
    m = re.match(r"^\s*(?:Standard_)?([A-Za-z0-9_]+?)(-[^ ]*)?\s*x\s*(\d+)\s*$", gpu_type)
    if not m or m.group(1).lower() not in AZURE_SKUS:
        return
    gpu, per_node = AZURE_SKUS[m.group(1).lower()]
    nodes = int(m.group(3))
    out["gpu"] = gpu
    suffix = (m.group(2) or "").lower()
    link = "InfiniBand (GPUDirect RDMA)" if re.search(r"ib|infiniband|rdma", suffix) else \
        "Ethernet (the VM's default network)"
    out["notes"].append(f"hardware {gpu} from gpu_type {gpu_type!r} in {name}: Azure "
                        f"{m.group(1)} holds {per_node} of them a node; {nodes} node(s), "
                        f"{link} between nodes")


#: The keys of the summary table that vLLM's convert-results-json-to-markdown step writes
#: (``benchmark_results.json``: one row per test, the same numbers as the result JSONs).
SUMMARY_KEYS = {"Test name", "GPU", "# of req.", "Mean TTFT (ms)"}


class SummaryTableAdapter(Adapter):
    """Recognised so that it is refused with the reason, not read twice: each of its rows is a
    result JSON beside it, which holds the configuration and the per-request lengths."""

    format = "vllm-summary"
    reads = ("vLLM benchmark summary table (benchmark_results.json: 'Test name', 'GPU', "
             "'Mean TTFT (ms)' …): refused, read the result JSONs it summarises")

    def detect(self, doc: Document) -> bool:
        record = first_record(doc)
        return record is not None and SUMMARY_KEYS <= set(record)

    def read(self, doc: Document, ctx: Context) -> Runs:
        raise MeasuredFileError(doc.source, "a summary table of the vLLM result JSONs beside "
                                "it (same numbers, no lengths, TP or per-request arrays); "
                                "compare those files instead")

    def read_record(self, record: dict, index: int, ctx: Context, shared) -> MeasuredRun:
        raise NotImplementedError  # read() refuses the whole file
