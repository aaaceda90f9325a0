"""Plan: the SLOs and a rate as inputs, ``perfgraph plan``'s search, its frontier and plans.

The search (:mod:`perfgraph.tui.planning`) runs in a worker thread, so the dashboard keeps
answering; it starts when the view is first shown and again on ``s`` or Enter in an input.
``a`` (or Enter on a row) applies the highlighted plan to the sheet as one what-if: the
hardware and precision it chose, its TP, PP, batch and mode, and the question's rate and
SLOs; ``u`` takes it back whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Static
from textual.worker import get_current_worker

from perfgraph.engine.numbers import number, quantity
from perfgraph.errors import PerfgraphError
from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.tui import planning
from perfgraph.tui.planning import PlanAnswer, PlanRow
from perfgraph.tui.widgets.chart import Chart

if TYPE_CHECKING:
    from perfgraph.tui.session import Session
    from perfgraph.tui.view_registry import ViewContext

#: input id → (label, the sheet's cell its default comes from; None: empty, not asked)
INPUTS = {"ttft": (planning.FIELDS["ttft"], "ttft_slo"),
          "itl": (planning.FIELDS["itl"], "itl_slo"),
          "e2e": (planning.FIELDS["e2e"], None), "rate": (planning.FIELDS["rate"], "request_rate")}
#: (heading, width): each the widest text it holds and one column of space (the table has
#: no cell padding), 76 in all: the table fits 80 columns (tokens/s per GPU and per user).
COLUMNS = (("rank", 6), ("plan", 27), ("batch", 6), ("GPUs", 5), ("TTFT ms", 8),
           ("ITL ms", 7), ("GPU t/s", 8), ("user t/s", 9))


def plan_text(row: PlanRow) -> str:
    """``h200 fp8 tp2 pp1 agg``."""
    p = row.plan
    return (f"{p.hardware} {p.precision} tp{number(p.tp)} pp{number(p.pp)} "
            f"{'disagg' if p.disaggregated else 'agg'}")


def row_cells(row: PlanRow) -> tuple[str, ...]:
    """A plan's row: its TTFT and ITL are the cells its SLOs hold (``ttft_at_rate``,
    ``itl_worst``), which the summary strip shows too once the plan is applied."""
    p = row.plan
    return (row.rank, plan_text(row), number(p.batch), number(p.gpus), number(p.ttft),
            number(p.itl), number(p.per_gpu), number(p.per_user))


def status_text(answer: PlanAnswer | None, stale: bool) -> Text:
    if answer is None:
        return Text("searching…", style="dim")
    if answer.message is not None and not answer.searched:
        return Text(answer.message, style="red")  # a bad question
    text = Text(f"searched {answer.searched:,}, feasible {answer.feasible:,}", style="bold")
    text.append(f" ({number(answer.seconds, 2)} s)", style="dim")
    if answer.message is not None:
        text.append("\n" + answer.message, style="yellow")
    elif answer.rows:
        text.append(f"  best: {plan_text(answer.rows[0])}, "
                    f"{number(answer.rows[0].plan.gpus)} GPUs")
    if stale:
        text.append("\nthe scenario changed since: s searches again", style="yellow")
    return text


class FrontierPlot(Chart):
    """Tokens/s per GPU against tokens/s per user: the frontier, the best plan, the row.

    What each marker is goes in the title, not in a legend: plotext draws its legend over
    the canvas's top-left corner, where the best plan (the most tokens/s per GPU, at few
    tokens/s per user) sits."""

    def draw(self, answer: PlanAnswer | None, row: PlanRow | None) -> None:
        if answer is None or not answer.frontier:
            self.say("Pareto frontier: no plan yet" if answer is None else
                     f"Pareto frontier: {answer.message or 'no plan'}")
        else:
            self.paint(lambda plt: self.figure(plt, answer, row))

    @staticmethod
    def figure(plt: Any, answer: PlanAnswer, row: PlanRow | None) -> None:
        x = [p.plan.per_user for p in answer.frontier]
        y = [p.plan.per_gpu for p in answer.frontier]
        plt.plot(x, y, marker="braille", color="cyan")
        plt.scatter(x, y, marker="●", color="cyan")
        best = answer.rows[0]
        plt.scatter([best.plan.per_user], [best.plan.per_gpu], marker="◆", color="red")
        key = f"● frontier ({len(x)} plans)  ◆ best"
        if row is not None and row is not best:
            plt.scatter([row.plan.per_user], [row.plan.per_gpu], marker="x", color="yellow")
            key += f"  x {row.rank}: {plan_text(row)}"
        plt.title(key)
        plt.xlabel("tok/s per user")
        plt.ylabel("tok/s per GPU")


class QuestionField(Input):
    """One field of the question. Tab moves the focus at once, not when the key has bubbled
    up to the app's binding: keys typed in the same burst are already on their way to this
    field, and a key that reaches it after the focus left (Tab, Enter) goes on to the widget
    that has it now, instead of landing here."""

    async def _on_key(self, event: events.Key) -> None:
        focused = self.app.focused
        if event.key in ("tab", "shift+tab") and focused is self:
            event.stop()
            event.prevent_default()
            (self.screen.focus_next if event.key == "tab" else self.screen.focus_previous)()
        elif focused is not self and focused is not None:
            event.stop()
            event.prevent_default()
            focused.post_message(events.Key(event.key, event.character))
        else:
            await super()._on_key(event)


class PlanPanel(Vertical):
    """The question, the search's counts, the frontier and the plans (view ``6``)."""


    BINDINGS = [Binding("s", "search", "Search"), Binding("a", "apply", "Apply plan"),
                Binding("e", "ask", "Edit the question"),
                Binding("escape", "to_plans", "Plans", show=False)]

    class Apply(Message):
        """Apply a plan: switch to ``choices`` (hardware, precision), then set ``sets``."""

        def __init__(self, label: str, choices: dict[str, str],
                     sets: tuple[tuple[str, str], ...]) -> None:
            super().__init__()
            self.label, self.choices, self.sets = label, choices, sets

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.answer: PlanAnswer | None = None
        self.spec: ScenarioSpec | None = None  # the scenario searched, or to search
        self.searched_spec: ScenarioSpec | None = None
        self.space: tuple[str, ...] = planning.SEARCH

    @classmethod
    def create(cls, context: ViewContext) -> PlanPanel:
        return cls(id="plan-panel")

    def compose(self) -> ComposeResult:
        with Horizontal(id="plan-question"):
            for key, (label, _) in INPUTS.items():
                yield Label(label, classes="plan-label")
                yield QuestionField(placeholder="none" if key == "e2e" else "", compact=True,
                                    id=f"plan-{key}")
        yield Static(status_text(None, False), id="plan-status")
        yield FrontierPlot(id="plan-frontier")
        yield DataTable(id="plans", cursor_type="row", cell_padding=0)

    def on_mount(self) -> None:
        table = self.query_one("#plans", DataTable)
        for name, width in COLUMNS:
            table.add_column(name, key=name, width=width)

    # ------------------------------------------------------------------ the protocol
    def refresh_from(self, session: Session, cell: str | None) -> None:
        """Fill the question from the sheet the first time; search then. Later changes of
        the sheet only mark a search of another scenario (model, workload) as stale."""
        self.spec = planning.search_spec(session.scenario.spec)
        if self.searched_spec is None:
            sheet = session.sheet
            for key, (_, cell_name) in INPUTS.items():
                if cell_name is not None and not self.query_one(f"#plan-{key}", Input).value:
                    value = sheet.magnitude(cell_name)
                    unit = sheet.declaration(cell_name).unit
                    self.query_one(f"#plan-{key}", Input).value = quantity(value, unit)
            self.action_search()
        else:
            self._status()

    # ------------------------------------------------------------------ searching
    def question(self) -> tuple[dict[str, str], str]:
        slos = {k: self.query_one(f"#plan-{k}", Input).value for k in planning.SLOS}
        return slos, self.query_one("#plan-rate", Input).value

    def action_search(self) -> None:
        if self.spec is None:
            return
        self.searched_spec = self.spec
        self.answer = None
        self._status()
        slos, rate = self.question()
        self._search(self.spec, slos, rate, self.space)

    @work(thread=True, exclusive=True, group="plan")
    def _search(self, spec: ScenarioSpec, slos: dict[str, str], rate: str,
                space: tuple[str, ...]) -> None:
        try:
            answer = planning.search(spec, slos, rate, space)
        except PerfgraphError as exc:
            answer = PlanAnswer(message=exc.message)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.show, answer)

    def show(self, answer: PlanAnswer) -> None:
        """Draw ``answer`` (from the worker, or a saved ``plan --format json``)."""
        self.answer = answer
        table = self.query_one("#plans", DataTable)
        table.clear()
        for i, row in enumerate((*answer.rows, *answer.frontier)):
            table.add_row(*row_cells(row), key=str(i))
        self._status()
        self.query_one(FrontierPlot).draw(answer, self.highlighted())

    def _status(self) -> None:
        stale = self.answer is not None and self.searched_spec != self.spec
        self.query_one("#plan-status", Static).update(status_text(self.answer, stale))

    # ------------------------------------------------------------------ rows
    def highlighted(self) -> PlanRow | None:
        if self.answer is None:
            return None
        rows = (*self.answer.rows, *self.answer.frontier)
        i = self.query_one("#plans", DataTable).cursor_row
        return rows[i] if 0 <= i < len(rows) else None

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.query_one(FrontierPlot).draw(self.answer, self.highlighted())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_apply()

    def action_apply(self) -> None:
        row = self.highlighted()
        if row is None or self.answer is None:
            self.notify("no plan to apply: s searches", severity="warning")
            return
        choices = row.plan.catalog
        self.post_message(self.Apply(f"plan {row.rank}: {plan_text(row)}", choices,
                                     self.answer.sets(row)))

    # ------------------------------------------------------------------ the question
    def action_ask(self) -> None:
        """Focus the first field now: ``focus()`` waits for the queue, and keys typed
        right after ``e`` would reach the plans (``1`` showing the explain view)."""
        self.screen.set_focus(self.query_one("#plan-ttft", Input))

    def on_key(self, event: events.Key) -> None:
        """Keys typed right after ``e`` reach the plans table before any binding has moved
        the focus (a binding runs only when the key has bubbled up to the app): ``e`` moves
        it here, at once, and the characters that follow go on to the field in their order
        (a field keeps the characters typed into it, so only these bubble up here)."""
        focused = self.app.focused
        in_field = isinstance(focused, Input) and focused in self.query(Input)
        if event.key == "e" and not in_field:
            self.action_ask()
        elif in_field and event.is_printable:
            assert focused is not None
            focused.post_message(events.Key(event.key, event.character))
        else:
            return
        event.stop()
        event.prevent_default()

    def action_to_plans(self) -> None:
        self.screen.set_focus(self.query_one("#plans", DataTable))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_search()
        self.action_to_plans()
