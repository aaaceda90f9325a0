"""The engine files: one TOML per serving engine (``scenario/engines/NAME.toml``).

Each file carries, with its sources, everything perfgraph knows of one engine: its memory
rule and defaults (``[values]``, cells the scenario applies), its KV-cache dtype rule, the
names benchmark files give it, the accelerator vendors it runs on (``vendors``, as hardware
files spell ``vendor``), what the realistic model holds for it (``[realistic]``), its
scheduler policy (``[scheduler]``), its CUDA-graph behaviour (``[cuda_graph]``), its serving
command and flags (``[launch]``), the benchmark that measures it (``[bench]``) and its
container (``[deploy]``). ``--engine``, ``simulate --scheduler``, ``plan --launch``,
``plan --bench`` and the help all read the folder, so adding an engine is adding a file.

The folder is the package's ``engines/``; ``PERFGRAPH_ENGINES`` names more folders
(``os.pathsep``-separated), searched first, so a file there adds an engine or replaces a
shipped one of the same name. A table of the wrong shape is one message naming the file,
the line, the key and what was expected.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from perfgraph._infra import tomlfile
from perfgraph.engine.declarations import Origin
from perfgraph.errors import (
    CatalogError,
    DeclarationError,
    InputError,
    PerfgraphError,
    raise_all,
)
from perfgraph.errors import did_you_mean as _near
from perfgraph.scenario.catalog import Entry

ENGINES_DIR = Path(__file__).resolve().parent / "engines"
#: more folders of engine files, searched before the package's
FOLDERS_VARIABLE = "PERFGRAPH_ENGINES"
KEYS = ("name", "doc", "values", "kv_cache_dtype", "aliases", "vendors", "realistic",
        "scheduler", "cuda_graph", "launch", "bench", "deploy")
#: how a step is filled (the simulator's rules, :mod:`perfgraph.whatif.simulate.scheduler`)
BATCHING = ("mixed", "prefill-first", "inflight")
PREEMPTION = ("recompute", "none")
#: what a [launch] flag's value may be: a plan value (perfgraph.whatif.launch.plan_values)
LAUNCH_VALUES = ("tp", "pp", "ep", "ep_switch", "dp_attention", "batch", "tokens",
                 "mem_fraction", "free_fraction", "kv_dtype")
#: what a [bench] flag's value may be: a value of the plan's question
BENCH_VALUES = ("model", "url", "base_url", "isl", "osl", "rate", "requests")
#: the keys each table may hold
TABLE_KEYS = {
    "scheduler": ("batching", "chunked_prefill", "preemption"),
    "cuda_graph": ("max_batch_size", "decode", "mixed"),
    "launch": ("command", "flags", "kv_dtype", "disaggregation_flag", "refuse"),
    "bench": ("tool", "command", "flags", "tail", "result_flag", "result", "result_file"),
    "deploy": ("image", "port", "health", "listen", "kv_connector", "disaggregation_note"),
}


#: the [cuda_graph] keys the sheet models, and their cells (achievable.toml)
GRAPH_CELLS = (("max_batch_size", "cuda_graph_max_batch"), ("decode", "cuda_graph_decode"),
               ("mixed", "cuda_graph_mixed"))


@dataclass(frozen=True)
class EngineEntry(Entry):
    """An engine file as the scenario applies it: its ``[values]``, then its
    ``[cuda_graph]`` table as the cells that model it."""

    def values(self) -> Iterator[tuple[str, Any, Origin]]:
        yield from super().values()
        graphs = self.table("cuda_graph")
        for key, cell in GRAPH_CELLS:
            if key in graphs:
                yield cell, graphs[key], Origin(self.doc.path, self.doc.line("cuda_graph", key))


@dataclass(frozen=True)
class Scheduling:
    """How the engine fills a step (``[scheduler]``)."""

    batching: str  # one of BATCHING
    chunked_prefill: bool  # a prompt may be split over steps
    preemption: str  # one of PREEMPTION: what it does when the KV pool is full


@dataclass(frozen=True)
class CudaGraphs:
    """Which steps run as captured CUDA graphs (``[cuda_graph]``)."""

    max_batch_size: int  # the largest captured batch; 0: the engine sizes it at start-up
    decode: bool  # decode-only steps replay a graph
    mixed: bool  # steps that carry prefill tokens replay one too (piecewise)


@dataclass(frozen=True)
class Launch:
    """The serving command (``[launch]``): argv words, then (flag, plan value) pairs."""

    command: tuple[str, ...]
    flags: tuple[tuple[str, str], ...]
    kv_dtype: dict[str, str] = field(default_factory=dict)  # fp8/auto → its spelling
    disaggregation_flag: str | None = None


@dataclass(frozen=True)
class Bench:
    """A benchmark tool (``[bench]`` with a ``command``): its words and its result file."""

    tool: str
    command: tuple[str, ...]
    flags: tuple[tuple[str, str], ...]
    tail: tuple[str, ...]
    result_flag: str
    result: str
    result_file: str | None = None


@dataclass(frozen=True)
class EngineFile:
    """One engine file, its tables checked."""

    name: str  # the file's stem: what --engine takes
    path: str
    title: str
    scheduling: Scheduling | None
    cuda_graphs: CudaGraphs | None
    launch: Launch | None
    no_launch: str  # why there is no serving command (the file's [launch] refuse)
    bench_tool: str | None  # the benchmark tool that measures it
    bench: Bench | None  # a tool this file defines
    deploy: dict[str, Any] | None
    #: the GPU vendors it runs on (a hardware file's ``vendor``); empty: not said, any
    vendors: tuple[str, ...] = ()

    def runs_on(self, vendor: str | None) -> bool:
        """Whether it runs on ``vendor``'s accelerators (an unknown vendor: yes)."""
        return not self.vendors or vendor is None or vendor.lower() in self.vendors

    def not_on(self, hardware: str, vendor: str | None) -> str | None:
        """Why it does not run on ``hardware`` (a ``vendor``'s), in one sentence; None
        where it does."""
        if self.runs_on(vendor):
            return None
        return (f"{self.title} does not run on {hardware} ({vendor}): it runs on "
                f"{', '.join(self.vendors)} accelerators only (vendors in {self.path})")


