"""`perfgraph diff`: changed inputs, moved results with old/new/delta/ratio, each attributed
to the edits that move it alone; files or git revisions; exit 0/1/2 for CI."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from perfgraph._infra import gitrev
from perfgraph.cli.commands.diff import kind_from_keys
from perfgraph.cli.main import main
from perfgraph.errors import InputError, PerfgraphError
from perfgraph.scenario.catalog import load_sheets
from perfgraph.scenario.loading import ScenarioSpec, load
from perfgraph.whatif.scenario_diff import MovedResult, diff

from .conftest import DATA

BASE = str(DATA / "good" / "diff-base.toml")
HEAD = str(DATA / "good" / "diff-head.toml")


@pytest.fixture(scope="module")
def report():
    return diff(load(ScenarioSpec(file=BASE)), load(ScenarioSpec(file=HEAD)), "base", "head")


def by_name(report, name):
    return next(r for r in report.results if r.name == name)


def test_changed_inputs_are_the_edits_and_the_precision_they_imply(report):
    assert [(c.kind, c.old, c.new) for c in report.choices] == [("precision", "bf16", "int8")]
    changes = {c.name: (c.old_value, c.new_value) for c in report.inputs}
    assert changes == {"peak_flops": (989.4, 1978.9), "weight_bytes": (2, 1),
                       "kv_bytes": (2, 1), "spec_k": (0, 4)}
    assert all(c.kind == "value" for c in report.inputs)


def test_int8_doubles_the_single_stream_ceiling_and_weight_bytes_alone_does_it(report):
    # seeds/llm-inference-performance: "8B INT8: 209 → ~419 tok/s"
    r = by_name(report, "single_stream_ceiling")
    assert r.old == pytest.approx(209, abs=0.5)
    assert r.new == pytest.approx(419, rel=0.01)
    assert r.ratio == pytest.approx(2.0, rel=1e-12)
    assert r.delta == pytest.approx(r.new - r.old)
    assert [c.input for c in r.contributions] == ["weight_bytes"]
    assert r.contributions[0].alone == pytest.approx(r.new, rel=1e-12)


def test_speculation_moves_itl_by_its_tokens_per_pass(report):
    # k = 4, alpha = 0.7: 1 + 0.7 + 0.49 + 0.343 + 0.2401 = 2.7731 tokens per pass
    tokens = by_name(report, "spec_tokens_per_pass")
    assert tokens.new == pytest.approx(2.7731, rel=1e-9)
    assert [c.input for c in tokens.contributions] == ["spec_k"]
    itl = by_name(report, "itl")
    alone = {c.input: c for c in itl.contributions}
    assert set(alone) == {"spec_k", "weight_bytes", "kv_bytes"}
    assert alone["spec_k"].alone == pytest.approx(itl.old / 2.7731, rel=1e-9)
    assert alone["spec_k"].delta == pytest.approx(alone["spec_k"].alone - itl.old)
    # the largest single edit is listed first
    assert itl.contributions[0].input == "spec_k"
    assert itl.new < min(c.alone for c in itl.contributions)


def test_results_are_ordered_by_size_of_change_and_filtered_by_threshold(report):
    sizes = [r.size for r in report.results]
    assert sizes == sorted(sizes, reverse=True)
    assert {c.name for c in report.inputs}.isdisjoint(r.name for r in report.results)
    past = report.moved(0.9)
    assert past and all(r.change > 0.9 for r in past)
    assert "single_stream_ceiling" in {r.name for r in past}  # +100 %
    assert "kv_bytes_per_token" not in {r.name for r in past}  # -50 %


def test_identical_scenarios_have_no_changes():
    same = diff(load(ScenarioSpec(file=BASE)), load(ScenarioSpec(file=BASE)))
    assert same.inputs == () and same.results == () and same.choices == ()


# ------------------------------------------------------------------ the CLI
def test_cli_exit_1_when_results_move_with_each_format(capsys):
    assert main(["diff", BASE, HEAD]) == 1
    table = capsys.readouterr().out
    assert "precision: bf16 → int8" in table
    assert "weight_bytes  2 B → 1 B" in table
    assert "weight_bytes alone → 417.2 tok/s (+208.6 tok/s)" in table
    assert main(["diff", BASE, HEAD, "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "| `weight_bytes` | 2 B | 1 B |" in md
    assert "| `single_stream_ceiling` | 208.6 tok/s | 417.2 tok/s | +208.6 tok/s | 2× |" in md
    assert main(["diff", BASE, HEAD, "--format", "json", "--threshold", "90"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["threshold_percent"] == 90
    names = [r["name"] for r in data["results"]]
    assert "single_stream_ceiling" in names and "kv_bytes_per_token" not in names
    assert data["moved"] == len(names)


def test_cli_exit_0_when_nothing_moves_past_the_threshold(tmp_path, capsys):
    base = tmp_path / "base.toml"
    head = tmp_path / "head.toml"
    base.write_text('[values]\ngpu_memory_utilization = 0.9\n')
    head.write_text('[values]\ngpu_memory_utilization = 0.91\n')
    # the memory the budget leaves each GPU (memory_headroom) moves 10%; nothing else 5%
    assert main(["diff", str(base), str(head), "--threshold", "11%"]) == 0
    out = capsys.readouterr().out
    assert "gpu_memory_utilization  0.9 → 0.91" in out
    assert "results moved past 11% (0 of" in out
    assert main(["diff", str(base), str(head)]) == 1  # kv_memory did move, by ~1.6 %


def test_an_edit_that_cannot_apply_alone_says_why(tmp_path, capsys):
    head = tmp_path / "pinned.toml"
    head.write_text('[cells.users]\nunit = ""\nvalue = 128\n\n'
                    '[values]\nconcurrency = "users"\n')
    report = diff(load(), load(ScenarioSpec(file=str(head))))
    kinds = {c.name: c.kind for c in report.inputs}
    assert kinds == {"users": "added", "concurrency": "formula"}
    kv = by_name(report, "kv_bytes_total")
    assert kv.ratio == pytest.approx(2.0)
    assert kv.contributions[0].alone is None
    assert "cannot be applied alone" in kv.contributions[0].error


# ------------------------------------------------------------------ git revisions
def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    (tmp_path / "workloads").mkdir()
    chat = tmp_path / "workloads" / "chat.toml"
    chat.write_text((Path(__file__).parents[1] / "workloads" / "chat-1k1k.toml").read_text())
    scenario = tmp_path / "deploy.toml"
    scenario.write_text('hardware = "h100-sxm"\n\n[values]\nconcurrency = 64\n')
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    scenario.write_text('hardware = "h200"\n\n[values]\nconcurrency = 64\n')
    chat.write_text(chat.read_text().replace("concurrency = 64", "concurrency = 32"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path


def test_diff_a_revision_against_the_working_tree(repo, capsys):
    assert main(["diff", "main:deploy.toml", "deploy.toml", "-f", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["base"] == "main:deploy.toml"
    assert data["choices"] == [{"kind": "hardware", "old": "h100-sxm", "new": "h200"}]
    changed = {c["name"]: (c["old"], c["new"]) for c in data["inputs"]}
    assert changed["hbm_bandwidth"] == (3.35, 4.8)
    itl = next(r for r in data["results"] if r["name"] == "itl")
    assert itl["ratio"] == pytest.approx(itl["new"] / itl["old"])
    assert itl["contributions"][0]["input"] == "hbm_bandwidth"
    assert list((repo / "tmp").iterdir()) == []  # the copy of the revision is gone


def test_a_catalog_file_at_a_revision_is_read_as_that_kind(repo, capsys):
    assert main(["diff", "main:workloads/chat.toml", "workloads/chat.toml", "-f", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(c["name"], c["old"], c["new"]) for c in data["inputs"]] == [
        ("concurrency", 64, 32)]
    assert data["choices"] == []
    kv = next(r for r in data["results"] if r["name"] == "kv_bytes_total")
    assert kv["ratio"] == pytest.approx(0.5)


@pytest.mark.parametrize("argv, says", [
    (["nosuch:deploy.toml", "deploy.toml"], "git revision 'nosuch' does not exist"),
    (["main:gone.toml", "deploy.toml"], "cannot read 'gone.toml' at main"),
    (["missing.toml", "deploy.toml"], "missing.toml: no such file"),
    (["deploy.toml", "deploy.toml", "--threshold", "lots"], "--threshold expects"),
    (["deploy.toml", "deploy.toml", "--threshold", "-1"], "0 or more"),
])
def test_bad_input_exits_2_with_one_line(repo, argv, says, capsys):
    assert main(["diff", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_error_in_a_revision_names_the_revision_not_a_temporary_file(repo, capsys):
    (repo / "deploy.toml").write_text("[values\n")
    git(repo, "commit", "-q", "-am", "broken")
    assert main(["diff", "main:deploy.toml", "HEAD~1:deploy.toml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfgraph: error: main:deploy.toml:1")
    assert str(repo / "tmp") not in err


def test_outside_a_repository_a_revision_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    with pytest.raises(InputError, match="not inside a git repository"):
        gitrev.show(gitrev.GitRef("HEAD", "x.toml"))


def test_a_file_on_disk_wins_over_a_revision(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a:b.toml").write_text("")
    assert gitrev.parse("a:b.toml") is None
    assert gitrev.parse("main:b.toml") == gitrev.GitRef("main", "b.toml")
    assert gitrev.parse("plain.toml") is None


# ------------------------------------------------------------------ ranking
def moved(old, new):
    return MovedResult("x", "", False, old, new, None, None, ())


def test_results_rank_by_log_ratio_so_a_shrink_counts_as_much_as_a_growth():
    shrink, growth = moved(2.8, 1.0), moved(1.0, 1.66)
    assert shrink.size == pytest.approx(math.log(2.8))
    assert shrink.size > growth.size and shrink.change < growth.change
    for appears_or_flips in (moved(0.0, 1.0), moved(1.0, 0.0), moved(-1.0, 2.0),
                             moved(None, 1.0), moved(1.0, None)):
        assert appears_or_flips.size == math.inf
    report = diff(load(ScenarioSpec(file=BASE)), load(ScenarioSpec(file=HEAD)))
    sizes = [r.size for r in report.results]
    assert sizes == sorted(sizes, reverse=True)


# ------------------------------------------------------------------ what kind a file is
def catalog_copy(folder: Path, kind: str, slug: str, old: str, new: str) -> Path:
    text = (Path(__file__).parents[1] / kind / f"{slug}.toml").read_text()
    assert old in text
    copy = folder / f"{slug}.toml"
    copy.write_text(text.replace(old, new))
    return copy


@pytest.mark.parametrize("kind, slug, old, new, changed", [
    ("hardware", "h200", 'hbm_bandwidth = "4.8 TB/s"', 'hbm_bandwidth = "5.2 TB/s"',
     "hbm_bandwidth"),
    ("models", "llama-3.1-8b", "n_layers = 32 ", "n_layers = 33 ", "n_layers"),
])
def test_a_catalog_file_outside_its_folder_is_read_by_its_keys(
        tmp_path, capsys, kind, slug, old, new, changed):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    base = catalog_copy(tmp_path / "a", kind, slug, old, old)
    head = catalog_copy(tmp_path / "b", kind, slug, old, new)
    assert main(["diff", str(base), str(head), "-f", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in data["inputs"]] == [changed]


def test_kind_from_keys():
    assert kind_from_keys('vendor = "x"\n[values]\nhbm_bandwidth = "1 TB/s"\n') == (
        "hardware", True)
    assert kind_from_keys('[peak_flops]\nfp8 = "1 PFLOP/s"\n') == ("hardware", True)
    assert kind_from_keys('[values]\nhbm_bandwidth = "1 TB/s"\n') == ("scenario", False)
    assert kind_from_keys('hf_id = "x"\n') == ("model", True)
    assert kind_from_keys('hardware = "h200"\n[values]\nn_layers = 3\n') == ("scenario", True)
    assert kind_from_keys('[values]\nconcurrency = 3\n') == ("scenario", False)
    assert kind_from_keys('[values\n') == ("scenario", False)


def test_a_copy_of_a_workload_is_read_as_one_beside_a_workload(repo, capsys):
    copy = repo / "tmp" / "chat.toml"
    copy.write_text((repo / "workloads" / "chat.toml").read_text())
    (repo / "workloads" / "chat.toml").write_text(copy.read_text().replace(
        "concurrency = 32", "concurrency = 16"))
    assert main(["diff", str(copy), "workloads/chat.toml", "-f", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(c["name"], c["old"], c["new"]) for c in data["inputs"]] == [
        ("concurrency", 32, 16)]


# ------------------------------------------------------------------ paths at revisions
def test_the_folder_is_the_resolved_one_and_dot_paths_are_from_the_cwd(repo, monkeypatch,
                                                                       capsys):
    monkeypatch.chdir(repo / "workloads")
    for argv in (["main:workloads/chat.toml", "chat.toml"], ["main:./chat.toml", "./chat.toml"],
                 ["main:../workloads/chat.toml", "../workloads/chat.toml"]):
        assert main(["diff", *argv, "-f", "json"]) == 1, argv
        data = json.loads(capsys.readouterr().out)
        assert data["base"] == argv[0]
        assert [(c["name"], c["old"], c["new"]) for c in data["inputs"]] == [
            ("concurrency", 64, 32)]


@pytest.fixture
def relative(repo) -> Path:
    """scen/dep.toml names scen/mymodel.toml and ../workloads/chat.toml by relative path."""
    (repo / "scen").mkdir()
    model = repo / "scen" / "mymodel.toml"
    model.write_text((Path(__file__).parents[1] / "models" / "llama-3.1-8b.toml").read_text())
    (repo / "scen" / "dep.toml").write_text(
        'model = "mymodel.toml"\nworkload = "../workloads/chat.toml"\n\n'
        '[values]\ntp = 1\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "scen")
    model.write_text(model.read_text().replace("n_layers = 32 ", "n_layers = 40 "))
    return repo


def test_a_scenario_at_a_revision_reads_its_relative_files_at_that_revision(relative, capsys):
    assert main(["diff", "HEAD:scen/dep.toml", "scen/dep.toml", "-f", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {c["name"]: (c["old"], c["new"]) for c in data["inputs"]} == {"n_layers": (32, 40)}
    assert main(["diff", "HEAD:scen/dep.toml", "main:scen/dep.toml"]) == 0  # same commit
    capsys.readouterr()
    assert list((relative / "tmp").iterdir()) == []


def test_an_error_in_a_relative_file_at_a_revision_names_it_there(relative, capsys):
    (relative / "scen" / "mymodel.toml").write_text("[values\n")
    git(relative, "commit", "-q", "-am", "broken model")
    assert main(["diff", "HEAD:scen/dep.toml", "HEAD~1:scen/dep.toml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfgraph: error: HEAD:scen/mymodel.toml:1")
    assert "perfgraph-rev-" not in err
    (relative / "scen" / "dep.toml").write_text('model = "nothere.toml"\n')
    git(relative, "commit", "-q", "-am", "missing model")
    assert main(["diff", "HEAD:scen/dep.toml", "scen/dep.toml"]) == 2
    assert "cannot read 'scen/nothere.toml' at HEAD" in capsys.readouterr().err


@pytest.mark.parametrize("argv, says", [
    (["main:workloads", "deploy.toml"], "'workloads' is a folder at main, not a file"),
    (["main:../x.toml", "deploy.toml"], "is outside the repository"),
    (["workloads", "deploy.toml"], "a folder, not a file"),
    ([os.devnull, "deploy.toml"], "not on this side of the change (added or deleted)"),
])
def test_folders_and_missing_sides_say_so(repo, argv, says, capsys):
    assert main(["diff", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


# ------------------------------------------------------------------ the git recipe
PERFGRAPH = f"{shlex.quote(sys.executable)} -m perfgraph.cli.main"


def configure_recipe(repo: Path) -> None:
    """The README's recipe: .gitattributes, a textconv driver per kind, a difftool."""
    (repo / ".gitattributes").write_text(
        "scenarios/*.toml  diff=perfgraph\n"
        "hardware/*.toml   diff=perfgraph-hardware\n"
        "models/*.toml     diff=perfgraph-model\n"
        "workloads/*.toml  diff=perfgraph-workload\n")
    for driver, option in [("perfgraph", ""), ("perfgraph-hardware", "--hardware "),
                           ("perfgraph-model", "--model "),
                           ("perfgraph-workload", "--workload ")]:
        git(repo, "config", f"diff.{driver}.textconv",
            f'f() {{ cat "$1"; printf "\\n# perfgraph eval {option}\\n"; '
            f'{PERFGRAPH} eval {option}"$1" 2>&1 || true; }}; f')
    git(repo, "config", "difftool.perfgraph.cmd", f'{PERFGRAPH} diff -t 5 "$LOCAL" "$REMOTE"')


