"""The training command line (`python -m training.ppo`): what `--resume` may change and that the
loaded model really trains with it, checks before any file is written, what the session
reports, `error:` lines for the user's mistakes, and one learning-curve point per evaluated
step.

Runs are tiny (configs/smoke.yaml cut to 128 steps, one rollout) so the module stays fast."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:  # pytest.importorskip's skip, written so that the imports below may follow it
    import yaml
except ImportError as missing:
    pytest.skip(f"{missing}: needs the train extra: pip install -e '.[train]'", allow_module_level=True)

from cf_env import ChickenFootConfig
from cf_env.agents.policies import validate_policy_spec
from training import ppo
from training.artifacts import checkpoints as ckpt
from training.config import load_config
from training.evaluation.plot import load_evals

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "configs" / "smoke.yaml")
TINY = ["--config", SMOKE, "--set", "total_steps=128", "--set", "eval.every_steps=128",
        "--set", "algo=maskable_ppo"]  # the SB3 path; self-play: tests/training/test_selfplay.py


def run_main(argv: list[str]) -> tuple[object, str]:
    """`ppo.main(argv)` -> (its return value or the SystemExit code, what it wrote on stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            result = ppo.main(argv)
        except SystemExit as exc:
            result = exc.code
    return result, err.getvalue()


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> tuple[Path, str]:
    """A finished 128-step run (one rollout, one evaluation) and what it printed."""
    runs = tmp_path_factory.mktemp("runs")
    result, err = run_main([*TINY, "--set", f"runs_dir={runs}", "--set", "run_name=base"])
    assert isinstance(result, Path), err
    return runs / "base", err


NEW_PPO = {"learning_rate": 1e-4, "clip_range": 0.1, "ent_coef": 0.05, "n_epochs": 2,
           "batch_size": 32, "gamma": 0.9, "gae_lambda": 0.8, "vf_coef": 0.25,
           "max_grad_norm": 0.3}


@pytest.fixture(scope="module")
def resumed(base_run, tmp_path_factory):
    """The base run copied and resumed to 256 steps with every appliable ppo.* field changed.

    Records, after each PPO update of the session, the values the loaded model trained with.
    """
    from sb3_contrib import MaskablePPO

    run = tmp_path_factory.mktemp("resumed") / "base"
    shutil.copytree(base_run[0], run)
    seen: list[dict] = []
    original = MaskablePPO.train

    def spy(self):
        updates = self._n_updates
        original(self)
        seen.append({
            "learning_rate": self.policy.optimizer.param_groups[0]["lr"],
            "clip_range": self.clip_range(self._current_progress_remaining),
            "ent_coef": self.ent_coef,
            "n_epochs": self._n_updates - updates,  # the passes actually made
            "batch_size": self.batch_size,
            "gamma": self.rollout_buffer.gamma,
            "gae_lambda": self.rollout_buffer.gae_lambda,
            "vf_coef": self.vf_coef,
            "max_grad_norm": self.max_grad_norm,
        })

    sets = [f"ppo.{k}={v}" for k, v in NEW_PPO.items()] + ["total_steps=256", "progress_bar=true"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(MaskablePPO, "train", spy)
        result, err = run_main(["--resume", str(run), *[a for s in sets for a in ("--set", s)]])
    assert isinstance(result, Path), err
    return run, seen, err


# ----------------------------------------------------------- what --resume may change
@pytest.mark.slow
def test_resume_trains_with_the_changed_hyperparameters(resumed):
    run, seen, _ = resumed
    assert seen, "the resumed session made no PPO update"
    for values in seen:
        assert values == pytest.approx(NEW_PPO)
    # What the files say is what trained.
    saved = yaml.safe_load((run / "config.yaml").read_text())
    card = ckpt.read_card(ckpt.resolve_checkpoint(run))
    assert card["steps"] == 256
    for key, value in NEW_PPO.items():
        assert saved["ppo"][key] == pytest.approx(value)
        assert card["train_config"]["ppo"][key] == pytest.approx(value)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("seed=5", "seed"),
        ("num_envs=4", "num_envs"),
        ("ppo.n_steps=32", "ppo.n_steps"),
        ("ppo.net_arch=[8]", "ppo.net_arch"),
        ("ppo.activation=relu", "ppo.activation"),
        ("env.episode=game", "env.episode"),
        ("env.rules={num_players: 3}", "env.rules"),
        ("run_name=other", "run_name"),
    ],
)
def test_resume_refuses_fixed_fields_and_changes_no_file(base_run, tmp_path, override, field):
    run = tmp_path / "base"
    shutil.copytree(base_run[0], run)
    before = files_of(run)
    code, err = run_main(["--resume", str(run), "--set", "total_steps=256", "--set", override])
    assert code == 2
    assert err.startswith("error: cannot change on --resume") and f"{field} (" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert files_of(run) == before


