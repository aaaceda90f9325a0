"""``perfgraph explain NAME --depth N|all``: the precedent tree, as pycel's value_tree_str."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from perfgraph.cli.main import main
from perfgraph.engine.explanation import TreeNode, value_tree
from perfgraph.scenario import ScenarioSpec, load


def _names(tree: TreeNode, expanded_only: bool = False) -> list[str]:
    here = [] if expanded_only and tree.repeated else [tree.cell.name]
    return here + [n for t in tree.reads for n in _names(t, expanded_only)]


@pytest.fixture(scope="module")
def sheet():
    return load(ScenarioSpec()).sheet


def test_the_whole_tree_expands_every_ancestor_once(sheet) -> None:
    tree = value_tree(sheet, "itl")
    expanded = _names(tree, expanded_only=True)
    ancestors = {n for n in sheet.names if "itl" in _descendants(sheet, n)}
    assert sorted(expanded) == sorted(ancestors | {"itl"})
    assert len(expanded) == len(set(expanded))


def _descendants(sheet, name: str) -> set[str]:
    graph = nx.DiGraph([(p, n) for n in sheet.names for p in sheet.precedents(n)])
    return nx.descendants(graph, name) if name in graph else set()


def test_depth_limits_the_levels(sheet) -> None:
    one = value_tree(sheet, "ttft", 1)
    assert [t.cell.name for t in one.reads] == list(sheet.precedents("ttft"))
    assert all(t.reads == () for t in one.reads)
    two = value_tree(sheet, "ttft", 2)
    assert [t.cell.name for t in two.reads[0].reads] == list(sheet.precedents("ttft_prefill"))


def test_cli_prints_and_emits_the_tree(capsys) -> None:
    assert main(["explain", "ttft", "--depth", "2"]) == 0
    out = capsys.readouterr().out
    assert ("  derived from\n    ttft = 36.51 ms  = ttft_prefill + ttft_in_batch + "
            "ttft_overhead + frontend_latency\n      ttft_prefill = 36.51 ms"
            ) in out
    assert main(["explain", "ttft", "--depth", "all", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tree"]["name"] == "ttft"
    assert data["tree"]["reads"][0]["name"] == "ttft_prefill"
    assert data["tree"]["reads"][0]["value"] == pytest.approx(36.51, rel=1e-3)


@pytest.mark.parametrize("bad", ["0", "-1", "deep"])
def test_a_bad_depth_is_refused(bad, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["explain", "ttft", "--depth", bad])
    assert exc.value.code == 2
    assert "expected a whole number ≥ 1 or 'all'" in capsys.readouterr().err
