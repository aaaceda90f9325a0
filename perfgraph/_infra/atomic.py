"""Writing files so that a crash never leaves half of one: a temporary file, then rename.

An interrupt (Ctrl-C, or SIGTERM/SIGHUP, which ``perfgraph.cli.main`` turns into exceptions)
while a file is written removes the temporary file too, even when a second interrupt is
already on its way as the cleanup begins (Polars hands one Ctrl-C to Python twice: its own
KeyboardInterrupt, then Python's): the removal comes before any Python code can run a
signal handler, and is tried again, with those signals held off, if one still gets in.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from perfgraph.errors import InputError


class Interrupts:
    """Signals noticed the moment they arrive, for code the main thread is not running.

    Python runs a signal handler only in the main thread, between bytecodes; while that
    thread waits inside Polars (a sweep's ``sink_parquet``) a handler would wait for the
    whole file. ``perfgraph.cli.main`` watches for SIGINT, SIGTERM and SIGHUP from a thread and
    calls :meth:`notice`; the code that feeds Polars calls :meth:`check` between chunks.
    """

    def __init__(self) -> None:
        self.watched = False
        self.received: int | None = None
        self._event = threading.Event()

    def arm(self) -> None:
        self.received = None
        self._event.clear()
        self.watched = True

    def disarm(self) -> None:
        self.watched = False
        self._event.clear()

    def notice(self, signum: int) -> None:
        if self.received is None:
            self.received = signum
        self._event.set()

    def check(self) -> None:
        """KeyboardInterrupt once a watched signal has arrived."""
        if self._event.is_set():
            raise KeyboardInterrupt(f"signal {self.received}")


#: The process's interrupts (signals are the process's, so there is one).
INTERRUPTS = Interrupts()
#: The signals held off while a temporary file is removed.
HELD = frozenset(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP"))
                 if s is not None)


def write_atomic(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` for a temporary file beside ``path``, then rename it into place.

    Any failure or interrupt removes the temporary file and leaves ``path`` as it was; an
    unwritable place is an InputError naming the path.
    """
    path = Path(path)
    if not path.name:
        raise InputError("cannot write to an empty path", file=str(path))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: no such folder {folder}", file=str(path))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}", file=str(path)) from None
    tmp = Path(tmp_name)
    try:
        os.close(fd)
        write(tmp)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)  # first, and a C call: no signal handler runs before it
        except FileNotFoundError:
            pass
        except BaseException:  # an interrupt already on its way, or the unlink failed
            discard(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write {path}: {exc.strerror or exc}",
                             file=str(path)) from None
        raise


def discard(tmp: Path) -> None:
    """Remove ``tmp`` (if it is there) with SIGINT, SIGTERM and SIGHUP held off; one that
    arrives meanwhile is delivered once it is gone."""
    held = threading.current_thread() is threading.main_thread() and hasattr(
        signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, HELD) if held else None
    try:
        tmp.unlink(missing_ok=True)
    except OSError:  # best effort: the error that led here is the one to report
        pass
    finally:
        if before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def write_text_atomic(path: str | Path, text: str) -> None:
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    write_atomic(path, write)
