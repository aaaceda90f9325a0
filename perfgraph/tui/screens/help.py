"""Help (``?``): what the dashboard shows and the keys that drive it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# perfgraph dashboard

A spreadsheet of LLM inference performance. Every row is a cell of the quantity graph:
inputs (from the hardware, the model, the workload and the precision) and results computed
from them. Edit an input, or pin any result to a value or a formula, and everything that
depends on it recomputes at once. **Δ loaded** is each cell's change against the scenario
as it was loaded.

| key | what it does |
|---|---|
| ↑ ↓, PgUp PgDn | move between cells |
| Enter, `e` | edit the cell in the formula bar: a number in its unit, `4.8 TB/s`, or a formula |
| Enter, Esc | (editing) keep the edit; cancel it (the cell goes back to what it was) |
| ← →, Home End | (editing) move in the text; Backspace, Del, Ctrl+W, Ctrl+U, Ctrl+K delete |
| `x` | reset the cell to the scenario as loaded (unpin it) |
| `u`, Ctrl+Z | undo the last edit, switch or lever |
| `1` … `7` | explain · roofline · concurrency · levers · measured · plan · simulate |
| `b` | the scenario bar: Tab moves between its choices, Enter opens one, Esc goes back |
| `a` | (levers) apply the highlighted lever as a what-if; (plan) apply the highlighted plan |
| `s`, `e` | (plan) search again; edit the SLOs and the rate (Enter searches) |
| `o` | (simulate) closed loop of `concurrency` users ⇄ open loop at `request_rate` |
| Ctrl+S | save the edits into the scenario file (comments kept) |
| Ctrl+A | save as a new scenario file |
| Ctrl+P | command palette: jump to a cell, switch model, hardware, workload, precision |
| `?` | this help |
| `q`, Ctrl+Q | quit (asks first while edits are not saved) |

The formula bar over the table shows what the highlighted cell holds (its formula, or its
value in its unit); `e` edits it there, the text at first all selected so that typing
replaces it. While an edit is open every key is the edit's (`q` and `u` are typed), and the
sheet follows each one. The bar at the top picks the model, hardware, workload and
precision from the catalogs (edits are kept), and TP and PP. **Explain** shows the
highlighted cell's formula, the formula with its values, and the cells it reads and that
read it: Enter on one jumps there.
A cell whose formula fails shows `#ERR` and why; the cells that read it say so too.
In a terminal under 156 columns the view sits under the table; under 32 rows the header
and the tabs are left out (the keys `1`–`7` still switch views), the two concurrency plots
stand side by side, and the measured view keeps its runs and leaves its plots out.

**Measured** (`perfgraph tui --measured RUN…`, files or folders of vLLM, SGLang, AIPerf
or InferenceMAX results; without them `5` says so) lists every run against the model at
the run's own configuration: the % of possible of each metric in the table, and measured /
roofline of the highlighted run under it, as `perfgraph compare` prints them. The plots
show the highlighted run's configuration: the model's throughput and TPOT against
concurrency, with every run made at that configuration as a point.

**Plan** asks `perfgraph plan`'s search: the SLOs (TTFT, ITL, optionally E2E) and a rate,
filled from the sheet's `ttft_slo`, `itl_slo` and `request_rate` at first. It searches the
scenario's model and workload on every catalog accelerator and precision, TP, PP,
aggregated or disaggregated, at batches 1 … 1024 about √2 apart (a worker thread; the
dashboard keeps answering), and shows how many candidates it searched and how many met the
SLOs, the Pareto frontier of tokens/s per GPU against tokens/s per user, and the best plan,
the runners-up and the frontier as rows (their TTFT is at the rate, queue included, and
their ITL the worst gap: what the SLOs hold, and what the summary strip shows beside TTFT
and ITL as "at rate" and "worst" once applied). `a` applies a row to the sheet as one
what-if (its hardware and precision, TP, PP, batch and mode, and the question's rate and
SLOs): Δ shows what it changed and `u` takes it back.

**Simulate** runs `perfgraph simulate` on the sheet (1000 requests, seed 0) each time it is
shown after a change: the CDFs of TTFT and ITL with their p50 and p99, the batch over time,
and the summary, labelled roofline or calibrated as `perfgraph simulate` labels it.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(HELP)
