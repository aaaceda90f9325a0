"""A link that concurrent transfers share: the KV hand-offs leaving one prefill replica.

Each transfer needs some seconds of the whole link (the sheet's time for its bytes over the
link's bandwidth); while ``n`` are under way, each moves at ``1/n`` of the bandwidth
(processor sharing). That is how flows on one NIC behave: RDMA queue pairs and TCP
connections each get a fair share of the wire at once; neither NIXL, Mooncake nor NCCL
sends one prompt's KV only after the previous one has left (FIFO would be that), and under
FIFO a short prompt's KV would wait for a long one's whole transfer. Two transfers started
together each take twice as long as one alone; one that starts while another is nearly
done takes little longer than alone.
"""

from __future__ import annotations

import heapq
import math

import numpy as np


def shared(start: np.ndarray, work: np.ndarray) -> np.ndarray:
    """When each transfer ends (s): transfer ``i`` starts at ``start[i]`` (NaN: never; its end
    NaN) and needs ``work[i]`` seconds of the whole link, which the transfers under way share
    equally.

    Virtual time ``v`` runs at 1/n while n transfers are under way, so a transfer that
    starts at virtual time ``v0`` ends when ``v`` reaches ``v0 + work``: a heap of those
    virtual ends gives the next to finish (O(n log n))."""
    end = np.full(len(start), math.nan)
    order = [int(i) for i in np.argsort(start, kind="stable") if not math.isnan(start[i])]
    under: list[tuple[float, int]] = []  # (virtual end, transfer)
    now = v = 0.0
    k = 0
    while k < len(order) or under:
        arrive = float(start[order[k]]) if k < len(order) else math.inf
        finish = now + (under[0][0] - v) * len(under) if under else math.inf
        if finish <= arrive:
            v, i = heapq.heappop(under)
            now = end[i] = finish
            continue
        if under:
            v += (arrive - now) / len(under)
        now = arrive
        i = order[k]
        k += 1
        heapq.heappush(under, (v + float(work[i]), i))
    return end