@pytest.mark.slow
def test_failed_resume_changes_no_file(base_run, tmp_path):
    """Problems found after the overrides parse (a bad spec, a bad range) leave the run as it was."""
    run = tmp_path / "base"
    shutil.copytree(base_run[0], run)
    before = files_of(run)
    for sets in (["ppo.learning_rate=2e-4", "eval.opponents=[greedy, gredy]"],
                 ["ppo.learning_rate=2e-4", "ppo.clip_range=0"]):
        code, err = run_main(["--resume", str(run), "--set", "total_steps=256",
                              *[a for s in sets for a in ("--set", s)]])
        assert code == 2 and err.startswith("error: ")
    assert "gredy" in run_main(["--resume", str(run), "--set", "eval.opponents=[gredy]",
                                "--set", "eval.best_metric=gredy"])[1]
    assert files_of(run) == before


@pytest.mark.slow
def test_a_saved_value_the_checks_now_refuse_can_be_corrected_on_resume(base_run, tmp_path):
    run = tmp_path / "base"
    shutil.copytree(base_run[0], run)
    saved = yaml.safe_load((run / "config.yaml").read_text())
    saved["opponents"]["max_snapshots"] = 0  # accepted before the range checks existed
    (run / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    before = files_of(run)
    code, err = run_main(["--resume", str(run), "--set", "total_steps=256"])
    assert code == 2 and "opponents.max_snapshots must be >= 1; got 0" in err
    # With the fix, the saved config is still read: here the next problem is the seed.
    code, err = run_main(["--resume", str(run), "--set", "opponents.max_snapshots=2",
                          "--set", "seed=9"])
    assert code == 2 and "cannot change on --resume: seed (0 -> 9)" in err
    assert files_of(run) == before


# ------------------------------------------------- checks before any file is written
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("ppo.gamma=1.5", r"ppo.gamma must be in \(0, 1\]; got 1.5"),
        ("ppo.gamma=0", r"ppo.gamma must be in \(0, 1\]"),
        ("ppo.clip_range=0", r"ppo.clip_range must be in \(0, 1\]"),
        ("ppo.learning_rate=-1e-4", "ppo.learning_rate must be a finite number > 0"),
        ("ppo.learning_rate=nan", "ppo.learning_rate must be a finite number > 0"),
        ("ppo.gae_lambda=2", r"ppo.gae_lambda must be in \[0, 1\]"),
        ("ppo.batch_size=1", "ppo.batch_size must be >= 2"),
        ("opponents.max_snapshots=0", "opponents.max_snapshots must be >= 1"),
        ("opponents.snapshot_weight=-1", "opponents.snapshot_weight must be a number >= 0"),
        ("opponents.bots={greedy: 0}", "opponents.bots needs a spec with a weight > 0"),
        ("opponents.bots={greedy: true}", "opponents.bots weights must be numbers"),
        ("eval.workers=0", "eval.workers must be >= 1"),
        ("eval.opponents=[1]", "eval.opponents must list policy specs"),
        ("seed=-1", r"seed must be an int in 0\.\.2147483647"),
        ("seed=4294967296", r"seed must be an int in 0\.\.2147483647"),
        ("ppo=[1]", "ppo is a section"),
        ("seed=[1", r"--set seed: '\[1' is not a YAML value"),
        ("ppo..gamma=1", "section.field=value"),
        ("selfplay.ray_address=nowhere", "selfplay.ray_address must be null .*'auto', 'local' or "
                                         "'HOST:PORT'.*; got 'nowhere'"),
        ("selfplay.ray_address=head:0", r"port 1\.\.65535\); got 'head:0'"),
        ("selfplay.ray_address=head:65536", "selfplay.ray_address must be"),
        ("selfplay.ray_address=':6379'", "selfplay.ray_address must be"),
        ("selfplay.ray_address=6379", "selfplay.ray_address must be str"),
    ],
)
def test_config_ranges_and_types_are_checked(override, message):
    with pytest.raises(ValueError, match=message):
        load_config(SMOKE, [override])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gredy", "unknown policy spec 'gredy'; valid: belief, br, greedy"),
        ("greedy:3", "'greedy' takes no ':<argument>'"),
        ("ismcts:many", "iterations must be a positive int"),
        ("ppo:no/such/run", "policy spec 'ppo:no/such/run': no checkpoint at"),
        ("no_such_module:make", "cannot import module 'no_such_module'"),
        ("cf_env.agents.bots:no_factory", "module 'cf_env.agents.bots' has no callable 'no_factory'"),
    ],
)
def test_validate_policy_spec_names_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        validate_policy_spec(spec, ChickenFootConfig())
    validate_policy_spec("ismcts:5", ChickenFootConfig())  # good specs pass
    validate_policy_spec(f"ppo:{ROOT / 'checkpoints' / 'ppo-4p-d9'}", ChickenFootConfig())


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("opponents.bots={greedy: 1, heuristc: 1}", "opponents.bots: unknown policy spec 'heuristc'"),
        ("eval.opponents=[greedy, ismcts:x]", "eval.opponents: policy spec 'ismcts:x'"),
        # A checkpoint trained for another game: the shipped agent is 4-player.
        ("env.rules={num_players: 3}", "num_players: checkpoint 4 vs env 3"),
    ],
)
def test_bad_spec_fails_before_the_run_directory_exists(tmp_path, override, message):
    shipped = ROOT / "checkpoints" / "ppo-4p-d9"
    code, err = run_main([*TINY, "--set", f"runs_dir={tmp_path}", "--set", "run_name=bad",
                          "--set", f"opponents.bots={{greedy: 1, 'ppo:{shipped}': 1}}",
                          "--set", override])
    assert code == 2 and message in err and err.startswith("error: ")
    assert not (tmp_path / "bad").exists()


