"""The router in front of a pool of replicas: which replica each arriving request goes to.

- ``round-robin``: replica after replica, blind to load (nginx's and Kubernetes Services'
  default, vLLM's production-stack ``roundrobin``).
- ``least-outstanding``: the replica with the fewest requests in flight (sent and not
  ended), ties going round in turn (Envoy's and vLLM production-stack's least-request;
  SGLang router's ``shortest_queue``).
- ``prefix``: a request of a session goes to the replica that served the session's last
  turn (it holds the prefix's KV), unless that replica is overloaded: more than
  ``router_balance_abs_threshold`` requests in flight beyond the idlest replica and more
  than ``router_balance_rel_threshold`` times as many, when it goes to the least loaded, as
  SGLang's and vllm-router's ``cache_aware`` policy do; a request with no session yet
  placed goes to the least loaded.

A router reads only the replicas' loads at the request's arrival (``looks``: the pool
brings every replica up to that time first; round-robin needs none of it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError

ROUTERS = ("round-robin", "least-outstanding", "prefix")


@dataclass
class Router:
    name: str
    replicas: int
    abs_threshold: float = 0.0  # prefix: the balance guard (sheet cells)
    rel_threshold: float = 1.0
    last: int = -1  # the replica picked last

    @property
    def looks(self) -> bool:
        return self.name != "round-robin"

    def pick(self, loads: Sequence[int], home: int | None = None) -> int:
        """The replica for a request, given each replica's requests in flight and the
        replica that served its session last (None: none did)."""
        if self.name == "round-robin":
            choice = (self.last + 1) % self.replicas
        else:
            choice = self._least(loads)
            if self.name == "prefix" and home is not None and not self._overloaded(
                    loads[home], loads[choice]):
                choice = home
        self.last = choice
        return choice

    def _least(self, loads: Sequence[int]) -> int:
        """The least loaded replica; among equals, the first after the last picked."""
        n = self.replicas
        return min(((self.last + 1 + k) % n for k in range(n)), key=lambda j: loads[j])

    def _overloaded(self, load: int, least: int) -> bool:
        return load - least > self.abs_threshold and load > self.rel_threshold * least


def router(name: str, replicas: int, sheet: Sheet) -> Router:
    if name not in ROUTERS:
        raise InputError(f"{name!r}: expected one of {', '.join(ROUTERS)}", name="--router")
    if replicas < 1:
        raise InputError(f"{replicas}: need at least one replica", name="--replicas")
    return Router(name, replicas, sheet.magnitude("router_balance_abs_threshold"),
                  sheet.magnitude("router_balance_rel_threshold"))
