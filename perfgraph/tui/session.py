"""The dashboard's state without any widget: the live scenario, its baseline, undo, saving.

Widgets call these methods and redraw the cells each returns; nothing here imports textual,
so the rules of editing (what a what-if changes, what undo puts back, what a save writes)
are tested without a terminal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfgraph.engine.declarations import Declaration, Origin
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.scenario import save as scenario_save
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load
from perfgraph.scenario.save import CHOICE_KEYS, SAVED_KEYS, FileStamp

#: Where an edit made in the dashboard says it came from (``explain`` shows it).
EDIT = Origin("dashboard")


@dataclass(frozen=True)
class Undo:
    """One step back: declarations to restore, or a scenario to reload with its edits."""

    label: str
    declarations: tuple[Declaration, ...] = ()
    spec: ScenarioSpec | None = None
    edits: tuple[Declaration, ...] = ()


def _value(sheet: Sheet, name: str) -> float | None:
    return None if sheet.error(name) else sheet.magnitude(name)


def _edit_error(name: str, exc: Exception) -> InputError:
    """An edit that failed, said without the file:line of the value it would replace."""
    message = exc.message if isinstance(exc, PerfgraphError) else str(exc)
    return InputError(message, name=name)


class Session:
    """A loaded scenario being edited: what the dashboard shows and changes."""

    def __init__(self, scenario: Scenario, loaded: FileStamp | None = None) -> None:
        self.scenario = scenario
        #: Where ``save`` writes, as it was when read or last written (None: save as).
        self.stamp = loaded or (scenario_save.stamp(scenario.file.path)
                                if scenario.file else None)
        sheet = scenario.sheet
        #: Every cell's value as loaded: what the deltas are measured against.
        self.baseline: dict[str, float | None] = {n: _value(sheet, n) for n in sheet.names}
        self.baseline_choices = self.choices()
        self._undo: list[Undo] = []
        self.notes: list[str] = []
        self._saved = self._state()

    # ------------------------------------------------------------------ reading
    @property
    def sheet(self) -> Sheet:
        return self.scenario.sheet

    def value(self, name: str) -> float | None:
        return _value(self.sheet, name)

    def changed(self, name: str) -> bool:
        """True when the cell's value differs from the scenario as loaded."""
        now, then = self.value(name), self.baseline.get(name)
        if now is None or then is None:
            return (now is None) != (then is None)
        return not math.isclose(now, then, rel_tol=1e-12, abs_tol=0.0)

    def choices(self) -> dict[str, str]:
        return {k: scenario_save.choice(self.scenario, k) for k in CHOICE_KEYS}

    def _state(self) -> tuple[object, ...]:
        """What a save would write: the choices, and each edited cell's value or formula."""
        edits = tuple((n, d.value, d.formula.text if d.formula else None)
                      for n, d in scenario_save.edited(self.sheet).items())
        return tuple(self.choices().items()), edits

    @property
    def unsaved(self) -> bool:
        """True when the edits differ from the file as last loaded or saved (quit asks)."""
        return self._state() != self._saved

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def undo_labels(self) -> list[str]:
        return [u.label for u in self._undo]

    # ------------------------------------------------------------------ edits
    def preview(self, name: str, raw: Any, before: Declaration) -> list[str]:
        """Show ``raw`` in cell ``name`` while it is typed; on error put ``before`` back.

        Raises InputError (the sheet as it was before the edit) for text that is not yet
        a value or a formula.
        """
        try:
            return self.sheet.set(name, raw, EDIT)
        except (PerfgraphError, ArithmeticError) as exc:
            if self.sheet.declaration(name) != before:
                self.sheet.restore(before)
            raise _edit_error(name, exc) from None

    def commit(self, name: str, before: Declaration) -> bool:
        """Record a finished edit for undo; False when it changed nothing."""
        if self.sheet.declaration(name) == before:
            return False
        self._undo.append(Undo(f"edit {name}", (before,)))
        return True

    def cancel(self, before: Declaration) -> list[str]:
        if self.sheet.declaration(before.name) == before:
            return []
        return self.sheet.restore(before)

    def set(self, name: str, raw: Any) -> list[str]:
        """Set a cell in one step (an edit that is not typed key by key)."""
        before = self.sheet.declaration(name)
        changed = self.preview(name, raw, before)
        self.commit(name, before)
        return changed

    def reset(self, name: str) -> list[str]:
        """Put a cell back as the scenario loaded it (unpin it)."""
        before = self.sheet.declaration(name)
        changed = self.sheet.unpin(name)
        self.commit(name, before)
        return changed

    def switch(self, kind: str, value: str) -> None:
        """Load another model, hardware, workload or precision, keeping the edits."""
        if kind not in CHOICE_KEYS:
            raise InputError(f"cannot switch {kind!r}; expected one of {CHOICE_KEYS}")
        if self.choices()[kind] == value:
            return
        old = self.scenario.spec
        kept = tuple(scenario_save.edited(self.sheet).values())
        choice: dict[str, Any] = {kind: value}
        self._reload(replace(old, **choice), kept)
        self._undo.append(Undo(f"{kind} {value}", spec=old, edits=kept))

    def _reload(self, spec: ScenarioSpec, edits: Iterable[Declaration]) -> None:
        scenario = load(spec)
        self.notes = []
        for decl in edits:
            try:
                scenario.sheet.restore(decl)
            except PerfgraphError as exc:
                self.notes.append(f"{decl.name}: edit dropped: {exc.message}")
        self.scenario = scenario

    def apply_lever(self, lever: Any) -> list[str]:
        """Apply a lever (perfgraph.whatif.lever_advice) as a what-if; undo takes it back."""
        from perfgraph.whatif import lever_advice as levers
        previous = levers.apply(self.sheet, lever)  # in the order to restore them
        self._undo.append(Undo(f"lever {lever.title}", tuple(previous)))
        return self.sheet.names

    def apply_choices(self, label: str, choices: dict[str, str],
                      sets: Iterable[tuple[str, str]]) -> list[str]:
        """Switch to ``choices`` (a plan's hardware and precision), then set each of ``sets``:
        one what-if, one undo step. On a failure nothing stays changed (InputError)."""
        old, kept = self.scenario.spec, tuple(scenario_save.edited(self.sheet).values())
        now = {**self.choices(), "engine": self.scenario.engine}
        switch = {k: v for k, v in choices.items() if now.get(k) != v}
        if set(switch) - set(SAVED_KEYS):
            raise InputError(f"cannot switch {sorted(switch)}; expected {SAVED_KEYS}")
        if switch:
            self._reload(replace(old, **switch), kept)  # type: ignore[arg-type]
        before: list[Declaration] = []
        for name, raw in sets:
            try:
                before.append(self.sheet.declaration(name))
                self.sheet.set(name, raw, EDIT)
            except (PerfgraphError, ArithmeticError) as exc:
                if switch:
                    self._reload(old, kept)
                else:
                    for decl in reversed(before):
                        self.sheet.restore(decl)
                raise _edit_error(name, exc) from None
        self._undo.append(Undo(label, spec=old, edits=kept) if switch
                          else Undo(label, tuple(reversed(before))))
        return self.sheet.names

    def undo(self) -> str | None:
        """Take back the last edit, switch or lever; its label, or None if nothing to undo."""
        if not self._undo:
            return None
        step = self._undo.pop()
        if step.spec is not None:
            self._reload(step.spec, step.edits)
        for decl in step.declarations:  # in the order given: the last change first
            self.sheet.restore(decl)
        return step.label

    # ------------------------------------------------------------------ saving
    def save(self, *, force: bool = False) -> str:
        """Write the edits into the scenario file; its path. InputError if there is none."""
        if self.stamp is None:
            raise InputError("this scenario has no file yet: save it as a new file")
        self.stamp = scenario_save.save(self.scenario, self.stamp, force=force)
        self._saved = self._state()
        return self.stamp.path

    def rescue(self) -> str:
        """Write the edits to a new file beside the scenario's (or here, without one) after
        the dashboard failed: ``NAME.recovered.toml``, ``NAME.recovered-2.toml`` …; its path.
        Never overwrites a file."""
        base = Path(self.stamp.path) if self.stamp else Path("perfgraph-scenario.toml")
        for n in range(1, 100):
            suffix = ".recovered" if n == 1 else f".recovered-{n}"
            path = base.with_name(base.stem + suffix + ".toml")
            if not path.exists():
                return self.save_as(str(path))
        raise InputError(f"{base.parent}: 99 recovered files already; the edits were not kept")

    def save_as(self, path: str, *, overwrite: bool = False) -> str:
        source = self.stamp
        if source is None and self.scenario.file is not None:
            source = scenario_save.stamp(self.scenario.file.path)
        self.stamp = scenario_save.save_as(self.scenario, Path(path), source,
                                           overwrite=overwrite)
        self._saved = self._state()
        return self.stamp.path
