"""`cf_env.envs.openspiel_game.load_state`: OpenSpiel state strings read without unpickling.

OpenSpiel's own readers (`pyspiel.deserialize_game_and_state`, `game.deserialize_state`) unpickle
the `__dict__=` line of a Python game's state string in C++ (`PyState::Deserialize`), so a crafted
string runs code. `load_state` rebuilds the state from the game line and the `history=` line
alone. Checked here: a hostile string runs nothing, the rebuilt state is the original one over
random playouts of every variant, and each malformed input is refused with a clear error."""

from __future__ import annotations

import base64
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="optional extra: pip install -e '.[openspiel]'")

from cf_env.envs import openspiel_game as og  # noqa: E402

CHANCE = pyspiel.PlayerId.CHANCE

# Every choice the game's parameters allow, each at least once: every set size, 2 players and the
# most a set takes, six arms, one and many toes, both draw rules, must_play_drawn, every start
# search, a target score, another double-blank value, both tie-breaks, a hand size.
VARIANTS = [
    {"num_players": 2, "max_pips": 6, "num_rounds": 3},
    {"num_rounds": 2},
    {"num_players": 3, "draw_until_playable": True, "must_play_drawn": True, "num_rounds": 2},
    {"num_players": 5, "start_search": "all_draw", "spinner_arms": 6, "num_rounds": 2},
    {"num_players": 6, "start_search": "lower_double", "num_rounds": 2},
    {"num_players": 2, "max_pips": 6, "target_score": 40, "double_blank_value": 25},
    {"num_players": 3, "toes": 1, "tie_break": "none", "hand_size": 9, "num_rounds": 2},
    {"num_players": 4, "max_pips": 12, "toes": 12, "must_play_drawn": True, "num_rounds": 1},
    {"num_players": 2, "max_pips": 15, "draw_until_playable": True, "num_rounds": 1},
    {"num_players": 3, "max_pips": 18, "num_rounds": 1},
]


