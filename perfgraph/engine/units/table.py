"""The unit table: what Pint said about each unit expression and unit name, kept between
commands in the user's cache folder so that a later command need not import Pint."""

from __future__ import annotations

import atexit
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from perfgraph.engine.units.registry import in_registry


class Table:
    """What Pint said about each unit expression and unit name, kept in the user's cache
    folder in a file named by Pint's version and the text of this package's modules, so
    that a later command reads the factors and dimensions without importing Pint. Without
    a usable cache folder it is an empty table and Pint answers, as before.

    The file carries a SHA-256 over the source it was built from (Pint's installed package,
    by its path, size and time, which an upgrade rewrites, and these modules) and its
    content; one whose checksum does not match (edited by hand, damaged, written by another
    build) is not read, and is rebuilt from Pint on the next save. (Pint's version from its
    metadata would cost ``importlib.metadata``, ~10 ms of every start.)
    """

    def __init__(self) -> None:
        self.path: Path | None = None
        self.source = ""
        self.units: dict[str, list[Any]] = {}
        self.names: dict[str, bool] = {}
        self.changed = False
        try:
            from platformdirs import user_cache_dir

            key = f"{_installed('pint')}\n".encode() + b"".join(
                p.read_bytes() for p in sorted(Path(__file__).parent.glob("*.py")))
            self.source = hashlib.sha256(key).hexdigest()
            self.path = Path(user_cache_dir("perfgraph")) / f"unit-table-{self.source[:16]}.json"
            data = json.loads(self.path.read_text(encoding="utf-8"))
            units, names = dict(data["units"]), dict(data["names"])
        except Exception:  # noqa: BLE001 - no cache yet, or an unusable one: start empty
            return
        if data.get("sha256") == self.checksum(units, names):
            self.units, self.names = units, names
        else:  # tampered or damaged: ask Pint again, and write a good one
            self.changed = True

    def checksum(self, units: dict[str, list[Any]], names: dict[str, bool]) -> str:
        """SHA-256 of the source the table was built from and of its entries."""
        body = json.dumps({"units": units, "names": names}, sort_keys=True)
        return hashlib.sha256(f"{self.source}\n{body}".encode()).hexdigest()

    def save(self) -> None:
        if not self.changed or self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"units": self.units, "names": self.names,
                                       "sha256": self.checksum(self.units, self.names)}),
                           encoding="utf-8")
            os.replace(tmp, self.path)
        except Exception:  # noqa: BLE001 - a cache that cannot be written is no cache
            pass


def _installed(package: str) -> str:
    """Where ``package`` is installed and its ``__init__``'s size and time, found without
    importing it."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(package)
    stat = os.stat(spec.origin)
    return f"{spec.origin} {stat.st_size} {stat.st_mtime_ns}"


TABLE = Table()
atexit.register(TABLE.save)


def unknown_names(names: list[str]) -> list[str]:
    """The names of ``names`` that are not units (each once), asking Pint only about those
    the table does not know yet."""
    unknown: list[str] = []
    for name in names:
        known = name == "%" or TABLE.names.get(name)
        if known is None:
            known = TABLE.names[name] = in_registry(name)
            TABLE.changed = True
        if not known and name not in unknown:
            unknown.append(name)
    return unknown