def test_the_textconv_recipe_shows_computed_results_in_git_diff(tmp_path):
    (tmp_path / "hardware").mkdir()
    (tmp_path / "scenarios").mkdir()
    h200 = catalog_copy(tmp_path / "hardware", "hardware", "h200", "4.8 TB/s", "4.8 TB/s")
    scenario = tmp_path / "scenarios" / "deploy.toml"
    scenario.write_text('hardware = "h200"\n\n[values]\nconcurrency = 64\n')
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "t")
    configure_recipe(tmp_path)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    h200.write_text(h200.read_text().replace("4.8 TB/s", "5.2 TB/s"))
    scenario.write_text(scenario.read_text().replace("64", "128"))

    def shown(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True,
                              check=True, timeout=120).stdout

    hardware = shown("diff", "--", "hardware/h200.toml")
    assert '+hbm_bandwidth = "5.2 TB/s"' in hardware  # the TOML change
    assert re.search(r"^-  ridge_point +412\.3 FLOP/B$", hardware, re.M)  # and the results
    assert re.search(r"^\+  ridge_point +380\.6 FLOP/B$", hardware, re.M)
    assert re.search(r"^\+  system_bandwidth +10\.4 TB/s$", hardware, re.M)
    deploy = shown("diff", "--", "scenarios/deploy.toml")
    assert "+concurrency = 128" in deploy and re.search(r"^\+  kv_bytes_total ", deploy, re.M)
    tool = shown("difftool", "-y", "-t", "perfgraph", "--", "hardware/h200.toml")
    assert "hbm_bandwidth  4.8 TB/s → 5.2 TB/s" in tool and "ridge_point" in tool