def folders() -> list[Path]:
    """The folders searched, first wins: PERFGRAPH_ENGINES's, then the package's."""
    extra = [Path(p) for p in os.environ.get(FOLDERS_VARIABLE, "").split(os.pathsep) if p]
    for folder in extra:
        if not folder.is_dir():
            raise InputError(f"{folder} is not a folder (this variable names folders of "
                             "more engine files)", name=FOLDERS_VARIABLE)
    return [*extra, ENGINES_DIR]


def paths() -> dict[str, Path]:
    """Engine name → its file, sorted by name."""
    found: dict[str, Path] = {}
    for folder in reversed(folders()):
        found.update((p.stem, p) for p in sorted(folder.glob("*.toml")))
    return dict(sorted(found.items()))


def names() -> list[str]:
    return list(paths())


def path_of(name: str) -> Path:
    """The file of engine ``name``; an unknown name is one message listing the engines."""
    known = paths()
    if name not in known:
        raise CatalogError(f"unknown engine {name!r}{_near(name, known)}; known engines: "
                           f"{', '.join(known)}", name="engine")
    return known[name]


def doc(name: str) -> tomlfile.TomlDoc:
    """The engine file's TOML (read again when it changes)."""
    path = path_of(name)
    return _read(str(path), path.stat().st_mtime_ns)


def engine(name: str) -> EngineFile:
    """The engine file of ``name``, every table checked (every problem reported at once)."""
    path = path_of(name)
    return _checked(str(path), path.stat().st_mtime_ns)


def engines() -> list[EngineFile]:
    return [engine(n) for n in names()]


@lru_cache(maxsize=32)
def _read(path: str, _mtime: int) -> tomlfile.TomlDoc:
    return tomlfile.read(path)


@lru_cache(maxsize=32)
def _checked(path: str, mtime: int) -> EngineFile:
    d = _read(path, mtime)
    c = _Checker(d)
    unknown = [k for k in d.data if k not in KEYS]
    c.problems += [d.error(f"unknown key {k!r}{_near(k, KEYS)}; expected one of: "
                           f"{', '.join(KEYS)}", k) for k in unknown]
    scheduling = c.table("scheduler", _scheduling)
    graphs = c.table("cuda_graph", _graphs)
    launch = c.table("launch", _launch)
    bench = c.table("bench", _bench)
    deploy = c.table("deploy", _deploy)
    vendors = d.data.get("vendors", [])
    if not _fits("words", vendors):
        c._problem(("vendors",), vendors, _EXPECTED["words"])
    raise_all(c.problems)
    refuse = d.data.get("launch", {}).get("refuse", "")
    return EngineFile(Path(path).stem, path, str(d.data.get("name", Path(path).stem)),
                      scheduling, graphs, launch if not refuse else None, str(refuse),
                      None if bench is None else bench[0], None if bench is None else bench[1],
                      deploy, tuple(v.lower() for v in vendors))


