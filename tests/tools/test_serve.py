"""The web app (`cf_env.tools.serve`) through its HTTP interface, in-process (Starlette's test
client): whole games played, watched and replayed; nothing hidden ever sent; bad requests
refused with a 4xx and the game unchanged; games kept per browser, bounded, expiring."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx2")

from starlette.testclient import TestClient  # noqa: E402

from cf_env.core.config import ChickenFootConfig  # noqa: E402
from cf_env.core.engine import Engine  # noqa: E402
from cf_env.tools.serve import JSON_LIMIT, create_app, parse_args  # noqa: E402
from cf_env.tools.web_games import GameStore, WebError  # noqa: E402
from cf_env.viz.image_geometry import table_layout  # noqa: E402

TILE = re.compile(r'data-tile="(\d+)"')


def client(store: GameStore | None = None) -> TestClient:
    return TestClient(create_app(store), base_url="http://127.0.0.1")


def new_play(c: TestClient, **form) -> dict:
    form = {"opponents": "greedy", "players": 2, "max_pips": 6, "rounds": 2, "seed": 11, **form}
    response = c.post("/api/play", json=form)
    assert response.status_code == 201, response.text
    return response.json()


def redealt_view(game, rng) -> dict:
    """The game's view with every tile the human cannot see dealt out again at random (the
    same public state): a view that depends only on the human's hand and public information
    is the same."""
    engine = game.engine.clone()
    seat = game.seat
    others = [s for s in range(engine.num_players) if s != seat]
    hidden = [t for s in others for t in engine.hand(s)] + engine.boneyard
    hidden = [int(t) for t in rng.permutation(hidden)]
    hands, at = [], 0
    for s in range(engine.num_players):
        if s == seat:
            hands.append(engine.hand(s))
        else:
            size = engine.hand_counts[s]
            hands.append(hidden[at:at + size])
            at += size
    engine.redeal(hands, hidden[at:])
    twin = copy.copy(game)
    twin.engine = engine
    return json.loads(json.dumps(twin.view()))


@pytest.mark.parametrize("form", [
    {"opponents": "greedy", "players": 2, "max_pips": 6, "rounds": 3, "seed": 4_815_162_342},
    {"opponents": "heuristic,random", "players": 3, "max_pips": 6, "rounds": 2, "seed": 271_828_182_845,
     "seat": 1},
])
def test_whole_games_over_http_never_send_a_hidden_tile(form):
    c = client()
    store = c.app.state.store
    rng = np.random.default_rng(0)
    state = new_play(c, **form)
    game = store.games[state["id"]]
    seed, moves = str(game.seed), 0
    while True:
        body = json.dumps(state)
        engine = game.engine
        if not state["over"]:
            # The same view whatever the hidden tiles are (opponents' hands, the boneyard's order).
            assert redealt_view(game, rng) == state
            # Every tile drawn is on the table or in the human's own hand; no seed, no deal order.
            seen = {int(t) for t in TILE.findall(state["svg"])}
            assert seen <= set(np.flatnonzero(engine.on_table).tolist()) | set(
                engine.hand(game.seat))
            assert seed not in body and "deal_order" not in body and "record" not in state
            assert state["your_turn"] and state["moves"]
            assert {m["action"] for m in state["moves"]} == set(engine.legal_actions())
        else:
            break
        action = state["moves"][int(rng.integers(len(state["moves"])))]["action"]
        response = c.post(f"/api/games/{state['id']}/move",
                          json={"action": action, "version": state["version"]})
        assert response.status_code == 200, response.text
        state, moves = response.json(), moves + 1
    assert "Game over" in state["result"] and state["winners"] == game.engine.winners
    assert len(state["rounds"]) == form["rounds"] and moves > 5
    # At the end every hand is shown (R12) and the record replays to the same result.
    assert state["record"]["final"]["scores"] == game.engine.scores
    assert state["scores"] == game.engine.scores


def test_bad_requests_get_a_4xx_and_leave_the_game_unchanged():
    c = client()
    state = new_play(c)
    url = f"/api/games/{state['id']}/move"
    before = c.get(f"/api/games/{state['id']}").json()
    assert before == state
    legal = {m["action"] for m in state["moves"]}
    illegal = next(a for a in range(ChickenFootConfig(max_pips=6).num_actions) if a not in legal)
    cases = [
        (c.get("/api/games/nosuchgame"), 404, "no game"),
        (c.post("/api/games/nosuchgame/move", json={"action": 0, "version": 0}), 404, "no game"),
        (c.post(url, json={"action": illegal, "version": state["version"]}), 422, "not legal"),
        (c.post(url, json={"action": 10**6, "version": state["version"]}), 422, "out of range"),
        (c.post(url, json={"action": "1", "version": state["version"]}), 400, "integer"),
        (c.post(url, json={"action": True, "version": state["version"]}), 400, "integer"),
        (c.post(url, json={"action": min(legal), "version": state["version"] + 1}), 409, "stale"),
        (c.post(url, json={"action": min(legal)}), 400, "version"),
        (c.post(url, json={"action": min(legal), "version": state["version"], "x": 1}), 400,
         "unknown field"),
        (c.post(url, content=b"{not json"), 400, "not valid JSON"),
        (c.post(url, content=b"\xff\xfe"), 400, "not valid JSON"),
        (c.post(url, content=b"[1, 2]"), 400, "JSON object"),
        (c.post(url, content=b"[" * 2000 + b"]" * 2000), 400, "not valid JSON"),
        (c.post(url, content=b" " * (JSON_LIMIT + 1)), 413, "over"),
        (c.post(f"/api/games/{state['id']}/step", json={"version": 0}), 404, "play game"),
        (c.post("/api/play", json={"players": 9}), 400, "players"),
        (c.post("/api/play", json={"max_pips": 7, "players": 2}), 400, "max_pips"),
        (c.post("/api/play", json={"opponents": "nosuchbot", "players": 2}), 400, "nosuchbot"),
        (c.post("/api/replay", content=b'{"format": "chickenfoot-record"}'), 400, "record"),
        (c.get("/nosuchpage"), 404, "no such page"),
        (c.get("/static/../serve.py"), 404, ""),
    ]
    for response, status, words in cases:
        assert response.status_code == status, (response.text, status)
        assert words in response.json()["error"]
    assert c.get(f"/api/games/{state['id']}").json() == before
    # A move applied once; the same request again is stale, and changes nothing.
    first = c.post(url, json={"action": min(legal), "version": state["version"]})
    assert first.status_code == 200
    after = first.json()
    again = c.post(url, json={"action": min(legal), "version": state["version"]})
    assert again.status_code == 409 and "stale" in again.json()["error"]
    assert c.get(f"/api/games/{state['id']}").json() == after
    # A request addressed to another host name (DNS rebinding) is refused.
    assert c.get("/", headers={"host": "evil.example"}).status_code == 400


def test_games_belong_to_the_browser_that_made_them():
    store = GameStore()
    mine, theirs = client(store), client(store)
    state = new_play(mine)
    assert mine.cookies.get("cf_session")
    theirs.get("/")  # a cookie of its own
    assert theirs.cookies.get("cf_session") != mine.cookies.get("cf_session")
    url = f"/api/games/{state['id']}"
    assert theirs.get(url).status_code == 404
    move = {"action": state["moves"][0]["action"], "version": state["version"]}
    assert theirs.post(url + "/move", json=move).status_code == 404
    assert mine.get(url).json() == state


def test_the_store_bounds_live_games_and_expires_idle_ones():
    store = GameStore(max_games=3, per_session=2, idle_s=60)
    a, b = client(store), client(store)
    first, second = new_play(a)["id"], new_play(a)["id"]
    third = new_play(a)["id"]  # the browser's oldest game goes
    assert set(store.games) == {second, third}
    assert a.get(f"/api/games/{first}").status_code == 404
    new_play(b)
    full = b.post("/api/play", json={"players": 2, "max_pips": 6})  # a 4th live game
    assert full.status_code == 503 and "limit" in full.json()["error"]
    assert len(store.games) == 3
    store.sweep(now=max(g.used for g in store.games.values()) + 61)
    assert store.games == {}
    assert new_play(b)["id"] in store.games
    with pytest.raises(WebError):
        store.get("someone", "nosuchgame")


def test_watch_shows_every_hand_and_steps_to_the_end():
    c = client()
    response = c.post("/api/watch", json={"players_specs": "greedy,random,heuristic",
                                          "max_pips": 6, "rounds": 1, "seed": 4})
    assert response.status_code == 201, response.text
    state = response.json()
    game = c.app.state.store.games[state["id"]]
    assert state["names"] == ["player_0 (greedy)", "player_1 (random)", "player_2 (heuristic)"]
    every = {t for s in range(3) for t in game.engine.hand(s)}
    assert every <= {int(t) for t in TILE.findall(state["svg"])}
    steps = 0
    while not state["over"]:
        response = c.post(f"/api/games/{state['id']}/step", json={"version": state["version"]})
        assert response.status_code == 200, response.text
        state, steps = response.json(), steps + 1
    assert steps == len(game.engine.history) and "Game over" in state["result"]
    assert c.post(f"/api/games/{state['id']}/step",
                  json={"version": state["version"]}).status_code == 409


def test_replay_steps_back_and_forth_through_a_record():
    c = client()
    state = new_play(c, rounds=1)
    while not state["over"]:
        state = c.post(f"/api/games/{state['id']}/move",
                       json={"action": state["moves"][0]["action"],
                             "version": state["version"]}).json()
    record = state["record"]
    response = c.post("/api/replay", content=json.dumps(record))
    assert response.status_code == 201, response.text
    replay = response.json()
    assert replay["frame"] == 0 and replay["frames"] == len(record["actions"]) + 1
    url = f"/api/games/{replay['id']}/frame"
    views = {}
    for frame in [1, 2, 5, replay["frames"] - 1, 2, 0, 5]:
        view = c.post(url, json={"frame": frame, "version": replay["version"]}).json()
        assert view["frame"] == frame
        views.setdefault(frame, view["svg"])
        assert views[frame] == view["svg"]  # the same frame, however it was reached
        replay = view
    assert replay["move"] and "Game over" not in replay["svg"]
    last = c.post(url, json={"frame": replay["frames"] - 1, "version": replay["version"]}).json()
    assert last["over"] and "Game over" in last["svg"]
    assert c.post(url, json={"frame": last["frames"], "version": last["version"]}).status_code == 400
    # JSON lines: one game per line, chosen by ?game=K.
    lines = json.dumps(record) + "\n" + json.dumps(record) + "\n"
    assert c.post("/api/replay?game=2", content=lines).status_code == 201
    assert c.post("/api/replay?game=3", content=lines).status_code == 400


def test_the_page_and_its_assets_are_served_locally():
    c = client()
    page = c.get("/")
    assert page.status_code == 200 and "Content-Security-Policy" in page.headers
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("/") for s in sources)  # nothing from another host
    for source in sources:
        assert c.get(source).status_code == 200, source
    assert c.get("/favicon.ico").headers["content-type"].startswith("image/svg+xml")


def test_the_server_binds_localhost_by_default():
    assert parse_args([]).host == "127.0.0.1"


def test_engine_and_env_show_the_table_as_svg_from_the_png_geometry():
    import cf_env

    engine = Engine(ChickenFootConfig(num_players=3, max_pips=6), seed=2)
    rng = np.random.default_rng(1)
    for _ in range(30):
        engine.step(int(rng.choice(engine.legal_actions())))
    svg = engine._repr_svg_()
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    pieces = [p for p in table_layout(engine) if p.values is not None]
    drawn = re.findall(r'<g class="tile[^"]*" data-tile="\d+" data-values="(\d+)\|(\d+)"', svg)
    hand = engine.hand(engine.current)
    # The table's tiles as the geometry placed them (inner|outer halves), then the acting hand.
    assert [tuple(map(int, d)) for d in drawn[:len(pieces)]] == [p.values for p in pieces]
    assert len(drawn) == len(pieces) + len(hand)
    env = cf_env.env(num_players=2, max_pips=6)
    env.reset(seed=0)
    assert 'class="tile centre' in env.unwrapped._repr_svg_()
    assert env._repr_svg_() == env.unwrapped._repr_svg_()  # through PettingZoo's wrapper too


@pytest.mark.slow
def test_the_load_test_plays_concurrent_games_to_the_end_over_http(tmp_path):
    from cf_env.tools import web_load

    out = tmp_path / "load.json"
    status = web_load.main(["--games", "3", "--concurrency", "3", "--rounds", "1",
                            "--deadline", "120", "--json", str(out)])
    figures = json.loads(out.read_text())
    assert status == 0 and figures["finished"] == 3 and figures["errors"] == figures["lost"] == 0
    assert figures["requests"] >= 3 * 3  # create, moves, the final read


def test_an_illegal_move_is_answered_with_the_rule_it_breaks():
    from cf_env.tools.web_games import rule_broken

    cfg = ChickenFootConfig(num_players=2, max_pips=6)
    engine = Engine(cfg, seed=3)
    seat = engine.current
    legal = set(engine.legal_actions())
    held = engine.hand(seat)
    centre = engine.center
    # The round's first moves fill the centre's arms (R7); drawing is not allowed while a tile
    # can be placed (R8); a tile not held is not playable.
    off_centre = [2 * t for t in held if centre not in engine.tables.pairs[t]]
    assert engine.spinner_empty and off_centre and cfg.draw_action not in legal  # (seed 3)
    assert rule_broken(engine, off_centre[0]).startswith("R7")
    assert rule_broken(engine, cfg.draw_action).startswith("R8")
    missing = next(t for t in range(cfg.num_tiles) if t not in held)
    assert "do not hold" in rule_broken(engine, 2 * missing)
    assert "no action" in rule_broken(engine, cfg.num_actions)
    c = client()
    state = new_play(c, seed=3)
    bad = c.post(f"/api/games/{state['id']}/move",
                 json={"action": 2 * missing, "version": state["version"]})
    assert bad.status_code == 422 and "illegal move" in bad.json()["error"]


def test_play_takes_rule_variants_and_refuses_unknown_ones():
    c = client()
    state = new_play(c, variants={"toes": 2, "start_search": "all_draw"})
    game = c.app.state.store.games[state["id"]]
    assert game.config.toes == 2 and game.config.start_search == "all_draw"
    for variants, words in [({"num_toes": 2}, "unknown variant"), ({"toes": [2]}, "number"),
                            ({"max_pips": 9}, "their own fields"), ({"toes": 0}, "toes"),
                            ("toes=2", "object")]:
        response = c.post("/api/play", json={"players": 2, "variants": variants})
        assert response.status_code == 400 and words in response.json()["error"], response.text


def test_a_checkpoint_opponent_plays_the_game_of_its_card():
    c = client()
    state = new_play(c, opponents="ppo:checkpoints/selfplay-2p-d6", players=None, max_pips=None,
                     rounds=1)
    assert state["rules"]["players"] == 2 and state["rules"]["max_pips"] == 6
    assert state["names"][1] == "player_1 (ppo:selfplay-2p-d6)"
    refused = c.post("/api/play", json={"opponents": "ppo:checkpoints/selfplay-2p-d6",
                                        "players": 4})
    assert refused.status_code == 400 and "contradicts" in refused.json()["error"]


def test_the_server_refuses_bad_options():
    from cf_env.tools.serve import main

    assert main(["--port", "70000"]) == 2
    assert main(["--max-games", "0"]) == 2


def test_the_app_answers_only_the_hosts_it_serves():
    app = create_app(hosts=("127.0.0.1", "localhost", "lan-box"))
    assert TestClient(app, base_url="http://lan-box:8000").get("/").status_code == 200
    assert TestClient(app, base_url="http://localhost:8000").get("/").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/").status_code == 400
