"""Parquet files, and which format a file gets: every Parquet file perfgraph writes is
written here.

:func:`output_format` picks the format from ``--format``, else from ``--out``'s suffix, and
refuses the two disagreeing (Parquet bytes in ``x.csv``) and an empty ``--out``.

A file carries ``perfgraph.units``, a JSON object ``{column: unit}`` (each unit a string Pint
reads once FLOP and token are defined), in its key-value metadata, where Polars
(``pl.read_parquet_metadata``) and pyarrow (``pq.read_metadata(path).metadata``) both read
it. Where pyarrow is installed the same object is also put in the Arrow schema's metadata,
and each column's unit in its field metadata (``unit``), so ``pq.read_table(path).schema``
shows them.

Frames are streamed (:func:`write_frames`): the writer pulls one chunk at a time, so a file
can be far larger than memory. A file appears only when complete
(:mod:`perfgraph._infra.atomic`). Polars is imported only when a file is written, so a
command that writes no Parquet never loads it.

Rows of results (a sweep's, ``perfgraph eval --format parquet``'s) start with the columns
that name the scenario's catalog choices (:mod:`perfgraph.scenario.choices`), as text, then
one Float64 column per cell in the cell's declared unit, NaN where the cell failed. A
calibrated scenario's file also has the ends of each fitted metric's 80% band beside its cell
(``itl_p10``, ``itl_p90``, in the cell's unit).
"""

from __future__ import annotations

import json
import math
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from perfgraph._infra.atomic import INTERRUPTS, write_atomic
from perfgraph.engine.sheet import Sheet
from perfgraph.errors import InputError
from perfgraph.scenario import profiles
from perfgraph.scenario.choices import CHOICE_COLUMNS, choices
from perfgraph.scenario.loading import Scenario

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from perfgraph.whatif.plan_search import Result

__all__ = ["CHOICE_COLUMNS", "UNITS_KEY", "choices", "output_format", "read_units",
           "scenario_frame", "schema", "units", "write_frames", "write_plans", "write_records",
           "write_scenario", "write_table"]
UNITS_KEY = "perfgraph.units"
#: Fast to write; constant columns (most of a sweep's) shrink to almost nothing.
COMPRESSION: Final = "lz4"  # Final keeps the Literal that sink_parquet wants

Frames = Callable[[], Iterator["pl.DataFrame"]]


def write_frames(path: str | Path, frames: Frames, columns: Mapping[str, pl.DataType],
                 column_units: Mapping[str, str], extra: Mapping[str, str] | None = None,
                 ) -> None:
    """Stream ``frames()`` into a Parquet file at ``path``, all or nothing.

    ``columns`` is the schema every frame has; ``column_units`` goes into the metadata,
    with ``extra`` key-values beside it.
    """
    import polars as pl
    from polars.exceptions import PolarsError

    metadata = {UNITS_KEY: json.dumps(dict(column_units)), **(extra or {})}
    source = pl.io.plugins.register_io_source(_source(frames), schema=dict(columns))

    def write(tmp: Path) -> None:
        if INTERRUPTS.watched:
            _python_takes_ctrl_c()
        try:
            source.sink_parquet(tmp, compression=COMPRESSION, metadata=metadata,
                                arrow_schema=_arrow_schema(columns, column_units, metadata))
        except PolarsError as exc:
            raise OSError(str(exc).splitlines()[0]) from None

    write_atomic(path, write)


