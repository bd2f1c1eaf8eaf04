"""The reference rules model: a second statement of the rules, written apart from the engine.

It owns the independent check of `cf_env.core.engine`: the soak (`cf_env.tools.soak`) and the
property tests (`tests/core/test_fuzz.py`) both compare the engine with it, so each rule the checks
rely on is written here once. It is written from `docs/rules.md` and the action contract
(`cf_env.core.actions`) alone and must never import the engine, its tables or its scoring (a
shared bug would then agree with itself); only the config, which states the variant, is shared.

Tiles are (lo, hi) pairs, as in the rules text; `pairs_of` is the id contract that maps them to
the engine's tile ids. What is here:

* `deal` — R3 deal of a permutation and R5's start-double search (with the `start_search`
  variants);
* `playable_values`, `placements`, `legal_actions` — R6/R7/R9 (which values are open) and the
  R8 draw/pass options, as action ids;
* `RefRound` — one whole round played from those (R6-R11), open ends kept as a multiset;
* `round_points` (R12), `game_over` (R4 and the target variant), `winners` (R13),
  `game_returns` (the documented rewards of a whole game), `round_step_bound` (R11's bound).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache

from cf_env.core.config import ChickenFootConfig

Tile = tuple[int, int]


@cache
def pairs_of(max_pips: int) -> tuple[Tile, ...]:
    """The tile id contract: for lo in 0..N, for hi in lo..N -> tile (lo, hi)."""
    return tuple((lo, hi) for lo in range(max_pips + 1) for hi in range(lo, max_pips + 1))


@cache
def index_of(max_pips: int) -> dict[Tile, int]:
    """The tile id of each (lo, hi) pair (the inverse of `pairs_of`)."""
    return {pair: t for t, pair in enumerate(pairs_of(max_pips))}


# ---------------------------------------------------------------------------- R3, R5
def deal(cfg: ChickenFootConfig, order: list[int], round_index: int):
    """R3 and R5: deal `order` (a permutation of tile ids; seat s takes the s-th block of
    hand_size, the rest is the boneyard, drawn from its start), then find the start double.

    `round_index` counts the rounds played (the countdown of R4 restarts after the double-blank
    in games to a target score). Returns (hands as sets of tiles, the boneyard in draw order,
    the centre value, the first seat to act)."""
    pairs, n, size = pairs_of(cfg.max_pips), cfg.num_players, cfg.hand_size
    hands = [[pairs[t] for t in order[s * size : (s + 1) * size]] for s in range(n)]
    boneyard = [pairs[t] for t in order[n * size :]]
    countdown = round_index % (cfg.max_pips + 1)  # R4, counting down (again, to a target)
    center = cfg.max_pips - countdown

    def holder(value: int):
        return next((s for s, hand in enumerate(hands) if (value, value) in hand), None)

    seat = holder(center)
    if seat is None and cfg.start_search == "lower_double":  # the highest lower double held
        seat, center = next(
            ((holder(v), v) for v in range(center - 1, -1, -1) if holder(v) is not None),
            (None, center),  # none held: the round's own double is drawn for, as R5
        )
    first = countdown % n  # R5's choice: seat r mod n, r the round's place in the countdown
    if seat is None and cfg.start_search == "all_draw":  # everyone draws one, at once, again
        while seat is None:
            for k in range(n):
                if boneyard:
                    hands[(first + k) % n].append(boneyard.pop(0))
                    if hands[(first + k) % n][-1] == (center, center):
                        seat = (first + k) % n
    elif seat is None:  # R5: seats draw in turn from seat round % n until it appears
        k = 0
        while seat is None:
            hands[(first + k) % n].append(boneyard.pop(0))
            if hands[(first + k) % n][-1] == (center, center):
                seat = (first + k) % n
            k += 1
    hands[seat].remove((center, center))
    return [set(h) for h in hands], boneyard, center, (seat + 1) % n


# ---------------------------------------------------------------------------- R6-R9
def playable_values(
    center: int, empty_arms: int, ends: Mapping[int, int], foot: int | None
) -> set[int]:
    """The values a tile may attach to: the pending foot's double (R9), else the centre while a
    spinner arm is empty (R7), else every open end (R6). `ends` counts open ends per value."""
    if foot is not None:
        return {foot}
    if empty_arms:
        return {center}
    return {v for v, c in ends.items() if c}


def placements(tile: Tile, values: set[int], index: Mapping[Tile, int]) -> set[int]:
    """The action ids that lay `tile` against one of `values` (the action contract)."""
    lo, hi = tile
    t = index[tile]
    out = set()
    if lo in values:
        out.add(2 * t)  # lo half against the table
    if hi in values and hi != lo:
        out.add(2 * t + 1)  # hi half against the table; a double attaches one way only
    return out


def legal_actions(
    cfg: ChickenFootConfig,
    values: set[int],
    hand: Iterable[Tile],
    drawn: Tile | None,
    boneyard_left: bool,
) -> set[int]:
    """The acting seat's legal action ids (R6-R9 placements, R8 draw and pass)."""
    index = index_of(cfg.max_pips)
    draw, pass_ = 2 * len(index), 2 * len(index) + 1
    if drawn is not None:  # R8: place the drawn tile, or pass (unless must_play_drawn)
        acts = placements(drawn, values, index)
        if not (acts and cfg.must_play_drawn):
            acts.add(pass_)
        return acts
    acts = set()
    for tile in hand:
        acts |= placements(tile, values, index)
    if not acts:  # R8: draw only when you cannot place; pass when the boneyard is empty
        acts.add(draw if boneyard_left else pass_)
    return acts


