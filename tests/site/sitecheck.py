"""A headless-browser check of a built static site (the Sphinx docs in `site/`).

`serve(root)` serves a folder on a free localhost port from a background thread; `Checker.crawl`
opens every HTML page of it (every `*.html` file, plus every internal link found on the way) in
one Chromium page and records, per page, everything a reader would trip over: a page that does not
load, console errors and uncaught exceptions, failed requests and HTTP errors for any resource,
broken internal links and `#anchors`, broken images, and any request that leaves localhost (the
site must work offline). Problems are collected, not raised, so one run shows them all.

Chromium is Debian's (`/usr/bin/chromium`, override with `CF_CHROMIUM`), driven by Playwright;
`playwright install` (a download) is never needed.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import sys
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

CHROMIUM = os.environ.get("CF_CHROMIUM", "/usr/bin/chromium")
# What works on a closed-network machine: no sandbox (root), no GPU, and none of the background
# services that would try to phone home.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every request that leaves localhost goes to a proxy that is not there, so it fails at once
    # and never reaches the network (Chromium never proxies loopback); the checker reports it.
    "--proxy-server=http://127.0.0.1:9",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# Schemes that never touch the network (inline data, blobs, the browser's own pages).
SILENT_SCHEMES = {"data", "blob", "about", "chrome", "chrome-error", "javascript", "mailto", "tel"}
TIMEOUT_MS = 15_000

# Run in the page after `load`: make lazy images load, wait for every image to settle, then
# report what the checks need. Resolved `a.href`s come with the attribute as written.
_PAGE_FACTS_JS = """
async () => {
  const images = Array.from(document.images);
  images.forEach((img) => { if (img.loading === "lazy") img.loading = "eager"; });
  await Promise.race([
    Promise.all(images.map((img) => img.complete ? null
      : new Promise((done) => { img.addEventListener("load", done); img.addEventListener("error", done); }))),
    new Promise((done) => setTimeout(done, 5000)),
  ]);
  return {
    ids: Array.from(document.querySelectorAll("[id]"), (e) => e.id)
      .concat(Array.from(document.querySelectorAll("a[name]"), (e) => e.getAttribute("name"))),
    links: Array.from(document.querySelectorAll("a[href], link[rel~='icon'][href]"),
      (a) => [a.getAttribute("href"), a.href]),
    brokenImages: images.filter((img) => img.complete && img.naturalWidth === 0)
      .map((img) => img.getAttribute("src") || img.currentSrc),
  };
}
"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Quiet, keep-alive, and cacheable: the browser fetches each stylesheet and script once."""

    protocol_version = "HTTP/1.1"

    def send_response(self, code, message=None):
        self._code = code
        super().send_response(code, message)

    def end_headers(self):
        if getattr(self, "_code", None) == 200:  # errors stay uncached, so each page sees them
            self.send_header("Cache-Control", "max-age=3600")
        super().end_headers()

    def log_message(self, format, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # the browser hung up: fine
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve `root` on 127.0.0.1 (a free port) from a daemon thread; yield its base URL."""
    handler = functools.partial(_Handler, directory=str(root))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium under Playwright, for a whole session (the docs-site and web-app
    checks); a missing browser or package is a failure, not a skip."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def launch(playwright):
    """Debian's Chromium, headless, with a fresh temporary profile."""
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(
            f"{CHROMIUM} is missing: `apt-get install -y chromium` (or set CF_CHROMIUM)"
        )
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@dataclass
class Report:
    """What a `Checker` found: problems per page (site-relative path), what it visited, and the
    ids of each page (the targets of `#anchors`)."""

    problems: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    visited: list[str] = field(default_factory=list, repr=False)
    ids: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def add(self, page: str, problem: str) -> None:
        """Record one problem on `page`, once."""
        if problem not in self.problems[page]:
            self.problems[page].append(problem)

    def __bool__(self) -> bool:
        return any(self.problems.values())

    def format(self) -> str:
        """One line per problem, grouped by page: what an assertion message shows."""
        lines = [f"{sum(map(len, self.problems.values()))} problem(s) on the site:"]
        for page in sorted(p for p, found in self.problems.items() if found):
            lines.append(f"{page}:")
            lines.extend(f"    {problem}" for problem in self.problems[page])
        return "\n".join(lines)


class Checker:
    """One browser page on a served site, with listeners that file every problem under the page
    being checked. Reuse it for several checks (`crawl`, `visit`) so one run shares the browser."""

    def __init__(self, browser, root: Path, base_url: str, viewport=(1280, 900)):
        self.root = Path(root)
        self.base = base_url
        self.report = Report()
        self.current = "(start)"
        self._failed: set[str] = set()  # urls whose failure is filed
        self._owner: dict = {}  # request in flight -> the page (label) that sent it
        self.context = browser.new_context(
            viewport={"width": viewport[0], "height": viewport[1]}, service_workers="block"
        )
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.page.on("request", self._on_request)
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.report.add(self.current, f"uncaught error: {error}"))
        self.page.on("requestfailed", self._on_request_failed)
        self.page.on("requestfinished", lambda request: self._owner.pop(request, None))
        self.page.on("response", self._on_response)

    def close(self) -> None:
        """Close the browser context (the browser stays open for other checks)."""
        self.context.close()

    # ------------------------------------------------------------------ urls and paths
    def _is_local(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in SILENT_SCHEMES or parts.hostname in LOCAL_HOSTS

    def _is_site(self, url: str) -> bool:
        return url.startswith(self.base)

    def url(self, path: str) -> str:
        """The served URL of a site-relative path."""
        return self.base + path

    def rel(self, url: str) -> str:
        """The site-relative file a served URL names (`dir/` is `dir/index.html`), unquoted."""
        path = unquote(urlsplit(url).path).lstrip("/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        return path

    def _short(self, url: str) -> str:
        return url[len(self.base) :] if self._is_site(url) else url

    # ------------------------------------------------------------------ listeners
    def _on_request(self, request) -> None:
        self._owner[request] = self.current
        if not self._is_local(request.url):  # (it fails: see the proxy in CHROMIUM_ARGS)
            self._failed.add(request.url)
            self.report.add(self.current, f"request leaves localhost: {request.url}")

    def _on_console(self, message) -> None:
        if message.type == "error":
            where = message.location.get("url") or ""
            if message.text.startswith("Failed to load resource") and (
                where in self._failed or where == self.url("favicon.ico")
            ):
                # The browser's echo of a failure already filed by the listeners below, or of
                # its own guess at an icon (a page's declared icons are checked as links).
                return
            suffix = f" ({self._short(where)})" if where else ""
            self.report.add(self.current, f"console error: {message.text}{suffix}")

    def _on_request_failed(self, request) -> None:
        owner = self._owner.pop(request, self.current)
        aborted = "ERR_ABORTED" in (request.failure or "")
        if aborted and owner != self.current:
            return  # cut off because the checker went on to the next page, not a fault
        if aborted and self._is_site(request.url) and (self.root / self.rel(request.url)).is_file():
            # The browser fetches the favicon in the background, after `load`, and drops it
            # when the next page opens: the file is there (a broken icon link is filed anyway).
            return
        # Outside requests were filed when sent, and HTTP errors by `_on_response`.
        if request.url not in self._failed and self._is_local(request.url):
            self.report.add(owner, f"request failed: {self._short(request.url)} ({request.failure})")
        self._failed.add(request.url)

    def _on_response(self, response) -> None:
        if response.status < 400:
            return
        self._failed.add(response.url)
        request = response.request
        if not (request.is_navigation_request() and request.frame == self.page.main_frame):
            # (the page itself is filed by `visit`)
            owner = self._owner.get(request, self.current)
            self.report.add(owner, f"HTTP {response.status}: {self._short(response.url)}")

    def settle(self, timeout_s: float = 5.0) -> None:
        """Wait (up to `timeout_s`) until no request of the current page is in flight."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.current in self._owner.values():
            self.page.wait_for_timeout(50)

    # ------------------------------------------------------------------ checks
    def visit(self, path: str) -> dict | None:
        """Open one site page; file its problems; return its facts (ids, links, images)."""
        self.current = path
        try:
            response = self.page.goto(self.url(path), wait_until="load")
        except Exception as error:  # a timeout or a network error: the page did not load
            self.report.add(path, f"page did not load: {str(error).splitlines()[0]}")
            return None
        if response is None or response.status >= 400:
            status = "no response" if response is None else f"HTTP {response.status}"
            self.report.add(path, f"page did not load: {status}")
            return None
        facts = self.page.evaluate(_PAGE_FACTS_JS)
        self.report.ids[path] = set(facts["ids"])
        for src in facts["brokenImages"]:
            self.report.add(path, f"broken image: {src}")
        return facts

    def crawl(self, start: list[str] | None = None) -> Report:
        """Visit every HTML file under the root, then every internal page they link to; check
        that each internal link names an existing file and, with a `#fragment`, an id on it."""
        if start is None:
            start = sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*.html"))
        queue, seen = deque(start), set(start)
        links: list[tuple[str, str, str]] = []  # (page, href as written, resolved url)
        while queue:
            path = queue.popleft()
            self.report.visited.append(path)
            facts = self.visit(path)
            if facts is None:
                continue
            for href, resolved in facts["links"]:
                if not self._is_site(resolved):
                    continue  # links out of the site are a reader's choice, not a request
                links.append((path, href, resolved))
                target = self.rel(resolved)
                if target.endswith(".html") and target not in seen and (self.root / target).is_file():
                    seen.add(target)
                    queue.append(target)
        self.current = "(after crawl)"
        for page, href, resolved in links:
            target = self.rel(resolved)
            if not (self.root / target).is_file():
                self.report.add(page, f"broken link: {href} (no {target})")
                continue
            fragment = unquote(urlsplit(resolved).fragment)
            ids = self.report.ids.get(target)  # None: not HTML, or it did not load (reported)
            if fragment and ids is not None and fragment not in ids:
                self.report.add(page, f"broken anchor: {href} (no id {fragment!r} on {target})")
        return self.report

    def search(self, query: str, path: str = "search.html") -> list[str]:
        """Run the Sphinx search for `query`; return the site pages its results link to
        (problems on the way are filed under the search page)."""
        label = f"{path}?q={query}"
        self.current = label
        try:
            response = self.page.goto(self.url(label), wait_until="load")
            if response is None or response.status >= 400:
                raise RuntimeError(f"{path} did not load")
            results = self.page.locator("#search-results ul.search li a")
            results.first.wait_for(state="attached")
            # Done when the pulsing "Searching" title gives way; then let the fetches of the
            # results' summaries finish, so that their failures are filed here.
            self.page.wait_for_function(
                "() => !document.querySelector('#search-results h2')?.innerText.startsWith('Searching')"
            )
            self.settle()
        except Exception as error:
            self.report.add(label, f"no search results: {str(error).splitlines()[0]}")
            return []
        hrefs = results.evaluate_all("(links) => links.map((a) => a.href)")
        pages = [self.rel(h) for h in hrefs if self._is_site(h)]
        found = [p for p in pages if (self.root / p).is_file()]
        if not found:
            self.report.add(label, f"no search result links to a page of the site: {hrefs}")
        return found

    def screenshot(self, path: str, out: Path) -> bool:
        """Save a full-page screenshot of one page to `out` (its problems are filed as usual)."""
        if not (self.root / path).is_file():
            self.report.add(path, "missing: no such page to screenshot")
            return False
        # A search leaves its terms in localStorage for the next page to highlight: not wanted here.
        self.page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch {} }")
        if self.visit(path) is None:
            return False
        out.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(out), full_page=True)
        return True
