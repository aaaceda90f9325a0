"""Checked numbers and metric helpers of the measured-run adapters.

Every number a run carries is checked here (``check_number``, ``count``, ``positive``,
``tp_of``, ``concurrency_of``): NaN, infinite, negative, absurdly large, or (for counts and TP)
fractional values refuse the run with a reason, never a traceback.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .records import Metric, RunRefused

# --------------------------------------------------------------------------- numbers


#: Bounds a real run stays within; beyond them a number is a typo or a corrupt file.
MAX_TP = 1024  # GPUs in one tensor-parallel group
MAX_CONCURRENCY = 1_000_000  # requests in flight at once


def check_number(value: Any, what: str, allow_inf: bool = False) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise RunRefused(f"'{what}' is not a number ({value[:40]!r})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunRefused(f"'{what}' is not a number ({str(value)[:40]!r})")
    try:
        value = float(value)
    except OverflowError:  # a JSON integer with hundreds of digits
        raise RunRefused(f"'{what}' is too large (an integer beyond 1e308)") from None
    if math.isnan(value):
        raise RunRefused(f"'{what}' is NaN")
    if math.isinf(value) and not allow_inf:
        raise RunRefused(f"'{what}' is infinite")
    if value < 0:
        raise RunRefused(f"'{what}' is negative ({value})")
    return float(value)


def number(record: Mapping, key: str, required: bool = True, allow_inf: bool = False):
    """record[key] as a checked float; None if absent and not required."""
    if record.get(key) is None:
        if required:
            raise RunRefused(f"required field '{key}' is missing")
        return None
    return check_number(record[key], key, allow_inf)


def positive(record: Mapping, key: str, what: str = "") -> float:
    """record[key], required, as a checked float above 0 (a duration, a token total)."""
    value = number(record, key)
    if value <= 0:
        raise RunRefused(f"'{key}' is 0{what or ': it must be above 0'}")
    return value


def count(value: Any, what: str) -> int:
    """A number of requests: a whole number of at least 1."""
    n = check_number(value, what)
    if n == 0:
        raise RunRefused(f"'{what}' is 0: no request completed, nothing was measured")
    if not n.is_integer():
        raise RunRefused(f"'{what}' is {fmt_num(n)}: a count of requests must be a whole number")
    return int(n)


def completed_count(record: Mapping, key: str) -> int:
    if record.get(key) is None:
        raise RunRefused(f"required field '{key}' is missing")
    return count(record[key], key)


def tp_of(value: Any, what: str = "tp") -> int:
    """A tensor-parallel size: a whole number from 1 to ``MAX_TP``."""
    n = check_number(value, what)
    if not n.is_integer() or not 1 <= n <= MAX_TP:
        raise RunRefused(f"'{what}' is {fmt_num(n)}: TP must be a whole number from 1 to "
                         f"{MAX_TP}")
    return int(n)


def concurrency_of(value: Any, what: str = "concurrency") -> float:
    """A configured concurrency: at least 1 request in flight, at most ``MAX_CONCURRENCY``."""
    n = check_number(value, what)
    if not 1 <= n <= MAX_CONCURRENCY:
        raise RunRefused(f"'{what}' is {fmt_num(n)}: concurrency must be from 1 to "
                         f"{MAX_CONCURRENCY:,} requests in flight")
    return n


# --------------------------------------------------------------------------- metrics

_STAT = r"(mean|median|std|min|max|p\d+(?:\.\d+)?)"


def metric_key(base: str, statistic: str) -> str:
    return base if statistic == "mean" else f"{base}_{statistic}"


def put(metrics: dict, base: str, statistic: str, value: float, unit: str, definition: str):
    metrics[metric_key(base, statistic)] = Metric(value, unit, statistic, definition)


THROUGHPUTS = {  # the whole-system rates every format names alike: key -> (unit, definition)
    "request_throughput": ("request/s", "completed requests / s"),
    "output_throughput": ("token/s", "output tokens / s, whole system"),
    "input_throughput": ("token/s", "input tokens / s, whole system"),
    "total_throughput": ("token/s", "input + output tokens / s, whole system"),
}


def put_rate(metrics: dict, base: str, value: float, how: str = "") -> float:
    """Store a whole-system throughput; `how` says how it was obtained when not read directly."""
    unit, what = THROUGHPUTS[base]
    put(metrics, base, "mean", value, unit, f"{what} ({how})" if how else what)
    return value


def collect_stats(
    record: Mapping,
    names: Mapping[str, str],
    suffix: str,
    scale: float,
    definitions: Mapping[str, str],
) -> dict[str, Metric]:
    """Latency statistics from flat keys '<stat>_<name><suffix>' (e.g. 'p99_itl_ms')."""
    alternation = "|".join(re.escape(n) for n in names)
    pattern = re.compile(rf"^{_STAT}_({alternation}){re.escape(suffix)}$")
    metrics: dict[str, Metric] = {}
    for key, value in record.items():
        m = pattern.match(key)
        if m and value is not None:
            base = names[m.group(2)]
            value = check_number(value, key) * scale
            put(metrics, base, m.group(1), value, "ms", definitions[base])
    return metrics


def fmt_num(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"
