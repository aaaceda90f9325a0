"""``python3 -m perfgraph.tui.screenshot [PATH]``: the README's picture of the dashboard.

Runs the dashboard headless on the default scenario at a fixed terminal size and writes the
SVG Textual exports (atomically) to ``perfgraph/tui/assets/dashboard.svg`` or ``PATH``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.scenario.loading import load
from perfgraph.tui.app import make_app

SIZE = (160, 50)
DEFAULT = Path(__file__).resolve().parent / "assets" / "dashboard.svg"
#: The cell the picture explains: ITL reads the decode step and the speculative yield.
CELL = "itl"


async def screenshot_svg(size: tuple[int, int] = SIZE, cell: str = CELL) -> str:
    app = make_app(load(), cell=cell)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        return app.export_screenshot(title="perfgraph tui: the default scenario")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT
    write_text_atomic(path, asyncio.run(screenshot_svg()))
    print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
