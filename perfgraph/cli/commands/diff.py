"""``perfgraph diff BASE HEAD``: what a change to a scenario does to every result.

BASE and HEAD are files, or ``REV:path`` (read with ``git show``, no checkout). A file in a
``models/``, ``hardware/`` or ``workloads/`` folder is read as that catalog entry (the rest
of the scenario from the options, or the default); any other by its keys (``vendor`` or
``[peak_flops]``: hardware; ``hf_id`` or ``[architecture]``: a model; else a scenario, or a
workload when the other side is one), so git's temporary copies (``git difftool``) read
right; ``--as`` says which. A scenario at a revision that names a catalog file by relative
path gets that file at the same revision. Exit status: 0 when no result moved past
``--threshold``, 1 when some did, 2 on bad input, so CI can gate on it.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from perfgraph._infra import gitrev
from perfgraph.cli.options import add_format_option, add_scenario_options, spec_from_args
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.output.diff_report import FORMATTERS
from perfgraph.scenario.catalog import KINDS
from perfgraph.scenario.loading import Scenario, ScenarioSpec, load
from perfgraph.whatif.scenario_diff import diff

FOLDERS = {"models": "model", "hardware": "hardware", "workloads": "workload"}
#: Top-level keys only one kind of file has.
ONLY = {"scenario": ("model", "hardware", "workload", "precision"),
        "hardware": ("vendor", "peak_flops", "peak_flops_sparse"),
        "model": ("hf_id", "architecture")}
READ_AS = ("auto", "scenario", *KINDS)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff",
        description="Compare two scenario files (or git revisions of one, REV:path): the "
                    "inputs that changed, then every result that moved, largest change "
                    "first, each with the edits that move it when applied alone.",
        epilog="exit status: 0 no result moved past --threshold, 1 some did, 2 bad input")
    p.add_argument("base", metavar="BASE", help="a file, or REV:path (main:workloads/x.toml)")
    p.add_argument("head", metavar="HEAD", help="a file, or REV:path")
    add_scenario_options(p, positional=False)
    add_format_option(p, ("table", "markdown", "json"))
    p.add_argument("--threshold", "-t", default="0", metavar="PCT",
                   help="show (and fail on) only results that moved by more than PCT "
                        "percent (default 0: any move)")
    p.add_argument("--as", dest="read_as", choices=READ_AS, default="auto",
                   help="read BASE and HEAD as this kind of file (default: by folder, "
                        "else by keys)")
    p.add_argument("--plot", metavar="FILE.svg|FILE.png",
                   help="also draw the two scenarios' curves overlaid ('perfgraph plot diff') "
                        "to FILE; the markdown format links it")
    p.set_defaults(func=run)


def threshold(text: str) -> float:
    """``"1"``, ``"1%"`` or ``"0.5 %"`` → a fraction (0.01, 0.005)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise InputError(f"--threshold expects a percentage such as 1 or 0.5%, "
                         f"got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise InputError(f"--threshold must be a percentage of 0 or more, got {text!r}")
    return value / 100


# ----------------------------------------------------------------- loading one side
@dataclass
class Side:
    """One side of the diff before it loads: where it is, its text, and how to read it."""

    given: str  # as on the command line
    ref: gitrev.GitRef | None  # a revision (its path from the top), or None for a file
    text: str | None  # None: unreadable (loading it says why)
    kind: str
    sure: bool  # the folder, --as or a key says so (else: a scenario, or a workload)



def _kind(path: str, wanted: str, text: str | None, *, in_repo: bool = False,
          ) -> tuple[str, bool]:
    if wanted != "auto":
        return wanted, True
    folder = posixpath.basename(posixpath.dirname(path)) if in_repo else (
        Path(path).resolve().parent.name)
    if folder in FOLDERS:
        return FOLDERS[folder], True
    return kind_from_keys(text) if text is not None else ("scenario", False)


def kind_from_keys(text: str) -> tuple[str, bool]:
    """A file outside the catalog folders, by its keys: the kind, and whether a key says
    so. A file of ``[values]`` alone (a workload has no key of its own) is a scenario,
    unsure: a scenario that sets only ``hbm_bandwidth`` is no hardware entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "scenario", False  # loading it says what is wrong, with file:line
    for kind, keys in ONLY.items():
        if any(k in data for k in keys):
            return kind, True
    return "scenario", False  # [values] alone reads the same as a scenario


def prepare(given: str, wanted: str) -> Side:
    """Find one side and read its text; InputError for a missing file or revision."""
    ref = gitrev.parse(given)
    if ref is None:
        path = Path(given)
        if not path.is_file():
            raise InputError(_not_a_file(path), file=given)
        text = _read(path)
        return Side(given, None, text, *_kind(given, wanted, text))
    ref = gitrev.from_top(ref)
    text = gitrev.show(ref)
    return Side(given, ref, text, *_kind(ref.path, wanted, text, in_repo=True))


def _not_a_file(path: Path) -> str:
    if str(path) == os.devnull:  # git difftool's side of an added or deleted file
        return "the file is not on this side of the change (added or deleted): nothing to compare"
    if path.is_dir():
        return "a folder, not a file: name a TOML file"
    return "no such file (or REV:path)" if not path.exists() else "not a regular file"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None  # loading it says what is wrong


def agree(base: Side, head: Side) -> None:
    """A side that reads as a scenario only for want of a telling key is read as a
    workload when the other side surely is one (``git difftool`` on workloads/x.toml)."""
    for one, other in ((base, head), (head, base)):
        if not one.sure and other.sure and other.kind == "workload":
            one.kind = "workload"


def _spec(common: ScenarioSpec, path: str, kind: str) -> ScenarioSpec:
    if kind == "scenario":
        return replace(common, file=path)
    override: dict[str, Any] = {kind: path}  # kind names a str field; mypy cannot see which
    return replace(common, **override)


def referenced(side: Side) -> list[str]:
    """The catalog files a scenario at a revision names by relative path, from the top of
    the repository (those that stay inside it)."""
    assert side.ref is not None and side.text is not None
    try:
        data: dict[str, Any] = tomllib.loads(side.text)
    except tomllib.TOMLDecodeError:
        return []
    folder = posixpath.dirname(side.ref.path)
    out = []
    for kind in KINDS:
        name = data.get(kind)
        if isinstance(name, str) and name.endswith(".toml") and not Path(name).is_absolute():
            path = posixpath.normpath(posixpath.join(folder, name))
            if path != ".." and not path.startswith("../"):
                out.append(path)
    return out


def load_side(side: Side, common: ScenarioSpec) -> tuple[str, Scenario]:
    """One side of the diff: its label, and the scenario it makes."""
    if side.ref is None:
        return side.given, load(_spec(common, side.given, side.kind))
    also = referenced(side) if side.kind == "scenario" else []
    with gitrev.copy_of(side.ref, text=side.text, also=also) as copy:
        try:
            return side.ref.label, load(_spec(common, str(copy), side.kind))
        except PerfgraphError as exc:
            if exc.file:
                exc.file = gitrev.label(side.ref, copy, exc.file) or exc.file
            raise


def run(args: argparse.Namespace) -> int:
    limit = threshold(args.threshold)
    common = spec_from_args(args)
    sides = prepare(args.base, args.read_as), prepare(args.head, args.read_as)
    agree(*sides)
    base_label, base = load_side(sides[0], common)
    head_label, head = load_side(sides[1], common)
    report = diff(base, head, base_label, head_label)
    shown = report.moved(limit)
    text = FORMATTERS[args.format](report, shown, limit)
    if args.plot:
        from perfgraph.output.diff_chart import draw_diff

        draw_diff((base_label, base), (head_label, head), args.plot)
        if args.format == "markdown":
            text += f"\n![{base_label} → {head_label}: the curves overlaid]({args.plot})\n"
    sys.stdout.write(text)
    return 1 if shown else 0
