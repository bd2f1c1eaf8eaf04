"""`python -m cf_env.tools.play`: a terminal game for one human seat, driven here through stdin.

The subprocess tests are the acceptance tests (a whole game from piped answers; garbage input,
end of input and Ctrl-C end cleanly, never with a traceback); the in-process ones check the
move names, the image and record options, and failing opponents.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import cf_env.tools.play as play_module
from cf_env import ChickenFootConfig, Engine
from cf_env.agents.policies import register_policy
from cf_env.tools.play import main as play_main
from cf_env.viz.record import read_record, replay_engine
from cf_env.viz.render import arm_labels, move_name
from cf_env.viz.render_image import canvas_size

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--players", "2", "--max-pips", "6", "--rounds", "1", "--opponents", "random"]


def run_play(args: list[str], stdin: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cf_env.tools.play", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def random_answers(seed: int, count: int = 1500) -> str:
    """A careless human: mostly move numbers 1-4, with letters, blanks and nonsense between."""
    rng = np.random.default_rng(seed)
    noise = ["", "x", "12abc", "0", "-2", "99", "  ", "3.5", "t"]
    lines = [
        str(rng.integers(1, 5)) if rng.random() < 0.8 else noise[rng.integers(len(noise))]
        for _ in range(count)
    ]
    return "\n".join(lines) + "\n"


def test_a_whole_game_from_piped_answers(tmp_path):
    record = tmp_path / "game.json"
    result = run_play([*TINY, "--seed", "3", "--record", str(record)], random_answers(3))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "Final standings" in result.stdout
    assert "Your moves:" in result.stdout and "player_1 (random)" in result.stdout
    # The saved game replays to the standings that were printed.
    engine = replay_engine(read_record(record))
    assert engine.game_over
    totals = engine.totals()
    for seat, name in ((0, "you"), (1, "player_1 (random)")):
        pattern = rf"\d\. {re.escape(name)}\s+{totals[seat]}\s+rounds: "
        assert re.search(pattern, result.stdout), (pattern, result.stdout[-600:])


def test_garbage_then_end_of_input_exits_cleanly():
    result = run_play([*TINY, "--seed", "5"], "abc\n\n99\n-1\n1.5\n   \n")
    assert result.returncode == 0
    assert "Traceback" not in result.stderr + result.stdout
    assert "is not a move number" in result.stdout
    assert "there is no move 99" in result.stdout
    assert "Game abandoned (end of input)" in result.stdout


def test_ctrl_c_at_the_prompt_exits_cleanly():
    proc = subprocess.Popen(
        [sys.executable, "-m", "cf_env.tools.play", *TINY, "--seed", "5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        # A test run started in the background of a non-interactive shell (nohup ... &) has
        # SIGINT ignored, and children inherit that: give the game the default, as a terminal does.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = b""
    deadline = time.monotonic() + 60
    while b"your move" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    assert b"your move" in seen, seen[-500:]
    proc.send_signal(signal.SIGINT)
    # Wait before closing stdin (communicate() closes it at once): an EOF at the prompt is a
    # clean quit (exit 0), not the Ctrl-C under test.
    proc.wait(timeout=30)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert b"interrupted" in out
    assert b"Traceback" not in err + out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seat", "5"], "--seat must be 0..1"),
        (["--opponents", "nosuchbot"], "unknown policy spec 'nosuchbot'"),
        (["--opponents", "random,random"], "lists 2 specs for 1 opponents"),
        (["--max-pips", "7"], "max_pips must be one of"),
    ],
)
def test_bad_options_exit_with_code_2(args, message, capsys):
    code = play_main([*TINY, *args], out=io.StringIO(), inp=io.StringIO(""))
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_image_and_record_options(tmp_path):
    image = tmp_path / "table.png"
    record = tmp_path / "game.json"
    out = io.StringIO()
    args = [*TINY, "--seed", "8", "--image", str(image), "--record", str(record)]
    assert play_main(args, out=out, inp=io.StringIO("1\n" * 400)) == 0
    with Image.open(image) as picture:
        assert picture.size == canvas_size(ChickenFootConfig(max_pips=6, num_players=2))
    data = read_record(record)
    assert data["players"] == ["you", "random"]
    final = replay_engine(data)
    assert final.scores == data["final"]["scores"]
    # The last picture is the finished game with the players' names and every hand revealed.
    from cf_env.viz.render_image import render_rgb

    with Image.open(image) as picture:
        drawn = np.asarray(picture.convert("RGB"))
    names = ["player_0 (you)", "player_1 (random)"]
    assert np.array_equal(drawn, render_rgb(final, viewer=0, names=names, reveal=True))
    assert not np.array_equal(drawn, render_rgb(final, viewer=0))


def test_same_seed_same_game():
    runs = []
    for _ in range(2):
        out = io.StringIO()
        play_main(
            [*TINY, "--seed", "21", "--opponents", "greedy"], out=out, inp=io.StringIO("1\n" * 400)
        )
        runs.append(out.getvalue())
    assert runs[0] == runs[1]
    assert "Final standings" in runs[0]


class _Cheater:
    def __init__(self, config, seed=None):
        self.config = config

    def act(self, observation):
        illegal = np.flatnonzero(observation["action_mask"] == 0)
        return int(illegal[0])


def test_an_illegal_opponent_is_reported_not_traced(capsys):
    register_policy("test_cheater", _Cheater)
    code = play_main(
        [
            "--players",
            "2",
            "--max-pips",
            "6",
            "--rounds",
            "1",
            "--opponents",
            "test_cheater",
            "--seed",
            "1",
            "--seat",
            "1",
        ],
        out=io.StringIO(),
        inp=io.StringIO("1\n" * 50),
    )
    assert code == 1
    assert "chose illegal action" in capsys.readouterr().err


def test_move_names_say_where_the_tile_goes():
    engine = Engine(ChickenFootConfig(), seed=0)
    names = [move_name(engine, a) for a in engine.legal_actions()]
    # R7: the first tiles go on empty arms of the spinner.
    assert all("empty spinner arm of the 9|9 (arm A)" in n for n in names if n.startswith("play"))
    rng = np.random.default_rng(0)
    seen_foot = seen_arm = False
    while not engine.game_over and not (seen_foot and seen_arm):
        for action in engine.legal_actions():
            name = move_name(engine, action)
            if action == engine.config.draw_action:
                assert name.startswith("draw from the boneyard (")
            elif action == engine.config.pass_action:
                assert name.startswith("pass")
            elif engine.foot_value >= 0:  # R9: toes of the pending foot
                v = engine.foot_value
                assert f"on the {v}|{v} chicken foot" in name and name.startswith(f"play {v}|")
                seen_foot = True
            elif engine.spinner_empty == 0:
                tile, side = divmod(action, 2)
                lo, hi = engine.tables.pairs[tile]
                attached = hi if side else lo
                assert name.startswith(f"play {attached}|") and f"on the {attached} end of" in name
                # The named arm is the one the engine puts the tile on.
                after = engine.clone()
                after.step(action)
                if after.round == engine.round:  # (a tile that ends the round is not laid out)
                    labels = arm_labels(after)
                    arms = enumerate(after.arms)
                    home = next(i for i, arm in arms if (tile, attached) in arm.tiles)
                    assert name.split(" end of ")[1].split()[1] == labels[home]
                    seen_arm = True
        engine.step(int(rng.choice(engine.legal_actions())))
    assert seen_foot and seen_arm


# ------------------------------------------ hardening: checkpoint cards, paths, tables
CHECKPOINT = f"ppo:{ROOT / 'checkpoints' / 'ppo-4p-d9'}"  # the shipped agent: 4 players, double-9


def test_a_checkpoint_opponent_sets_the_rules_from_its_card():
    out = io.StringIO()
    code = play_main(
        ["--opponents", CHECKPOINT, "--seed", "1", "--rounds", "1"], out=out, inp=io.StringIO("")
    )
    assert code == 0  # (end of input: the game is abandoned cleanly)
    text = out.getvalue()
    assert text.startswith("Chicken Foot: double-9 set, 4 players, 1 round(s), 4 spinner arms")
    assert f"seat 3: player_3 ({CHECKPOINT})" in text
    assert f"rules from the card of {CHECKPOINT}" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--players", "2"], "--players 2 contradicts {spec}: its card says num_players 4"),
        (["--max-pips", "6"], "--max-pips 6 contradicts {spec}: its card says max_pips 9"),
        (
            ["--spinner-arms", "6"],
            "--spinner-arms 6 contradicts {spec}: its card says spinner_arms 4",
        ),
        (["--rounds", "11"], "--rounds 11 contradicts {spec}: its card says num_rounds 10"),
        (
            ["--opponents", f"{CHECKPOINT},greedy"],
            "lists 2 specs for 3 opponents (4 players, from the card",
        ),
    ],
)
def test_options_that_contradict_the_card_exit_2(args, message, capsys):
    out = io.StringIO()
    code = play_main(["--opponents", CHECKPOINT, *args], out=out, inp=io.StringIO(""))
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message.format(spec=CHECKPOINT) in err
    assert out.getvalue() == ""  # refused before the game


def test_output_paths_are_checked_before_the_game(tmp_path, capsys):
    cases = [
        (["--record", str(tmp_path / "missing" / "game.json")], "does not exist"),
        (["--record", str(tmp_path)], "is a folder; give a file name"),
        (["--image", str(tmp_path / "missing" / "table.png")], "does not exist"),
    ]
    for args, message in cases:
        out = io.StringIO()
        code = play_main([*TINY, "--seed", "3", *args], out=out, inp=io.StringIO("1\n" * 400))
        assert code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {args[0]} ") and message in err
        assert out.getvalue() == ""  # not a move was played


def test_the_search_for_the_start_double_is_announced():
    config = ChickenFootConfig(max_pips=6, num_players=2, num_rounds=1)
    # Seed 7: nobody is dealt the 6|6 (R5); seed 1: seat 1 holds it.
    searched, dealt = Engine(config, seed=7), Engine(config, seed=1)
    drew = [searched.hand_counts[s] - config.hand_size + (s == searched.start_seat) for s in (0, 1)]
    assert min(drew) > 0 and dealt.hand_counts[dealt.start_seat] == config.hand_size - 1
    out = io.StringIO()
    play_main([*TINY, "--seed", "7"], out=out, inp=io.StringIO(""))
    assert (
        "Nobody was dealt the 6|6: the players drew from the boneyard in turn until it came up, "
        f"keeping what they drew (R5): you drew {drew[0]}, player_1 (random) drew {drew[1]}."
    ) in out.getvalue()
    out = io.StringIO()
    play_main([*TINY, "--seed", "1"], out=out, inp=io.StringIO(""))
    assert "Nobody was dealt" not in out.getvalue()


def test_score_tables_align_long_names_and_reveal_hands(tmp_path):
    long_spec = "cf_env.agents.bots:GreedyPolicy"  # its seat label has 42 characters
    record = tmp_path / "game.json"
    out = io.StringIO()
    args = ["--players", "3", "--max-pips", "6", "--rounds", "2", "--seed", "4"]
    args += ["--opponents", f"random,{long_spec}", "--record", str(record)]
    assert play_main(args, out=out, inp=io.StringIO("1\n" * 600)) == 0
    text = out.getvalue()
    tables = [block.split("\n")[1:4] for block in text.split("Points this round")[1:]]
    assert len(tables) == 2
    for rows in tables:
        assert len({row.index(" total ") for row in rows}) == 1, rows
    standings = text.split("=== Final standings")[1].split("\n")[1:4]
    assert len({row.index("   rounds: ") for row in standings}) == 1, standings
    # The last round's table shows every hand left (R12): the replayed end state's hands.
    engine = replay_engine(read_record(record))
    for seat, row in enumerate(tables[-1]):
        hand = " ".join(
            f"{a}|{b}" for a, b in map(engine.tables.pairs.__getitem__, engine.hand(seat))
        )
        assert row.endswith("   " + (hand or "(out)")), (row, hand)


# ------------------------------------- rule variants: target scores, start-double search
def _card_with(monkeypatch, **fields) -> ChickenFootConfig:
    """Play under rules a checkpoint's card would set (play has no options for the variants):
    `_card_rules` answers as for a card with `fields`, while the opponents stay bots."""
    from training.artifacts.checkpoints import NEUTRAL_FIELDS

    config = ChickenFootConfig(**fields)
    rules = {k: v for k, v in config.to_dict().items() if k not in NEUTRAL_FIELDS}
    monkeypatch.setattr(play_module, "_card_rules", lambda specs: ("card-test", dict(rules)))
    return config


def test_play_counts_the_rounds_of_a_target_game(monkeypatch, tmp_path):
    """A game to a target score is not "round r of N": rounds are counted (the countdown of
    doubles restarts after the double-blank), each finished table under its own round's number,
    and the end says in which round a total passed the target."""
    config = _card_with(monkeypatch, max_pips=6, num_players=2, target_score=300)
    record = tmp_path / "game.json"
    out = io.StringIO()
    args = ["--opponents", "random", "--seed", "3", "--record", str(record)]
    assert play_main(args, out=out, inp=io.StringIO("1\n" * 3000)) == 0
    text = out.getvalue()
    assert text.startswith("Chicken Foot: double-6 set, 2 players, rounds until a total passes 300")
    engine = replay_engine(read_record(record))
    played = len(engine.scores[0])
    assert played > config.num_rounds  # (seed 3: 12 rounds, the countdown of 7 restarted)
    starts = re.findall(r"=== Round (.*?): ", text)
    assert starts == [f"{k} (game to 300)" for k in range(1, played + 1)]
    # The table shown at each round's end is that round's: its header has the same number.
    chunks = text.split("--- Round over")[:-1]
    ends = [re.findall(r"^round (.*?)  centre", chunk, re.M)[-1] for chunk in chunks]
    assert ends == starts
    assert " of 7" not in text and "/7" not in text
    assert f"A total passed 300 in round {played}: the game is over." in text


def test_rounds_option_against_a_target_score_card_exits_2(tmp_path, capsys):
    card = json.loads((ROOT / "checkpoints" / "ppo-4p-d9" / "card.json").read_text())
    card["env_config"]["target_score"] = 500
    (tmp_path / "card.json").write_text(json.dumps(card))
    spec = f"ppo:{tmp_path}"
    out = io.StringIO()
    assert play_main(["--opponents", spec, "--rounds", "3"], out=out, inp=io.StringIO("")) == 2
    err = capsys.readouterr().err
    assert (
        f"error: --rounds 3 contradicts {spec}: its card plays rounds until a total passes "
        "target_score 500 (leave --rounds out)"
    ) in err
    assert out.getvalue() == ""


@pytest.mark.parametrize(
    "search, message",
    [
        (
            "all_draw",
            "Nobody was dealt the 6|6: the players all drew one tile at a time, together, until "
            "it came up, keeping what they drew (R5 variant all_draw): you drew {0}, "
            "player_1 (random) drew {1}.",
        ),
        (
            "lower_double",
            "Nobody was dealt the 6|6: the highest lower double dealt, {center}|{center}, starts "
            "the round (R5 variant lower_double).",
        ),
    ],
)
def test_start_search_variants_are_announced(monkeypatch, search, message):
    config = _card_with(monkeypatch, max_pips=6, num_players=2, num_rounds=1, start_search=search)
    engine = Engine(config, seed=7)  # seed 7: nobody is dealt the 6|6 (as in the R5 test above)
    drew = [engine.hand_counts[s] - config.hand_size + (s == engine.start_seat) for s in (0, 1)]
    if search == "lower_double":
        assert engine.center < 6 and drew == [0, 0]
    else:
        assert engine.center == 6 and min(drew) > 0
    out = io.StringIO()
    play_main(["--opponents", "random", "--seed", "7"], out=out, inp=io.StringIO(""))
    text = out.getvalue()
    assert message.format(*drew, center=engine.center) in text
    assert "drew from the boneyard in turn" not in text


def test_the_image_tells_apart_opponents_of_one_checkpoint(tmp_path, monkeypatch):
    # Three copies of one checkpoint were all drawn as "ppo:checkpoints/selfpla…".
    import cf_env.viz.render_image as render_image

    drawn = []
    monkeypatch.setattr(render_image, "save_png",
                        lambda engine, path, **kw: drawn.append(kw["names"]))
    spec = f"ppo:{ROOT / 'checkpoints' / 'selfplay-4p-d9'}"
    args = ["--opponents", spec, "--rounds", "1", "--seed", "3", "--image", str(tmp_path / "t.png")]
    assert play_main(args, out=io.StringIO(), inp=io.StringIO("q\n")) == 0
    names = drawn[0]
    assert names == ["player_0 (you)"] + [f"player_{s} (ppo:selfplay-4p-d9)" for s in (1, 2, 3)]