def write_table(path: str | Path, columns: Mapping[str, Any],
                column_units: Mapping[str, str], extra: Mapping[str, str] | None = None,
                ) -> bool:
    """Write whole columns (a list of strings, or float64 values) at once with pyarrow,
    all or nothing, with the metadata :func:`write_frames` gives; False (nothing written)
    where pyarrow is not installed. For a table that fits in memory, small: pyarrow alone
    loads in a fraction of the time Polars takes, which a cold command of a few thousand
    rows notices."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - the tests install pyarrow
        return False
    metadata = {UNITS_KEY: json.dumps(dict(column_units)), **(extra or {})}
    fields = [pa.field(name, pa.large_string() if isinstance(values, list) else pa.float64(),
                       metadata={"unit": column_units[name]} if name in column_units else None)
              for name, values in columns.items()]
    schema = pa.schema(fields, metadata=metadata)
    table = pa.Table.from_arrays([_array(pa, columns[f.name], f.type) for f in fields],
                                 schema=schema)
    write_atomic(path, lambda tmp: pq.write_table(table, tmp, compression=COMPRESSION))
    return True


def _array(pa: Any, values: Any, dtype: Any) -> Any:
    """An Arrow array of ``values``: strings from a list; float64 from the buffer of a
    NumPy column, without a copy (``pa.array`` of an ndarray would import ``numpy.ma``)."""
    if isinstance(values, list):
        return pa.array(values, type=dtype)
    data = values.astype("float64", copy=False)
    if not data.flags.c_contiguous:  # a constant column is a broadcast view
        data = data.copy()
    return pa.Array.from_buffers(dtype, len(data), [None, pa.py_buffer(data)])


def _python_takes_ctrl_c() -> None:
    """Give SIGINT back to Python. Polars puts its own Ctrl-C hook before Python's when it
    is imported, and when that hook stops a ``sink_parquet`` the Parquet writer can panic,
    printing a Rust backtrace; with ``perfgraph.cli.main`` watching for signals, the source
    below stops the write instead (a KeyboardInterrupt between chunks, and no backtrace)."""
    if threading.current_thread() is threading.main_thread():
        handler = signal.getsignal(signal.SIGINT)
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def _source(frames: Frames) -> Callable[..., Iterator[pl.DataFrame]]:
    def source(with_columns: list[str] | None, predicate: pl.Expr | None,
               n_rows: int | None, batch_size: int | None) -> Iterator[pl.DataFrame]:
        left = n_rows
        for frame in frames():
            INTERRUPTS.check()  # Polars runs this off the main thread: see perfgraph._infra.atomic
            if with_columns is not None:
                frame = frame.select(with_columns)
            if predicate is not None:
                frame = frame.filter(predicate)
            if left is not None:
                frame, left = frame.head(left), left - min(left, frame.height)
            yield frame
            if left == 0:
                return
    return source


def _arrow_schema(columns: Mapping[str, pl.DataType], column_units: Mapping[str, str],
                  metadata: Mapping[str, str]) -> pa.Schema | None:
    """The Arrow schema with units in schema and field metadata, when pyarrow is here."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - the key-value metadata still carries the units
        return None
    import polars as pl

    fields = [pa.field(name, pa.float64() if dtype == pl.Float64 else pa.large_string(),
                       metadata={"unit": column_units[name]} if name in column_units else None)
              for name, dtype in columns.items()]
    return pa.schema(fields, metadata=dict(metadata))


def read_units(path: str | Path) -> dict[str, str]:
    """The ``{column: unit}`` a file written here carries (InputError if it has none)."""
    import polars as pl
    from polars.exceptions import PolarsError

    try:
        metadata = pl.read_parquet_metadata(path)
    except (OSError, PolarsError) as exc:
        raise InputError(f"cannot read Parquet metadata: {exc}", file=str(path)) from None
    if UNITS_KEY not in metadata:
        raise InputError(f"no {UNITS_KEY} metadata: not written by perfgraph", file=str(path))
    return json.loads(metadata[UNITS_KEY])


def write_records(path: str | Path, records: Sequence[Mapping[str, object]]) -> None:
    """Rows of mixed columns (a comparison's: units in the column names), each column's
    type taken from every row, all or nothing."""
    import polars as pl

    frame = pl.DataFrame(records, infer_schema_length=None)
    write_atomic(path, lambda tmp: frame.write_parquet(tmp))


