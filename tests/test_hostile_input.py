"""Arbitrary ``--set`` values and scenario files, fed to every command in-process.

Whatever comes in, a command answers with exit 0, 1 or 2 (never a traceback: any exception
out of ``main`` fails the test), says why in one line of stderr when it refuses (2), and
changes no file but its ``--out`` target. Hypothesis looks for the counterexample; the
examples are few so that the file runs in seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfgraph.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
MEASURED = next((ROOT / "tests" / "data").rglob("*.json"))
#: Cells that every scenario has, inputs and results, and a few names that are not cells.
NAMES = ["concurrency", "tp", "pp", "isl", "osl", "hbm_bandwidth", "peak_flops",
         "weight_bytes", "kv_bytes", "spec_k", "spec_alpha", "chunked_prefill", "itl",
         "ttft", "ridge_point", "max_concurrency_paged", "block_size", "no_such_cell"]
PIECES = ["1", "0", "-1", "2.5", "1e308", "1e-320", "nan", "inf", "/", "*", "**", "+", "-",
          "(", ")", " ", "log(", "sqrt(", "exp(", "min(", "max(", ",", "GB", "TB/s", "ms",
          "token", "FLOP", " if ", " else ", "<", "==", "not ", "True", "'", '"', "__",
          ".", "[", "]", "x", "é", "\\", "#", "=", *NAMES]
FORMULAS = st.lists(st.sampled_from(PIECES), max_size=8).map("".join) | st.text(max_size=12)
SETS = st.lists(st.tuples(st.sampled_from(NAMES), FORMULAS).map(lambda p: f"{p[0]}={p[1]}"),
                max_size=3)
TOML_VALUES = (st.integers(-10**20, 10**20) | st.floats(allow_nan=False) | st.booleans()
               | FORMULAS)
CHOICE_KEYS = ["model", "hardware", "workload", "precision", "name", "tp", "bogus"]
CHOICE_VALUES = st.sampled_from(["llama-3.1-70b", "h100-sxm", "h200", "chat-1k1k", "fp8",
                                 "bf16", "fp4", "int8", "nope", "../models/x.toml", ""])
COMMANDS = [["eval"], ["eval", "--format", "json"], ["explain", "itl"], ["levers"],
            ["tui"], ["sweep", "--axis", "tp=1,2", "--format", "csv"],
            ["compare", str(MEASURED), "--format", "json"]]


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value).replace("inf", "inf")
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def scenario_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(st.text(max_size=40))  # not TOML at all, now and then
    lines = [f"{key} = {_toml_value(draw(CHOICE_VALUES))}"
             for key in draw(st.lists(st.sampled_from(CHOICE_KEYS), max_size=2, unique=True))]
    lines.append("[values]")
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True)):
        lines.append(f"{name} = {_toml_value(draw(TOML_VALUES))}")
    return "\n".join(lines) + "\n"


def _snapshot(folders: list[Path]) -> dict[str, str]:
    out = {}
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


WATCHED = [ROOT / "models", ROOT / "hardware", ROOT / "workloads", ROOT / "tests" / "data",
           ROOT / "perfgraph" / "scenario"]


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage, then exit 2
            code = int(exc.code or 0)
    return code, err.getvalue()


def _check(argv: list[str], folder: Path, out: Path | None = None) -> None:
    before = _snapshot([folder])
    code, err = _run(argv)
    assert code in (0, 1, 2), (argv, code, err)
    if code == 2:
        lines = [line for line in err.splitlines() if line.startswith("perfgraph: error")]
        assert len(lines) == 1, (argv, err)
    after = _snapshot([folder])
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert changed <= ({str(out)} if out is not None else set()), (argv, changed)
    assert not any(p.name.endswith(".tmp") for p in folder.iterdir()), argv


SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(sets=SETS, command=st.sampled_from(COMMANDS))
def test_any_set_values(sets, command, tmp_path):
    argv = [*command]
    for s in sets:
        argv += ["--set", s]
    _check(argv, tmp_path)


@SETTINGS
@given(base=scenario_texts(), head=scenario_texts(), command=st.sampled_from(COMMANDS))
def test_any_scenario_file(base, head, command, tmp_path):
    folder = tmp_path / "case"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    b, h = folder / "base.toml", folder / "head.toml"
    b.write_text(base)
    h.write_text(head)
    with contextlib.chdir(folder):
        _check(["diff", "base.toml", "head.toml"], folder)
        argv = [*command, "--scenario" if command[0] == "compare" else "head.toml"]
        if command[0] == "compare":
            argv.append("head.toml")
        else:
            argv = [command[0], *(["itl"] if command[0] == "explain" else []), "head.toml",
                    *command[2 if command[0] == "explain" else 1:]]
        _check(argv, folder)


@SETTINGS
@given(head=scenario_texts(), sets=SETS, target=st.sampled_from(
    ["out.json", "out.csv", "head.toml", "out.parquet", "sub/none.json", "."]))
def test_any_out_target_changes_only_itself(head, sets, target, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / "head.toml").write_text(head)
    argv = ["eval", "head.toml", "--out", target]
    for s in sets:
        argv += ["--set", s]
    with contextlib.chdir(folder):
        _check(argv, folder, out=folder / target)
    if target == "head.toml":  # the command read it: never replaced without --force
        assert (folder / "head.toml").read_text() == head


def test_the_catalogs_and_sheets_are_untouched():
    """Run after the others in this file: nothing above wrote into the repository."""
    before = _snapshot(WATCHED)
    for argv in (["eval", "--set", "concurrency=1/0"], ["levers", "--set", "tp=0"]):
        _run(argv)
    assert _snapshot(WATCHED) == before
    assert not [p for p in ROOT.iterdir() if p.name.startswith(".") and p.suffix == ".tmp"]
    assert os.path.isdir(ROOT / "models")
