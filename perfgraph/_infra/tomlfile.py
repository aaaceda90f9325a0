"""Reading TOML with line numbers, so that every error can say file:line.

tomllib gives no positions, so a small scan of the text maps ``(table, key)`` to the line
that sets it. That is all an error message needs; the values come from tomllib.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from perfgraph._infra.atomic import INPUTS
from perfgraph._infra.inputfile import file_problem
from perfgraph.errors import DeclarationError, PerfgraphError, TomlSyntaxError

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.\-]+)\s*=""")
_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def _key_path(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in text.split("."))


@dataclass
class TomlDoc:
    """A parsed TOML file and where each key was written."""

    path: str
    data: dict[str, Any]
    lines: dict[tuple[str, ...], int] = field(default_factory=dict)

    def line(self, *key: str) -> int | None:
        """The line of ``key`` (a table path then a key), or of its nearest table."""
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return None

    def error(self, message: str, *key: str,
              cls: type[PerfgraphError] = DeclarationError) -> PerfgraphError:
        return cls(message, file=self.path, line=self.line(*key),
                   name=key[-1] if key else None)


def read(path: str | Path) -> TomlDoc:
    """Parse ``path`` (UTF-8, with or without a byte order mark); a syntax error becomes
    TomlSyntaxError with file:line:col, a path that is not a regular file a
    DeclarationError saying what it is."""
    path = Path(path)
    problem = file_problem(path, "TOML")
    if problem is not None:
        raise DeclarationError(problem, file=str(path))
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte order mark is not TOML
    except OSError as exc:
        raise DeclarationError(f"cannot read file: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError:
        raise DeclarationError("not a UTF-8 text file", file=str(path)) from None
    INPUTS.note(path)
    return parse(text, str(path))


def parse(text: str, path: str) -> TomlDoc:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _POSITION.search(msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        raise TomlSyntaxError(f"TOML syntax error: {_POSITION.sub('', msg).strip()}",
                              file=path, line=line, col=col) from None
    return TomlDoc(path, data, _scan(text))


def _scan(text: str) -> dict[tuple[str, ...], int]:
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(raw)
        if header:
            table = _key_path(header.group(1))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(raw)
        if key:
            lines.setdefault((*table, *_key_path(key.group(1))), number)
    return lines