def test_opponent_pool_refuses_max_snapshots_0():
    from training.selfplay.opponents import OpponentPool

    with pytest.raises(ValueError, match="max_snapshots must be >= 1; got 0"):
        OpponentPool(ChickenFootConfig(), {"greedy": 1.0}, max_snapshots=0)


def test_a_run_that_fails_before_its_first_checkpoint_leaves_no_folder(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("env construction failed")

    from training.sb3 import maskable_ppo

    monkeypatch.setattr(maskable_ppo, "make_vec_env", broken)
    with pytest.raises(RuntimeError, match="env construction failed"):  # a bug: it propagates
        run_main([*TINY, "--set", f"runs_dir={tmp_path}", "--set", "run_name=r"])
    assert not (tmp_path / "r").exists()  # the same command can run again


def test_failed_evaluations_make_the_command_exit_1(tmp_path, monkeypatch):
    import training.evaluation.evaluate

    def broken(*args, **kwargs):
        raise RuntimeError("evaluation broke")

    monkeypatch.setattr(training.evaluation.evaluate, "evaluate", broken)
    code, err = run_main([*TINY, "--set", f"runs_dir={tmp_path}", "--set", "run_name=r",
                          "--set", "eval.every_steps=64"])
    assert code == 1
    assert "evaluation broke" in err and "2 evaluation(s) FAILED" in err
    assert ckpt.read_card(ckpt.resolve_checkpoint(tmp_path / "r"))["steps"] == 128


# ---------------------------------------------------------- what the session reports
@pytest.mark.slow
def test_a_new_run_says_where_it_is_and_sums_up(base_run):
    run, err = base_run
    assert f"starting run {run} at step 0 of 128" in err
    assert "step 128 of 128: win rate" in err
    assert "vs 3× greedy (4 duplicate single-round deals; parity, an agent as good as its " \
        "opponents, wins 25%)" in err
    assert f"run {run} done: step 128 of 128 (128 steps this session in" in err
    assert "last evaluation, step 128: win rate" in err
    assert f"checkpoint: {run / 'checkpoints' / 'step_000000128'}" in err
    # The curve is drawn, and the next commands name this run and files that exist.
    assert f"learning curve: {run / 'curve.png'}" in err and (run / "curve.png").stat().st_size
    assert f"python -m training.evaluate --agent ppo:{run} --opponents greedy,heuristic" in err
    assert f"python -m cf_env.tools.play --opponents ppo:{run}" in err
    assert f"python -m training.ship {run} checkpoints/<name>" in err
    assert f"tensorboard --logdir {run / 'tb'}" in err and (run / "tb").is_dir()


@pytest.mark.slow
def test_the_watch_command_a_run_prints_writes_a_gif(base_run):
    """The "watch a game" line of a run's summary runs as printed and leaves a GIF."""
    run, err = base_run
    line = next(x for x in err.splitlines() if x.strip().startswith("watch a game:"))
    command = line.split(":", 1)[1].strip().replace("python -m", f"{sys.executable} -m")
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (run / "game.gif").read_bytes()[:6] == b"GIF89a"


@pytest.mark.slow
def test_resume_reports_the_run_not_the_session(resumed):
    run, _, err = resumed
    assert f"resuming run {run} at step 128 of 256" in err
    assert "ppo.learning_rate: 0.0003 -> 0.0001" in err
    # One progress count, over the run's steps: it starts at 128 of 256 and ends at 256 of 256
    # (a bar over the session alone would count 0..128 of 128).
    assert "128/256" in err and "256/256" in err and "/128 " not in err
    assert f"run {run} done: step 256 of 256 (128 steps this session in" in err
    assert "last evaluation, step 256:" in err


@pytest.mark.slow
def test_resuming_a_complete_run_says_so_and_changes_nothing(resumed, tmp_path):
    run = tmp_path / "base"
    shutil.copytree(resumed[0], run)
    before = files_of(run)
    result, err = run_main(["--resume", str(run), "--set", "ppo.learning_rate=5e-5"])
    assert result == ckpt.resolve_checkpoint(run)
    assert f"run {run} is already complete: step 256 of 256" in err
    assert files_of(run) == before  # no re-evaluation, no new session, config.yaml untouched


# ------------------------------------------------------------------------- user errors
def test_training_user_errors_print_one_error_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "training.ppo", "--config", str(tmp_path / "missing.yaml")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: config file") and "missing.yaml' not found" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    for argv in (
        ["--resume", str(tmp_path / "nothing")],                     # no run there
        [*TINY, "--set", "seed"],                                     # bad --set
        [*TINY, "--set", "ppo.n_steps=abc"],                          # wrong type
        [*TINY, "--set", "opponents.bots={ppo:nowhere: 1}"],          # missing checkpoint
    ):
        code, err = run_main(argv)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (argv, err)


