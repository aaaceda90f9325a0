"""One error tree: every error perfgraph raises for a user's input is a PerfgraphError.

The only other exception classes are internal control flow that never leaves its module
(a refused run becomes a RunProblem; ``_Refused`` a located error) and the CLI's
``Interrupted`` (a KeyboardInterrupt, as Ctrl-C is)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import perfgraph
from perfgraph.errors import (
    ImportModelError,
    MeasuredFileError,
    MetaFileError,
    PerfgraphError,
    UnknownFormatError,
)

INTERNAL = {"perfgraph.engine.units.grammar._Refused", "perfgraph.measured.setup._Refused",
            "perfgraph.measured.adapters.records.RunRefused", "perfgraph.cli.main.Interrupted"}


def _exception_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.walk_packages(perfgraph.__path__, prefix="perfgraph."):
        if info.name.startswith("perfgraph.tui") or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == info.name:
                found[f"{info.name}.{cls.__qualname__}"] = cls
    return found


def test_every_error_class_is_in_the_tree() -> None:
    outside = {name for name, cls in _exception_classes().items()
               if not issubclass(cls, PerfgraphError)}
    assert outside == INTERNAL


@pytest.mark.parametrize("cls", [ImportModelError, MeasuredFileError, UnknownFormatError,
                                 MetaFileError])
def test_the_measured_and_import_errors_are_perfgraph_errors_and_value_errors(cls) -> None:
    assert issubclass(cls, PerfgraphError) and issubclass(cls, ValueError)


def test_a_measured_file_error_names_the_file_and_where_the_parser_stopped() -> None:
    exc = MeasuredFileError("runs.json", "not readable JSON: Expecting ','", 22, 35)
    assert str(exc) == "runs.json: not readable JSON: Expecting ',' (line 22, column 35)"
    assert (exc.file, exc.line, exc.col, exc.reason) == ("runs.json", 22, 35,
                                                         "not readable JSON: Expecting ','")
    unknown = UnknownFormatError("x.json: the JSON content matches no known format")
    assert (unknown.source, unknown.reason) == ("x.json", "the JSON content matches no known "
                                                          "format")
    assert str(unknown) == "x.json: the JSON content matches no known format"


def test_a_scenario_file_reports_every_problem_at_once(capsys) -> None:
    from pathlib import Path

    from perfgraph.cli.main import main

    path = Path(__file__).parent / "data" / "problems" / "scenario-many-problems.toml"
    assert main(["eval", str(path)]) == 2
    err = capsys.readouterr().err
    assert "4 problems:" in err
    for line, name in ((3, "modle"), (6, "tp"), (7, "concurrency"), (8, "nope")):
        assert f"{path}:{line}: {name}: " in err