class WritesMarker:
    """Unpickled, calls open(path, "w"): creates the file. Stands for any code a pickle runs."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def random_action(state, rng: np.random.Generator) -> int:
    if state.is_chance_node():
        outcomes, probs = zip(*state.chance_outcomes())
        return int(rng.choice(outcomes, p=probs))
    return int(rng.choice(state.legal_actions()))


def played(params: dict, seed: int, steps: int):
    """A game of `params` and the state `steps` random actions (chance included) in."""
    game = pyspiel.load_game(og.GAME_NAME, params)
    state, rng = game.new_initial_state(), np.random.default_rng(seed)
    for _ in range(steps):
        if state.is_terminal():
            break
        state.apply_action(random_action(state, rng))
    return game, state


def hostile(text: str, marker: str) -> str:
    """`text` with its `__dict__=` line replaced by a pickle that writes `marker` when loaded."""
    head, sep, _ = text.partition("__dict__=")
    assert sep, "a serialize_game_and_state string has a __dict__= line"
    return head + sep + base64.b64encode(pickle.dumps(WritesMarker(marker))).decode("ascii")


def assert_same_state(back, state) -> None:
    """Everything OpenSpiel reads off a state, for every player, and the pickled state too."""
    game = state.get_game()
    assert back.history() == state.history()
    assert back.move_number() == state.move_number()
    assert back.current_player() == state.current_player()
    assert back.is_terminal() == state.is_terminal()
    assert back.returns() == state.returns()
    assert str(back) == str(state)
    for p in range(game.num_players()):
        assert back.observation_tensor(p) == state.observation_tensor(p)
        assert back.information_state_string(p) == state.information_state_string(p)
    if state.is_chance_node():
        assert back.chance_outcomes() == state.chance_outcomes()
    elif not state.is_terminal():
        assert back.legal_actions() == state.legal_actions()
    # The state proper: the engine, the engine the round started from, the round's events and
    # the finished rounds.
    ours, theirs = back._core, state._core
    assert (ours.events, ours.dealing, ours.drawing, ours.prefix) == (
        theirs.events, theirs.dealing, theirs.drawing, theirs.prefix)
    assert ours.engine.snapshot() == theirs.engine.snapshot()
    assert ours.round_start.snapshot() == theirs.round_start.snapshot()


# ---------------------------------------------------------------- a hostile string runs nothing
def test_load_state_never_unpickles_a_hostile_dict_and_rebuilds_from_history(tmp_path, monkeypatch):
    game, state = played({"num_players": 3}, seed=4, steps=60)
    marker = tmp_path / "marker"
    crafted = hostile(pyspiel.serialize_game_and_state(game, state), str(marker))

    def refuse(*args, **kwargs):
        raise AssertionError("load_state unpickled or used OpenSpiel's reader")

    # The compiled core's functions are loaded from numba's cache (our own build files, read
    # with pickle) at their first use in a process: use them once before refusing pickle.
    assert_same_state(og.load_state(pyspiel.serialize_game_and_state(game, state))[1], state)
    # Neither Python's unpickler (which OpenSpiel's C++ reader calls) nor OpenSpiel's readers.
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    monkeypatch.setattr(pyspiel, "deserialize_game_and_state", refuse)
    monkeypatch.setattr(og.ChickenFootGame, "deserialize_state", refuse, raising=False)
    back_game, back = og.load_state(crafted)
    assert not marker.exists()
    assert back_game.config == game.config
    assert_same_state(back, state)  # (serialize() pickles with pickle.dumps, not patched)


def test_openspiel_deserialize_runs_the_hostile_pickle_that_load_state_ignores(tmp_path):
    """Why `load_state` exists: OpenSpiel's own reader unpickles `__dict__=` and so runs it. (In a
    subprocess: the reader then fails, the state being no dict, but the file is written.)"""
    game, state = played({"num_players": 2, "max_pips": 6}, seed=1, steps=20)
    marker = tmp_path / "marker"
    crafted = hostile(pyspiel.serialize_game_and_state(game, state), str(marker))
    source = tmp_path / "crafted.txt"
    source.write_text(crafted)
    script = textwrap.dedent(f"""
        import pyspiel
        import cf_env.envs.openspiel_game
        try:
            pyspiel.deserialize_game_and_state(open({str(source)!r}).read())
        except Exception:
            pass
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert marker.exists()  # OpenSpiel ran the pickle
    marker.unlink()
    og.load_state(crafted)
    assert not marker.exists()  # load_state did not


