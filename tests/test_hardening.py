"""Careless and hostile input, as issue 15 found it: each failure reproduced as written.

1. ``--out`` onto a device node, a FIFO or a symlink; 2. a formula of constants that fails;
3. ``--out`` over a file the command read; 4. stdout on a full disk or in ASCII;
5. ``perfgraph.tui.screenshot --help``; 6. temporaries left by ``kill -9``;
7. a measured file far larger than any benchmark export.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from perfgraph._infra import atomic
from perfgraph.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
HARDWARE = ROOT / "hardware" / "h100-sxm.toml"


def run_cli(*argv: str, env: dict[str, str] | None = None, stdout=subprocess.PIPE,
            ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfgraph.cli.main", *argv], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          stdout=stdout, stderr=subprocess.PIPE, timeout=120)


# ------------------------------------------------------------------ 1. --out onto odd files
def test_out_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old")
    link.symlink_to(target.name)
    assert main(["eval", "--only", "itl", "--out", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == "target.txt"
    assert "itl" in target.read_text()


def test_out_onto_dev_null_writes_through_and_leaves_the_device(capsys):
    before = os.stat(os.devnull)
    assert main(["eval", "--only", "itl", "--out", os.devnull]) == 0
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_out_onto_a_fifo_writes_through_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["eval", "--only", "itl", "--format", "json", "--out", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert "itl" in json.loads(got[0])["quantities"]


def test_out_onto_a_folder_is_one_refusal(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path)]) == 2
    assert "it is a folder" in capsys.readouterr().err and tmp_path.is_dir()


# ------------------------------------------------------------------ 2. constant formulas
FAILING = ["1/0", "log(-1)", "sqrt(-1)", "exp(1000)", "(-8)**0.5", "0**-1"]


@pytest.mark.parametrize("formula", FAILING)
@pytest.mark.parametrize("command", [["eval"], ["eval", "--format", "json"], ["explain", "itl"],
                                     ["levers"]])
def test_a_failing_constant_formula_in_set_is_one_refusal(formula, command, capsys):
    assert main([*command, "--set", f"concurrency={formula}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "concurrency" in err and formula in err


@pytest.mark.parametrize("formula", FAILING)
def test_a_failing_constant_formula_in_a_scenario_is_one_refusal(formula, tmp_path, capsys):
    base, head = tmp_path / "base.toml", tmp_path / "head.toml"
    base.write_text("[values]\ntp = 2\n")
    head.write_text(f'[values]\nconcurrency = "{formula}"\n')
    assert main(["diff", str(base), str(head)]) == 2
    assert main(["eval", str(head)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("head.toml:2: concurrency" in line for line in err)


def test_a_formula_with_a_complex_result_is_the_cells_error(capsys):
    assert main(["eval", "--set", "concurrency=(tp-3)**0.5", "--only", "concurrency",
                 "--format", "json"]) == 0
    error = json.loads(capsys.readouterr().out)["quantities"]["concurrency"]["error"]
    assert error.startswith("a negative number to a fractional power has no real value")


# ------------------------------------------------------------------ 3. --out over an input
def test_out_over_the_scenario_it_read_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("s.toml").write_text("[values]\ntp = 2\n")
    assert main(["eval", "s.toml", "--out", "s.toml"]) == 2
    assert "which this command read" in capsys.readouterr().err
    assert Path("s.toml").read_text() == "[values]\ntp = 2\n"
    assert main(["eval", "s.toml", "--out", "./s.toml", "--force"]) == 0
    assert "itl" in Path("s.toml").read_text()


def test_out_over_the_hardware_file_it_read_is_refused(tmp_path, capsys):
    hw = tmp_path / "hw.toml"
    hw.write_text(HARDWARE.read_text())
    alias = tmp_path / "alias.toml"
    alias.symlink_to(hw)
    for out in (hw, alias):
        assert main(["eval", "--hardware", str(hw), "--out", str(out)]) == 2
    assert hw.read_text() == HARDWARE.read_text()
    assert capsys.readouterr().err.count("which this command read") == 2


def test_a_sweep_and_a_compare_refuse_their_inputs_too(tmp_path, capsys):
    hw = tmp_path / "hw.toml"
    hw.write_text(HARDWARE.read_text())
    assert main(["sweep", "--hardware", str(hw), "--axis", "tp=1,2", "--format", "csv",
                 "--out", str(hw)]) == 2
    run = next((ROOT / "tests" / "data").rglob("*.json"))
    copy = tmp_path / run.name
    copy.write_bytes(run.read_bytes())
    assert main(["compare", str(copy), "--format", "json", "--out", str(copy)]) == 2
    assert copy.read_bytes() == run.read_bytes() and hw.read_text() == HARDWARE.read_text()


# ------------------------------------------------------------------ 4. stdout
@pytest.mark.parametrize("argv", [["eval"], ["eval", "--format", "json"],
                                  ["sweep", "--axis", "tp=1,2"]])
def test_a_full_stdout_is_one_line_and_a_non_zero_exit(argv):
    with open("/dev/full", "w") as full:
        done = run_cli(*argv, stdout=full)
    err = done.stderr.decode()
    assert done.returncode == 2 and err == (
        "perfgraph: error: cannot write to standard output: No space left on device\n")


def test_an_ascii_stdout_gets_ascii_fallbacks(tmp_path):
    base, head = tmp_path / "base.toml", tmp_path / "head.toml"
    base.write_text("[values]\ntp = 2\n")
    head.write_text("[values]\ntp = 4\n")
    done = run_cli("diff", str(base), str(head), env={"PYTHONIOENCODING": "ascii"})
    out = done.stdout.decode("ascii")
    assert done.returncode == 1 and not done.stderr
    # decode_batch_at_itl_slo 312 -> 911 at H100's true 81559 MiB, less vLLM's start-up
    # reserve: the largest ratio
    assert "tp  2 -> 4" in out and "2.92x" in out


# ------------------------------------------------------------------ 5. screenshot --help
def test_screenshot_help_is_help_not_a_file(tmp_path, monkeypatch, capsys):
    from perfgraph.tui import screenshot

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        screenshot.main(["--help"])
    assert done.value.code == 0 and "PATH.svg" in capsys.readouterr().out
    assert screenshot.main(["picture.png"]) == 2
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ 6. stale temporaries
def test_the_next_write_removes_temporaries_a_killed_process_left(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "s.parquet"
    stale = tmp_path / f".s.parquet.{dead.pid}-abcd1234.tmp"
    live = tmp_path / f".s.parquet.{os.getppid()}-abcd1234.tmp"  # a write still going on
    other = tmp_path / f".t.parquet.{dead.pid}-abcd1234.tmp"  # another target's
    for p in (stale, live, other):
        p.write_bytes(b"x" * 1000)
    atomic.write_text_atomic(out, "new")
    assert out.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [out.name, live.name, other.name])


def test_a_sweep_killed_mid_write_is_cleaned_by_the_next(tmp_path):
    out = tmp_path / "s.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import os, sys\n"
         "from perfgraph._infra import atomic\n"
         "def hang(tmp):\n"
         "    tmp.write_bytes(b'x' * 4096); print('ready', flush=True); sys.stdin.read()\n"
         f"atomic.write_atomic({str(out)!r}, hang)\n"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with proc:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        proc.kill()
    assert len(list(tmp_path.glob(".s.parquet.*.tmp"))) == 1  # what kill -9 leaves
    assert main(["sweep", "--axis", "tp=1,2", "--only", "itl", "--out", str(out)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["s.parquet"]


# ------------------------------------------------------------------ 7. huge measured files
def test_a_measured_file_past_any_export_is_refused_by_size_unread(tmp_path, capsys,
                                                                  monkeypatch):
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(200 * 2**20)  # sparse: 200 MiB on paper, nothing on disk
    real_read = Path.read_bytes

    def no_read(self):  # the refusal comes from the size alone
        assert self != big, "the file was read"
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", no_read)
    assert main(["compare", str(big)]) != 0
    err = capsys.readouterr().err
    assert "200 MiB is larger than any benchmark result (64 MiB at most)" in err
