"""Nothing lost on a kill: every writer killed at each of its file-system steps (`tests/crash.py`:
the kill is injected before the k-th rename, swap, unlink, rmdir or fsync, for every k), then
the next command checked; whole training runs SIGKILLed at the worst instants; the shared
memory and child processes of a run killed at once.

What must hold after any kill (README, "Robustness"): the old complete state or the new one,
never a mix; the next command either recovers (a resumed run rewrites what it did not write
itself, a ship or fit swaps in whole) or refuses with one `error:` line.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash import ROOT, hidden_leftovers, kill_points, run_killed_at, weights_checkpoint

from cf_env import ChickenFootConfig
from cf_env.core import atomic
from training import ppo
from training.artifacts import checkpoints as ckpt

SMOKE = str(ROOT / "configs" / "smoke.yaml")
QUIET = ["--set", "progress_bar=false"]


def smoke_args(runs: Path, name: str, *sets: str) -> list[str]:
    args = ["--config", SMOKE, "--set", f"runs_dir={runs}", "--set", f"run_name={name}", *QUIET]
    for assignment in sets:
        args += ["--set", assignment]
    return args


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny self-play run and an agent shipped from it (evaluation seed 1)."""
    pytest.importorskip("openskill", reason="the ship report's ratings: the train extra")
    from training.artifacts import ship

    root = tmp_path_factory.mktemp("shipped")
    ppo.main(smoke_args(root / "runs", "sp", "eval.every_steps=0"))
    run_dir, agent = root / "runs" / "sp", root / "agent"
    ship.main([str(run_dir), str(agent), "--deals", "2", "--full-games", "", "--seed", "1"])
    return run_dir, agent


# ------------------------------------------------------------------------- single files
def test_a_file_replaced_whole_is_old_or_new_after_a_kill_at_any_step(tmp_path):
    def prepare():
        folder = tmp_path / f"k{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / "run.json").write_text('{"old": true}\n')
        return {"file": folder / "run.json"}

    def check(k, names):
        assert json.loads(names["file"].read_text()) in ({"old": True}, {"new": [1, 2, 3]})
        atomic.clear_leftovers(names["file"].parent)
        assert hidden_leftovers(names["file"].parent) == []

    points = kill_points("""
        from cf_env.core import atomic
        atomic.write_json("{file}", {{"new": [1, 2, 3]}})
    """, prepare, check)
    assert points >= 3  # fsync of the file, the rename, fsync of the folder


@pytest.mark.parametrize("swap", ["exchange", "two renames"])
def test_a_folder_replaced_whole_is_old_or_new_after_a_kill_at_any_step(tmp_path, swap):
    """`replace_dir` with the atomic swap, and without one (the file system lacks it): after
    `recover_dir`, the folder is the old one or the new one, whole."""
    no_swap = "atomic._exchange = lambda a, b: False" if swap == "two renames" else ""

    def prepare():
        parent = tmp_path / f"k{len(list(tmp_path.iterdir()))}"
        (parent / "agent").mkdir(parents=True)
        for name in ("card.json", "policy.npz", "value.npz"):
            (parent / "agent" / name).write_text("old")
        return {"target": parent / "agent"}

    def check(k, names):
        target = names["target"]
        atomic.recover_dir(target)
        contents = {p.name: p.read_text() for p in target.iterdir()}
        assert contents in (dict.fromkeys(("card.json", "policy.npz", "value.npz"), "old"),
                            dict.fromkeys(("card.json", "policy.npz", "value.npz", "card.md"), "new"))
        assert hidden_leftovers(target.parent) == []

    kill_points(f"""
        from cf_env.core import atomic
        {no_swap}
        staging = atomic.staging_dir("{{target}}")
        for name in ("card.json", "policy.npz", "value.npz", "card.md"):
            (staging / name).write_text("new")
        atomic.replace_dir(staging, "{{target}}")
    """, prepare, check)