def _hbm_diff(*pins: tuple[str, str]):
    spec = ScenarioSpec(model="llama-3.3-70b", hardware="h200", workload="chat-1k1k", sets=pins)
    faster = replace(spec, sets=(*pins, ("hbm_bandwidth", "5.2 TB/s")))
    return {r.name for r in diff(load(spec), load(faster)).results}


def test_measured_cells_that_mirror_the_model_are_not_results_that_moved():
    moved = _hbm_diff()
    assert "itl" in moved and "mfu" in moved
    assert not {n for n in moved if n.startswith(("measured_", "achieved_"))}


def test_a_pinned_measurement_and_what_follows_from_it_move_again():
    moved = _hbm_diff(("measured_tpot", "20 ms"))
    # MBU = a step's bytes / the measured TPOT / bandwidth: the faster HBM lowers it (its
    # FLOP/s, MBU × bandwidth × intensity, does not move); the measured TTFT still mirrors
    assert {"achieved_mbu", "achieved_decode_headroom"} <= moved
    assert not {"achieved_decode_flops", "measured_tpot", "measured_ttft"} & moved


def test_mirrors_model_is_true_or_false(tmp_path):
    sheet = tmp_path / "m.toml"
    sheet.write_text('[measured_x]\nunit = ""\nformula = "1"\nmirrors_model = "yes"\n',
                     encoding="utf-8")
    with pytest.raises(PerfgraphError, match="mirrors_model is true or false") as err:
        load_sheets([sheet])
    assert "m.toml" in str(err.value)
    sheet.write_text('[measured_x]\nunit = ""\nformula = "1"\nmirrors_model = true\n',
                     encoding="utf-8")
    assert load_sheets([sheet])["measured_x"].mirrors_model
