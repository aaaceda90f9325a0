"""perfgraph's errors.

Every error a user can cause is a :class:`PerfgraphError`, which carries where it happened
(file, line, column, cell name) and prints as one line: ``file:line:col: name: what``. Each
also inherits the built-in it resembles, so callers that catch ``ValueError`` still work::

    PerfgraphError
     ├── TomlSyntaxError       (SyntaxError)   a TOML file does not parse
     ├── FormulaSyntaxError    (SyntaxError)   a formula is outside the expression language
     ├── UnknownNameError      (NameError)     a formula or --set names no cell
     ├── UnitError             (ValueError)    an unknown unit or an unreadable quantity
     ├── DimensionError        (TypeError)     a formula's dimensions differ from its unit
     ├── CycleError            (ValueError)    a formula or pin would make a cycle
     ├── DeclarationError      (ValueError)    a TOML entry of the wrong shape
     │    └── ProblemsError                    several problems in one file, all listed
     ├── CatalogError          (LookupError)   no such model, hardware, workload, precision
     ├── InputError            (ValueError)    a bad command-line value
     ├── EvaluationError       (ArithmeticError) reading a cell whose value is an error
     ├── ImportModelError      (ValueError)    a config.json lacks or garbles a field
     └── MeasuredFileError     (ValueError)    a measured-run file cannot be read at all
          ├── UnknownFormatError               it parses, but matches no known format
          └── MetaFileError                    its perfgraph.meta.toml sidecar is wrong

Lower layers raise these where the fault is found; a library error (a JSON decoder's, a TOML
parser's) is turned into one of them at the one place that calls the library, never left to
reach the CLI, which prints any PerfgraphError as one line and exits 2.

A cell whose evaluation fails does not raise: its value is a :class:`CellError`, like a
spreadsheet's ``#DIV/0!``, and cells that read it get a CellError naming the root cause.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class PerfgraphError(Exception):
    """Base of every error a user can cause; prints as ``where: name: message``."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 col: int | None = None, name: str | None = None, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.name = name
        self.extra = extra

    def located(self, *, file: str | None = None, line: int | None = None,
                name: str | None = None) -> PerfgraphError:
        """Fill in where the error happened, keeping whatever is already known."""
        self.file = self.file or file
        self.line = self.line or line
        self.name = self.name or name
        return self

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line:
                where += f":{self.line}"
                if self.col:
                    where += f":{self.col}"
        parts = [p for p in (where, self.name) if p]
        return ": ".join([*parts, self.message])


class TomlSyntaxError(PerfgraphError, SyntaxError):
    pass


class FormulaSyntaxError(PerfgraphError, SyntaxError):
    pass


class UnknownNameError(PerfgraphError, NameError):
    pass


class UnitError(PerfgraphError, ValueError):
    pass


class DimensionError(PerfgraphError, TypeError):
    pass


class CycleError(PerfgraphError, ValueError):
    pass


class DeclarationError(PerfgraphError, ValueError):
    pass


class ProblemsError(DeclarationError):
    """Every problem found in one file, reported at once (each still a PerfgraphError in
    ``problems``): a user fixes them in one go, not one run at a time."""

    def __init__(self, problems: Iterable[PerfgraphError]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problems:\n{lines}",
                         file=self.problems[0].file if self.problems else None)

    def __str__(self) -> str:
        return self.message


def raise_all(problems: Sequence[PerfgraphError]) -> None:
    """Raise the one problem as it is, several as a :class:`ProblemsError`; none: return."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ProblemsError(problems)


class CatalogError(PerfgraphError, LookupError):
    pass


class InputError(PerfgraphError, ValueError):
    pass


class EvaluationError(PerfgraphError, ArithmeticError):
    pass


class ImportModelError(PerfgraphError, ValueError):
    """A config.json lacks a field the parameter count needs, or holds an unusable value."""


class MeasuredFileError(PerfgraphError, ValueError):
    """A measured-run file cannot be read at all (truncated JSON, not text, empty).

    ``source`` is the file, ``reason`` what is wrong; ``line`` and ``col`` (where the parser
    stopped) are part of the message as "(line L, column C)"."""

    def __init__(self, source: str, reason: str, line: int | None = None,
                 col: int | None = None) -> None:
        super().__init__(reason, file=source, line=line, col=col)
        self.source, self.reason = source, reason

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.col})" if self.line is not None else ""
        return f"{self.source}: {self.reason}{where}"


class UnknownFormatError(MeasuredFileError):
    """The file parsed, but its content matches none of the known formats."""

    def __init__(self, message: str) -> None:
        source, _, reason = message.partition(": ")
        super().__init__(source, reason)


class MetaFileError(MeasuredFileError):
    """A ``perfgraph.meta.toml`` sidecar that does not parse or holds a wrong key or value."""

    def __init__(self, message: str) -> None:
        source, _, reason = message.partition(": ")
        super().__init__(source, reason)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest choice, or ``""`` if none is near."""
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


@dataclass(frozen=True)
class CellError:
    """The value of a cell that could not be computed.

    ``message`` says why; ``root`` names the cell where the failure started (itself when
    its own formula failed) and ``root_message`` says why that cell failed ("" when this is
    the root), so that a long chain of dependents names the cause once, not nested.
    """

    message: str
    root: str
    root_message: str = ""

    @property
    def cause(self) -> str:
        """Why the root cell failed."""
        return self.root_message or self.message

    @classmethod
    def reading(cls, src: str, failed: CellError) -> CellError:
        """The error of a cell that reads ``src``, whose value is ``failed``."""
        if failed.root == src:
            message = f"depends on {src}, which failed: {failed.cause}"
        else:
            message = f"depends on {src}, which failed (root {failed.root}: {failed.cause})"
        return cls(message, failed.root, failed.cause)

    def __str__(self) -> str:
        return self.message
