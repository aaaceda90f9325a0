"""Which engine runs on which accelerator: the engine file's ``vendors`` against the hardware
file's ``vendor``. ``plan`` searches engines × accelerators; a pair that does not run is no
candidate (an accelerator no engine searched runs on is left out of the space)."""

from __future__ import annotations

from collections.abc import Sequence

from perfgraph.errors import InputError
from perfgraph.scenario import engine_files
from perfgraph.scenario.catalog import load_entry


def vendor(hardware: str) -> str | None:
    """The hardware file's ``vendor`` (a catalog slug or a path)."""
    said = load_entry("hardware", hardware).doc.data.get("vendor")
    return None if said is None else str(said)


def not_on(engine: str, hardware: str) -> str | None:
    """Why ``engine`` does not run on ``hardware``, in one sentence; None where it does."""
    return engine_files.engine(engine).not_on(hardware, vendor(hardware))


def apart_pairs(engines: Sequence[str], hardware: Sequence[str]) -> frozenset[tuple[str, str]]:
    """The (engine, accelerator) pairs where the engine does not run on the accelerator."""
    vendors = {h: vendor(h) for h in hardware}  # each hardware file read once
    return frozenset((e, h) for e in engines for h in hardware
                     if not engine_files.engine(e).runs_on(vendors[h]))


def runnable_hardware(engines: Sequence[str], hardware: Sequence[str],
                      option: str) -> list[str]:
    """The accelerators at least one of ``engines`` runs on; none is one message (naming
    ``option``, the one that chose them) saying why."""
    apart = apart_pairs(engines, hardware)
    kept = [h for h in hardware if any((e, h) not in apart for e in engines)]
    if not kept:
        more = len(apart) - 1
        raise InputError(f"no accelerator searched runs an engine searched: "
                         f"{not_on(engines[0], hardware[0])}"
                         + (f" (and {more} more such pairs)" if more else ""), name=option)
    return kept