def test_load_state_reads_a_string_without_its_dict_line():
    game, state = played({"num_players": 2, "max_pips": 6}, seed=2, steps=30)
    text = pyspiel.serialize_game_and_state(game, state)
    _, back = og.load_state(text.partition("__dict__=")[0])
    assert_same_state(back, state)


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("params", VARIANTS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_load_state_rebuilds_the_same_state_over_random_playouts(params):
    """Random playouts, loaded back at random nodes and at the first node of each kind:
    decisions, deals under way, draws (chance nodes after a DRAW) and the end."""
    game = pyspiel.load_game(og.GAME_NAME, params)
    rng = np.random.default_rng(VARIANTS.index(params))
    dealt = game.config.num_players * game.config.hand_size
    kinds = set()
    for _ in range(5):
        state = game.new_initial_state()
        deal_at = int(rng.integers(dealt))  # one node of the first deal, the start included
        while True:
            core = state._core
            kind = ("end" if state.is_terminal() else "deal" if core.dealing
                    else "draw" if core.drawing is not None else "decision")
            if kind not in kinds or len(state.history()) == deal_at or rng.random() < 0.02:
                kinds.add(kind)
                back_game, back = og.load_state(pyspiel.serialize_game_and_state(game, state))
                assert back_game.config == game.config
                assert_same_state(back, state)
                assert back.serialize() == state.serialize()  # down to the pickle
                # The rebuilt state plays on as the original does.
                if not state.is_terminal():
                    action = random_action(state, rng)
                    state.apply_action(action)
                    back.apply_action(action)
                    assert_same_state(back, state)
            if state.is_terminal():
                break
            state.apply_action(random_action(state, rng))
    assert kinds == {"end", "deal", "draw", "decision"}


def test_load_state_rebuilds_mid_draw_and_resampled_states():
    game = pyspiel.load_game(og.GAME_NAME, {"num_players": 3, "draw_until_playable": True, "num_rounds": 2})
    rng, state = np.random.default_rng(7), game.new_initial_state()
    mid_draw = resampled = 0
    while not state.is_terminal():
        core = state._core
        if core.drawing:  # a DRAW with some of its tiles chosen and more to come
            _, back = og.load_state(pyspiel.serialize_game_and_state(game, state))
            assert_same_state(back, state)
            mid_draw += 1
        if not state.is_chance_node() and rng.random() < 0.1:
            sampler = pyspiel.UniformProbabilitySampler(int(rng.integers(1 << 30)), 0.0, 1.0)
            sample = state.resample_from_infostate(state.current_player(), sampler)
            _, back = og.load_state(pyspiel.serialize_game_and_state(game, sample))
            assert_same_state(back, sample)
            resampled += 1
        state.apply_action(random_action(state, rng))
    assert mid_draw > 0 and resampled > 3


# ---------------------------------------------------------------- malformed input
@pytest.fixture(scope="module")
def real_text() -> str:
    """A serialize_game_and_state string of a 2-player double-6 game, 12 actions in."""
    game, state = played({"num_players": 2, "max_pips": 6, "num_rounds": 1}, seed=3, steps=12)
    return pyspiel.serialize_game_and_state(game, state)


def with_line(text: str, prefix: str, line: str) -> str:
    """`text` with its line starting with `prefix` replaced by `line`."""
    lines = text.split("\n")
    index = next(i for i, old in enumerate(lines) if old.startswith(prefix))
    return "\n".join(lines[:index] + [line] + lines[index + 1 :])


def history_of(text: str) -> list[str]:
    return next(line for line in text.split("\n") if line.startswith("history="))[8:].split(",")


def with_history(text: str, entries: list[str], move_number: int | None = None) -> str:
    text = with_line(text, "history=", "history=" + ",".join(entries))
    count = len(entries) if move_number is None else move_number
    return with_line(text, "move_number=", f"move_number={count}")


GAME_LINE = "python_chicken_foot("


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda t: t.encode(), "a state string is a str; got bytes"),
        (lambda t: "x" * (og.MAX_STATE_TEXT + 1), "at most 16,777,216 are read"),
        (lambda t: t.replace("[Meta]", "[Meta] é"), "ASCII"),
        (lambda t: "", r"no \[Meta\], \[Game\], \[State\] section"),
        (lambda t: t.partition("[State]")[0], r"no \[State\] section"),
        (lambda t: "history=\n" + t, r"line 1 comes before the \[Meta\] section"),
        (lambda t: t.replace("[Game]", "[State]", 1), r"\[State\] is out of place"),
        (lambda t: t + "\n[Game]\n", r"\[Game\] is out of place"),
        (lambda t: t.replace("Version: 1", "Version: 2"), r"\[Meta\] section must be 'Version: 1'"),
        (lambda t: with_line(t, GAME_LINE, "tic_tac_toe()"), "the game is 'tic_tac_toe'; load_state reads only"),
        (lambda t: with_line(t, GAME_LINE, "python_chicken_foot(num_players=2"), "is not name\\(parameters\\)"),
        (lambda t: t.replace("[State]", "tic_tac_toe()\n[State]"), "must be one game string; got 2 lines"),
        (lambda t: t.replace("num_players=2", "num_player=2"), "unknown parameter.*did you mean 'num_player' -> 'num_players'"),
        (lambda t: t.replace("num_players=2", "num_players=two"), "num_players='two' is not an int"),
        (lambda t: t.replace("num_players=2", "num_players=" + "9" * 40), "is not an int"),
        (lambda t: t.replace("draw_until_playable=False", "draw_until_playable=1"), "is not a bool"),
        (lambda t: t.replace("max_pips=6", "max_pips=7"), r"bad game parameters: max_pips must be one of"),
        (lambda t: t.replace("max_pips=6", "max_pips=6,max_pips=6"), "'max_pips' given twice"),
        (lambda t: t.replace("max_pips=6", "max_pips"), "'max_pips' is not name=value"),
        (lambda t: t.replace("max_pips=6", "max_pips=6,reward_mode=win"), "reward_mode is a cf_env env option"),
        (lambda t: t.replace("move_number=", "moves="), "must be the lines history=, move_number="),
        (lambda t: t + "\nextra=1", "must be the lines history=, move_number="),
        (lambda t: with_line(t, "history=", "history"), r"got \['history', 'move_number=', '__dict__='\]"),
        (lambda t: with_history(t, history_of(t)[:3] + ["a:b"]), "history entry 3 'a:b' is not <player>:<action>"),
        (lambda t: with_history(t, history_of(t)[:3] + ["-1:2.5"]), "history entry 3 '-1:2.5' is not"),
        (lambda t: with_history(t, history_of(t)[:3] + ["-2:3"]), "history entry 3 '-2:3' is not"),
        (lambda t: with_history(t, history_of(t)[:3] + ["-1:" + "9" * 12]), "history entry 3 .* is not"),
        (lambda t: with_history(t, history_of(t)[:3] + [history_of(t)[0]]),
         r"history entry 3 \(-1:\d+\): chance outcome \d+ is not legal there"),
        (lambda t: with_history(t, history_of(t)[:3] + ["0:1"]),
         r"history entry 3 \(0:1\) is for player 0, but chance \(-1\) acts there"),
        (lambda t: with_history(t, history_of(t), move_number=3), r"move_number=3 but the history has 12 entries"),
        (lambda t: with_line(t, "move_number=", "move_number=-1"), "move_number='-1' is not a count"),
    ],
)
def test_load_state_refuses_malformed_strings_naming_the_problem(real_text, make, message):
    with pytest.raises(og.StateStringError, match=message):
        og.load_state(make(real_text))


