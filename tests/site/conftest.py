"""Fixtures of the docs-site browser check: one headless Chromium for the whole session."""

from __future__ import annotations

import pytest
from sitecheck import launch


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium under Playwright; a missing browser or package is a failure, not a skip."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()