# ------------------------------------------------------------------------- run checkpoints
def test_a_checkpoint_killed_at_any_step_leaves_latest_complete_and_is_rewritten_on_resume(tmp_path):
    """A kill while `step_2/` is written and pointed at: `latest` names a complete checkpoint
    (step 1 or step 2, digests intact); the resumed session's save at step 2 then writes its own
    weights, even where the killed one had already renamed its `step_2/` into place."""
    def prepare():
        folder = tmp_path / f"k{len(list(tmp_path.iterdir()))}" / "checkpoints"
        ckpt.save_checkpoint_as_latest(folder, 1, lambda t: weights_checkpoint(t, 1, steps=1))
        return {"folder": folder}

    def check(k, names):
        folder = names["folder"]
        latest = ckpt.resolve_checkpoint(folder.parent)
        card = ckpt.read_card(latest)
        ckpt.load_weights(latest, card)  # digest checked
        assert (card["steps"], card["marker"]) in ((1, 1), (2, 2))
        # The resumed session's next checkpoint: step 2 again (with its own weights) or step 3.
        step = card["steps"] + 1
        ckpt.save_checkpoint_as_latest(folder, step, lambda t: weights_checkpoint(t, 10 + step, step))
        assert ckpt.read_card(ckpt.resolve_checkpoint(folder.parent))["marker"] == 10 + step
        assert hidden_leftovers(folder) == []
        steps = sorted(p.name for p in folder.iterdir() if p.name.startswith("step_"))
        assert steps == [ckpt.resolve_checkpoint(folder.parent).name]

    points = kill_points("""
        from crash import weights_checkpoint
        from training.artifacts import checkpoints as ckpt
        ckpt.save_checkpoint_as_latest("{folder}", 2, lambda t: weights_checkpoint(t, 2, steps=2))
    """, prepare, check, imports="import training.artifacts.checkpoints, crash")
    assert points >= 5


# ------------------------------------------------------------------------- ship, fit_value
@pytest.mark.slow
def test_ship_killed_at_any_step_leaves_an_agent_and_the_next_ship_cleans_up(shipped, tmp_path):
    from training.artifacts import ship

    run_dir, agent = shipped

    def prepare():
        parent = tmp_path / f"k{len(list(tmp_path.iterdir()))}"
        parent.mkdir()
        shutil.copytree(agent, parent / "agent")
        return {"run": run_dir, "dest": parent / "agent"}

    def check(k, names):
        dest = names["dest"]
        card = ckpt.read_card(dest)
        assert card["evaluation"]["seed"] in (1, 2)
        ckpt.load_ppo_policy(str(dest), config=ChickenFootConfig())
        ckpt.load_value_head(dest, ChickenFootConfig())
        if k:
            ship.main([str(run_dir), str(dest), "--deals", "2", "--full-games", "", "--seed", "3",
                       "--force"])
            assert ckpt.read_card(dest)["evaluation"]["seed"] == 3
        assert hidden_leftovers(dest.parent) == []

    kill_points("""
        from training.artifacts import ship
        ship.main(["{run}", "{dest}", "--deals", "2", "--full-games", "", "--seed", "2", "--force"])
    """, prepare, check, imports="import training.artifacts.ship, matplotlib.pyplot, openskill")


@pytest.mark.slow
def test_fit_value_killed_at_any_step_keeps_a_head_that_matches_its_card(shipped, tmp_path):
    from training.selfplay import fit_value

    _, agent = shipped
    fit = ["--decisions", "64", "--games", "4", "--rollout-steps", "8"]

    def prepare():
        parent = tmp_path / f"k{len(list(tmp_path.iterdir()))}"
        parent.mkdir()
        shutil.copytree(agent, parent / "agent")
        return {"agent": parent / "agent", "fit": json.dumps(fit)}

    def check(k, names):
        folder = names["agent"]
        head = ckpt.load_value_head(folder, ChickenFootConfig())  # the card's digest matches
        assert head.input_size > 0
        fitted = ckpt.read_card(folder)["value"].get("fit")
        assert fitted is None or fitted["seed"] == 5
        assert not [p for p in folder.iterdir() if p.is_dir()]  # no scratch folder inside
        if k:  # the same command again, from the head the kill left (the default init)
            assert fit_value.main([str(folder), *fit, "--seed", "6"]) == 0
            assert ckpt.read_card(folder)["value"]["fit"]["seed"] == 6
        assert hidden_leftovers(folder.parent) == []

    kill_points("""
        import json
        from training.selfplay import fit_value
        assert fit_value.main(["{agent}", *json.loads('{fit}'), "--seed", "5"]) == 0
    """, prepare, check, imports="import training.selfplay.fit_value")


def test_an_agent_left_aside_by_an_interrupted_ship_is_restored(shipped, tmp_path):
    """What an older ship left when killed between its two renames (the destination gone, the
    agent at `.agent.old-<random>`): the next ship renames it back before anything else."""
    from training.artifacts import ship

    run_dir, agent = shipped
    shutil.copytree(agent, tmp_path / ".agent.old-x1y2z3")
    with pytest.raises(SystemExit):
        ship.main([str(run_dir), str(tmp_path / "agent"), "--deals", "1"])  # refused: deals < 2
    assert (tmp_path / "agent" / "card.json").is_file()
    assert hidden_leftovers(tmp_path) == []


