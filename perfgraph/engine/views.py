"""Read-only views the engine hands out: the CLI and the dashboard read these, not internals."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CellView:
    """A cell as a reader sees it: value in its declared unit, or the error that replaced it."""

    name: str
    unit: str
    group: str
    doc: str
    source: str
    value: float | None
    error: str | None
    is_input: bool
    pinned: bool
    flag: bool
    formula: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Explanation:
    """What ``perfgraph explain`` shows: formula, formula with values, result, neighbours."""

    cell: CellView
    substituted: str | None
    precedents: tuple[CellView, ...]
    dependents: tuple[CellView, ...]
    origin: str | None
