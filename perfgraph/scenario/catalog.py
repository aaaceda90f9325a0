"""TOML → declarations: the formula sheets, and the model/hardware/workload catalogs.

Sheet files (``perfgraph/scenario/sheets/*.toml``) hold one table per cell::

    group = "compute"            # the dashboard group of the cells below

    [ridge_point]
    unit = "FLOP/B"
    formula = "peak_flops / hbm_bandwidth"
    doc = "Arithmetic intensity at which a kernel turns compute-bound"
    source = "llm-inference-performance § The ratio and the roofline"

Catalog and scenario files set inputs in ``[values]``, and may declare or override cells in
``[cells.NAME]`` tables of the same shape (DeepSeek-V3's MLA KV formula, say).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgraph._infra import tomlfile
from perfgraph._infra.inputfile import file_problem
from perfgraph._infra.tomlfile import TomlDoc
from perfgraph.engine.declarations import Declaration, Origin
from perfgraph.engine.formula import parse
from perfgraph.errors import (
    CatalogError,
    DeclarationError,
    PerfgraphError,
    did_you_mean,
    raise_all,
)

CELL_KEYS = ("unit", "formula", "value", "doc", "source", "group", "domain", "mirrors_model")
KINDS = ("model", "hardware", "workload")
_PACKAGE = Path(__file__).resolve().parent.parent
#: The shipped formula sheets, one TOML file per topic.
SHEETS_DIR = Path(__file__).resolve().parent / "sheets"


def catalog_dir(kind: str) -> Path:
    """Where the catalog of ``kind`` lives: in the wheel, or at the top of a checkout."""
    folder = {"model": "models", "hardware": "hardware", "workload": "workloads"}[kind]
    shipped = _PACKAGE / "catalog_data" / folder
    return shipped if shipped.is_dir() else _PACKAGE.parent / folder


def catalog_names(kind: str) -> list[str]:
    return sorted(p.stem for p in catalog_dir(kind).glob("*.toml"))


def resolve(kind: str, name: str) -> Path:
    """A catalog slug (``h100-sxm``) or a path to a TOML file → the file's path."""
    if name.endswith(".toml") or "/" in name or "\\" in name:
        path = Path(name)
        problem = file_problem(path, kind)
        if problem is not None:
            raise CatalogError(problem, name=name)
        return path
    path = catalog_dir(kind) / f"{name}.toml"
    if not path.is_file():
        known = catalog_names(kind)
        raise CatalogError(f"unknown {kind} {name!r}{did_you_mean(name, known)}; "
                           f"known: {', '.join(known)}", name=name)
    return path


def sheet_paths() -> list[Path]:
    return sorted(SHEETS_DIR.glob("*.toml"))


def load_sheets(paths: list[Path] | None = None) -> dict[str, Declaration]:
    """Every cell declared by the formula sheets; a name declared twice is an error."""
    decls: dict[str, Declaration] = {}
    for path in paths if paths is not None else sheet_paths():
        doc = tomlfile.read(path)
        group = doc.data.get("group", path.stem)
        shipped = path.resolve().parent == SHEETS_DIR
        for name, table in doc.data.items():
            if not isinstance(table, dict):
                continue
            decl = cell_declaration(doc, (name,), table, group)
            if shipped and decl.origin is not None:
                decl = dataclasses.replace(
                    decl, origin=dataclasses.replace(decl.origin, shipped=True))
            if name in decls:
                raise doc.error(f"declared twice (first in {decls[name].origin})", name)
            decls[name] = decl
    return decls


def cell_declaration(doc: TomlDoc, key: tuple[str, ...], table: Mapping[str, Any],
                     group: str, base: Declaration | None = None) -> Declaration:
    """One ``[NAME]`` table → a Declaration; ``base`` is the cell it overrides, if any."""
    name = key[-1]
    for k in table:
        if k not in CELL_KEYS:
            raise doc.error(f"unknown key {k!r} in cell {name!r}{did_you_mean(k, CELL_KEYS)};"
                            f" expected: {', '.join(CELL_KEYS)}", *key, k)
    unit = table.get("unit", base.unit if base else None)
    if unit is None or not isinstance(unit, str):
        raise doc.error("a cell needs a unit (a string; \"\" for a plain number)", *key)
    origin = Origin(doc.path, doc.line(*key))
    mirrors = table.get("mirrors_model", base.mirrors_model if base else False)
    if not isinstance(mirrors, bool):
        raise doc.error("mirrors_model is true or false", *key, "mirrors_model")
    try:
        formula = parse(table["formula"]) if "formula" in table else None
        value, flag = _literal(table.get("value"), doc, key)
        # A formula that is a comparison or a logical combination is an on/off flag.
        flag = flag or (formula is not None and formula.is_flag)
        decl = Declaration(
            name=name, unit=unit, formula=formula, value=value, flag=flag,
            doc=str(table.get("doc", base.doc if base else "")),
            group=str(table.get("group", base.group if base else group)),
            source=str(table.get("source", base.source if base else "")),
            origin=origin, domain=table.get("domain", base.domain if base else None),
            mirrors_model=mirrors,
        )
        decl.parsed_unit  # noqa: B018 - an unknown unit is reported here, with its line
    except PerfgraphError as exc:
        raise exc.located(file=doc.path, line=doc.line(*key, "formula") or origin.line,
                          name=name) from None
    return decl


