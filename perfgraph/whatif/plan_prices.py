"""Prices as data: US dollars per GPU-hour by accelerator, from the shipped ``prices.toml``
(dated, cited) and a user's ``--prices`` file over it; a typo or an unknown name is refused."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from perfgraph._infra.tomlfile import TomlDoc, read
from perfgraph.errors import DeclarationError, PerfgraphError, raise_all
from perfgraph.errors import did_you_mean as _near
from perfgraph.scenario.catalog import catalog_names

PRICES_FILE = Path(__file__).resolve().parent / "prices.toml"
#: The keys a price entry may have.
PRICE_KEYS = ("usd_per_gpu_hour", "date", "source", "estimate")


def prices(path: str | None = None) -> dict[str, float]:
    """US dollars per GPU-hour by hardware name: the shipped file, then ``path`` over it.
    A name that is not a catalog accelerator, or a key a price entry does not have, is
    refused (every one at once, each with its near miss): a typo must not leave the shipped
    price in force unseen."""
    out: dict[str, float] = {}
    known = catalog_names("hardware")
    for file in (PRICES_FILE, *(() if path is None else (Path(path),))):
        doc = read(file)
        problems: list[PerfgraphError] = [
            DeclarationError(f"unknown table{_near(key, ['prices'])}; a prices file has "
                             "[prices.HARDWARE] tables", file=doc.path, name=key,
                             line=min((n for k, n in doc.lines.items() if k[0] == key),
                                      default=None))
            for key in doc.data if key != "prices"]
        table = doc.data.get("prices", {})
        if not isinstance(table, dict):
            raise doc.error("[prices] must be a table of hardware names", "prices")
        for name, entry in table.items():
            problems += _price_problems(doc, name, entry, known)
            if not problems:
                out[name] = float(entry["usd_per_gpu_hour"])
        raise_all(problems)
    return out


def _price_problems(doc: TomlDoc, name: str, entry: object,
                    known: Sequence[str]) -> list[PerfgraphError]:
    if name not in known:
        return [doc.error(f"no accelerator {name!r} in the hardware catalog"
                          f"{_near(name, known)}", "prices", name)]
    if not isinstance(entry, dict):
        return [doc.error("expected a table with usd_per_gpu_hour = a number ≥ 0",
                          "prices", name)]
    problems = [doc.error(f"unknown key in [prices.{name}]{_near(key, PRICE_KEYS)}; "
                          f"known: {', '.join(PRICE_KEYS)}", "prices", name, key)
                for key in entry if key not in PRICE_KEYS]
    price = entry.get("usd_per_gpu_hour")
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not price >= 0 \
            or not math.isfinite(price):
        problems.append(doc.error("expected usd_per_gpu_hour = a number ≥ 0",
                                  "prices", name))
    return problems
