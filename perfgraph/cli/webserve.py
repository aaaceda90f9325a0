"""The server behind ``perfgraph web``: textual-serve's, with every tab's dashboard tied to it.

textual-serve starts each browser tab's app through a shell and, when the tab or the server
stops, only asks the app to quit, then waits for it without limit; an app that does not quit,
or a server that is killed, leaves the app running, re-parented to init. Here each dashboard:

- runs without a shell, in a session (so a process group) of its own: the terminal's Ctrl+C
  reaches the server alone, and the server can end the dashboard with all it may have started;
- is ended when its tab closes, and when the server stops on SIGINT, SIGTERM or SIGHUP: asked
  to quit, then sent SIGTERM, then SIGKILL, each step given :data:`GRACE_S` seconds;
- dies with the server even when the server cannot end it (``kill -9``): it is told the
  server's pid, and asks the kernel to kill it when that process dies (:mod:`lifeline`).

The page is textual-serve's, with the font it uses served from textual-serve's own static
files in place of Google Fonts (``webpage/app_index.html``): it loads nothing from elsewhere.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from asyncio.subprocess import PIPE, Process
from contextlib import suppress
from pathlib import Path
from typing import Any

from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, log, to_int

from perfgraph.cli.lifeline import PARENT

#: Seconds a dashboard is given to quit when asked, then to die on SIGTERM, then on SIGKILL.
GRACE_S = 1.0
#: The signals that stop the server, its dashboards first.
STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
              if hasattr(signal, name))
PAGE = Path(__file__).with_name("webpage")


class Tab(AppService):
    """One browser tab's dashboard, a process group of its own that ends with its server."""

    def __init__(self, argv: list[str], **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = argv
        self._ending: asyncio.Task[None] | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        environment = self._build_environment(width=width, height=height)
        environment[PARENT] = str(os.getpid())
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=environment,
            start_new_session=True)
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """End the dashboard (once, however many ask), shielded from the caller's cancel."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end())
        await asyncio.shield(self._ending)

    async def _end(self) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
            await self.send_meta({"type": "quit"})
            for signum in (signal.SIGTERM, signal.SIGKILL):
                if await _exited(process, GRACE_S):
                    break
                _signal_group(process, signum)
            await _exited(process, GRACE_S)
        if self._task is not None:  # relays the dashboard's output until it ends
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._task, GRACE_S)


async def _exited(process: Process, within: float) -> bool:
    """Whether ``process`` has exited, waiting ``within`` seconds at most."""
    with suppress(asyncio.TimeoutError):
        await asyncio.wait_for(process.wait(), within)
    return process.returncode is not None


def _signal_group(process: Process, signum: int) -> None:
    """``signum`` to the process group ``process`` leads, while it has not been reaped."""
    if process.returncode is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signum)


class DashboardServer(Server):
    """textual-serve's server, each tab a :class:`Tab` running ``argv``."""

    def __init__(self, argv: list[str], *, host: str, port: int) -> None:
        super().__init__(shlex.join(argv), host=host, port=port, title="perfgraph",
                         templates_path=PAGE)
        self.argv = argv
        self.tabs: set[Tab] = set()

    async def on_startup(self, app: web.Application) -> None:
        await super().on_startup(app)
        loop = asyncio.get_running_loop()
        for signum in STOPS:  # textual-serve's own are SIGINT and SIGTERM
            loop.add_signal_handler(signum, self.request_exit)

    async def on_shutdown(self, app: web.Application) -> None:
        """End every dashboard and close its tab's websocket, before the server goes."""
        tabs = list(self.tabs)
        await asyncio.gather(*(tab.stop() for tab in tabs))
        await asyncio.gather(*(tab.remote_close() for tab in tabs))

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        await websocket.prepare(request)
        tab = Tab(self.argv, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                  close=websocket.close, download_manager=self.download_manager,
                  debug=self.debug)
        self.tabs.add(tab)
        try:
            await tab.start(width, height)
            await self._process_messages(websocket, tab)
        except Exception as error:  # as textual-serve: one tab's failure is logged, not fatal
            log.exception(error)
        finally:
            await tab.stop()
            self.tabs.discard(tab)
        return websocket
