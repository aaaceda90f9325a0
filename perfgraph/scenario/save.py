"""Writing a scenario back to TOML: the edits made to a live sheet, kept in the user's file.

A save rewrites the scenario file it was loaded from with tomlkit, so its comments, order and
layout stay; only the changed keys move. The file is written atomically (a temporary file,
then rename), and a file that changed on disk since it was loaded is not overwritten unless
the caller forces it. "Save as" writes a new scenario file with the model, hardware,
workload and precision keys and a ``[values]`` table.

What counts as an edit: a cell whose value or formula differs from the scenario as loaded,
and every ``--set`` from the command line (those are part of the loaded sheet, but not of
the file). Values are written in the cell's declared unit; pins as formula strings.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from perfgraph._infra.atomic import write_text_atomic
from perfgraph.engine.declarations import Declaration
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError
from perfgraph.scenario.catalog import KINDS, catalog_dir
from perfgraph.scenario.loading import DEFAULT_ENGINE, DEFAULTS, Scenario

if TYPE_CHECKING:  # tomlkit is imported by a save, not by the dashboard's start
    import tomlkit
    from tomlkit.items import Table

TomlValue = bool | int | float | str
CHOICE_KEYS = (*KINDS, "precision")
#: What a saved scenario names: the choices, and the serving engine when it is not the default.
SAVED_KEYS = (*CHOICE_KEYS, "engine")


class FileChangedError(InputError):
    """The scenario file changed on disk since it was loaded; saving needs ``force``."""


class TargetExistsError(InputError):
    """``save as`` onto a file that already exists needs ``overwrite``."""


@dataclass(frozen=True)
class FileStamp:
    """A file as it was when loaded: enough to tell whether it changed, and its text."""

    path: str
    mtime_ns: int
    size: int
    digest: str
    text: str


def stamp(path: str | Path) -> FileStamp:
    """Record ``path`` as it is now."""
    p = Path(path)
    try:
        data = p.read_bytes()
        st = p.stat()
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror}", file=str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=str(p)) from None
    return FileStamp(str(p), st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest(),
                     text)


def changed_on_disk(s: FileStamp) -> bool:
    """True when the file's content differs from ``s`` (or the file is gone)."""
    p = Path(s.path)
    try:
        st = p.stat()
        if st.st_mtime_ns == s.mtime_ns and st.st_size == s.size:
            return False
        return hashlib.sha256(p.read_bytes()).hexdigest() != s.digest
    except OSError:
        return True


# --------------------------------------------------------------------------- what changed
def toml_value(decl: Declaration) -> TomlValue:
    """A declaration as a ``[values]`` entry: its formula, or its value in the declared unit."""
    if decl.formula is not None:
        return decl.formula.text
    assert decl.value is not None
    if decl.flag:
        return bool(decl.value)
    if decl.value.is_integer() and abs(decl.value) < 2**53:
        return int(decl.value)
    return decl.value


def _content(d: Declaration) -> tuple[float | None, str | None]:
    return d.value, d.formula.text if d.formula else None


def edited(sheet: Sheet) -> dict[str, Declaration]:
    """Cells whose value or formula differs from the sheet as loaded, in sheet order."""
    return {n: sheet.declaration(n) for n in sheet.names
            if _content(sheet.declaration(n)) != _content(sheet.loaded_declaration(n))}


def _from_command_line(*decls: Declaration) -> bool:
    return any(d.origin is not None and d.origin.file == "--set" for d in decls)


def edits(sheet: Sheet) -> dict[str, TomlValue]:
    """What a save writes to ``[values]``: every edit, and every ``--set`` of the load."""
    changed = edited(sheet)
    out: dict[str, TomlValue] = {}
    for name in sheet.names:
        decl = sheet.declaration(name)
        if name in changed or _from_command_line(decl, sheet.loaded_declaration(name)):
            if decl.value is not None or decl.formula is not None:
                out[name] = toml_value(decl)
    return out


def choice(scenario: Scenario, kind: str, folder: Path | None = None) -> str:
    """The model/hardware/workload/precision in use, as a scenario file names it.

    A catalog entry is named by its slug; any other file by its path, relative to ``folder``
    (the scenario file's folder) when one is given.
    """
    if kind == "precision":
        return scenario.precision
    if kind == "engine":
        return scenario.engine
    path = Path(getattr(scenario, kind).path).resolve()
    if path.parent == catalog_dir(kind).resolve():
        return path.stem
    if folder is None:
        return str(path)
    return os.path.relpath(path, folder.resolve())


