"""Writing files so that a crash never leaves half of one: a temporary file, then rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from perfgraph.errors import InputError


def write_atomic(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` for a temporary file beside ``path``, then rename it into place.

    Any failure removes the temporary file and leaves ``path`` as it was; an unwritable
    place is an InputError naming the path.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: no such folder {folder}", file=str(path))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}", file=str(path)) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}", file=str(path)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
