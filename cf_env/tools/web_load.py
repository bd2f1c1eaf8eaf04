"""`python -m cf_env.tools.web_load`: a load test of the web app over real HTTP on localhost.

    python -m cf_env.tools.web_load --games 50 --concurrency 50

Starts `python -m cf_env.tools.serve` on a free localhost port (a child process that dies with
this one), then plays ``--games`` scripted games at once, ``--concurrency`` at a time, each from
its own client (its own cookie, so its own browser session): create a Play game, then a random
legal move (seeded per game) until the view says the game is over, then read the game once more.
Everything is bounded: ``--deadline`` seconds for the whole run, ``MOST_MOVES`` requests per
game. Prints the games finished, errors (any non-2xx answer or failed request), lost games (not
finished by the deadline), requests per second and latency percentiles; ``--json PATH`` writes
the same figures. Exit status: 0 when every game finished with no error, 1 otherwise, 2 bad
arguments. The figures of docs/web.md come from it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from cf_env.core import atomic
from cf_env.tools.cli import HelpFormatter

MOST_MOVES = 2000  # requests one game may make (a double-6 game of 7 rounds needs about 300)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m cf_env.tools.web_load",
        description="Load-test the web app: scripted games over HTTP on localhost.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--games", type=int, default=50, help="games to play (default: 50)")
    parser.add_argument("--concurrency", type=int, default=50,
                        help="games in flight at once (default: 50)")
    parser.add_argument("--opponents", default="greedy", help="opponent spec (default: greedy)")
    parser.add_argument("--players", type=int, default=2, help="players (default: 2)")
    parser.add_argument("--max-pips", type=int, default=6, help="the set (default: 6)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per game (default: 2)")
    parser.add_argument("--deadline", type=float, default=300.0,
                        help="seconds for the whole run; games unfinished then are lost "
                             "(default: 300)")
    parser.add_argument("--json", default=None, help="write the figures here (default: none)")
    args = parser.parse_args(argv)
    if not 1 <= args.games <= 1000 or not 1 <= args.concurrency <= 200:
        parser.error("--games must be 1..1000 and --concurrency 1..200")
    if not 0 < args.deadline <= 3600:
        parser.error("--deadline must be in (0, 3600] seconds")
    return args


def _die_with_parent() -> None:
    # Linux: the server gets SIGKILL when this process dies, however it dies.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_server(port: int, games: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "cf_env.tools.serve", "--port", str(port),
               "--max-games", str(max(64, games))]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, preexec_fn=_die_with_parent)


def _wait_ready(httpx2, base: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}")
        with contextlib.suppress(httpx2.HTTPError):
            if httpx2.get(base + "/api/options", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer within {seconds:.0f} s")


class Tally:
    """Latencies and failures from every client thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.finished = 0


def _play(httpx2, base: str, number: int, args, tally: Tally, stop: float) -> None:
    rng = random.Random(number)
    form = {"opponents": args.opponents, "players": args.players, "max_pips": args.max_pips,
            "rounds": args.rounds, "seed": 1000 + number}

    def call(method: str, url: str, body=None):
        start = time.perf_counter()
        response = client.request(method, url, json=body)
        elapsed = time.perf_counter() - start
        with tally.lock:
            tally.latencies.append(elapsed)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {url}: {response.status_code} {response.text[:120]}")
        return response.json()

    try:
        with httpx2.Client(base_url=base, timeout=60) as client:
            state = call("POST", "/api/play", form)
            for _ in range(MOST_MOVES):
                if state["over"] or time.monotonic() > stop:
                    break
                action = rng.choice(state["moves"])["action"]
                state = call("POST", f"/api/games/{state['id']}/move",
                             {"action": action, "version": state["version"]})
            final = call("GET", f"/api/games/{state['id']}")
            if final["over"] and "Game over" in final["result"]:
                with tally.lock:
                    tally.finished += 1
    except Exception as err:  # any failure is counted, the run goes on
        with tally.lock:
            tally.errors.append(f"game {number}: {type(err).__name__}: {err}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import httpx2
    except ImportError:
        print("error: the load test needs the `web` extra: pip install -e '.[web]'",
              file=sys.stderr)
        return 2
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = _start_server(port, args.games)
    try:
        _wait_ready(httpx2, base, server)
        tally = Tally()
        start = time.monotonic()
        stop = start + args.deadline
        with ThreadPoolExecutor(args.concurrency) as pool:
            for number in range(args.games):
                pool.submit(_play, httpx2, base, number, args, tally, stop)
        wall = time.monotonic() - start
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    lat = tally.latencies
    figures = {
        "games": args.games, "concurrency": args.concurrency, "finished": tally.finished,
        "errors": len(tally.errors), "lost": args.games - tally.finished,
        "requests": len(lat), "wall_s": round(wall, 2),
        "requests_per_s": round(len(lat) / wall, 1) if wall else None,
        "latency_ms": {name: round(1000 * _percentile(lat, q), 1)
                       for name, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))},
        "table": {"opponents": args.opponents, "players": args.players,
                  "max_pips": args.max_pips, "rounds": args.rounds},
        "cpus": os.cpu_count(),
    }
    print(f"{figures['finished']}/{args.games} games finished, {figures['errors']} errors, "
          f"{figures['lost']} lost; {figures['requests']} requests in {figures['wall_s']} s = "
          f"{figures['requests_per_s']} requests/s; latency p50 "
          f"{figures['latency_ms']['p50']} ms, p95 {figures['latency_ms']['p95']} ms, max "
          f"{figures['latency_ms']['max']} ms")
    for line in tally.errors[:10]:
        print("  " + line)
    if args.json:
        atomic.write_text(args.json, json.dumps(figures, indent=2) + "\n")
    return 0 if not tally.errors and tally.finished == args.games else 1


if __name__ == "__main__":
    sys.exit(main())
