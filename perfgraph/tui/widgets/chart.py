"""A plotext chart that draws its figure afresh at every render, at the size it has then.

Plotext's ``build`` rewrites the figure's data in place (a log axis takes the log of the
points it holds), so a figure built twice, as a resize builds it, takes the log of logs:
``log10(0)`` of a concurrency of 1, ``math domain error``, or a legend that indexes points
no longer there. A :class:`Chart` keeps the function that draws its figure, and each render
clears the figure and draws it again before the build. A chart with no room for a canvas
says so in one line instead of drawing axes upside down; a title too wide for it is cut
(plotext would leave it out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.visual import VisualType
from textual_plotext import PlotextPlot

#: The smallest chart drawn: below it a title, the ticks and a label leave no canvas.
MIN_WIDTH, MIN_HEIGHT = 24, 7

#: Columns the y ticks and the frame take beside a canvas, at most (``10136.9┤``, ``│``).
TICKS = 12

Painter = Callable[[Any], None]


class Chart(PlotextPlot):
    """A PlotextPlot drawn by a painter (a function of the plotext figure) at each render."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._painter: Painter | None = None

    def paint(self, painter: Painter) -> None:
        """Draw with ``painter`` from now on (it is called again at every render)."""
        self._painter = painter
        self.refresh()

    def say(self, title: str) -> None:
        """A figure with only a title: why there is nothing to plot."""
        self.paint(lambda plt: plt.title(title))

    def render(self) -> VisualType:
        width, height = self.size
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return Text(f"(no room for this chart at {width}×{height}: it needs "
                        f"{MIN_WIDTH}×{MIN_HEIGHT})", style="dim", no_wrap=True,
                        overflow="ellipsis")
        self.plt.clear_figure()
        if self._painter is not None:
            self._painter(self.plt)
        self._fit_title(width)
        return super().render()

    def _fit_title(self, width: int) -> None:
        """Cut a title wider than the canvas (the chart less its y ticks, at most 11
        columns here): plotext leaves it out whole otherwise."""
        title = getattr(getattr(self.plt, "monitor", None), "title", None)  # plt.title()'s
        room = width - TICKS
        if isinstance(title, str) and len(title) > room:
            self.plt.title(title[:room - 1] + "…")