def _literal(raw: Any, doc: TomlDoc, key: tuple[str, ...]) -> tuple[float | None, bool]:
    if raw is None:
        return None, False
    if isinstance(raw, bool):
        return (1.0 if raw else 0.0), True
    if isinstance(raw, (int, float)):
        return float(raw), False
    raise doc.error("a sheet's value must be a number or true/false (catalogs and scenarios "
                    "may use quantities like \"3.35 TB/s\")", *key, "value")


@dataclass(frozen=True)
class Entry:
    """A catalog or scenario file: its cells, its values, and its other tables."""

    kind: str
    doc: TomlDoc

    @property
    def path(self) -> str:
        return self.doc.path

    @property
    def slug(self) -> str:
        """The catalog name (the file's stem): ``h100-sxm``."""
        return Path(self.doc.path).stem

    @property
    def title(self) -> str:
        return str(self.doc.data.get("name", Path(self.doc.path).stem))

    def table(self, name: str) -> dict[str, Any]:
        value = self.doc.data.get(name, {})
        if not isinstance(value, dict):
            raise self.doc.error(f"{name!r} must be a table", name)
        return value

    def cells(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for name, table in self.table("cells").items():
            if not isinstance(table, dict):
                raise self.doc.error(f"[cells.{name}] must be a table", "cells", name)
            yield name, table

    def values(self) -> Iterator[tuple[str, Any, Origin]]:
        for name, raw in self.table("values").items():
            yield name, raw, Origin(self.doc.path, self.doc.line("values", name))


def load_entry(kind: str, name: str) -> Entry:
    entry = Entry(kind, tomlfile.read(resolve(kind, name)))
    if kind == "hardware":
        entry_aliases(entry)  # a bad aliases value is refused when the file is read
    return entry


def entry_aliases(entry: Entry) -> tuple[str, ...]:
    """A hardware file's ``aliases``: the GPU names benchmark files print for it."""
    raw = entry.doc.data.get("aliases", [])
    bad = [f"{raw!r}"] if not isinstance(raw, list) else [
        f"item {i + 1}, {a!r}" for i, a in enumerate(raw) if not (isinstance(a, str) and a.strip())]
    if bad:
        raise entry.doc.error(
            "aliases must be a list of non-empty strings, the GPU names benchmark files "
            f"print (e.g. [\"NVIDIA H100 80GB HBM3\"]); got {bad[0]}", "aliases")
    return tuple(a.strip() for a in raw)


def hardware_aliases() -> dict[str, tuple[str, ...]]:
    """Catalog slug → its aliases, for every hardware file; an alias two files claim
    (compared case-insensitively) is an error naming both."""
    aliases: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for slug in catalog_names("hardware"):
        entry = load_entry("hardware", slug)
        aliases[slug] = entry_aliases(entry)
        for alias in aliases[slug]:
            first = owner.setdefault(alias.lower(), slug)
            if first != slug:
                raise CatalogError(f"alias {alias!r} is claimed by hardware {first!r} too",
                                   file=entry.path, line=entry.doc.line("aliases"),
                                   name="aliases")
    return aliases


def key_problems(entry: Entry, allowed: tuple[str, ...]) -> list[PerfgraphError]:
    """Each top-level key of the file that is not ``allowed``, near misses suggested."""
    return [DeclarationError(
        f"unknown key {key!r}{did_you_mean(key, allowed)}; expected one of: "
        f"{', '.join(allowed)}", file=entry.path, line=entry.doc.line(key), name=key)
        for key in entry.doc.data if key not in allowed]


def check_keys(entry: Entry, allowed: tuple[str, ...]) -> None:
    """Top-level keys of a file must be known: every unknown one is reported at once."""
    raise_all(key_problems(entry, allowed))
