"""`perfgraph diff`: changed inputs, moved results with old/new/delta/ratio, each attributed
to the edits that move it alone; files or git revisions; exit 0/1/2 for CI."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from perfgraph import gitrev
from perfgraph.cli import main
from perfgraph.diff import diff
from perfgraph.errors import InputError
from perfgraph.scenario import ScenarioSpec, load

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
    changes = [r.change for r in report.results]
    assert changes == sorted(changes, reverse=True)
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
    assert main(["diff", str(base), str(head), "--threshold", "5%"]) == 0
    out = capsys.readouterr().out
    assert "gpu_memory_utilization  0.9 → 0.91" in out
    assert "results moved past 5% (0 of" in out
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
