"""What the dashboard writes in its cells: values, deltas against the load, marks, regimes.

Plain functions over a :class:`~perfgraph.tui.session.Session`, so the words and numbers on
screen are tested without a terminal. Every number comes from the sheet.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from perfgraph.engine.numbers import quantity
from perfgraph.tui.session import Session

#: Where the catalogs and sheets live, so paths show relative to it on every machine.
ROOT = Path(__file__).resolve().parent.parent.parent

#: The results the summary strip shows, in order: (cell, label).
HEADLINE = (("ttft", "TTFT"), ("itl", "ITL"), ("throughput", "throughput"),
            ("throughput_per_gpu", "per GPU"), ("e2e_latency", "E2E"),
            ("max_concurrency_paged", "KV fits"))
#: A headline result's value as served, which the SLOs (and the plan view) hold, shown
#: beside it where it differs: (cell, served cell, label).
SERVED = {"ttft": ("ttft_at_rate", "at rate"), "itl": ("itl_worst", "worst")}


def short_path(path: str) -> str:
    """A path relative to the checkout (or the package), else its file name."""
    p = Path(path)
    if not p.is_absolute():
        return path
    for base in (ROOT, ROOT / "perfgraph" / "catalog_data"):
        try:
            return str(p.resolve().relative_to(base.resolve()))
        except ValueError:
            continue
    return p.name


def short_origin(origin: str | None) -> str:
    if not origin:
        return ""
    path, sep, line = origin.rpartition(":")
    if sep and line.isdigit():
        return f"{short_path(path)}:{line}"
    return short_path(origin)


def value_text(session: Session, name: str) -> Text:
    """The cell's value with a readable unit, or ``#ERR …`` in the error style."""
    sheet = session.sheet
    err = sheet.error(name)
    if err is not None:
        return Text(f"#ERR {err.message}", style="bold red")
    decl = sheet.declaration(name)
    style = "bold" if session.changed(name) else ""
    return Text(quantity(sheet.magnitude(name), decl.unit, flag=decl.flag), style=style)


def delta_text(session: Session, name: str) -> Text:
    """How far the cell moved from the scenario as loaded: ``+98.5%``, ``on→off``, ``""``."""
    if not session.changed(name):
        return Text("")
    now, then = session.value(name), session.baseline.get(name)
    if now is None:
        return Text("→ #ERR", style="red")
    if then is None:
        return Text("was #ERR", style="green")
    decl = session.sheet.declaration(name)
    if decl.flag:
        return Text(f"{quantity(then, '', flag=True)}→{quantity(now, '', flag=True)}",
                    style="yellow")
    if then == 0:
        return Text(f"+{quantity(now, decl.unit)}", style="yellow")
    ratio = now / then - 1
    arrow = "▲" if ratio > 0 else "▼"
    return Text(f"{arrow}{ratio * 100:+.1f}%", style="yellow")


def mark_text(session: Session, name: str) -> Text:
    """``pinned`` (a result held to a value or formula), ``edited`` (an input), ``input``."""
    sheet = session.sheet
    decl, loaded = sheet.declaration(name), sheet.loaded_declaration(name)
    if sheet.is_pinned(name):
        return Text("pinned", style="bold magenta")
    if loaded.is_input and (decl.value != loaded.value or decl.formula is not None):
        return Text("edited", style="bold cyan")
    if loaded.is_input:
        return Text("input", style="dim")
    return Text("")


def regime(session: Session) -> str:
    """Which roof each phase is under: ``decode memory-bound · prefill compute-bound``."""
    sheet = session.sheet
    parts = []
    if sheet.error("decode_compute_bound") is None:
        bound = "compute" if sheet.magnitude("decode_compute_bound") else "memory"
        parts.append(f"decode {bound}-bound")
    if sheet.error("prefill_intensity") is None and sheet.error("ridge_point") is None:
        above = sheet.magnitude("prefill_intensity") >= sheet.magnitude("ridge_point")
        parts.append(f"prefill {'compute' if above else 'memory'}-bound")
    return " · ".join(parts)


def served_text(session: Session, name: str) -> Text:
    """`` (worst 20.24 ms)``: the value as served where it is not the cell's own."""
    served, label = SERVED.get(name, (None, ""))
    sheet = session.sheet
    if served is None or served not in sheet.names or sheet.error(served) is not None \
            or sheet.error(name) is not None:
        return Text()
    shown = value_text(session, served)
    if shown.plain == value_text(session, name).plain:
        return Text()
    return Text.assemble((f" ({label} ", "dim"), shown, (")", "dim"))


def headline(session: Session) -> Text:
    """The summary strip: the headline results with their deltas; then the regime, where
    saves go and how many cells differ from the scenario as loaded."""
    out = Text(no_wrap=True, overflow="ellipsis")  # two lines, cut at the screen's edge
    for name, label in HEADLINE:
        if name not in session.sheet.names:
            continue
        out.append(f"{label} ", style="dim")
        out.append_text(value_text(session, name))
        delta = delta_text(session, name)
        if delta.plain:
            out.append(" ")
            out.append_text(delta)
        out.append_text(served_text(session, name))
        out.append("   ")
    out.rstrip()
    out.append("\n")
    out.append(regime(session), style="bold")
    if session.scenario.calibration is not None:  # what the numbers are, before where saves go
        out.append(f"   ·   {session.scenario.prediction}", style="bold yellow")
    where = short_path(session.stamp.path) if session.stamp else "no scenario file yet"
    moved = sum(session.changed(n) for n in session.sheet.names)
    out.append(f"   ·   {where}   ·   {moved} cells differ from the scenario as loaded",
               style="dim")
    return out
