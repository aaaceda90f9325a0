"""Command palette entries: jump to any cell, and switch any catalog choice."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from perfgraph.tui.widgets.scenario_bar import CATALOGS, catalog_options

Entry = tuple[str, str, Callable[[], Any]]


class CellCommands(Provider):
    """``explain ttft`` … for every cell; ``model llama-3.1-8b`` … for every catalog entry."""

    def entries(self) -> Iterator[Entry]:
        app: Any = self.app
        session = app.session
        for name in session.sheet.names:
            doc = session.sheet.declaration(name).doc
            yield f"explain {name}", doc, partial(app.explain_cell, name)
        choices = session.choices()
        for kind, _ in CATALOGS:
            for value in catalog_options(kind, choices[kind]):
                if value != choices[kind]:
                    yield (f"{kind} {value}", f"switch the {kind} (edits are kept)",
                           partial(app.choose, kind, value))

    async def discover(self) -> Hits:
        for text, help_text, command in self.entries():
            if not text.startswith("explain "):
                yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, command in self.entries():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