# --------------------------------------------------------------------------- writing
def _values_table(doc: tomlkit.TOMLDocument) -> Table:
    import tomlkit
    from tomlkit.items import Table

    if "values" not in doc:
        doc.add(tomlkit.nl())
        doc.add("values", tomlkit.table())
    table = doc["values"]
    if not isinstance(table, Table):
        raise InputError("the scenario file's 'values' is not a table; cannot save into it",
                         name="values")
    return table


def _put_values(doc: tomlkit.TOMLDocument, values: dict[str, TomlValue],
                units: dict[str, str]) -> None:
    import tomlkit

    table = _values_table(doc)
    for name, value in values.items():
        if name in table:
            table[name] = value  # tomlkit keeps the key's comment and place
            continue
        item = tomlkit.item(value)
        if units.get(name) and not isinstance(value, (bool, str)):
            item.comment(units[name])
            item.trivia.comment_ws = "  "
        table.add(name, item)


def render(scenario: Scenario, base_text: str | None, target: Path, *,
           all_choices: bool) -> str:
    """The scenario file's text after the edits: ``base_text`` with its comments, or new."""
    import tomlkit

    doc = tomlkit.parse(base_text) if base_text is not None else _new_document(scenario)
    sheet = scenario.sheet
    folder = target.parent
    choices = {k: choice(scenario, k, folder) for k in SAVED_KEYS}
    choices = {k: v for k, v in choices.items()  # the engine only where it is not the default
               if (all_choices and k != "engine") or _differs(doc, scenario, k, v, folder)}
    for key, value in choices.items():  # tomlkit puts new keys before the first table
        doc[key] = value
    units = {n: sheet.declaration(n).unit for n in sheet.names}
    values = edits(sheet)
    if values:
        _put_values(doc, values, units)
    return tomlkit.dumps(doc)


def _new_document(scenario: Scenario) -> tomlkit.TOMLDocument:
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment("A perfgraph scenario: catalog choices, then the values that "
                            "differ from them."))
    doc.add(tomlkit.comment("Values are in each cell's declared unit; a string pins a "
                            "cell to a formula."))
    return doc


def _differs(doc: tomlkit.TOMLDocument, scenario: Scenario, kind: str, value: str,
             folder: Path) -> bool:
    """Whether the file (in ``folder``) must now name ``kind``: what it names is not it."""
    if kind in doc:
        named = str(doc[kind])
        if kind in ("precision", "engine") or not named.endswith(".toml"):
            return named != value
        return (folder / named).resolve() != Path(getattr(scenario, kind).path).resolve()
    return value != (DEFAULT_ENGINE if kind == "engine" else DEFAULTS[kind])


def save(scenario: Scenario, loaded: FileStamp, *, force: bool = False) -> FileStamp:
    """Write the edits back into the scenario file ``loaded`` describes; the new stamp.

    Refuses (FileChangedError) when the file changed on disk since ``loaded``, unless
    ``force``; the file then becomes the loaded text with the edits, as shown on screen.
    """
    if not force and changed_on_disk(loaded):
        raise FileChangedError(
            "the file changed on disk since it was loaded; save again to overwrite it, or "
            "save as a new file", file=loaded.path)
    target = Path(loaded.path)
    write_text_atomic(target, render(scenario, loaded.text, target, all_choices=False),
                      replacing_input=True)
    return stamp(target)


def save_as(scenario: Scenario, path: str | Path, loaded: FileStamp | None = None, *,
            overwrite: bool = False) -> FileStamp:
    """Write a new scenario file: the loaded file's text (if any) with every choice named.

    Naming every choice also re-points relative catalog paths at the same files from the
    new file's folder.
    """
    target = Path(path)
    if target.suffix != ".toml":
        raise InputError("a scenario file's name must end in .toml", file=str(target))
    if target.exists() and not overwrite:
        raise TargetExistsError("the file exists; save again to overwrite it",
                               file=str(target))
    if loaded is None and scenario.file is not None:
        loaded = stamp(scenario.file.path)
    base = loaded.text if loaded is not None else None
    write_text_atomic(target, render(scenario, base, target, all_choices=True),
                      replacing_input=overwrite)
    return stamp(target)
