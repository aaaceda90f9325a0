"""What a path given as an input file is, when it is not a regular file.

Every reader of a user's file asks :func:`not_a_file` first, so that a folder, a named pipe
or a device (``/dev/zero``, which would be read for ever) is named for what it is instead of
"no such file", and nothing waits on a FIFO that no one writes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Text a reader strips from the start of a file: the UTF-8 byte order mark that Windows
#: editors (Notepad, Excel's "CSV UTF-8") write.
BOM = "\ufeff"


def not_a_file(path: str | Path) -> str | None:
    """None for a regular file (or a symlink to one); else what ``path`` is: "no such
    file", "a folder", "a named pipe (FIFO)", "a character device" …"""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except (OSError, ValueError) as exc:
        return f"cannot read it: {getattr(exc, 'strerror', None) or exc}"
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def file_problem(path: str | Path, kind: str) -> str | None:
    """None when ``path`` is a regular file to read; else the message for a ``kind`` file
    ("no such scenario file", "a named pipe (FIFO), not a scenario file")."""
    what = not_a_file(path)
    if what is None:
        return None
    if what == "no such file":
        return f"no such {kind} file"
    return what if what.startswith(("cannot", "not")) else f"{what}, not a {kind} file"
