"""``perfgraph import-model CONFIG.json``: a model TOML from a Hugging Face config.json."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from perfgraph._infra.atomic import INPUTS, write_text_atomic
from perfgraph._infra.inputfile import file_problem
from perfgraph.cli.options import add_force_option
from perfgraph.errors import InputError
from perfgraph.scenario.import_model import ImportModelError, model_toml


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-model", help="write a model TOML from a config.json on disk",
                       description="Read a Hugging Face config.json (no network) and write "
                                   "a model TOML, with parameter counts derived from the "
                                   "architecture fields.")
    p.add_argument("config", metavar="CONFIG.json")
    p.add_argument("--slug", help="catalog name (default: the config's folder name)")
    p.add_argument("--name", help="display name")
    p.add_argument("--source", help="where the config came from (written as a comment)")
    p.add_argument("--out", "-o", help="write here instead of printing")
    add_force_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.config)
    problem = file_problem(path, "config.json")
    if problem is not None:
        raise InputError(problem, file=str(path))
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not valid JSON: {getattr(exc, 'msg', exc)}", file=str(path),
                         line=line, col=getattr(exc, "colno", None)) from None
    INPUTS.note(path)
    slug = args.slug or (path.parent.name if path.parent.name else path.stem).lower()
    try:
        text = model_toml(config, slug, args.source or str(path), name=args.name)
    except ImportModelError as exc:
        raise exc.located(file=str(path)) from None
    if not args.out:
        sys.stdout.write(text)
        return 0
    write_text_atomic(args.out, text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
