"""``perfgraph web`` in a real headless browser: Debian's Chromium driven by Selenium with
Debian's chromedriver (no browser download). The dashboard draws on xterm.js canvases, so
the page's text is read where the browser receives it: a hook, installed before the page's
own scripts, keeps every websocket message the page gets, and the test strips the terminal
escapes from them. Keys are typed into the page's terminal like a user types them.

Skips, saying why, where Chromium, chromedriver, Selenium or textual-serve are missing
(``.ci/run`` installs Chromium where it can).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perfgraph.scenario.loading import load

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING = [what for what, ok in (
    ("chromium", CHROMIUM), ("chromedriver", DRIVER),
    ("selenium", importlib.util.find_spec("selenium")),
    ("textual-serve", importlib.util.find_spec("textual_serve"))) if not ok]
needs_browser = pytest.mark.skipif(bool(MISSING), reason=f"no headless browser test: "
                                   f"{', '.join(MISSING)} not installed")

#: Keeps what the page's websocket receives (the terminal's output) in window.__screen.
HOOK = """
window.__screen = [];
const Native = window.WebSocket;
window.WebSocket = function (url, protocols) {
  const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
  ws.addEventListener('message', async (e) => {
    let d = e.data;
    if (typeof d !== 'string') {
      d = new TextDecoder().decode(d instanceof Blob ? await d.arrayBuffer() : d);
    }
    window.__screen.push(d);
  });
  return ws;
};
window.WebSocket.prototype = Native.prototype;
Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
"""
ESCAPES = re.compile(r"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()=>][0-9A-Za-z]?")
SUMMARY = re.compile(r"throughput ([0-9.,]+) tok/s")


def test_each_tab_runs_perfgraph_tui_with_the_scenario_options() -> None:
    from perfgraph.cli.commands.web import tui_command
    from perfgraph.cli.main import build_parser

    args = build_parser("web").parse_args(
        ["web", "s.toml", "-H", "h200", "--set", "tp=4", "--measured", "a.json", "--port", "9"])
    assert tui_command(args)[1:] == ["-m", "perfgraph.cli.main", "tui", "s.toml", "--hardware",
                                     "h200", "--set", "tp=4", "--measured", "a.json"]
    assert args.host == "127.0.0.1"


@pytest.mark.parametrize(("argv", "says"), [
    (["web", "--port", "0"], "--port must be 1–65535"),
    (["web", "--hardware", "nope"], "nope"),
])
def test_web_refuses_bad_options_before_serving(argv, says, capsys) -> None:
    from perfgraph.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif("textual-serve" in MISSING, reason="textual-serve not installed")
def test_a_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "perfgraph.cli.main", "web", "--port",
                               str(port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"perfgraph: error: cannot serve on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(*options: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``perfgraph web`` on a free port of 127.0.0.1, once it listens: (process, URL)."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "perfgraph.cli.main", "web",
                             "--port", str(port), *options],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield proc, f"http://127.0.0.1:{port}/"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def served() -> Iterator[str]:
    with serving("--cell", "itl") as (_, url):
        yield url


@pytest.fixture
def browser() -> Iterator[object]:
    """Headless Chromium that can reach 127.0.0.1 alone (every other name fails to resolve),
    keeping a log of the page's requests (:func:`requested`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1600,2300",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
    try:
        yield driver
    finally:
        driver.quit()


def screen(driver: object) -> str:
    return ESCAPES.sub("", "".join(driver.execute_script("return window.__screen")))


def wait_for(driver: object, found: re.Pattern[str], start: int = 0,
             timeout: float = 20) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if m := found.search(screen(driver), start):
            return m
        time.sleep(0.2)
    raise AssertionError(f"{found.pattern!r} never appeared; the page showed: "
                         f"{screen(driver)[start:][-2000:]!r}")


@needs_browser
def test_the_dashboard_in_a_browser_shows_itl_and_an_edit_moves_throughput(
        served: str, browser: object) -> None:
    from selenium.webdriver.common.keys import Keys

    from perfgraph.engine.numbers import quantity

    sheet = load().sheet
    itl = quantity(sheet.magnitude("itl"), sheet.declaration("itl").unit)
    browser.get(served)  # type: ignore[attr-defined]
    wait_for(browser, re.compile(rf"\n *itl +{re.escape(itl)}"))  # the cell table's row
    before = float(wait_for(browser, SUMMARY).group(1).replace(",", ""))
    assert before == pytest.approx(sheet.magnitude("throughput"), rel=1e-3)

    fork = sheet.fork()
    fork.set("itl", "6.7")
    expected = fork.magnitude("throughput")
    assert abs(expected / before - 1) > 0.1  # the edit is one the summary shows

    mark = len(screen(browser))
    box = browser.find_element("css selector", ".xterm-helper-textarea")  # type: ignore
    box.send_keys("e")  # on itl, the cell the tab opened on (--cell itl)
    mark = wait_for(browser, re.compile(r"pin itl \(in ms\)"), mark).end()
    box.send_keys("6.7", Keys.ENTER)  # pins itl: typed over the value the edit opens with
    wait_for(browser, SUMMARY, mark)
    deadline, after = time.monotonic() + 10, before
    while time.monotonic() < deadline:  # the summary follows the edit as it is typed
        after = float(SUMMARY.findall(screen(browser)[mark:])[-1].replace(",", ""))
        if after == pytest.approx(expected, rel=1e-3):
            break
        time.sleep(0.2)
    assert after == pytest.approx(expected, rel=1e-3)


def requested(driver: object) -> list[str]:
    """Every URL the page asked for (documents, scripts, styles, fonts, websockets) since the
    last call, from Chromium's DevTools log."""
    urls = []
    for entry in driver.get_log("performance"):  # type: ignore[attr-defined]
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
        elif message["method"] == "Network.webSocketCreated":
            urls.append(message["params"]["url"])
    return urls


