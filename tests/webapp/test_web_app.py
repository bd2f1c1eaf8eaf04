"""The web app (`python -m cf_env.tools.serve`) in headless Chromium: a whole game played by
clicking `data-action` elements until "Game over", its record replayed and stepped back and
forth (from the Play screen and from a file), a game watched to its end; no console error, no
failed or 4xx request, and no request to any host but localhost. A screenshot of the play screen
goes to `test-artifacts/web-play.png` (`CF_WEB_ARTIFACTS` moves it); with `CF_WEB_SCREENSHOT` set
(`docs/web-play.png`) it is copied there too, for the docs site and the README.

Not part of `make test` (pyproject's `norecursedirs`): `make web-check` runs it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("CF_WEB_ARTIFACTS", ROOT / "test-artifacts"))
SCREENSHOT_AT = 12  # the play screen is saved after this many clicks (tiles on the table)
MOST_CLICKS = 400
LOCAL = {"127.0.0.1", "localhost"}
SILENT = {"data", "blob", "about", "chrome", "chrome-error"}


@pytest.fixture
def page(browser, server):
    """A fresh page at 1366×900 (a laptop screen) on the app; yields (page, problems)."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    problems: list[str] = []

    def on_request(request):
        url = urlsplit(request.url)
        if url.scheme not in SILENT and url.hostname not in LOCAL:
            problems.append(f"request leaves localhost: {request.url}")

    page.on("request", on_request)
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda err: problems.append(f"uncaught: {err}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status}: {r.url}"))
    page.goto(server + "/")
    yield page, problems
    context.close()


def version(page) -> int:
    return page.evaluate("() => state.version")


def play_whole_game(page) -> int:
    """Click random `data-action` elements (move buttons and highlighted hand tiles) until the
    page says "Game over"; returns the number of clicks."""
    rng = random.Random(0)
    clicks = 0
    while "Game over" not in (page.text_content("#result") or ""):
        targets = page.locator("[data-action]")
        count = targets.count()
        assert count > 0, "no move to click and no Game over"
        before = version(page)
        with page.expect_response(lambda r: r.url.endswith("/move")):
            targets.nth(rng.randrange(count)).click()
        page.wait_for_function("v => state.version !== v", arg=before)
        clicks += 1
        if clicks == SCREENSHOT_AT:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / "web-play.png"
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(shot))
            if os.environ.get("CF_WEB_SCREENSHOT"):
                shutil.copyfile(shot, os.environ["CF_WEB_SCREENSHOT"])
        assert clicks < MOST_CLICKS
    return clicks


def frame_label(page) -> str:
    return page.text_content("#replay-frame") or ""


def test_play_a_whole_game_then_replay_it(page):
    page, problems = page
    form = "#play-form"
    page.fill(f"{form} [name=opponents]", "greedy")
    page.fill(f"{form} [name=players]", "2")
    page.select_option(f"{form} [name=max_pips]", "6")
    page.fill(f"{form} [name=rounds]", "2")
    page.fill(f"{form} [name=seed]", "20261204")
    page.click("#new-play")
    page.wait_for_selector("#table svg .tile")
    assert page.locator("g.move[data-action]").count() > 0  # hand tiles are clickable too
    clicks = play_whole_game(page)
    assert clicks >= SCREENSHOT_AT and (ARTIFACTS / "web-play.png").stat().st_size > 10_000
    result = page.text_content("#result")
    assert "Game over" in result and "Won by" in result
    assert page.locator("#scores tr").count() == 3  # a header and two seats
    record = page.evaluate("() => JSON.stringify(state.record)")

    # Replay this game from the Play screen: step forward and back.
    page.click("#replay-this")
    page.wait_for_function("() => state.kind === 'replay'")
    frames = page.evaluate("() => state.frames")
    assert frame_label(page) == f"frame 0 of {frames - 1}"
    for _ in range(5):
        page.click("#replay-next")
        page.wait_for_function("() => !document.body.classList.contains('busy')")
    page.wait_for_function("() => state.frame === 5")
    for _ in range(2):
        page.click("#replay-prev")
        page.wait_for_function("() => !document.body.classList.contains('busy')")
    page.wait_for_function("() => state.frame === 3")
    assert frame_label(page) == f"frame 3 of {frames - 1}"
    page.click("#replay-last")
    page.wait_for_function("() => state.over === true")
    assert "Game over" in page.text_content("#result")

    # The same record opened from a file.
    page.set_input_files("#replay-file", files=[{
        "name": "game.json", "mimeType": "application/json", "buffer": record.encode()}])
    page.click("#open-replay")
    page.wait_for_function("f => state.kind === 'replay' && state.frame === 0 && "
                           "state.frames === f", arg=frames)
    assert json.loads(record)["final"] is not None
    assert not problems, problems


def test_watch_agents_play_to_the_end(page):
    page, problems = page
    page.click("nav [data-tab=watch]")
    form = "#watch-form"
    page.fill(f"{form} [name=players_specs]", "greedy,heuristic")
    page.select_option(f"{form} [name=max_pips]", "6")
    page.fill(f"{form} [name=rounds]", "1")
    page.fill(f"{form} [name=seed]", "7")
    page.click("#new-watch")
    page.wait_for_function("() => state && state.kind === 'watch'")
    # A spectator sees every hand: both seats' tiles are drawn in the panel.
    hands = page.evaluate("() => state.hand_counts.reduce((a, b) => a + b, 0)")
    assert page.locator("#table svg .tile").count() >= hands + 1
    page.click("#watch-step")
    page.wait_for_function("() => state.version >= 1")
    page.select_option("#watch-speed", "60")
    page.click("#watch-run")
    page.wait_for_function("() => state.over === true", timeout=120_000)
    assert "Game over" in page.text_content("#result")
    assert not problems, problems
