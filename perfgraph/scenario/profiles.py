"""Calibration profiles: overlays fitted by ``perfgraph calibrate`` on public runs, shipped
in ``profiles/`` (one file per hardware × engine), and what a prediction is labelled.

A profile is a calibration overlay with a ``[profile]`` table saying what it was fitted on::

    [profile]
    hardware = "h100-sxm"          # the catalog slug it applies to
    engine = "vllm"                # the serving engine whose runs it was fitted on
    engine_version = "vLLM 0.10 (InferenceMAX, Oct 2025)"
    runs = 30                      # runs fitted
    held_out = { ttft = 0.306, tpot = 0.047, throughput = 0.073 }   # median |error|

``--calibration auto`` picks the shipped profile for the scenario's hardware and engine;
every prediction is then labelled "calibrated: <profile>, N runs, held-out error X%" (an
overlay without ``[profile]``: its ``name``), and a scenario with no calibration "roofline".
"""

from __future__ import annotations

from pathlib import Path

from perfgraph._infra import tomlfile
from perfgraph.errors import DeclarationError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
PROFILE_KEYS = ("hardware", "engine", "engine_version", "runs", "held_out", "fitted_on",
                "workloads")
DEFAULT_ENGINE = "vllm"


def find_profile(hardware: str, engine: str | None = None) -> Path | None:
    """The shipped profile for a hardware slug and engine (vLLM when none is named)."""
    want = (hardware, engine or DEFAULT_ENGINE)
    for path in sorted(PROFILES_DIR.glob("*.toml")):
        table = tomlfile.read(path).data.get("profile", {})
        if (table.get("hardware"), table.get("engine")) == want:
            return path
    return None


def check_profile(doc: tomlfile.TomlDoc) -> None:
    """A ``[profile]`` table holds only known keys, of the right types."""
    table = doc.data.get("profile")
    if table is None:
        return
    if not isinstance(table, dict):
        raise doc.error("[profile] must be a table", "profile")
    for key, value in table.items():
        if key not in PROFILE_KEYS:
            raise DeclarationError(f"unknown key {key!r} in [profile]; expected one of: "
                                   f"{', '.join(PROFILE_KEYS)}", file=doc.path,
                                   line=doc.line("profile", key), name=key)
        if key == "runs" and (not isinstance(value, int) or value < 1):
            raise doc.error("runs must be a whole number of at least 1", "profile", key)
        if key == "held_out" and not (isinstance(value, dict) and all(
                isinstance(v, (int, float)) and v >= 0 for v in value.values())):
            raise doc.error("held_out must be a table of metric = fraction (≥ 0)",
                            "profile", key)


def label(doc: tomlfile.TomlDoc | None) -> str:
    """``roofline``, or ``calibrated: NAME, N runs, held-out error X%`` (the median over
    the metrics the profile states; TTFT, TPOT and throughput each shown)."""
    if doc is None:
        return "roofline"
    table = doc.data.get("profile", {})
    name = Path(doc.path).stem if table else (doc.data.get("name") or Path(doc.path).name)
    parts = [f"calibrated: {name}"]
    if isinstance(table.get("runs"), int):
        parts.append(f"{table['runs']} runs")
    held = table.get("held_out")
    if isinstance(held, dict) and held:
        shown = ", ".join(f"{metric} {100 * float(v):.0f}%" for metric, v in held.items())
        parts.append(f"held-out error {shown}")
    else:
        parts.append("held-out error not stated")
    return ", ".join(parts)
