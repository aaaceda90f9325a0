"""A sweep of at most one chunk is written whole with pyarrow (no Polars import): the file
must be the one the streaming writer gives, rows, types and metadata alike."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from perfgraph.output import parquet, sweep_file
from perfgraph.scenario.loading import ScenarioSpec
from perfgraph.whatif import sweep_axes as sweep


def test_a_small_sweep_file_is_the_streamed_one(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    plan = sweep.plan(ScenarioSpec(), ["concurrency=1..40:x2", "hardware=h100-sxm,h200",
                                       "hbm_bandwidth=3 TB/s,4.8 TB/s"])
    whole, streamed = tmp_path / "whole.parquet", tmp_path / "streamed.parquet"
    sweep_file.write(plan, whole, ["itl", "ttft", "hbm_bandwidth", "n_params"])
    monkeypatch.setattr(sweep_file, "CHUNK_ROWS", 0)  # every sweep streams now
    sweep_file.write(plan, streamed, ["itl", "ttft", "hbm_bandwidth", "n_params"])
    a, b = pl.read_parquet(whole), pl.read_parquet(streamed)
    assert a.height == 2 * 2 * 6 and a.equals(b) and a.schema == b.schema
    assert a["hbm_bandwidth"].unique().sort().to_list() == [3.0, 4.8]
    assert pq.read_schema(whole).equals(pq.read_schema(streamed), check_metadata=True)
    assert parquet.read_units(whole) == parquet.read_units(streamed)
    assert pq.read_schema(whole).field("itl").metadata == {b"unit": b"ms"}


def test_a_small_sweep_that_fails_while_writing_leaves_the_old_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "x.parquet"
    target.write_text("before")
    plan = sweep.plan(ScenarioSpec(), ["concurrency=1,2"])

    def half_then_full(table: object, where: str, **_: object) -> None:
        Path(where).write_bytes(b"PAR1 half")
        raise OSError("No space left on device")

    monkeypatch.setattr(pq, "write_table", half_then_full)
    with pytest.raises(Exception, match="No space left"):
        sweep_file.write(plan, target)
    assert target.read_text() == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["x.parquet"]
    monkeypatch.undo()
    sweep_file.write(plan, target)
    assert pl.read_parquet(target).height == 2