def test_load_state_refuses_illegal_decisions_and_play_after_the_end():
    game, state = played({"num_players": 2, "max_pips": 6, "num_rounds": 1}, seed=5, steps=10_000)
    assert state.is_terminal()
    text = pyspiel.serialize_game_and_state(game, state)
    entries = history_of(text)
    with pytest.raises(og.StateStringError, match=rf"history entry {len(entries)} \(0:0\) comes after the end"):
        og.load_state(with_history(text, entries + ["0:0"]))
    first = next(i for i, e in enumerate(entries) if not e.startswith("-1:"))
    seat = int(entries[first].split(":")[0])
    replay = game.new_initial_state()
    for entry in entries[:first]:
        replay.apply_action(int(entry.split(":")[1]))
    illegal = next(a for a in range(game.num_distinct_actions()) if a not in replay.legal_actions())
    with pytest.raises(og.StateStringError, match=rf"entry {first} \({seat}:{illegal}\): action {illegal} is not legal"):
        og.load_state(with_history(text, entries[:first] + [f"{seat}:{illegal}"]))
    other = 1 - seat
    with pytest.raises(og.StateStringError, match=rf"is for player {other}, but player {seat} acts"):
        og.load_state(with_history(text, entries[:first] + [f"{other}:{entries[first].split(':')[1]}"]))


def test_load_state_bounds_the_history_by_the_game_before_splitting_it(real_text):
    config = og.config_from_params({"num_players": 2, "max_pips": 6, "num_rounds": 1})
    limit = og.max_history_length(config)
    assert 0 < limit < 2 * pyspiel.load_game(og.GAME_NAME, og.game_parameters(config)).max_game_length()
    # One entry over the bound (a string the text bound alone would let through).
    text = with_history(real_text, ["-1:0"] * (limit + 1))
    assert len(text) < og.MAX_STATE_TEXT
    with pytest.raises(og.StateStringError, match=f"the history has {limit + 1:,} entries; .* at most {limit:,}"):
        og.load_state(text)
