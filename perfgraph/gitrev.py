"""Reading one file as it was at a git revision (``REV:path``) with ``git show``: no checkout.

``main:workloads/chat-1k1k.toml`` names the file at ``main``; as in git, the path is from the
top of the repository, or from the current folder when it starts with ``./``. A name that is
a file on disk is always that file, even if it holds a colon.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from perfgraph.errors import InputError

TIMEOUT_S = 30


@dataclass(frozen=True)
class GitRef:
    """A file at a revision: ``rev:path`` (an empty rev is the index, as in git)."""

    rev: str
    path: str

    @property
    def label(self) -> str:
        return f"{self.rev}:{self.path}"


def parse(text: str) -> GitRef | None:
    """``REV:path`` → GitRef; None when ``text`` is a file on disk or has no colon."""
    if Path(text).exists() or ":" not in text:
        return None
    rev, _, path = text.partition(":")
    if not path:
        raise InputError(f"{text!r}: expected REV:path, with a path after the colon")
    return GitRef(rev, path)


def _git(*args: str, cwd: str | None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=TIMEOUT_S,
                              check=False)
    except FileNotFoundError:
        raise InputError("git is not installed, so REV:path cannot be read") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git {' '.join(args)} took longer than {TIMEOUT_S} s") from None


def _first_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[0].removeprefix("fatal: ") if text else "git failed"


def show(ref: GitRef, cwd: str | None = None) -> str:
    """The text of ``ref``; InputError for a missing revision, path or repository."""
    if ref.rev:
        found = _git("rev-parse", "--verify", "--quiet", f"{ref.rev}^{{commit}}", cwd=cwd)
        if b"not a git repository" in found.stderr:
            raise InputError(f"{ref.label!r}: not inside a git repository, so a revision "
                             "cannot be read (run perfgraph diff from the repository)")
        if found.returncode != 0:
            reason = _first_line(found.stderr) if found.stderr.strip() else (
                "no such branch, tag or commit")
            raise InputError(f"git revision {ref.rev!r} does not exist: {reason}",
                             file=ref.label)
    shown = _git("show", f"{ref.rev}:{ref.path}", cwd=cwd)
    if shown.returncode != 0:
        raise InputError(f"cannot read {ref.path!r} at {ref.rev or 'the index'!s}: "
                         f"{_first_line(shown.stderr)}", file=ref.label)
    try:
        return shown.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=ref.label) from None


@contextmanager
def copy_of(ref: GitRef, cwd: str | None = None) -> Iterator[Path]:
    """A temporary file holding ``ref``'s text, named like it, removed afterwards."""
    text = show(ref, cwd)
    with tempfile.TemporaryDirectory(prefix="perfgraph-rev-") as folder:
        path = Path(folder) / Path(ref.path).name
        path.write_text(text, encoding="utf-8")
        yield path
