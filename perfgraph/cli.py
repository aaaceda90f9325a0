"""The ``perfgraph`` command: wiring only. Each command lives in ``perfgraph.commands``.

A command module has ``register(subparsers)`` (its parser, with ``func`` set to its ``run``)
and ``run(args) -> int``. Bad input of any kind is a PerfgraphError: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from perfgraph.errors import PerfgraphError

#: Command modules, in the order ``perfgraph --help`` lists them.
COMMANDS = (
    "perfgraph.commands.evaluate",
    "perfgraph.commands.explain",
    "perfgraph.commands.levers",
    "perfgraph.commands.tui",
    "perfgraph.commands.import_model",
    "perfgraph.commands.compare",
    "perfgraph.commands.calibrate",
    "perfgraph.commands.sweep",
    "perfgraph.commands.diff",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"perfgraph: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="perfgraph",
                     description="A spreadsheet-style model of LLM inference performance.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PerfgraphError as exc:
        print(f"perfgraph: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `perfgraph eval | head`
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
