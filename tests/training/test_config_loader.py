"""One dataclass-from-YAML loader (`training.config.dataclass_from_dict`) reads both trainers'
configs: `training.config.TrainConfig` (`python -m training.ppo`) and
`training.rllib.config.RLlibTrainConfig` (`python -m training.rllib_ppo`; Ray-free, so these run
without the `rllib` extra). One loader for both, because the RLlib trainer's own loader had
drifted (it refused "1e-4" and a null section)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from training import config as train_config
from training.config import dataclass_from_dict, read_config_data
from training.rllib import config as rllib_config

TRAINERS = {
    "ppo": (train_config.load_config, train_config.config_from_dict, train_config.TrainConfig),
    "rllib": (rllib_config.load_config, rllib_config.config_from_dict,
              rllib_config.RLlibTrainConfig),
}
# A float field of each trainer's ppo section, and a name that is the other trainer's.
LEARNING_RATE = {"ppo": ("learning_rate", "lr"), "rllib": ("lr", "learning_rate")}


@dataclass(frozen=True)
class Leaf:
    a: int = 1
    b: float = 0.5


@dataclass(frozen=True)
class Mid:
    leaf: Leaf = field(default_factory=lambda: Leaf(a=7))  # not Leaf's own default
    name: str = "m"
    limit: float | None = None
    fragment: int | str = "auto"


@dataclass(frozen=True)
class Top:
    mid: Mid = field(default_factory=Mid)
    seed: int = 0


# ------------------------------------------------------------------------------ the loader
def test_sections_merge_over_the_enclosing_defaults_at_any_depth():
    top = dataclass_from_dict(Top, {"mid": {"leaf": {"b": "1e-4"}}})
    assert top.mid.leaf == Leaf(a=7, b=1e-4)  # a: Mid's default for its leaf, kept
    assert top.mid.name == "m" and top.seed == 0
    assert dataclass_from_dict(Top, {"mid": None}) == Top()  # a null section: its defaults
    assert dataclass_from_dict(Top, {}) == Top()


def test_unions_take_the_first_option_that_fits():
    assert dataclass_from_dict(Mid, {"limit": None}).limit is None
    assert dataclass_from_dict(Mid, {"limit": 2}).limit == 2.0
    assert isinstance(dataclass_from_dict(Mid, {"limit": 2}).limit, float)
    assert dataclass_from_dict(Mid, {"fragment": 64}).fragment == 64
    assert dataclass_from_dict(Mid, {"fragment": "auto"}).fragment == "auto"
    with pytest.raises(ValueError, match=r"^mid\.fragment must be int or str; got 1\.5$"):
        dataclass_from_dict(Top, {"mid": {"fragment": 1.5}})
    with pytest.raises(ValueError, match=r"^mid\.leaf\.a must be int; got True$"):
        dataclass_from_dict(Top, {"mid": {"leaf": {"a": True}}})  # a bool is never an int
    with pytest.raises(ValueError, match=r"^mid\.leaf\.b must be float; got 'fast'$"):
        dataclass_from_dict(Top, {"mid": {"leaf": {"b": "fast"}}})
    with pytest.raises(ValueError, match=r"^mid\.leaf is a section: a mapping of \['a', 'b'\]"):
        dataclass_from_dict(Top, {"mid": {"leaf": [1]}})


def test_unknown_keys_name_the_section_and_the_valid_keys():
    with pytest.raises(ValueError) as err:
        dataclass_from_dict(Top, {"mid": {"leaf": {"c": 1, "a": 2}}})
    assert str(err.value) == "unknown key(s) ['c'] in mid.leaf; valid: ['a', 'b']"
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['sed'\] in config; valid: "
                                         r"\['mid', 'seed'\]"):
        dataclass_from_dict(Top, {"sed": 1})


# ------------------------------------------------------------------------------ both trainers
@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_both_trainers_read_1e_4_strings_as_floats(tmp_path, trainer):
    load, _, _ = TRAINERS[trainer]
    name, _ = LEARNING_RATE[trainer]
    path = tmp_path / "c.yaml"
    path.write_text(f"ppo:\n  {name}: 1e-4\n")  # YAML 1.1 reads this as the string "1e-4"
    assert read_config_data(path) == {"ppo": {name: "1e-4"}}
    value = getattr(load(path).ppo, name)
    assert value == 1e-4 and type(value) is float
    assert getattr(load(None, [f"ppo.{name}=3e-5"]).ppo, name) == 3e-5


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_both_trainers_merge_a_partial_section_over_the_defaults(tmp_path, trainer):
    load, from_dict, cls = TRAINERS[trainer]
    name, _ = LEARNING_RATE[trainer]
    path = tmp_path / "c.yaml"
    path.write_text(f"seed: 5\nppo:\n  {name}: 0.001\n")
    config = load(path, ["ppo.gamma=0.9"])
    defaults = cls()
    expected = dataclasses.replace(defaults.ppo, **{name: 0.001, "gamma": 0.9})
    assert config.ppo == expected  # every other ppo field keeps its default
    assert config.seed == 5 and config.env == defaults.env
    assert from_dict({"ppo": None, "env": {}}) == defaults
    # What a run directory's config.yaml holds reads back as the same config.
    assert from_dict(config.to_dict()) == config


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_both_trainers_refuse_unknown_keys_naming_the_valid_ones(trainer):
    _, from_dict, cls = TRAINERS[trainer]
    _, other = LEARNING_RATE[trainer]
    valid = sorted(f.name for f in dataclasses.fields(cls().ppo))
    with pytest.raises(ValueError) as err:
        from_dict({"ppo": {other: 1e-3}})
    assert str(err.value) == f"unknown key(s) [{other!r}] in ppo; valid: {valid}"
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['sed'\] in config; valid: \[.*'seed'"):
        from_dict({"sed": 1})


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_both_trainers_refuse_wrong_types_naming_the_dotted_key(trainer):
    _, from_dict, _ = TRAINERS[trainer]
    name, _ = LEARNING_RATE[trainer]
    with pytest.raises(ValueError, match=rf"^ppo\.{name} must be float; got 'fast'$"):
        from_dict({"ppo": {name: "fast"}})
    with pytest.raises(ValueError, match=r"^seed must be int; got True$"):
        from_dict({"seed": True})
    with pytest.raises(ValueError, match=r"^ppo is a section: a mapping of \["):
        from_dict({"ppo": [1]})
    with pytest.raises(ValueError, match=r"^env\.rules must be dict; got \[\]$"):
        from_dict({"env": {"rules": []}})


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_both_trainers_configs_are_frozen_dataclasses(trainer):
    load, _, _ = TRAINERS[trainer]
    config = load(None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.ppo.gamma = 0.5


@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_both_trainers_name_a_missing_or_broken_file(tmp_path, trainer):
    load, _, _ = TRAINERS[trainer]
    (tmp_path / "other.yaml").write_text("seed: 1\n")
    with pytest.raises(FileNotFoundError, match=r"not found; next to it: .*other\.yaml"):
        load(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("ppo: [1,\n")
    with pytest.raises(ValueError, match=r"broken\.yaml: not valid YAML \(.* at line \d+"):
        load(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    with pytest.raises(ValueError, match="holds a mapping of sections"):
        load(listed)


def test_rllib_ranges_and_seats_are_still_checked_after_loading():
    # The loader reads types; each trainer's `validate` keeps its own range and seat rules.
    with pytest.raises(ValueError, match="env_runners.num_env_runners must be >= 0"):
        rllib_config.config_from_dict({"env_runners": {"num_env_runners": -1}})
    with pytest.raises(ValueError, match="one entry per seat"):
        rllib_config.config_from_dict({"env": {"seats": ["learner"]}})


# ------------------------------------------------------------------------------ numbers and names
@pytest.mark.parametrize("trainer", sorted(TRAINERS))
def test_integral_floats_are_accepted_for_int_fields(tmp_path, trainer):
    load, _, _ = TRAINERS[trainer]
    config = load(None, ["seed=1e3"])  # YAML 1.1 reads 1e3 as a string
    assert config.seed == 1000 and type(config.seed) is int
    path = tmp_path / "c.yaml"
    path.write_text("seed: 2.0e3\n")  # a YAML float
    assert load(path).seed == 2000
    with pytest.raises(ValueError, match=r"^seed must be an int \(a whole number such as 1e6\); "
                                         r"got 1\.5$"):
        load(None, ["seed=1.5"])
    assert load(None, ["seed=7"]).seed == 7


def test_int_fields_of_a_union_take_integral_floats_too():
    assert dataclass_from_dict(Mid, {"fragment": 64.0}).fragment == 64
    assert dataclass_from_dict(Mid, {"fragment": "1e6"}).fragment == "1e6"  # a str is a str


def test_unknown_set_keys_suggest_the_nearest_field():
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['learning_rat'\] in ppo; valid: .*; "
                                         r"did you mean 'ppo\.learning_rate'\?$"):
        train_config.load_config(None, ["ppo.learning_rat=1e-4"])
    with pytest.raises(ValueError, match=r"did you mean 'total_steps'\?$"):
        train_config.load_config(None, ["total_step=100"])