# ------------------------------------------------------------------------- --ray
SELFPLAY = ["--config", SMOKE, "--set", "total_steps=128", "--set", "eval.every_steps=0"]


@pytest.mark.parametrize("address", ["auto", "local", "127.0.0.1:6379", "head-node:10001",
                                     "10:20"])
def test_ray_sets_the_ray_address_field(address, monkeypatch):
    """--ray ADDRESS is `selfplay.ray_address`, read as a string whatever it looks like (YAML
    would read 10:20 as the number 620)."""
    from training.selfplay import ray_collection

    monkeypatch.setattr(ray_collection, "ray_available", lambda: True)
    start = ppo.prepare(ppo.parse_args([*SELFPLAY, "--ray", address]))
    assert start.config.selfplay.ray_address == address
    assert ppo.prepare(ppo.parse_args(SELFPLAY)).config.selfplay.ray_address is None
    assert load_config(SMOKE, ["selfplay.ray_address=auto"]).selfplay.ray_address == "auto"


@pytest.mark.parametrize(("argv", "message"), [
    (["--ray", "nowhere"], "error: selfplay.ray_address must be null (local processes), 'auto', "
                           "'local' or 'HOST:PORT'"),
    (["--ray", "auto", "--set", "algo=maskable_ppo"],
     "error: selfplay.ray_address must be null for algo maskable_ppo"),
    (["--ray", "auto"], "error: selfplay.ray_address='auto' (--ray) runs the collectors on Ray, "
                        "which this Python lacks: install it with pip install -e '.[rllib]'"),
])
def test_ray_user_errors_print_one_error_line_before_any_file(tmp_path, monkeypatch, argv,
                                                               message):
    from training.selfplay import ray_collection

    monkeypatch.setattr(ray_collection, "ray_available", lambda: False)
    code, err = run_main([*SELFPLAY, "--set", f"runs_dir={tmp_path}", "--set", "run_name=r",
                          *argv])
    assert code == 2 and err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()


