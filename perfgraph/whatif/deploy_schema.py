"""Generated deployment files checked against the published schemas shipped in ``schemas/``
(provenance in ``schemas/PROVENANCE.md``), offline: ``jsonschema`` validates each document,
and :func:`undeclared` finds the fields a structural CRD schema would prune in silence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from perfgraph.errors import InputError, PerfgraphError

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SCHEMAS = {"Deployment": "k8s-deployment-apps-v1.json", "Service": "k8s-service-v1.json",
           "DynamoGraphDeployment": "dynamo-graph-deployment-v1alpha1.json",
           "llm-d-values": "llm-d-modelservice-values.schema.json"}
#: schemas whose objects leave additionalProperties unset and are pruned, not refused
PRUNED = {"DynamoGraphDeployment"}
NEEDS = "pip install 'perfgraph[deploy]' (PyYAML writes the files, jsonschema checks them)"


@cache
def schema(kind: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMA_DIR / SCHEMAS[kind]).read_text(encoding="utf-8"))
    return data


def require() -> None:
    """One clear message when the optional libraries ``--deploy`` needs are missing."""
    for module in ("yaml", "jsonschema"):
        try:
            __import__(module)
        except ImportError:
            raise InputError(f"--deploy needs {module}: {NEEDS}", name="--deploy") from None


def problems(document: dict[str, Any], kind: str) -> list[str]:
    """Every way ``document`` breaks its schema (empty: it validates)."""
    import jsonschema

    validator = jsonschema.Draft7Validator(schema(kind))
    out = [f"{_path(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    if kind in PRUNED:
        out += [f"{p}: not declared by the schema (the API server would drop it)"
                for p in undeclared(document, schema(kind))]
    return out


def undeclared(value: Any, node: dict[str, Any], at: str = "") -> Iterator[str]:
    """Paths of the fields in ``value`` that ``node`` (an OpenAPI v3 structural schema)
    neither declares in ``properties`` nor admits through ``additionalProperties``."""
    if isinstance(value, dict):
        props = node.get("properties")
        extra = node.get("additionalProperties")
        for key, item in value.items():
            path = f"{at}.{key}" if at else key
            if props is not None and key in props:
                yield from undeclared(item, props[key], path)
            elif isinstance(extra, dict):
                yield from undeclared(item, extra, path)
            elif props is not None and extra is not True and \
                    not node.get("x-kubernetes-preserve-unknown-fields"):
                yield path
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            yield from undeclared(item, node["items"], f"{at}[{i}]")


def check(name: str, documents: tuple[dict[str, Any], ...], kinds: tuple[str, ...]) -> None:
    """Raise, naming the file and every problem, when a generated document breaks its schema
    (a fault of perfgraph's, not of the plan: the file is not written)."""
    pairs = enumerate(zip(documents, kinds, strict=True))
    found = [f"document {i} ({kind}) {p}" for i, (doc, kind) in pairs
             for p in problems(doc, kind)]
    if found:
        raise PerfgraphError(f"generated {name} fails its published schema "
                             f"(schemas/PROVENANCE.md): " + "; ".join(found))


def _path(parts: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".") \
        or "(top)"
