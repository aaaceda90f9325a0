"""Files appear whole or not at all: a failure, Ctrl-C, SIGTERM or SIGHUP while one is written
removes the temporary file, even when an interrupt lands during that cleanup; the command
then says ``perfgraph: interrupted`` and exits 128 + the signal's number."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfgraph._infra import atomic
from perfgraph.cli.main import main


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "x.txt"
    out.write_text("old")

    def half(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.write_atomic(out, half)
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_an_interrupt_during_cleanup_still_removes_the_temporary(tmp_path, monkeypatch):
    calls = []
    real = os.unlink

    def interrupted_once(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 1:  # Polars hands one Ctrl-C to Python twice
            raise KeyboardInterrupt
        real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", interrupted_once)

    def half(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.write_atomic(tmp_path / "x.txt", half)
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_a_noticed_signal_stops_a_parquet_write_at_the_next_chunk(tmp_path):
    import polars as pl

    from perfgraph.output import parquet as export
    sent = []

    def frames():
        for i in range(1000):
            if i == 2:
                atomic.INTERRUPTS.notice(signal.SIGTERM)  # as cli's watcher thread does
                sent.append(i)
            yield pl.DataFrame({"x": [float(i)]})

    atomic.INTERRUPTS.arm()
    try:
        with pytest.raises(KeyboardInterrupt):
            export.write_frames(tmp_path / "x.parquet", frames, {"x": pl.Float64()}, {"x": ""})
        assert atomic.INTERRUPTS.received == signal.SIGTERM
    finally:
        atomic.INTERRUPTS.disarm()
    assert sent == [2] and list(tmp_path.iterdir()) == []


def test_an_empty_path_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(atomic.InputError, match="empty path"):
        atomic.write_text_atomic("", "x")


def test_sigterm_in_process_is_one_line_and_143_and_the_handlers_are_put_back(
        monkeypatch, capsys):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def load_scenario(args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends

    monkeypatch.setattr("perfgraph.cli.commands.evaluate.load_scenario", load_scenario)
    assert main(["eval"]) == 143
    assert capsys.readouterr().err == "perfgraph: interrupted\n"
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.set_wakeup_fd(-1) == -1  # the watcher's pipe is gone too
    assert not atomic.INTERRUPTS.watched


AXES = ["--axis", "concurrency=1..500", "--axis", "tp=1..20", "--axis", "isl=512..256000:+512"]


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                          (signal.SIGHUP, 129)])
def test_a_signal_mid_sweep_leaves_no_file(tmp_path, signum, code):
    """A 5-million-point sweep is signalled as soon as its temporary file appears."""
    out = tmp_path / "s.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from perfgraph.cli.main import main; sys.exit(main())",
         "sweep", *AXES, "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".s.parquet.*.tmp")):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the sweep never started writing"
            time.sleep(0.01)
        time.sleep(0.2)  # let Polars get going
        os.killpg(proc.pid, signum)  # as a terminal's Ctrl-C does: the whole group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code
    assert err == "perfgraph: interrupted\n"
    assert list(tmp_path.iterdir()) == []
