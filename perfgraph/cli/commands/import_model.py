"""``perfgraph import-model CONFIG.json|ORG/NAME``: a model TOML from a Hugging Face config.json.

An argument that names no file and looks like ``ORG/NAME`` is read from that Hugging Face
repository through huggingface_hub and its cache (the optional ``hub`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from perfgraph._infra.atomic import INPUTS, write_text_atomic
from perfgraph._infra.inputfile import file_problem
from perfgraph.cli.options import add_force_option
from perfgraph.errors import InputError
from perfgraph.scenario.hf_hub import fetch_config, is_repo_id_like
from perfgraph.scenario.model_from_config import ImportModelError, model_toml


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-model",
                       description="Read a Hugging Face config.json, from disk or from a "
                                   "repository ORG/NAME (through huggingface_hub and its "
                                   "cache; HF_HUB_OFFLINE=1 keeps it off the network), and "
                                   "write a model TOML, with parameter counts derived from "
                                   "the architecture fields.")
    p.add_argument("config", metavar="CONFIG.json|FOLDER|ORG/NAME")
    p.add_argument("--revision", help="branch, tag or commit of ORG/NAME (default: main)")
    p.add_argument("--offline", action="store_true",
                   help="read ORG/NAME from the Hugging Face cache only")
    p.add_argument("--slug", help="catalog name (default: the config's folder name, or NAME "
                                  "lowercased)")
    p.add_argument("--name", help="display name")
    p.add_argument("--source", help="where the config came from (written as a comment)")
    p.add_argument("--out", "-o", help="write here instead of printing")
    add_force_option(p)
    p.set_defaults(func=run)


def _locate(args: argparse.Namespace) -> tuple[Path, str, str]:
    """The config.json to read, the default slug, and the source the TOML names."""
    path = Path(args.config)
    if path.is_dir():  # a model folder, as downloaded: read its config.json
        path = path / "config.json"
        if not path.is_file():
            raise InputError("a folder with no config.json in it", file=args.config)
    if not path.exists():
        if not is_repo_id_like(args.config):
            raise InputError("no such file (a Hugging Face repository is named ORG/NAME)",
                             file=args.config)
        fetched = fetch_config(args.config, revision=args.revision,
                               offline=True if args.offline else None)
        commit = fetched.parent.name  # the cache keeps each file under snapshots/<commit>/
        return fetched, args.config.split("/")[1].lower(), f"{args.config}@{commit}"
    if args.revision:
        raise InputError("--revision needs a repository id ORG/NAME, not a path",
                         file=args.config)
    return path, (path.parent.name if path.parent.name else path.stem).lower(), str(path)


def run(args: argparse.Namespace) -> int:
    path, slug, source = _locate(args)
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
    try:
        text = model_toml(config, args.slug or slug, args.source or source, name=args.name)
    except ImportModelError as exc:
        raise exc.located(file=str(path)) from None
    if not args.out:
        sys.stdout.write(text)
        return 0
    write_text_atomic(args.out, text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