class RefRound:
    """One round of Chicken Foot, from the rules text: open ends as a multiset of values.

    Ends of equal value are interchangeable (the action contract), so a multiset of open-end
    values, the count of empty spinner arms and the pending foot are the whole table state.
    Beside it, the layout the engine reports (`Engine.arms`, `Engine.placement`), from the same
    text: a spinner tile starts an arm of the centre (R7), a toe an arm of the foot's double
    (R9), and any other tile extends the oldest arm (first started) whose tip has the value it
    attaches to (R6); a double there closes its arm, which the foot's toes then grow from.
    `arms` holds [parent, [(tile, attached value), ...], tip or None] per arm.
    """

    def __init__(self, cfg: ChickenFootConfig, center: int, hands, boneyard, current: int):
        self.cfg = cfg
        self.pairs = pairs_of(cfg.max_pips)
        self.draw, self.pass_ = 2 * len(self.pairs), 2 * len(self.pairs) + 1
        self.center = center  # R4, or a lower double (R5 variant)
        self.hands = [set(h) for h in hands]  # sets of (lo, hi)
        self.boneyard = list(boneyard)  # element 0 is drawn next
        self.current = current
        self.ends: Counter[int] = Counter()
        self.empty_arms = cfg.spinner_arms  # R7
        self.foot: list[int] | None = None  # [double value, toes still owed] (R9)
        self.drawn: Tile | None = None  # the tile of a post-draw decision (R8)
        self.table = {(self.center, self.center)}
        self.arms: list[list] = []
        self.foot_arm: int | None = None

    def values(self) -> set[int]:
        foot = None if self.foot is None else self.foot[0]
        return playable_values(self.center, self.empty_arms, self.ends, foot)

    def can_place(self, hand) -> bool:
        values = self.values()
        return any(lo in values or hi in values for lo, hi in hand)

    def legal(self) -> set[int]:
        return legal_actions(
            self.cfg, self.values(), self.hands[self.current], self.drawn, bool(self.boneyard)
        )

    def placement(self, action: int) -> tuple[str, int, int, bool, int, int]:
        """(rule, arm, parent, new arm, toe, value left open) for a legal tile action now."""
        tile = self.pairs[action // 2]
        attached, free = tile[action % 2], tile[1 - action % 2]
        if self.foot is not None:
            toe = self.cfg.toes - self.foot[1] + 1
            return "R9", len(self.arms), self.foot_arm, True, toe, free
        if self.empty_arms:
            return "R7", len(self.arms), -1, True, 0, free
        arm = next(k for k, (_, _, tip) in enumerate(self.arms) if tip == attached)
        return "R6", arm, self.arms[arm][0], False, 0, -1 if attached == free else free

    def _lay(self, action: int) -> None:
        rule, arm, parent, new, _, leaves_open = self.placement(action)
        tile = self.pairs[action // 2]
        if new:
            self.arms.append([parent, [], None])
        self.arms[arm][1].append((tile, tile[action % 2]))
        self.arms[arm][2] = None if leaves_open < 0 else leaves_open
        if rule == "R6" and leaves_open < 0:
            self.foot_arm = arm
        elif rule == "R9" and self.foot[1] == 1:  # the last toe fills the foot (R10)
            self.foot_arm = None

    def apply(self, action: int) -> bool:
        """Play `action` for the acting seat; True when the round is over (R11)."""
        assert action in self.legal()
        seat = self.current
        n = self.cfg.num_players
        if action == self.draw:
            values = self.values()
            tile = self.boneyard.pop(0)
            self.hands[seat].add(tile)
            while (
                self.cfg.draw_until_playable
                and self.boneyard
                and not (tile[0] in values or tile[1] in values)
            ):
                tile = self.boneyard.pop(0)
                self.hands[seat].add(tile)
            self.drawn = tile
        elif action == self.pass_:
            self.drawn = None
            self.current = (seat + 1) % n
        else:
            tile = self.pairs[action // 2]
            attached = tile[action % 2]
            free = tile[1 - action % 2]
            self._lay(action)
            self.hands[seat].remove(tile)
            self.table.add(tile)
            if self.foot is not None:  # a toe (R9); the last one releases the foot (R10)
                self.ends[free] += 1
                self.foot[1] -= 1
                if self.foot[1] == 0:
                    self.foot = None
            elif self.empty_arms:  # R7
                self.empty_arms -= 1
                self.ends[free] += 1
            else:
                self.ends[attached] -= 1
                if tile[0] == tile[1]:  # R9: a double closes its end and starts a foot
                    self.foot = [attached, self.cfg.toes]
                else:
                    self.ends[free] += 1
            self.drawn = None
            self.current = (seat + 1) % n
            if not self.hands[seat]:  # R11: a player went out
                return True
        # R11: nobody can draw and nobody can place (also while a foot is pending).
        return not self.boneyard and not any(self.can_place(h) for h in self.hands)

    def points(self) -> list[int]:
        """R12 of the hands as they stand."""
        return round_points(self.cfg, self.hands)


# ---------------------------------------------------------------------------- R11-R13
def round_points(cfg: ChickenFootConfig, hands: Iterable[Iterable[Tile]]) -> list[int]:
    """R12: pips left in each hand; the double-blank counts double_blank_value."""
    blank = cfg.double_blank_value
    return [sum(blank if (lo, hi) == (0, 0) else lo + hi for lo, hi in hand) for hand in hands]


def round_step_bound(cfg: ChickenFootConfig) -> int:
    """The most decisions a round can take (R11 ends it before): at most T plays, T draws and T
    passes after draws, and with an empty boneyard at most n-1 passes between two plays."""
    count = cfg.num_tiles
    return 3 * count + cfg.num_players * (count + 1)


def game_over(cfg: ChickenFootConfig, scores: list[list[int]]) -> bool:
    """R4: after num_rounds rounds; variant: after the round in which a total passes the target."""
    if cfg.target_score is None:
        return len(scores[0]) == cfg.num_rounds
    return max(sum(s) for s in scores) > cfg.target_score


def winners(cfg: ChickenFootConfig, scores: list[list[int]]) -> list[int]:
    """R13, written out: lowest total; most zero rounds; lowest non-zero round; else shared.
    With tie_break="none" every seat on the lowest total wins."""
    totals = [sum(s) for s in scores]
    tied = [s for s, t in enumerate(totals) if t == min(totals)]
    if cfg.tie_break == "none" or len(tied) == 1:
        return tied
    zeros = {s: scores[s].count(0) for s in tied}
    tied = [s for s in tied if zeros[s] == max(zeros.values())]
    if len(tied) == 1:
        return tied
    lowest = {s: min([x for x in scores[s] if x > 0], default=None) for s in tied}
    present = [v for v in lowest.values() if v is not None]
    if not present:  # nobody has a non-zero round: still tied
        return tied
    return [s for s in tied if lowest[s] == min(present)]


def game_returns(cfg: ChickenFootConfig, reward_mode: str, scores: list[list[int]]) -> list[float]:
    """Each seat's return over a whole game, as documented for `reward_mode`: "score" pays
    minus own points, "zero_sum" the others' mean minus own points (both / points_scale, summed
    over rounds), "win" +1 to each R13 winner and -1 to the others."""
    n, scale = cfg.num_players, cfg.points_scale
    totals = [sum(s) for s in scores]
    if reward_mode == "score":
        return [-own / scale for own in totals]
    if reward_mode == "zero_sum":
        return [((sum(totals) - own) / (n - 1) - own) / scale for own in totals]
    won = winners(cfg, scores)
    return [1.0 if seat in won else -1.0 for seat in range(n)]
