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


def test_a_second_eval_reads_its_units_from_the_table_without_pint(tmp_path) -> None:
    """The unit table (factors and dimensions Pint gave, in the user's cache folder) keeps
    Pint out of a command whose units it knows; the first run fills it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = ("import io, sys, contextlib\n"
            "from perfgraph.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    main(['eval', '--only', 'itl,hbm_bandwidth'])\n"
            "print('pint' in sys.modules, out.getvalue().split()[-2:])\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(root)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True, cwd=root).stdout for _ in range(2)]
    assert runs[0].startswith("True") and runs[1].startswith("False")
    assert runs[0].split(" ", 1)[1] == runs[1].split(" ", 1)[1]  # the same value, same unit
    assert list((tmp_path / "perfgraph").glob("unit-table-*.json"))


def test_a_unit_from_the_table_is_the_unit_from_pint() -> None:
    factor, dims = units.Unit._ask_pint("TB/s", units.vet_unit_expression("TB/s"))
    table = units.unit("TB/s")
    assert (factor, dims) == (table.factor, table.dims)
    assert factor == 8e12  # bits are the canonical unit of information


def test_a_tampered_unit_table_is_not_read_and_is_rebuilt(cache_at, tmp_path) -> None:
    """An entry edited in the cache (ms made a second: every ITL 1000× too long) fails the
    table's checksum: the table starts empty, Pint answers, and the next save writes a
    good one."""
    import json

    from perfgraph.engine.units.table import Table

    cache_at(tmp_path / "cache")
    first = Table()
    first.units["ms"] = [0.001, [["[time]", 1.0]]]
    first.changed = True
    first.save()
    assert first.path is not None and Table().units["ms"][0] == 0.001  # a good one is read
    data = json.loads(first.path.read_text(encoding="utf-8"))
    data["units"]["ms"][0] = 1.0
    first.path.write_text(json.dumps(data), encoding="utf-8")
    tampered = Table()
    assert tampered.units == {} and tampered.changed
    tampered.units["ms"] = list(units.Unit._ask_pint("ms", "ms"))
    tampered.units["ms"][1] = [list(item) for item in tampered.units["ms"][1].items]
    tampered.save()
    assert Table().units["ms"][0] == pytest.approx(0.001)


def test_a_tampered_definitions_file_is_written_again(cache_at, tmp_path) -> None:
    cache_at(tmp_path / "cache")
    text = units._definitions()
    assert units._cached_registry(text) is not None
    (path,) = (tmp_path / "cache").glob("units-*.txt")
    path.write_text(text.replace("\nminute = 60 * second", "\nminute = 1 * second"),
                    encoding="utf-8")
    registry = units._cached_registry(text)
    assert path.read_text(encoding="utf-8") == text
    assert registry is not None and registry.Quantity("1 minute").to("s").magnitude == 60
