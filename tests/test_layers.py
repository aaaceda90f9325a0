"""The layers: each imports only those before it, and no modules import in a circle.

The order, and the rules beside it, are stated once, in :data:`perfgraph.LAYERS`; this file
reads it from there. Every import counts, also those inside functions; only
``if TYPE_CHECKING:`` blocks are left out of the cycle check (they never run). The checks are
functions of a source tree, so the tests below also run them on a small tree with
deliberately wrong imports, to show they fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from perfgraph import LAYERS

ROOT = Path(__file__).resolve().parent.parent / "perfgraph"
ORDER = LAYERS
ADAPTERS = "measured.adapters"
API = ORDER[: ORDER.index("scenario") + 1]  # what the package's __init__ may import


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name (``perfgraph.engine.sheet``; a package by its own name) → file."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(path: Path, name: str, known: set[str],
            typing_too: bool = True) -> list[tuple[int, str]]:
    """(line, module) of every perfgraph module ``name`` imports, resolved to known modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    if not typing_too:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _type_checking(node):
                skip |= {id(n) for n in ast.walk(node)}
    out: list[tuple[int, str]] = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.append((node.lineno, target))
    return out


def layer(module: str) -> str:
    """The layer of ``perfgraph.X…``: the longest of :data:`ORDER` (or ``measured.adapters``)
    that the module is in, so ``perfgraph.whatif.simulate.engine`` is in ``whatif.simulate``."""
    parts = module.split(".")[1:]
    for size in range(len(parts), 0, -1):
        name = ".".join(parts[:size])
        if name in ORDER or name == ADAPTERS:
            return name
    return parts[0] if parts else ""


def _rank(layer_name: str) -> int:
    return ORDER.index("measured" if layer_name == ADAPTERS else layer_name)


def allowed(importer: str, imported: str) -> bool:
    here, there = layer(importer), layer(imported)
    if here == "":                       # perfgraph/__init__.py: the public API
        return there in API
    if there == "":
        return False                     # below the API nothing imports the package itself
    if here == ADAPTERS:
        return there in (ADAPTERS, "errors")
    if here == there:
        return True
    return _rank(there) < _rank(here) or (there == ADAPTERS and here != "errors"
                                          and _rank(here) >= _rank("measured"))


def violations(root: Path) -> list[str]:
    found = modules(root)
    known = set(found)
    bad = []
    for name, path in found.items():
        for line, target in imports(path, name, known):
            if not allowed(name, target):
                bad.append(f"{path.relative_to(root.parent)}:{line}: {name} imports {target} "
                           f"({layer(name) or 'the package'} may not import "
                           f"{layer(target) or 'the package'})")
    return bad


def cycles(root: Path) -> list[list[str]]:
    found = modules(root)
    known = set(found)
    graph = nx.DiGraph()
    for name, path in found.items():
        graph.add_node(name)
        for _, target in imports(path, name, known, typing_too=False):
            # a package's __init__ is imported by its own modules' import statements; an edge
            # from the package to its module is the package re-exporting, not a circle
            if not target.startswith(name + "."):
                graph.add_edge(name, target)
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def test_every_import_follows_the_layer_order() -> None:
    assert violations(ROOT) == []


def test_no_modules_import_in_a_circle() -> None:
    assert cycles(ROOT) == []


def test_the_package_is_laid_out_in_the_layers() -> None:
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {name for name in ORDER if "." not in name} - {"errors"}
    assert all((ROOT / name.replace(".", "/")).is_dir() for name in ORDER if "." in name)


def test_the_simulator_is_a_layer_below_whatif_and_measured() -> None:
    assert layer("perfgraph.whatif.simulate.engine") == "whatif.simulate"
    assert layer("perfgraph.whatif.plan_search") == "whatif"
    assert allowed("perfgraph.whatif.plan_search", "perfgraph.whatif.simulate.engine")
    assert allowed("perfgraph.measured.percentiles", "perfgraph.whatif.simulate")
    assert not allowed("perfgraph.whatif.simulate.engine", "perfgraph.whatif.grid")
    assert not allowed("perfgraph.whatif.simulate", "perfgraph.measured.reading")


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "perfgraph"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return root


def test_the_layer_check_fails_on_an_engine_that_imports_the_cli(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "errors.py": "",
        "engine/sheet.py": "from perfgraph.errors import PerfgraphError\n"
                           "def f():\n    from perfgraph.cli.main import main\n",
        "cli/main.py": "from perfgraph.engine.sheet import f\n",
        "measured/adapters/vllm.py": "from perfgraph.engine import sheet\n",
    })
    assert violations(root) == [
        "perfgraph/engine/sheet.py:3: perfgraph.engine.sheet imports perfgraph.cli.main "
        "(engine may not import cli)",
        "perfgraph/measured/adapters/vllm.py:1: perfgraph.measured.adapters.vllm imports "
        "perfgraph.engine.sheet (measured.adapters may not import engine)",
    ]


def test_the_cycle_check_finds_a_circle_but_not_a_type_checking_import(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "measured/compare.py": "from perfgraph.measured.findings import x\n",
        "measured/findings.py": "def x():\n    from perfgraph.measured import compare\n",
        "measured/setup.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                             "    from perfgraph.measured.compare import y\n",
    })
    assert cycles(root) == [["perfgraph.measured.compare", "perfgraph.measured.findings"]]