class _Checker:
    """Reads a table's keys with their types; each wrong one is a problem naming the file,
    the line, the key and what was expected."""

    def __init__(self, doc: tomlfile.TomlDoc) -> None:
        self.doc = doc
        self.problems: list[PerfgraphError] = []
        self.where: tuple[str, ...] = ()

    def table(self, name: str, read: Callable[[_Checker], Any]) -> Any:
        data = self.doc.data.get(name)
        if data is None:
            return None
        if not isinstance(data, dict):
            self._problem((name,), data, "a table")
            return None
        self.where = (name,)
        before = len(self.problems)
        out = read(self)
        known = TABLE_KEYS[name]
        for key in data:
            if key not in known:
                self.problems.append(self.doc.error(
                    f"unknown key {key!r} in [{name}]{_near(key, known)}; expected one of: "
                    f"{', '.join(known)}", name, key))
        return out if len(self.problems) == before else None

    def get(self, key: str, kind: str, default: Any = ...) -> Any:
        """The table's ``key``, of ``kind``: str, bool, int, words (a list of strings),
        pairs (a list of [flag, value] pairs), a choice 'a|b|c' or a table."""
        data = self.doc.data[self.where[0]]
        if key not in data:
            if default is ...:
                self._problem((*self.where, key), None, _EXPECTED.get(kind, f"one of {kind}"))
            return None if default is ... else default
        value = data[key]
        if not _fits(kind, value):
            self._problem((*self.where, key), value, _EXPECTED.get(
                kind, "one of " + ", ".join(repr(c) for c in kind.split("|"))))
            return default if default is not ... else None
        return value

    def _problem(self, key: tuple[str, ...], value: Any, expected: str) -> None:
        given = "missing" if value is None else f"{value!r}"
        where = f"[{'.'.join(key[:-1])}] {key[-1]}" if len(key) > 1 else key[0]
        self.problems.append(DeclarationError(
            f"{where} is {given}: expected {expected}",
            file=self.doc.path, line=self.doc.line(*key), name=key[-1]))


_EXPECTED = {"str": "a string", "bool": "true or false", "int": "a whole number ≥ 0",
             "words": "a list of strings", "pairs": "a list of [flag, value] pairs of strings",
             "table": "a table of strings"}


def _fits(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "words":
        return isinstance(value, list) and all(isinstance(w, str) for w in value)
    if kind == "pairs":
        return isinstance(value, list) and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) for w in p)
            for p in value)
    if kind == "table":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    return value in kind.split("|")


def _scheduling(c: _Checker) -> Scheduling:
    return Scheduling(c.get("batching", "|".join(BATCHING)), c.get("chunked_prefill", "bool"),
                      c.get("preemption", "|".join(PREEMPTION)))


def _graphs(c: _Checker) -> CudaGraphs:
    return CudaGraphs(c.get("max_batch_size", "int"), c.get("decode", "bool"),
                      c.get("mixed", "bool"))


def _launch(c: _Checker) -> Launch | None:
    if c.get("refuse", "str", ""):
        return None
    flags = c.get("flags", "pairs") or []
    _known_values(c, flags, LAUNCH_VALUES)
    return Launch(tuple(c.get("command", "words") or ()), tuple(map(tuple, flags)),
                  dict(c.get("kv_dtype", "table", {})), c.get("disaggregation_flag", "str", None))


def _bench(c: _Checker) -> tuple[str, Bench | None]:
    tool = c.get("tool", "str")
    if "command" not in c.doc.data["bench"]:
        return tool, None
    flags = c.get("flags", "pairs") or []
    _known_values(c, flags, BENCH_VALUES)
    return tool, Bench(tool, tuple(c.get("command", "words") or ()), tuple(map(tuple, flags)),
                       tuple(c.get("tail", "words", [])), c.get("result_flag", "str"),
                       c.get("result", "str"), c.get("result_file", "str", None))


def _deploy(c: _Checker) -> dict[str, Any]:
    for key, kind in (("image", "str"), ("port", "int"), ("health", "str")):
        c.get(key, kind)
    for key in ("listen", "kv_connector"):
        c.get(key, "words", [])
    c.get("disaggregation_note", "str", None)
    return dict(c.doc.data["deploy"])


def _known_values(c: _Checker, flags: list[list[str]], allowed: tuple[str, ...]) -> None:
    for flag, value in flags:
        if value not in allowed:
            c._problem((*c.where, "flags"), [flag, value],
                       f"a value among {', '.join(allowed)} for {flag}")
