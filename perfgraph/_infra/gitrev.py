"""Reading one file as it was at a git revision (``REV:path``) with ``git show``: no checkout.

``main:workloads/chat-1k1k.toml`` names the file at ``main``; as in git, the path is from the
top of the repository, or from the current folder when it starts with ``./`` or ``../``
(:func:`from_top` turns it into a path from the top). A name that is a file on disk is
always that file, even if it holds a colon.

:func:`copy_of` puts the file in a temporary folder at the path it has in the repository,
with any other files at the same revision that it names by relative path (a scenario's
``model = "mymodel.toml"``) where they stand, so relative paths resolve as in the checkout.
"""

from __future__ import annotations

import posixpath
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from perfgraph.errors import InputError

TIMEOUT_S = 30


@dataclass(frozen=True)
class GitRef:
    """A file at a revision: ``rev:path`` (an empty rev is the index, as in git)."""

    rev: str
    path: str
    typed: str = field(default="", compare=False)  # as the user wrote it, when it differs

    @property
    def label(self) -> str:
        return self.typed or f"{self.rev}:{self.path}"

    def at(self, path: str) -> GitRef:
        """Another file at the same revision."""
        return GitRef(self.rev, path)


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


def from_top(ref: GitRef, cwd: str | None = None) -> GitRef:
    """``ref`` with its path from the top of the repository (``./x`` and ``../x`` are from
    the current folder, as git reads them); its label stays as written."""
    path = ref.path
    if path.startswith(("./", "../")) or path in (".", ".."):
        found = _git("rev-parse", "--show-prefix", cwd=cwd)
        if found.returncode != 0:
            raise InputError(f"{ref.label!r}: not inside a git repository, so a revision "
                             "cannot be read (run perfgraph diff from the repository)")
        prefix = found.stdout.decode("utf-8", "replace").strip()
        path = posixpath.normpath(posixpath.join(prefix, path))
        if path == ".." or path.startswith("../"):
            raise InputError(f"{ref.path!r} is outside the repository", file=ref.label)
    else:
        path = posixpath.normpath(path)
    return GitRef(ref.rev, path, typed=ref.label)


def show(ref: GitRef, cwd: str | None = None) -> str:
    """The text of ``ref``; InputError for a missing revision, path or repository, or a
    path that is a folder there."""
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
    kind = _git("cat-file", "-t", f"{ref.rev}:{ref.path}", cwd=cwd)
    if kind.returncode == 0 and kind.stdout.strip() == b"tree":
        raise InputError(f"{ref.path!r} is a folder at {ref.rev or 'the index'!s}, not a "
                         "file: name a TOML file in it", file=ref.label)
    shown = _git("show", f"{ref.rev}:{ref.path}", cwd=cwd)
    if shown.returncode != 0:
        raise InputError(f"cannot read {ref.path!r} at {ref.rev or 'the index'!s}: "
                         f"{_first_line(shown.stderr)}", file=ref.label)
    try:
        return shown.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=ref.label) from None


@contextmanager
def copy_of(ref: GitRef, cwd: str | None = None, text: str | None = None,
            also: Sequence[str] = ()) -> Iterator[Path]:
    """A temporary copy of ``ref`` (its ``text``, when already read) at the path it has in
    the repository, under a temporary folder removed afterwards; ``also`` are more paths
    from the top of the repository, copied at the same revision where they stand.

    ``ref.path`` should be from the top (:func:`from_top`); :func:`label` names a file
    in the folder as ``REV:path``.
    """
    texts = {ref.path: show(ref, cwd) if text is None else text}
    for path in also:
        if path not in texts:
            texts[path] = show(ref.at(path), cwd)
    with tempfile.TemporaryDirectory(prefix="perfgraph-rev-") as folder:
        for path, content in texts.items():
            copy = Path(folder, *_parts(path))
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(content, encoding="utf-8")
        yield Path(folder, *_parts(ref.path))


def _parts(path: str) -> list[str]:
    parts = [p for p in posixpath.normpath(path).split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise InputError(f"{path!r} is not a path inside the repository")
    return parts


def label(ref: GitRef, copy: Path, file: str) -> str | None:
    """``REV:path`` for ``file`` when it is in ``copy``'s temporary folder, else None."""
    top = copy
    for _ in _parts(ref.path):
        top = top.parent
    try:
        inside = Path(file).resolve().relative_to(top.resolve())
    except ValueError:
        return None
    if inside.as_posix() == ref.path:
        return ref.label
    return f"{ref.rev}:{inside.as_posix()}"
