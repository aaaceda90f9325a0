"""The unit registry's definitions are cached in the user's cache folder; without a usable
cache the registry is built from the text, and either way it is the same registry."""

from __future__ import annotations

import os
import stat

import pytest

from perfgraph.engine import units


@pytest.fixture
def cache_at(tmp_path, monkeypatch):
    def place(folder):
        monkeypatch.setattr("platformdirs.user_cache_dir", lambda name: str(folder))
        return folder
    return place


def test_the_cached_registry_reads_as_the_built_one(cache_at, tmp_path) -> None:
    cache_at(tmp_path / "cache")
    first = units._cached_registry(units._definitions())
    again = units._cached_registry(units._definitions())  # from Pint's cache this time
    assert first is not None and again is not None
    assert any((tmp_path / "cache" / "pint").iterdir())
    for registry in (first, again):
        assert not registry.byte.dimensionless  # bytes keep their own dimension
        assert registry.Quantity("3.35 TB/s").to("GB/s").magnitude == pytest.approx(3350)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only folders")
def test_an_unwritable_cache_falls_back_to_building(cache_at, tmp_path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    cache_at(folder / "perfgraph")
    assert units._cached_registry(units._definitions()) is None
    assert not units._registry().byte.dimensionless


def test_a_cache_that_cannot_be_a_folder_falls_back_to_building(cache_at, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache_at(blocker / "perfgraph")
    assert units._cached_registry(units._definitions()) is None
    assert units._registry().Quantity("80 GB").to("B").magnitude == 80e9
