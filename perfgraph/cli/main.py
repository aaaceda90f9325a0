"""The ``perfgraph`` command: wiring only. Each command lives in ``perfgraph.cli.commands``.

A command module has ``register(subparsers)`` (its parser, with ``func`` set to its ``run``)
and ``run(args) -> int``. Bad input of any kind is a PerfgraphError: one line on stderr, exit 2.
Only the module of the command being run is imported (so ``perfgraph eval`` never loads
Polars for ``compare``); ``perfgraph --help`` and an unknown command import none: they list
:data:`COMMANDS`, each command's one-line help, from the table here.

Ctrl-C, SIGTERM and SIGHUP become exceptions, promptly even inside Polars
(:class:`SignalGuard`), so that a file being written is removed (``perfgraph._infra.atomic``);
the command then prints ``perfgraph: interrupted`` and exits with 128 + the signal's
number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from perfgraph._infra.atomic import INPUTS, INTERRUPTS
from perfgraph.errors import PerfgraphError


class Command(NamedTuple):
    """A command's module (imported only when the command runs) and its line in ``--help``."""

    module: str
    help: str


#: Command name → its module and help, in the order ``perfgraph --help`` lists them.
COMMANDS = {
    "eval": Command("perfgraph.cli.commands.evaluate", "evaluate a scenario and print its cells"),
    "explain": Command("perfgraph.cli.commands.explain", "show how a cell is computed"),
    "levers": Command("perfgraph.cli.commands.levers",
                      "list the symptoms that hold and what each lever would do"),
    "tui": Command("perfgraph.cli.commands.tui", "explore a scenario in a live dashboard"),
    "import-model": Command("perfgraph.cli.commands.import_model",
                            "write a model TOML from a config.json"),
    "compare": Command("perfgraph.cli.commands.compare",
                       "hold measured runs against the model (%% of possible, MFU, MBU)"),
    "calibrate": Command("perfgraph.cli.commands.calibrate",
                         "fit efficiency inputs to measured runs; write a --calibration file"),
    "sweep": Command("perfgraph.cli.commands.sweep",
                     "evaluate a scenario over the product of axes (Parquet)"),
    "diff": Command("perfgraph.cli.commands.diff",
                    "compare two scenarios: changed inputs, moved results, and why"),
    "simulate": Command("perfgraph.cli.commands.simulate",
                        "simulate serving requests, step by step, on the sheet"),
    "plan": Command("perfgraph.cli.commands.plan",
                    "search deployments for the cheapest that meets SLOs"),
    "plot": Command("perfgraph.cli.commands.plot", "draw a scenario's charts to SVG or PNG"),
    "web": Command("perfgraph.cli.commands.web", "serve the dashboard to a web browser"),
}
#: Signals turned into :class:`Interrupted` while a command runs (SIGINT is Python's own
#: KeyboardInterrupt already). One the parent set to be ignored (``nohup``) stays ignored.
RAISED = tuple(s for s in (getattr(signal, n, None) for n in ("SIGTERM", "SIGHUP"))
               if s is not None)


#: What a terminal or file that cannot carry Unicode gets instead (``PYTHONIOENCODING=ascii``,
#: a Latin-1 locale); any other character it cannot carry becomes ``?``.
FALLBACKS = {"×": "x", "→": "->", "←": "<-", "Δ": "d", "≤": "<=", "≥": ">=", "≠": "!=",
             "÷": "/", "·": "-", "…": "...", "−": "-", "±": "+/-", "–": "-", "—": "-",
             "µ": "u", "≈": "~", "²": "^2", "³": "^3", "█": "#", "░": ".", "✓": "ok",
             "✗": "x", "§": "S", "─": "-", "├": "+", "└": "+", "α": "alpha",
             "≫": ">>", "∑": "sum", "↓": "v", "↑": "^", "●": "*", "◆": "*", "▼": "v",
             "▲": "^"}


def _fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    return "".join(FALLBACKS.get(ch, "?") for ch in text), exc.end


codecs.register_error("perfgraph-ascii", _fallback)


