"""Measured files read: every file (a folder: every .json/.jsonl/.csv inside it) into runs.

:func:`read_measured` never raises for a bad file: a file that cannot be read becomes a
problem with its reason, like a refused run, and the format detected is kept for the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from perfgraph.measured.adapters import (
    MeasuredFileError,
    MeasuredRun,
    RunProblem,
    read_format,
    read_runs,
)

MEASURED_SUFFIXES = (".json", ".jsonl", ".csv")


@dataclass(frozen=True)
class Measured:
    runs: tuple[MeasuredRun, ...]
    problems: tuple[RunProblem, ...]
    formats: tuple[tuple[str, str], ...]  # (source, format detected), refused files too

    def format_of(self, source: str) -> str | None:
        return next((f for s, f in self.formats if s == source), None)


def read_measured(paths: Iterable[str]) -> Measured:
    runs: list[MeasuredRun] = []
    problems: list[RunProblem] = []
    formats: list[tuple[str, str]] = []
    for path in _files(paths, problems):
        try:
            result = read_runs(path)
        except FileNotFoundError:
            problems.append(RunProblem(str(path), None, "no such file"))
            continue
        except (MeasuredFileError, OSError) as exc:  # unknown format, bad sidecar, unreadable
            reason = str(exc).removeprefix(f"{path}: ")
            problems.append(RunProblem(str(path), None, reason))
            fmt = read_format(path)
            if fmt is not None:
                formats.append((str(path), fmt))
            continue
        formats.append((result.source, result.format))
        runs += result.runs
        problems += result.problems
    return Measured(tuple(runs), tuple(problems), tuple(formats))


def _files(paths: Iterable[str], problems: list[RunProblem]) -> list[Path]:
    out: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file()
                           and p.suffix in MEASURED_SUFFIXES)
            if not found:
                problems.append(RunProblem(text, None, "the folder holds no .json, .jsonl or "
                                           ".csv file"))
            out += found
        else:
            out.append(path)
    return out
