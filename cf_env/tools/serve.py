"""`python -m cf_env.tools.serve`: play, watch and replay Chicken Foot in a browser, locally.

    python -m cf_env.tools.serve                       # http://127.0.0.1:8000/
    python -m cf_env.tools.serve --opponents ppo:checkpoints/selfplay-4p-d9 --port 8080

**Play** a game against policy specs (`cf_env.agents.policies`: bots, shipped checkpoints,
search), **Watch** policies play each other, every hand shown, step by step or at a chosen speed,
and **Replay** a game record (`cf_env.viz.record`: `training.evaluate --record`, `play
--record`, or the record the Play screen offers at a game's end). Tables are SVG from the PNG
renderer's geometry (`cf_env.viz.svg`); each legal move is an element with ``data-action``.

The app is Starlette (ASGI) served by uvicorn: the `web` extra (``pip install -e '.[web]'``).
It binds 127.0.0.1 unless ``--host`` says otherwise, answers only requests addressed to the
host it serves (a page elsewhere cannot reach it through DNS rebinding), serves every asset
itself (no CDN), and keeps games per browser (a cookie) in a bounded store that expires idle
games (`cf_env.tools.web_games.GameStore`). Bad requests (unknown game ids, stale versions,
illegal actions, malformed JSON, bodies over `JSON_LIMIT`/`RECORD_LIMIT` bytes) get a 4xx with
``{"error": message}`` and change nothing.

The JSON API (what the page uses; every answer is the game's view):
``POST /api/play`` (opponents, players, max_pips, spinner_arms, rounds, seat, seed),
``POST /api/watch`` (players_specs, ...), ``POST /api/replay[?game=K]`` (the record's text),
``GET /api/games/{id}``, ``POST /api/games/{id}/move`` (action, version),
``POST /api/games/{id}/step`` (version), ``POST /api/games/{id}/frame`` (frame, version),
``GET /api/options``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from importlib import resources
from pathlib import Path

from cf_env.tools.cli import HelpFormatter
from cf_env.tools.web_games import GameStore, PlayGame, ReplayGame, WatchGame, WebError

JSON_LIMIT = 4096  # bytes of a JSON request body (a move is about 30)
RECORD_LIMIT = 2 * 1024 * 1024  # bytes of a game record to replay (a double-18 game: ~60 KB)
COOKIE = "cf_session"
_SESSION = re.compile(r"[A-Za-z0-9_-]{16,64}")
STATIC = ("app.js", "app.css", "favicon.svg")
LOCAL = ("127.0.0.1", "localhost", "::1", "[::1]")
CSP = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
       "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "frame-ancestors 'none'")


def checkpoint_specs(root: Path = Path("checkpoints")) -> list[str]:
    """``ppo:<folder>`` for each checkpoint folder under `root` (those with a ``card.json``)."""
    if not root.is_dir():
        return []
    return [f"ppo:{p.parent.as_posix()}" for p in sorted(root.glob("*/card.json"))]


def create_app(
    store: GameStore | None = None,
    *,
    opponents: str = "greedy",
    hosts: tuple[str, ...] = LOCAL,
):
    """The ASGI app. `store` holds the games (default: a new `GameStore`); `opponents` fills
    the Play form; `hosts` are the Host header values it answers (others get 400)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    store = store if store is not None else GameStore()
    web = resources.files("cf_env.tools") / "web"
    assets = {name: (web / name).read_bytes() for name in (*STATIC, "index.html")}
    types = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml",
             "html": "text/html; charset=utf-8"}
    specs = ["greedy", "heuristic", "random", "ismcts:50", "ismcts:200", *checkpoint_specs()]

    def headers() -> dict:
        return {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

    def session(request: Request) -> tuple[str, bool]:
        token = request.cookies.get(COOKIE, "")
        if _SESSION.fullmatch(token):
            return token, False
        import secrets

        return secrets.token_urlsafe(18), True

    def answer(request: Request, data: dict, status: int = 200, new: str | None = None):
        response = JSONResponse(data, status, headers=headers())
        if new is not None:
            response.set_cookie(COOKIE, new, httponly=True, samesite="strict",
                                max_age=int(store.idle_s) * 4)
        return response

    async def body(request: Request, limit: int) -> bytes:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise WebError(413, f"the request body is over {limit} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise WebError(413, f"the request body is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(request: Request) -> dict:
        raw = await body(request, JSON_LIMIT)
        try:
            data = json.loads(raw.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise WebError(400, f"the body is not valid JSON: {str(err)[:80]}") from err
        if not isinstance(data, dict):
            raise WebError(400, "the body must be a JSON object")
        return data

    def page(name: str) -> Response:
        kind = types[name.rsplit(".", 1)[1]]
        extra = {} if name == "index.html" else {"Cache-Control": "max-age=3600"}
        return Response(assets[name], media_type=kind, headers={**headers(), **extra})

    async def index(request: Request):
        sid, new = session(request)
        response = page("index.html")
        if new:
            response.set_cookie(COOKIE, sid, httponly=True, samesite="strict",
                                max_age=int(store.idle_s) * 4)
        return response

    async def static(request: Request):
        name = request.path_params["name"]
        if name not in STATIC:
            raise WebError(404, f"no asset {name[:40]!r}")
        return page(name)

    async def favicon(request: Request):
        return page("favicon.svg")

    async def options(request: Request):
        return answer(request, {"specs": specs, "opponents": opponents})

    def create(kind):
        async def endpoint(request: Request):
            sid, new = session(request)
            data = await json_body(request)

            def make():
                store.reserve(sid)
                game = kind(sid, data)
                store.add(game)
                with game.lock:
                    return game.view()

            return answer(request, await run_in_threadpool(make), 201, sid if new else None)

        return endpoint

    async def replay(request: Request):
        sid, new = session(request)
        raw = await body(request, RECORD_LIMIT)
        game_number = request.query_params.get("game")
        if game_number is not None and not game_number.isdigit():
            raise WebError(400, "game must be a game number 1, 2, ... (a line of a JSON-lines file)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise WebError(400, "a game record is UTF-8 JSON text") from err

        def make():
            store.reserve(sid)
            game = ReplayGame(sid, text, int(game_number) if game_number else None)
            store.add(game)
            with game.lock:
                return game.view()

        return answer(request, await run_in_threadpool(make), 201, sid if new else None)

    async def show(request: Request):
        sid, _ = session(request)
        game = store.get(sid, request.path_params["gid"])

        def view():
            with game.lock:
                return game.view()

        return answer(request, await run_in_threadpool(view))

    def change(method: str, kind):
        async def endpoint(request: Request):
            sid, _ = session(request)
            game = store.get(sid, request.path_params["gid"])
            data = await json_body(request)
            if not isinstance(game, kind):
                raise WebError(404, f"game {game.id} is a {game.kind} game: it has no {method}")

            def run():
                with game.lock:
                    getattr(game, method)(data)
                    return game.view()

            return answer(request, await run_in_threadpool(run))

        return endpoint

    async def refused(request: Request, err: WebError):
        return JSONResponse({"error": str(err)}, err.status, headers=headers())

    async def not_found(request: Request, exc):
        return JSONResponse({"error": f"no such page: {request.url.path[:80]}"}, 404,
                            headers=headers())

    async def not_allowed(request: Request, exc):
        return JSONResponse({"error": f"{request.method} is not allowed here"}, 405,
                            headers=headers())

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/static/{name}", static),
        Route("/api/options", options),
        Route("/api/play", create(PlayGame), methods=["POST"]),
        Route("/api/watch", create(WatchGame), methods=["POST"]),
        Route("/api/replay", replay, methods=["POST"]),
        Route("/api/games/{gid}", show),
        Route("/api/games/{gid}/move", change("move", PlayGame), methods=["POST"]),
        Route("/api/games/{gid}/step", change("step", WatchGame), methods=["POST"]),
        Route("/api/games/{gid}/frame", change("goto", ReplayGame), methods=["POST"]),
    ]
    allowed = sorted({h.strip("[]") for h in hosts} | set(hosts))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed)],
        exception_handlers={WebError: refused, 404: not_found, 405: not_allowed},
    )
    app.state.store = store
    return app


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.tools.serve",
        description="Play, watch and replay Chicken Foot in a browser (a local web app).",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default: 127.0.0.1, this computer only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    parser.add_argument("--opponents", default="greedy",
                        help="the Play form's opponents (policy specs; default: greedy)")
    parser.add_argument("--allowed-hosts", default=None,
                        help="comma-separated Host names the app answers besides localhost "
                             "(default: the --host address; e.g. the machine's LAN name when "
                             "binding 0.0.0.0)")
    parser.add_argument("--max-games", type=int, default=64,
                        help="live games the server keeps at most (default: 64)")
    parser.add_argument("--idle-minutes", type=float, default=30.0,
                        help="a game unused this long expires (default: 30)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not 0 <= args.port <= 65535:
        print(f"error: --port must be 0..65535; got {args.port}", file=sys.stderr)
        return 2
    if args.max_games < 1 or not args.idle_minutes > 0:
        print("error: --max-games must be >= 1 and --idle-minutes > 0", file=sys.stderr)
        return 2
    try:
        import uvicorn
    except ImportError:
        print("error: the web app needs the `web` extra: pip install -e '.[web]'", file=sys.stderr)
        return 2
    extra = [h.strip() for h in (args.allowed_hosts or args.host).split(",") if h.strip()]
    hosts = (*LOCAL, *(h for h in extra if h not in LOCAL))
    store = GameStore(max_games=args.max_games, idle_s=args.idle_minutes * 60)
    app = create_app(store, opponents=args.opponents, hosts=hosts)
    print(f"Chicken Foot: http://{args.host}:{args.port}/  (Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
