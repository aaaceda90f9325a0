"""Parquet files streamed from frames, all or nothing, with each column's unit in the metadata.

A file carries ``perfgraph.units``, a JSON object ``{column: unit}`` (each unit a string Pint
reads once FLOP and token are defined), in its key-value metadata, where Polars
(``pl.read_parquet_metadata``) and pyarrow (``pq.read_metadata(path).metadata``) both read
it. Where pyarrow is installed the same object is also put in the Arrow schema's metadata,
and each column's unit in its field metadata (``unit``), so ``pq.read_table(path).schema``
shows them.

Frames are streamed: the writer pulls one chunk at a time, so a file can be far larger than
memory. The file appears only when complete (:mod:`perfgraph._infra.atomic`). Polars is
imported only when a file is written, so a command that writes no Parquet never loads it.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from perfgraph._infra.atomic import INTERRUPTS, write_atomic
from perfgraph.errors import InputError

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

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
    rows notices (issue 15)."""
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
