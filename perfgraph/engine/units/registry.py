"""The Pint registry: Pint's default units with ``bit`` a dimension of its own, plus ``FLOP``,
``token`` and ``request``, built (and cached in the user's cache folder) on first use only."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pint


def _definitions() -> str:
    """Pint's default definitions (constants inlined), with ``bit`` a dimension of its own."""
    import pint

    folder = Path(pint.__file__).parent
    text = (folder / "default_en.txt").read_text(encoding="utf-8")
    text = text.replace("@import constants_en.txt",
                        (folder / "constants_en.txt").read_text(encoding="utf-8"))
    return text.replace("\nbit = []", "\nbit = [information]")


def _registry() -> pint.UnitRegistry[Any]:
    """Pint's default units, except that ``bit`` (hence ``B``) is a dimension of its own.

    Pint declares ``bit = []``, dimensionless, so bytes would silently mix with plain
    numbers; a sheet must reject ``weights_bytes + n_params``.

    Parsing Pint's definitions takes ~0.4 s, most of a cold ``perfgraph eval``; so they are
    written once to the user's cache folder (named by their hash) and Pint caches what it
    parsed from that file beside it. Where the cache cannot be written or read, the
    registry is built from the text, as before.
    """
    import pint

    text = _definitions()
    registry = _cached_registry(text)
    if registry is None:
        registry = pint.UnitRegistry(None, autoconvert_offset_to_baseunit=False)
        registry.load_definitions(text.splitlines())
    if registry.byte.dimensionless:  # pragma: no cover - a Pint whose file we did not expect
        raise RuntimeError("could not give bytes a dimension in this version of Pint")
    return registry


def _holds(path: Path, text: str) -> bool:
    """Whether the cached definitions file is there and holds exactly ``text`` (one edited
    by hand would change every unit it defines)."""
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def _cached_registry(text: str) -> pint.UnitRegistry[Any] | None:
    import pint

    try:
        from platformdirs import user_cache_dir

        folder = Path(user_cache_dir("perfgraph"))
        digest = hashlib.sha256(f"{pint.__version__}\n{text}".encode()).hexdigest()[:16]
        path = folder / f"units-{digest}.txt"
        if not _holds(path, text):  # missing, or not what it was built from: rewrite it
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{path.name}.{os.getpid()}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        return pint.UnitRegistry(str(path), cache_folder=folder / "pint",
                                 autoconvert_offset_to_baseunit=False)
    except Exception:  # noqa: BLE001 - any trouble with the cache: build without it
        return None



@lru_cache(maxsize=1)
def get_registry() -> pint.UnitRegistry[Any]:
    """The registry, built the first time a unit is not in the unit table (or a Quantity
    is asked for): a command whose units are all known never imports Pint."""
    registry = _registry()
    registry.define("FLOP = [flop] = flop = FLOPs = flops")
    registry.define("token = [token] = tokens = tok")
    registry.define("request = [request] = requests = req")
    return registry


def in_registry(name: str) -> bool:
    """Whether Pint knows the unit name (SI prefixes included). A name Pint's parser cannot
    take is not a unit: it raises its own errors, and on some characters (``¼``, a number
    to its tokenizer) fails an internal ``assert``."""
    import pint

    try:
        return name in get_registry()
    except (pint.PintError, AttributeError, TypeError, ValueError, AssertionError):
        return False