def descendants(pid: int) -> dict[int, str]:
    """The processes under ``pid`` now (pid → its start time, so that a reused pid is not
    taken for the same process), from /proc."""
    parents: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone while we looked
            continue
        child = int(stat.parent.name)
        parents.setdefault(int(fields[1]), []).append(child)
        started[child] = fields[19]
    found, todo = {}, [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found[child] = started[child]
            todo.append(child)
    return found


def alive(pid: int, started: str) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (a zombie does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return fields[0] != "Z" and fields[19] == started


def open_dashboard(driver: object, url: str) -> None:
    driver.get(url)  # type: ignore[attr-defined]
    wait_for(driver, SUMMARY)  # the dashboard draws, in the page's terminal


@needs_browser
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="walks /proc (Linux)")
@pytest.mark.parametrize(("stop", "unanswering"), [
    ("SIGTERM", False), ("SIGINT", False), ("SIGHUP", False),
    ("SIGKILL", False),  # the server cannot end them: they see it die (PR_SET_PDEATHSIG)
    ("SIGTERM", True),  # dashboards that answer neither quit nor SIGTERM get SIGKILL
])
def test_a_tab_loads_offline_and_its_dashboard_ends_with_the_server(
        stop: str, unanswering: bool, browser: object) -> None:
    with serving() as (proc, url):
        open_dashboard(browser, url)
        browser.switch_to.new_window("tab")  # type: ignore[attr-defined]
        browser.execute_cdp_cmd(  # type: ignore[attr-defined]
            "Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})  # each tab its own
        open_dashboard(browser, url)  # two tabs: two dashboards
        outside = [u for u in requested(browser) if not u.startswith(
            (url, url.replace("http:", "ws:"), "data:"))]
        assert outside == []  # nothing from the network, not even the font:
        assert browser.execute_async_script(  # type: ignore[attr-defined]
            "document.fonts.load(\"16px 'Roboto Mono'\").then("
            "fs => arguments[0](fs.map(f => f.status)))") == ["loaded"]
        tabs = descendants(proc.pid)
        assert len(tabs) == 2, tabs  # one process per tab, no shell between
        if unanswering:
            for pid in tabs:
                os.kill(pid, signal.SIGSTOP)  # a stopped process acts on SIGKILL alone
        proc.send_signal(getattr(signal, stop))
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while (left := [p for p, t in tabs.items() if alive(p, t)]) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in left:  # not to leave them running for the next test
            os.kill(pid, signal.SIGKILL)
        assert left == []


@needs_browser
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="walks /proc (Linux)")
def test_closing_the_tab_ends_its_dashboard(browser: object) -> None:
    with serving() as (proc, url):
        open_dashboard(browser, url)
        assert len(descendants(proc.pid)) == 1
        dashboard = browser.current_window_handle  # type: ignore[attr-defined]
        browser.switch_to.new_window("tab")  # type: ignore[attr-defined]
        browser.switch_to.window(dashboard)  # type: ignore[attr-defined]
        browser.close()  # type: ignore[attr-defined]
        deadline = time.monotonic() + 5
        while descendants(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert descendants(proc.pid) == {}
        assert proc.poll() is None  # the server serves on


@needs_browser
def test_resizing_the_window_keeps_the_session(browser: object) -> None:
    with serving() as (proc, url):
        open_dashboard(browser, url)
        box = browser.find_element("css selector", ".xterm-helper-textarea")  # type: ignore
        for view in "23":  # roofline, concurrency
            box.send_keys(view)
            for width, height in ((1200, 800), (700, 450), (1800, 1100)):
                time.sleep(1)  # the view draws at this size
                browser.set_window_size(width, height)  # type: ignore[attr-defined]
        time.sleep(1)
        assert "-closed" not in browser.execute_script(  # type: ignore[attr-defined]
            "return document.body.className")  # no "Session ended."
        assert len(descendants(proc.pid)) == 1


#: A dashboard's stand-in: asks to end with its parent, says so, then waits; with ``poll``, as
#: where Linux's prctl is missing.
ORPHAN = """
import sys, time
from perfgraph.cli import lifeline
if sys.argv[1:] == ["poll"]:
    lifeline._kill_me_with_parent = lambda: False
lifeline.exit_with_parent()
print("running", lifeline.PARENT in __import__("os").environ, flush=True)
time.sleep(60)
"""
#: The server's stand-in: starts ORPHAN naming itself its parent, prints its pid, waits.
PARENT = """
import os, subprocess, sys, time
env = dict(os.environ, PERFGRAPH_PARENT_PID=str(os.getpid()))
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]], env=env,
                         stdout=subprocess.PIPE, text=True)
assert child.stdout.readline() == "running False\\n"
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="walks /proc (Linux)")
@pytest.mark.parametrize("how", ["prctl", "poll"])
def test_a_dashboard_dies_with_a_server_killed_outright(how: str) -> None:
    with subprocess.Popen([sys.executable, "-c", PARENT, ORPHAN, how],
                          stdout=subprocess.PIPE, text=True) as parent:
        try:
            pid = int(parent.stdout.readline())  # type: ignore[union-attr]
            started = descendants(parent.pid)[pid]
        finally:
            parent.kill()
    deadline = time.monotonic() + 3
    while alive(pid, started) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid, started):
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the child {pid} outlived its parent ({how})")


def test_a_dashboard_whose_server_is_already_gone_exits_at_once() -> None:
    done = subprocess.run([sys.executable, "-c", ORPHAN],  # its parent is not pid 1
                          env={**os.environ, "PERFGRAPH_PARENT_PID": "1"},
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (1, "")
