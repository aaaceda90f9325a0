"""A name says which room it is in: no two modules share a file name, and no two public
classes or ``roofline`` functions share a name (a reader who meets ``Setup`` or
``compare.py`` knows which one is meant, and no module imports one ``as`` another name to
tell it from its namesake, as ``SimSetup`` was)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "perfgraph"
#: File names every package may have.
SHARED_FILES = {"__init__.py", "__main__.py"}


def _twice(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: sorted(paths) for name, paths in found.items() if len(paths) > 1}


def module_files(root: Path) -> dict[str, list[str]]:
    """File name → the modules under ``root`` that have it (beside ``__init__``/``__main__``)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in root.rglob("*.py"):
        if path.name not in SHARED_FILES:
            found[path.name].append(str(path.relative_to(root.parent)))
    return _twice(found)


def top_level_names(root: Path, kind: type[ast.AST]) -> dict[str, list[str]]:
    """Public class (or function) name → the modules that define one at their top level."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in root.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            name = getattr(node, "name", "_")
            if isinstance(node, kind) and not name.startswith("_"):
                found[name].append(str(path.relative_to(root.parent)))
    return _twice(found)


def test_no_two_modules_share_a_file_name() -> None:
    assert module_files(ROOT) == {}


def test_no_two_public_classes_share_a_name() -> None:
    assert top_level_names(ROOT, ast.ClassDef) == {}


def test_no_two_roofline_functions_share_a_name() -> None:
    twice = top_level_names(ROOT, ast.FunctionDef)
    assert [name for name in twice if "roofline" in name] == []


def test_the_checks_find_a_repeated_name(tmp_path: Path) -> None:
    root = tmp_path / "perfgraph"
    for rel in ("__init__.py", "a/__init__.py", "a/compare.py", "b/__init__.py",
                "b/compare.py", "b/setup.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("class Setup:\n    pass\n" if "compare" in rel else "")
    assert module_files(root) == {"compare.py": ["perfgraph/a/compare.py",
                                                 "perfgraph/b/compare.py"]}
    assert top_level_names(root, ast.ClassDef) == {
        "Setup": ["perfgraph/a/compare.py", "perfgraph/b/compare.py"]}
