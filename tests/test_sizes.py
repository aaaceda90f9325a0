"""Modules stay small enough to read: at most 400 lines, every function at most 50 (issue 10).

Counted as the file and the ``def`` span (decorators, docstring and body) stand; the tests
below also run the check on a fixture, so it can be seen to fail.

``OVER`` lists what is over the limits today, each at its present size (issue 10 splits
them): one of them growing, or anything new going over, fails; when one is split, its line
here goes (a stale line fails too, so the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "perfgraph"
MAX_MODULE = 400
MAX_FUNCTION = 50


def too_long(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root.parent)
        lines = text.count("\n") + (not text.endswith("\n") and bool(text))
        if lines > MAX_MODULE:
            out.append(f"{name}: {lines} lines (at most {MAX_MODULE})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - start + 1
                if length > MAX_FUNCTION:
                    out.append(f"{name}:{start}: {node.name} is {length} lines "
                               f"(at most {MAX_FUNCTION})")
    return out


#: What is over the limits now, with its present size: may shrink, never grow.
OVER: dict[str, int] = {}


def _key_and_size(problem: str) -> tuple[str, int]:
    where, _, rest = problem.partition(": ")
    path, _, _line = where.partition(":")
    name = rest.split(" is ")[0] if " is " in rest else ""
    size = int(rest.split(" lines")[0].split()[-1])
    return (f"{path}:{name}" if name else path), size


def test_modules_and_functions_are_short() -> None:
    found: dict[str, int] = {}
    for problem in too_long(ROOT):
        key, size = _key_and_size(problem)
        found[key] = max(size, found.get(key, 0))
    grown = {k: v for k, v in found.items() if v > OVER.get(k, 0)}
    stale = sorted(set(OVER) - set(found))
    assert grown == {} and stale == []


def test_the_check_fails_on_a_long_function_and_a_long_module(tmp_path: Path) -> None:
    root = tmp_path / "perfgraph"
    root.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(50))
    (root / "long.py").write_text(f"def f():\n{body}\n" + "\n" * 360)
    assert too_long(root) == ["perfgraph/long.py: 411 lines (at most 400)",
                              "perfgraph/long.py:1: f is 51 lines (at most 50)"]
