"""Shared machinery for the browser tests, imported by conftest.py and the test modules.

Debian's Chromium (``/usr/bin/chromium``, installed by ``make system``) driven by Playwright; Playwright's own
browser download (``playwright install``) is never used. Each test module gets one browser with a fresh profile
folder (the ``browser_context`` fixture in conftest.py), and every request to a host other than 127.0.0.1 is
refused twice over: Chromium resolves every other host name to nothing (``--host-resolver-rules``), and
Playwright's router aborts any request that still names another host. Both are recorded, so a test can say which
page tried to go out. Every test module here sets ``pytestmark = pytest.mark.browser``.

With Playwright's synchronous API the router is Python code that runs only while the test is inside a Playwright
call: a test that waits with ``time.sleep`` stalls every request the page makes meanwhile (JupyterLab then never
starts its kernel). Wait with ``page.wait_for_timeout`` or ``page.wait_for_function`` instead.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]
# The built book the tests read (never build here: `make test` builds it once), and where screenshots go.
HTML = Path(os.environ.get("QKV_BOOK_HTML", REPO / "_build" / "html")).resolve()
SCREENSHOTS = HTML.parent / "screenshots"
CHROMIUM = os.environ.get("QKV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every host name but 127.0.0.1 resolves to "not found", so nothing can leave the machine even where
    # Playwright's router does not look (a service worker, a prefetch).
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
LOCAL_HOSTS = {"127.0.0.1"}
VIEWPORT = {"width": 1280, "height": 900}
THEMES = ("light", "dark")


@dataclass
class Traffic:
    """What one page did on the network and in its console."""

    outside: list[str] = field(default_factory=list)  # requests to any host but 127.0.0.1
    failed: list[str] = field(default_factory=list)  # requests that failed (refused, aborted, no file)
    http_errors: list[str] = field(default_factory=list)  # responses with status >= 400
    page_errors: list[str] = field(default_factory=list)  # uncaught exceptions
    console_errors: list[str] = field(default_factory=list)  # console.error, failed resource loads

    def problems(self) -> list[str]:
        out = []
        out += [f"request left the machine: {u}" for u in self.outside]
        out += [f"failed request: {u}" for u in self.failed]
        out += [f"HTTP error: {u}" for u in self.http_errors]
        out += [f"page error: {e}" for e in self.page_errors]
        out += [f"console error: {e}" for e in self.console_errors]
        return out


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "chrome-error", "file"):
        return True
    return parts.hostname in LOCAL_HOSTS


def browser_own(url: str) -> bool:
    """Requests the browser makes by itself, not the page: /favicon.ico when a page names no icon."""
    parts = urlsplit(url)
    return parts.hostname in LOCAL_HOSTS and parts.path == "/favicon.ico"


def watch(page) -> Traffic:
    """Record everything on `page` that the tests treat as an error."""
    traffic = Traffic()

    def on_request(request):
        if not is_local(request.url):
            traffic.outside.append(request.url)

    def on_failed(request):
        if is_local(request.url) and not browser_own(request.url):  # the outside ones are already listed
            traffic.failed.append(f"{request.url} ({request.failure})")

    def on_response(response):
        if response.status >= 400 and not browser_own(response.url):
            traffic.http_errors.append(f"{response.status} {response.url}")

    def on_console(message):
        if message.type == "error" and not browser_own((message.location or {}).get("url", "")):
            location = message.location or {}
            traffic.console_errors.append(
                f"{message.text} [{location.get('url', '')}:{location.get('lineNumber', '')}]"
            )

    page.on("request", on_request)
    page.on("requestfailed", on_failed)
    page.on("response", on_response)
    page.on("pageerror", lambda error: traffic.page_errors.append(str(error)))
    page.on("console", on_console)
    return traffic


@contextlib.contextmanager
def opened(browser_context, url: str):
    """A new page, watched from its first request, loaded from `url`; yields (page, traffic), then closes it."""
    page = browser_context.new_page()
    traffic = watch(page)
    try:
        page.goto(url, wait_until="load")
        yield page, traffic
    finally:
        page.close()


def set_theme(page, mode: str) -> None:
    page.evaluate(
        """(mode) => {
             document.documentElement.dataset.mode = mode;
             document.documentElement.dataset.theme = mode;
           }""",
        mode,
    )
    page.wait_for_timeout(200)  # let the theme's transitions settle before the screenshot


def in_each_theme(page, screenshots: Path, name: str, check: Callable[[str], list[str]] = lambda mode: []) -> list[str]:
    """Show `page` in each theme; in each, save a full-page screenshot as `screenshots/<mode>/<name>.png` and
    run `check(mode)`. Returns the problems the checks found."""
    problems = []
    for mode in THEMES:
        set_theme(page, mode)
        path = screenshots / mode / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=True)
        problems += check(mode)
    return problems


def refuse_outside(route):
    if is_local(route.request.url):
        route.continue_()
    else:
        route.abort("internetdisconnected")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def serve_directory(root: Path):
    """Serve `root` over HTTP on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
