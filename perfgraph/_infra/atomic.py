"""Writing files so that a crash never leaves half of one: a temporary file, then rename.

An interrupt (Ctrl-C, or SIGTERM/SIGHUP, which ``perfgraph.cli.main`` turns into exceptions)
while a file is written removes the temporary file too, even when a second interrupt is
already on its way as the cleanup begins (Polars hands one Ctrl-C to Python twice: its own
KeyboardInterrupt, then Python's): the removal comes before any Python code can run a
signal handler, and is tried again, with those signals held off, if one still gets in.

Only a regular file is ever replaced (a symlink's target is written, a device or FIFO is
written through, anything else refused); a file the running command read, or an entry of
the catalog (:data:`INPUTS`), is not written over unless ``--force``; and a temporary is
named ``.NAME.PID-XXXX.tmp`` so that the next write of NAME removes one whose process is
gone (``kill -9``).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import stat
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


class Inputs:
    """The files ``--out`` must not replace: those the running command read, and the
    entries already in the catalog folders (``models/``, ``hardware/``, ``workloads/``).

    ``perfgraph.cli.main`` arms it for each command with the catalog folders; ``--force``,
    the one thing it means in every command, allows the overwrite. Readers call :meth:`note`.
    Files are known by device and inode, so a second name (a symlink, ``./s.toml``) of the
    same file is the same file. Unarmed, nothing is refused.
    """

    def __init__(self) -> None:
        self.armed = False
        self.force = False
        self._read: dict[tuple[int, int], str] = {}
        self._kept: tuple[str, ...] = ()

    def arm(self, *, force: bool = False, kept: tuple[str | Path, ...] = ()) -> None:
        self.armed, self.force = True, force
        self._read.clear()
        self._kept = tuple(os.path.realpath(k) for k in kept)

    def disarm(self) -> None:
        self.armed, self.force = False, False
        self._read.clear()
        self._kept = ()

    def note(self, path: str | Path) -> None:
        """``path`` was read (a file that cannot be stat'ed is not noted)."""
        if not self.armed:
            return
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return
        self._read.setdefault((info.st_dev, info.st_ino), str(path))

    def check(self, path: Path) -> None:
        """InputError when writing ``path`` would replace a file this command read, or an
        entry of a catalog folder."""
        if not self.armed or self.force:
            return
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return
        read = self._read.get((info.st_dev, info.st_ino))
        if read is not None:
            raise InputError(f"refusing to write over {read}, which this command read; "
                             "give another --out, or --force to replace it", file=str(path))
        if stat.S_ISREG(info.st_mode) and \
                os.path.dirname(os.path.realpath(path)) in self._kept:
            raise InputError("refusing to replace an entry of the catalog; give another "
                             "--out, or --force to replace it", file=str(path))


#: The files the running command read (a process runs one command at a time).
INPUTS = Inputs()
#: How temporaries are named: ``.NAME.PID-RANDOM.tmp`` beside the target, so that the next
#: write of NAME can tell one left by a killed process (its PID gone) and remove it.
_TMP = ".{name}.{pid}-"


def write_atomic(path: str | Path, write: Callable[[Path], None], *,
                 replacing_input: bool = False) -> None:
    """Call ``write(tmp)`` for a temporary file beside ``path``, then rename it into place.

    Any failure or interrupt removes the temporary file and leaves ``path`` as it was; an
    unwritable place is an InputError naming the path. Only a regular file is ever replaced:
    a symlink is followed (its target is written, atomically), a character device or FIFO
    (``/dev/null``, a named pipe) is written through, and anything else (a folder, a block
    device, a socket) is refused. Writing over a file the command read (:data:`INPUTS`) is
    refused unless ``replacing_input`` (a save of the file being edited) or ``--force``.
    """
    path = Path(path)
    if not path.name:
        raise InputError("cannot write to an empty path", file=str(path))
    if _stream(path):  # /dev/null, a named pipe, /dev/stdout (a link to a pipe or tty)
        _write_through(path, path, write)
        return
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if not replacing_input:
        INPUTS.check(target)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=str(path)) from None
    if mode is not None and not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode) \
            else "not a regular file"
        raise InputError(f"cannot write: it is {what}", file=str(path))
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write: no such folder {folder}", file=str(path))
    remove_stale(target)
    _replace(path, target, folder, write, mode)


def _stream(path: Path) -> bool:
    """Whether ``path`` (its links followed, as ``open`` follows them: ``/dev/stdout`` names
    ``/proc/self/fd/1``, whose target ``pipe:[…]`` is no path) is a character device or a
    FIFO, written through rather than replaced."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _replace(path: Path, target: Path, folder: Path, write: Callable[[Path], None],
             mode: int | None) -> None:
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=_TMP.format(name=target.name, pid=os.getpid()),
                                        suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", file=str(path)) from None
    tmp = Path(tmp_name)
    try:
        os.close(fd)
        write(tmp)
        os.chmod(tmp, mode & 0o777 if mode is not None else 0o644)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)  # first, and a C call: no signal handler runs before it
        except FileNotFoundError:
            pass
        except BaseException:  # an interrupt already on its way, or the unlink failed
            discard(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write: {exc.strerror or exc}",
                             file=str(path)) from None
        raise


def _write_through(path: Path, target: Path, write: Callable[[Path], None]) -> None:
    """Write into a temporary file in the system's temporary folder, then copy it into the
    device or FIFO ``target`` (whose node stays as it is)."""
    fd, tmp_name = tempfile.mkstemp(prefix="perfgraph-", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        os.close(fd)
        write(tmp)
        with open(tmp, "rb") as source, open(target, "wb", buffering=0) as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
    except BaseException as exc:
        try:
            os.unlink(tmp)  # first, and a C call: no signal handler runs before it
        except FileNotFoundError:
            pass
        except BaseException:  # an interrupt already on its way, or the unlink failed
            discard(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write: {exc.strerror or exc}",
                             file=str(path)) from None
        raise
    tmp.unlink(missing_ok=True)


def remove_stale(target: Path) -> list[Path]:
    """Remove the temporaries of ``target`` that processes no longer running left behind
    (``kill -9`` during a write); those of live processes (a concurrent write) stay."""
    folder = target.parent if str(target.parent) else Path(".")
    pattern = re.compile(re.escape(f".{target.name}.") + r"(\d+)-[^.]+\.tmp")
    removed: list[Path] = []
    try:
        candidates = list(folder.glob(f".{glob.escape(target.name)}.*-*.tmp"))
    except OSError:
        return removed
    for candidate in candidates:
        match = pattern.fullmatch(candidate.name)
        if match is None or _alive(int(match.group(1))):
            continue
        try:
            candidate.unlink()
            removed.append(candidate)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


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


def write_text_atomic(path: str | Path, text: str, *, replacing_input: bool = False) -> None:
    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    write_atomic(path, write, replacing_input=replacing_input)
