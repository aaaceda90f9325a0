"""A measured run that speculated, as the sheet's speculative cells its setup sets."""

from __future__ import annotations

from perfgraph.engine.numbers import number
from perfgraph.measured.adapters import MeasuredRun
from perfgraph.measured.baseline import Baseline


def speculative_sets(run: MeasuredRun, base: Baseline,
                     notes: list[str]) -> tuple[tuple[str, str], ...]:
    """A run that speculated with MTP (``spec_decoding`` "mtp") as the sheet's speculative
    cells: ``spec_k`` = ``mtp_draft_tokens`` (the drafts a step proposes: its engine file's
    default, or the launch flag a ``--set mtp_draft_tokens`` gives) and ``spec_draft_layers``
    = 1 (DeepSeek's one MTP module, run once a draft). A ``--set`` of either wins; the
    acceptance ``spec_alpha`` stays the sheet's or the calibration's. Another method is
    named, not modelled."""
    method = (run.spec_decoding or "none").strip().lower()
    if method == "none":
        return ()
    if method != "mtp" or "mtp_draft_tokens" not in base.cells:
        notes.append(f"speculative decoding {run.spec_decoding!r} not modelled (only MTP "
                     "is): modelled without speculation")
        return ()
    given = base.set_cells
    sets = tuple((cell, value) for cell, value in (("spec_k", "mtp_draft_tokens"),
                                                   ("spec_draft_layers", "1"))
                 if cell not in given)
    alpha = f" at acceptance spec_alpha {number(base.sheet.magnitude('spec_alpha'), 3)}" \
        if base.sheet is not None else ""
    where = "--set spec_k" if "spec_k" in given else \
        "--set mtp_draft_tokens" if "mtp_draft_tokens" in given else \
        f"the {run.engine or base.engine} engine file's default mtp_draft_tokens; pass " \
        "--set mtp_draft_tokens=N for a run launched with another count"
    notes.append(f"MTP speculative decoding modelled: spec_k drafts a step ({where}), each "
                 f"one pass of the one MTP layer (spec_draft_layers 1){alpha}; TPOT is a "
                 "step ÷ spec_tokens_per_pass")
    return sets
