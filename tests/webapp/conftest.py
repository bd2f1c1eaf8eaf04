"""Fixtures of the web app's browser check: the app served by uvicorn on a free localhost port,
and Debian's headless Chromium driven by Playwright (launched as the docs-site check launches
it: `tests/site/sitecheck.py`)."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "site"))

from sitecheck import browser  # noqa: E402, F401 (the session's Chromium, a fixture)


@pytest.fixture(scope="session")
def server():
    """`python -m cf_env.tools.serve`'s app under uvicorn in a thread; yields its base URL."""
    import uvicorn

    from cf_env.tools.serve import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the web app did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