# ------------------------------------------------------------------------- run directories
def test_a_run_directory_killed_while_made_or_restarted_can_be_started_again(tmp_path):
    """`create_run_dir` killed at each step, over a new folder and over a run that has no
    checkpoint (which it clears): the same call then starts the run, the folder holding only
    its config and lock."""
    from training.artifacts import provenance

    def prepare():
        runs = tmp_path / f"k{len(list(tmp_path.iterdir()))}"
        old = runs / "old"
        (old / "tb" / "sp").mkdir(parents=True)
        (old / "snapshots" / "step_000000128").mkdir(parents=True)
        for name in ("config.yaml", "run.json", "tb/sp/events", "snapshots/step_000000128/card.json"):
            (old / name).write_text("seed: 1\n" if name == "config.yaml" else "{}")
        return {"runs": runs}

    def check(k, names):
        for name in ("new", "old"):
            run_dir, restarted = provenance.create_run_dir(names["runs"], name, "x", {"seed": 2})
            provenance.release_run(run_dir)
            assert sorted(p.name for p in run_dir.iterdir()) == [".lock", "config.yaml"]
            assert (run_dir / "config.yaml").read_text() == "seed: 2\n"

    kill_points("""
        from training.artifacts import provenance
        for name in ("new", "old"):
            provenance.create_run_dir("{runs}", name, "x", {{"seed": 2}})
    """, prepare, check, imports="import training.artifacts.provenance, yaml")


# ------------------------------------------------------------------------- training runs
KILL_ON_CALL = """
import os, signal, sys
import training.{module} as target
original = target.{function}

def killed(*args, **kwargs):
    if {condition}:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)

target.{function} = killed
from training import ppo
ppo.main({args!r})
"""


def run_killed_on_call(args: list[str], module: str, function: str, condition: str) -> None:
    """Run `python -m training.ppo args` SIGKILLed at the first call of `module.function`
    for which `condition` (over `args`/`kwargs`) holds."""
    script = KILL_ON_CALL.format(module=module, function=function, condition=condition, args=args)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.mark.slow
def test_a_run_killed_between_its_step_folder_and_its_pointer_resumes_with_its_own_weights(tmp_path):
    """Killed after `step_256/` (and the snapshot of step 256) are in place but before `latest`
    moves: `--resume` continues from step 128 and what it saves at 256 is its own."""
    args = smoke_args(tmp_path, "run", "total_steps=256")
    run_killed_on_call(args, "artifacts.checkpoints", "write_pointer",
                       "args[1] == 'latest' and kwargs.get('steps') == 256")
    run_dir = tmp_path / "run"
    assert ckpt.read_card(ckpt.resolve_checkpoint(run_dir))["steps"] == 128
    orphan = ckpt.sha256_file(run_dir / "checkpoints" / "step_000000256" / "policy.npz")
    stale_snapshot = ckpt.sha256_file(run_dir / "snapshots" / "step_000000256" / "policy.npz")
    ppo.main(["--resume", str(run_dir)])
    latest = ckpt.resolve_checkpoint(run_dir)
    card = ckpt.read_card(latest)
    assert latest.name == "step_000000256" and card["steps"] == 256
    assert card["policy_sha256"] != orphan
    assert ckpt.sha256_file(run_dir / "snapshots" / "step_000000256" / "policy.npz") != stale_snapshot
    evals = [json.loads(line) for line in (run_dir / "evals.jsonl").read_text().splitlines()]
    assert [e["steps"] for e in evals] == [256]


@pytest.mark.slow
@pytest.mark.parametrize("again", ["the same command", "--resume"])
def test_a_run_killed_before_its_first_checkpoint_can_be_run_again(tmp_path, again, capsys):
    args = smoke_args(tmp_path, "run", "total_steps=128")
    run_killed_on_call(args, "artifacts.checkpoints", "save_checkpoint_as_latest", "True")
    run_dir = tmp_path / "run"
    assert (run_dir / "config.yaml").is_file()
    assert not (run_dir / "checkpoints" / "latest.json").exists()
    ppo.main(args if again == "the same command" else ["--resume", str(run_dir)])
    assert "starting it again from step 0" in capsys.readouterr().err
    assert ckpt.read_card(ckpt.resolve_checkpoint(run_dir))["steps"] == 128
    assert len(json.loads((run_dir / "run.json").read_text())["sessions"]) == 1