def _carry_any_text() -> None:
    """Let stdout and stderr write text their encoding cannot carry, with :data:`FALLBACKS`."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
        if encoding not in ("utf-8", "utf8") and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="perfgraph-ascii")
            except (ValueError, OSError):  # pragma: no cover - a detached stream
                pass


class StdoutError(PerfgraphError, OSError):
    """Standard output cannot be written (a full disk, a closed terminal)."""


class _Stdout:
    """sys.stdout while a command runs: a failed write or flush is one StdoutError."""

    def __init__(self, stream: object) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)  # type: ignore[attr-defined,no-any-return]
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(f"cannot write to standard output: {exc.strerror or exc}"
                              ) from None

    def flush(self) -> None:
        try:
            self._stream.flush()  # type: ignore[attr-defined]
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(f"cannot write to standard output: {exc.strerror or exc}"
                              ) from None

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _silence_stdout(stream: object) -> None:
    """Point stdout's file at /dev/null, so that Python's own flush at exit is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())  # type: ignore[attr-defined]
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # in-process, stdout is not a file
        pass


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised wherever the program is, so that cleanup runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"perfgraph: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``command`` with all its options (its module imported), or, when it
    names none, of every command by name and help only (``perfgraph --help``; none of their
    modules is imported, and none of them can be run from it)."""
    parser = _Parser(prog="perfgraph",
                     description="A spreadsheet-style model of LLM inference performance.")
    parser.add_argument("--version", action="version",
                        version=f"perfgraph {importlib.import_module('perfgraph').__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command].module).register(sub)
        return parser
    for name, (_, help_line) in COMMANDS.items():
        sub.add_parser(name, help=help_line)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    return argv[0] if argv and not argv[0].startswith("-") else None


class SignalGuard:
    """While a command runs, SIGTERM and SIGHUP raise :class:`Interrupted` (main thread only),
    and a watcher thread, woken through :func:`signal.set_wakeup_fd` the moment one of them
    or SIGINT arrives, tells :data:`perfgraph._infra.atomic.INTERRUPTS`, so that a Parquet write
    holding the main thread inside Polars stops at its next chunk, not at its end.
    :meth:`stop` puts everything back (``main`` is called in-process by tests).
    """

    def __init__(self) -> None:
        self.previous: dict[int, object] = {}
        self._pipe: tuple[int, int] | None = None
        self._wakeup = -1
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in RAISED:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                self.previous[signum] = signal.signal(signum, _raise)
        watched = set(self.previous)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            watched.add(signal.SIGINT)
        if watched:
            self._watch(frozenset(watched))

    def _watch(self, watched: frozenset[int]) -> None:
        read, write = os.pipe()
        os.set_blocking(write, False)
        try:
            self._wakeup = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(read)
            os.close(write)
            return
        self._pipe = (read, write)
        INTERRUPTS.arm()
        self._watcher = threading.Thread(target=self._notice, args=(read, watched),
                                         daemon=True, name="perfgraph-signals")
        self._watcher.start()

    @staticmethod
    def _notice(read: int, watched: frozenset[int]) -> None:
        while data := os.read(read, 64):
            for signum in data:
                if signum in watched:
                    INTERRUPTS.notice(signum)

    def stop(self) -> None:
        """Put everything back as :meth:`start` found it."""
        if self._pipe is not None:
            signal.set_wakeup_fd(self._wakeup)
            os.close(self._pipe[1])  # the watcher reads the end of the pipe and stops
            if self._watcher is not None:
                self._watcher.join(timeout=1)
            os.close(self._pipe[0])
            self._pipe = None
            INTERRUPTS.disarm()
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self.previous = {}


def _raise(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def _signal_number(exc: KeyboardInterrupt) -> int:
    """The signal behind ``exc``: its own, the first one noticed, else SIGINT."""
    return int(getattr(exc, "signum", None) or INTERRUPTS.received or signal.SIGINT)


def _catalog_folders() -> tuple[Path, ...]:
    """The folders whose entries ``--out`` replaces only with ``--force``."""
    from perfgraph.scenario.catalog import KINDS, catalog_dir

    return tuple(catalog_dir(kind) for kind in KINDS)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    guard, sigint = SignalGuard(), None
    _carry_any_text()
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)  # type: ignore[assignment]
    try:
        guard.start()
        args = build_parser(_command(argv)).parse_args(argv)
        INPUTS.arm(force=bool(getattr(args, "force", False)), kept=_catalog_folders())
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # now, not at exit, where a failure is a traceback
        return status
    except PerfgraphError as exc:
        if isinstance(exc, StdoutError):
            _silence_stdout(stdout)
        print(f"perfgraph: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `perfgraph eval | head`
        _silence_stdout(stdout)
        return 0
    except KeyboardInterrupt as exc:
        try:  # first, and a C call: a second Ctrl-C already on its way is dropped
            sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass
        try:
            print("perfgraph: interrupted", file=sys.stderr)
        except OSError:  # the terminal went away (SIGHUP)
            pass
        return 128 + _signal_number(exc)
    finally:
        sys.stdout = stdout
        INPUTS.disarm()
        guard.stop()
        if sigint is not None:
            signal.signal(signal.SIGINT, sigint)  # type: ignore[arg-type]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
