"""A child that ends with its parent: each dashboard ``perfgraph web`` starts for a browser tab.

The server names itself in the child's environment (:data:`PARENT`, its pid). The child, as
it starts, asks Linux to SIGKILL it the moment that parent dies (``prctl(PR_SET_PDEATHSIG)``),
then checks that its parent is still the one named: the parent may have died before the
request, and the kernel does not look back. Where there is no ``prctl`` (not Linux), a daemon
thread polls the parent's pid instead. SIGKILL, not SIGTERM: a dashboard whose server is gone
has no one left to show anything to, and one stuck writing into the closed pipe may never
act on a SIGTERM. A server that is stopped properly ends its children itself, more gently
(:mod:`perfgraph.cli.webserve`); this is for the server that is not (``kill -9``, a crash).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import MutableMapping

#: The environment variable that names the pid of the process the child must not outlive.
PARENT = "PERFGRAPH_PARENT_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: How often, in seconds, the polling thread looks at the parent where prctl is missing.
POLL_S = 0.5


def exit_with_parent(environ: MutableMapping[str, str] = os.environ) -> None:
    """End this process when the parent :data:`PARENT` names dies; nothing when unset.

    The variable is taken out of ``environ``: a process this one starts has another parent.
    """
    named = environ.pop(PARENT, "")
    if not named.isdigit():
        return
    parent = int(named)
    if not _kill_me_with_parent():
        threading.Thread(target=_watch, args=(parent,), daemon=True,
                         name="perfgraph-lifeline").start()
    if os.getppid() != parent:  # it died before the request: we are someone else's now
        os._exit(1)


def _kill_me_with_parent() -> bool:
    """Ask Linux for SIGKILL when the parent dies; False where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os._exit(1)