@pytest.mark.slow
def test_a_second_session_on_a_running_run_is_refused(tmp_path, capsys):
    from training.artifacts import provenance

    ppo.main(smoke_args(tmp_path, "run", "total_steps=64", "eval.every_steps=0"))
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from training.artifacts import provenance; "
         f"provenance.lock_run({str(run_dir)!r}); print('locked', flush=True); time.sleep(60)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(SystemExit) as stopped:
            ppo.main(["--resume", str(run_dir), "--set", "total_steps=128"])
        assert stopped.value.code == 2
        assert f"in use by a running session (pid {holder.pid})" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    provenance.release_run(run_dir)


# ------------------------------------------------------------------------- processes
def _descendants(pid: int) -> list[int]:
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _survivors(pids: list[int], seconds: float = 10) -> list[int]:
    """The processes of `pids` still alive after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if _alive(pid)]


def _shm_mappings(pid: int) -> set[str]:
    try:
        maps = (Path("/proc") / str(pid) / "maps").read_text()
    except OSError:
        return set()
    return {line.split(None, 5)[5] for line in maps.splitlines()
            if len(line.split(None, 5)) == 6 and "/dev/shm/" in line}


def _start_overlapped_run(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    """A self-play run with two collector processes, once both are collecting."""
    args = smoke_args(tmp_path, "run", "total_steps=100000", "selfplay.workers=2",
                      "selfplay.overlap=true", "eval.every_steps=0")
    trainer = subprocess.Popen([sys.executable, "-m", "training.ppo", *args], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (tmp_path / "run" / "checkpoints" / "latest.json").is_file():  # collecting for a while
            workers = [p for p in _descendants(trainer.pid) if b"spawn_main" in _cmdline(p)]
            if len(workers) >= 2:
                return trainer, workers
        time.sleep(0.2)
    trainer.kill()
    raise AssertionError(f"the run never started collecting: {trainer.stderr.read()[-2000:]}")


def _cmdline(pid: int) -> bytes:
    """A process's command line; empty when it has exited since it was listed (a short-lived
    child of the trainer's, such as a `git` call)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc (Linux)")
def test_a_run_killed_whole_leaves_no_shared_memory_and_no_process(tmp_path):
    """The OOM killer's or a scheduler's SIGKILL of the whole process group: the rollout blocks
    have no name in /dev/shm while the run lives (nothing there to leak), and no process of the
    run survives."""
    trainer, workers = _start_overlapped_run(tmp_path)
    group = [trainer.pid, *_descendants(trainer.pid)]
    assert all(_shm_mappings(pid) == set() for pid in group)  # memfd blocks: no /dev/shm name
    rollout = [line for line in (Path("/proc") / str(workers[0]) / "maps").read_text().splitlines()
               if "chickenfoot-rollout" in line]
    assert rollout, "the collector maps its rollout block"
    os.killpg(trainer.pid, signal.SIGKILL)
    trainer.wait(timeout=10)
    assert _survivors(group) == []


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_collectors_die_with_a_killed_trainer(tmp_path):
    """SIGKILL of the trainer alone (its collectors get no signal): they exit within seconds."""
    trainer, workers = _start_overlapped_run(tmp_path)
    trainer.kill()
    trainer.wait(timeout=10)
    assert _survivors(workers) == []


@pytest.mark.slow
def test_a_collector_that_dies_mid_run_is_named(tmp_path):
    from training.config import load_config
    from training.processes import CollectorError
    from training.selfplay.collection import ProcessCollection, build_networks

    config = load_config(SMOKE, ["selfplay.workers=2"])
    actor, critic = build_networks(config)
    collection = ProcessCollection(config, seed=0, snapshots=[])
    try:
        collection.start(actor, critic, [])
        collection.result()  # both workers run
        collection.start(actor, critic, [])
        os.kill(collection.procs[1].pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(CollectorError, match=r"worker 1 \(pid \d+\) was killed by SIGKILL"):
            collection.result()
        assert time.monotonic() - started < 10
    finally:
        collection.close()
    assert not [p for p in collection.procs if p.is_alive()]


def test_a_killed_writers_kill_point_is_reached_only_after_arm():
    """The harness counts the writer's steps only: `arm()` after the imports."""
    done = run_killed_at("import os\narm()\nos.replace('/nonexistent-a', '/nonexistent-b')\n", 1)
    assert done.returncode == -signal.SIGKILL
    done = run_killed_at("import os\narm()\nprint('no step')\n", 1)
    assert done.returncode == 0 and done.stdout.strip() == "no step"