def test_the_ray_path_imports_ray_only_when_it_collects():
    """Everything but a `RayCollection` works without Ray: its module imports none, and
    without Ray installed the collection says how to install it."""
    code = ("import sys, training.selfplay.ray_collection as rc, training.ppo;"
            "assert 'ray' not in sys.modules, 'ray imported'; print(rc.ray_available())")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if proc.stdout.strip() == "False":
        from training.processes import CollectorError
        from training.selfplay.learner import SelfPlayTrainer

        config = load_config(SMOKE, ["selfplay.ray_address=auto"])
        with pytest.raises(CollectorError, match=r"needs Ray, which this Python lacks .*install "
                                                 r"it with pip install -e '\.\[rllib\]'"):
            SelfPlayTrainer(config, seed=0)


# -------------------------------------------------------------------- the learning curve
def test_the_learning_curve_has_one_point_per_evaluated_step(tmp_path):
    def line(steps, mean):
        win = {"mean": mean, "ci_low": mean - 0.1, "ci_high": mean + 0.1}
        return json.dumps({"steps": steps, "opponent": "greedy", "win_rate": win,
                           "round_score": win, "deals": 4, "single_round": True})

    # A session that re-evaluated the step it resumed from logged step 256 twice.
    (tmp_path / "evals.jsonl").write_text(
        "\n".join([line(128, 0.2), line(256, 0.3), line(256, 0.35), line(384, 0.4)]) + "\n")
    entries = load_evals(tmp_path)["greedy"]
    assert [e["steps"] for e in entries] == [128, 256, 384]
    assert entries[1]["win_rate"]["mean"] == 0.35  # the latest evaluation of that step


# ------------------------------------------------------------------------------ honest messages
def test_config_with_resume_is_refused_not_ignored(tmp_path):
    # A resumed run trains on its own config.yaml: another --config used to be silently ignored.
    code, err = run_main(["--resume", str(tmp_path / "r"), "--config", SMOKE])
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: --config {SMOKE} with --resume {tmp_path / 'r'}")
    assert "--set" in err and not (tmp_path / "r").exists()


def test_the_summary_says_a_run_past_its_target_honestly(tmp_path):
    from training.session import TrainResult, step_text, summary

    assert step_text(1_024, 3_000_000) == "step 1,024 of 3,000,000"
    assert step_text(3_000_000, 3_000_000) == "step 3,000,000 of 3,000,000"
    assert step_text(3_006_464, 3_000_000) == "3,006,464 steps (target 3,000,000)"
    config = load_config(SMOKE, ["total_steps=3000000", "eval.every_steps=0"])
    text = summary(tmp_path, config, TrainResult(tmp_path / "step_3006464", 3_006_464, 0),
                   first_step=0, session_s=60, total_s=60)
    assert "done: 3,006,464 steps (target 3,000,000)" in text and "of 3,000,000" not in text
