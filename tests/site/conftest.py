"""Fixtures of the docs-site browser check: one headless Chromium for the whole session."""

from __future__ import annotations

from sitecheck import browser  # noqa: F401 (the session's Chromium, a fixture)