def write_plans(path: str | Path, result: Result) -> None:
    """``perfgraph plan --out``: every feasible plan, its choices then its values, and its
    rank (1: the plan the answer gives), all or nothing."""
    import numpy as np
    import polars as pl

    choices = [result.choices(int(r)) for r in result.rows]
    rank = np.empty(result.feasible, dtype=np.int64)
    rank[result.order()] = np.arange(1, result.feasible + 1)
    frame = pl.DataFrame(choices).with_columns(
        *[pl.Series(n, result.values[n]) for n in result.values], pl.Series("rank", rank))
    write_atomic(path, lambda tmp: frame.write_parquet(tmp))


def units(sheet: Sheet, names: Sequence[str]) -> dict[str, str]:
    return {n: sheet.declaration(n).unit for n in names}


def schema(cells: Sequence[str]) -> dict[str, pl.DataType]:
    """Choice columns (text), then one Float64 column per cell."""
    import polars as pl

    return {**{c: pl.String() for c in CHOICE_COLUMNS}, **{n: pl.Float64() for n in cells}}


#: The format a file's suffix names.
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json",
            ".md": "markdown", ".markdown": "markdown"}


def output_format(out: str | None, given: str | None, formats: Sequence[str],
                  default: str, file_default: str | None = None) -> str:
    """The format to write: ``given`` (``--format``), else the one ``out``'s suffix names,
    else ``file_default`` (with ``--out``) or ``default``. InputError for an empty ``--out``,
    a suffix naming a format not in ``formats``, a ``--format`` the suffix contradicts, or
    Parquet asked for without ``--out`` (it is never printed)."""
    if out is None:
        if given == "parquet":
            raise InputError("--format parquet needs --out FILE.parquet")
        return given or default
    if not out.strip():
        raise InputError("--out needs a file name (leave --out off to print to stdout)")
    suffix = Path(out).suffix.lower()
    named = SUFFIXES.get(suffix)
    if named is not None and named not in formats:
        raise InputError(f"--out {out}: a {suffix} file holds {named}, which this command "
                         f"does not write; it writes {' or '.join(formats)}")
    if given is None:
        return named or file_default or default
    if named is not None and named != given:
        raise InputError(f"--format {given} does not match --out {out} (a {suffix} file "
                         f"holds {named}); name the file .{_suffix(given)} or drop --format")
    return given


def _suffix(fmt: str) -> str:
    return next((s[1:] for s, f in SUFFIXES.items() if f == fmt), "txt")


def band_units(scenario: Scenario, cells: Sequence[str]) -> dict[str, str]:
    """The band columns a calibrated scenario's file has beside ``cells`` (``itl_p10``,
    ``itl_p90`` …), each in its cell's unit; none for the roofline."""
    if scenario.calibration is None:
        return {}
    return {col: scenario.sheet.declaration(c).unit
            for c in profiles.banded(cells) for col in profiles.band_columns(c)}


def scenario_frame(scenario: Scenario, cells: Sequence[str]) -> pl.DataFrame:
    """One row: the scenario's choices, every cell in ``cells`` (NaN where it failed) and,
    calibrated, the ends of each fitted metric's 80% band (NaN where none was measured)."""
    import polars as pl

    sheet = scenario.sheet
    row: dict[str, object] = dict(choices(scenario))
    for name in cells:
        row[name] = float("nan") if sheet.error(name) else sheet.magnitude(name)
    extra = band_units(scenario, cells)
    judged = scenario.assessment
    for name in profiles.banded(cells) if extra else ():
        band = judged.band(name, None if sheet.error(name) else sheet.magnitude(name))
        for col, end in zip(profiles.band_columns(name), band or (math.nan, math.nan),
                            strict=True):
            row[col] = end
    return pl.DataFrame([row], schema=schema([*cells, *extra]))


def write_scenario(path: str | Path, scenario: Scenario, cells: Sequence[str]) -> None:
    """``perfgraph eval --format parquet --out FILE``: one row, every cell a column (and,
    calibrated, the band columns: :func:`scenario_frame`)."""
    frame = scenario_frame(scenario, cells)
    extra = band_units(scenario, cells)
    write_frames(path, lambda: iter([frame]), schema([*cells, *extra]),
                 {**units(scenario.sheet, cells), **extra})
