"""The import contract: the layers import only downward, and nothing imports in a cycle.

Every module under `cf_env/` and `training/` is parsed (not imported); every import in it counts,
at module level or inside a function (a lazy import is still a dependency), absolute or relative,
`importlib.import_module("literal")` too. The layers, lowest first (what each may import; derived from the code as
it stands, where adapters offer `render()` and the single-agent env's opponents are agents):

    cf_env.core      rules, state, encodings          numpy, numba and the standard library only
    cf_env.agents    policies, bots, search           + core
    cf_env.viz       text, pictures, records, replay  + core, agents
    cf_env.envs      PettingZoo/Gymnasium/OpenSpiel   + core, agents, viz (and their libraries)
    cf_env.tools     command-line programs            + every layer above
    cf_env           the package facade (`cf_env/__init__.py`): anything in cf_env
    training         trainers (outside the package)   + cf_env; cf_env never imports training

A module may import its own layer (siblings), never a higher one; no two modules may reach
each other through imports (a cycle, annotation-only imports included), in any layer; and no
module imports another's `_` names or reads the engine's. `python tests/test_architecture.py DIR`
prints the violations found in the tree at DIR (a copy, to try a change).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cf_env", "training")

# Layer ranks, lowest first; a module may import modules of its own rank or lower.
LAYERS = {
    "cf_env.core": 0,
    "cf_env.agents": 1,
    "cf_env.viz": 2,
    "cf_env.envs": 3,
    "cf_env.tools": 4,
    "cf_env": 5,  # the facade: cf_env/__init__.py
    "training": 6,
}
CORE_EXTERNAL = {"numpy", "numba"}  # beside the standard library


def layer(module: str) -> str:
    """The layer of a project module: its subpackage of cf_env, `cf_env` itself, or `training`."""
    parts = module.split(".")
    if parts[0] == "cf_env" and len(parts) > 1 and f"cf_env.{parts[1]}" in LAYERS:
        return f"cf_env.{parts[1]}"
    return parts[0]


def modules_under(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the project's packages under `root`."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside `if TYPE_CHECKING:` blocks (imports for annotations only)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                inside |= {id(n) for n in ast.walk(child)}
    return inside


def imports_of(
    name: str, path: Path, modules: dict[str, Path], runtime_only: bool = False
) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file; a `from X import y` names the
    module X.y when that is a module of the project, else X. `runtime_only` leaves out the
    imports under `if TYPE_CHECKING:` (never executed, so they cannot make an import cycle)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_only(tree) if runtime_only else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package, one level up per extra dot
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub if sub in modules else target, node.lineno))
        elif (  # importlib.import_module("a.literal.name")
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.args[0].value, node.lineno))
    return out


@cache  # each test walks the same tree; parse it once
def import_graph(root: Path, runtime_only: bool = False):
    """(modules, edges, external): edges[m] = {project module imported by m: first line}, and
    (module, external top-level package, line) for each import outside the project."""
    modules = modules_under(root)
    edges: dict[str, dict[str, int]] = defaultdict(dict)
    external = []
    for name, path in modules.items():
        for target, line in imports_of(name, path, modules, runtime_only):
            if target.split(".")[0] in PACKAGES:
                while target not in modules and "." in target:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target != name:
                    edges[name].setdefault(target, line)
            else:
                external.append((name, target.split(".")[0], line))
    return modules, edges, external


def core_violations(root: Path) -> list[str]:
    """(a) cf_env.core imports only cf_env.core, numpy and the standard library."""
    modules, edges, external = import_graph(root)
    bad = [
        f"{m}:{line} imports {t}"
        for m, targets in edges.items()
        if layer(m) == "cf_env.core"
        for t, line in targets.items()
        if layer(t) != "cf_env.core"
    ]
    bad += [
        f"{m}:{line} imports {top}"
        for m, top, line in external
        if layer(m) == "cf_env.core" and top not in CORE_EXTERNAL | set(sys.stdlib_module_names)
    ]
    return sorted(bad)


def layer_violations(root: Path) -> list[str]:
    """(b), (c): every import goes to the module's own layer or a lower one (so cf_env never
    imports training)."""
    _, edges, _ = import_graph(root)
    bad = [
        f"{m}:{line} ({layer(m)}) imports {t} ({layer(t)})"
        for m, targets in edges.items()
        for t, line in targets.items()
        if LAYERS[layer(t)] > LAYERS[layer(m)]
    ]
    return sorted(bad)


def find_cycles(edges: dict[str, dict[str, int]]) -> list[tuple[list[str], list[str]]]:
    """(cycle, group) per strongly connected group of modules that import each other (Tarjan's
    algorithm): the group's members, and a shortest cycle m0 -> ... -> m0 through its first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth is bounded by the module count (~60)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(set(edges) | {w for targets in edges.values() for w in targets}):
        if v not in index:
            visit(v)
    cycles = []
    for group in groups:  # breadth-first from the first member back to itself, inside the group
        start, members = group[0], set(group)
        parent: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in parent:
            nxt = []
            for v in frontier:
                for w in sorted(edges.get(v, {})):
                    if w in members and w not in parent:
                        parent[w] = v
                        nxt.append(w)
            frontier = nxt
        path, v = [start], parent[start]
        while v != start:
            path.append(v)
            v = parent[v]
        path.append(start)
        cycles.append((path[::-1], group))
    return cycles


def cycle_violations(root: Path) -> list[str]:
    """(d) Import cycles among the project's modules, each as a path with the import lines.
    Imports for annotations only (`if TYPE_CHECKING:`) count too: they never run, but a module
    that needs another's types to be read depends on it all the same (a circle hidden that way
    is still a circle)."""
    _, edges, _ = import_graph(root)
    out = []
    for cycle, group in find_cycles(edges):
        path = " -> ".join(f"{a} (line {edges[a][b]})" for a, b in zip(cycle, cycle[1:]))
        out.append(f"cycle among {', '.join(group)}: {path} -> {cycle[-1]}")
    return out


# ---------------------------------------------------------------------------- the tests
def test_core_imports_numpy_and_the_standard_library_only():
    assert core_violations(ROOT) == []


def test_layers_import_only_downward_and_cf_env_never_imports_training():
    assert layer_violations(ROOT) == []


def test_no_import_cycles():
    assert cycle_violations(ROOT) == []


def test_every_module_has_a_layer():
    # A new top-level subpackage of cf_env must be given a place in LAYERS (else it would
    # count as the facade and could import anything).
    modules = modules_under(ROOT)
    assert {layer(m) for m in modules} <= set(LAYERS)
    unplaced = sorted(
        m for m in modules if m.count(".") >= 1 and m.startswith("cf_env.")
        and layer(m) == "cf_env"
    )
    assert unplaced == []


def test_the_checker_sees_lazy_relative_and_cyclic_imports(tmp_path):
    """The checks themselves: a tiny tree with one violation of each kind is reported."""
    files = {
        "cf_env/__init__.py": "",
        "cf_env/core/__init__.py": "",
        "cf_env/core/engine.py": "def f():\n    import gymnasium\n    from cf_env.envs import env\n",
        "cf_env/core/tiles.py": "import numpy, json\nfrom . import engine, config\n",
        # tiles -> config at run time, config -> tiles for annotations only: a cycle too
        "cf_env/core/config.py": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from cf_env.core.tiles import T\n",
        "cf_env/envs/__init__.py": "",
        "cf_env/envs/env.py": "from cf_env.agents.bots import greedy\n",
        "cf_env/agents/__init__.py": "",
        "cf_env/agents/bots.py": "def g():\n    from training import checkpoints\n"
        "import importlib\nimportlib.import_module('cf_env.agents.ismcts')\n",
        "cf_env/agents/ismcts.py": "from .bots import g\n",
        "training/__init__.py": "",
        "training/checkpoints.py": "import cf_env\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert core_violations(tmp_path) == [
        "cf_env.core.engine:2 imports gymnasium",
        "cf_env.core.engine:3 imports cf_env.envs.env",
    ]
    assert layer_violations(tmp_path) == [
        "cf_env.agents.bots:2 (cf_env.agents) imports training.checkpoints (training)",
        "cf_env.core.engine:3 (cf_env.core) imports cf_env.envs.env (cf_env.envs)",
    ]
    assert cycle_violations(tmp_path) == [
        "cycle among cf_env.agents.bots, cf_env.agents.ismcts: "
        "cf_env.agents.bots (line 4) -> cf_env.agents.ismcts (line 1) -> cf_env.agents.bots",
        "cycle among cf_env.core.config, cf_env.core.tiles: "
        "cf_env.core.config (line 3) -> cf_env.core.tiles (line 2) -> cf_env.core.config",
    ]


def test_engine_imports_without_gymnasium_and_pettingzoo():
    """(e) The rules engine needs numpy alone: with the adapters' libraries (and torch) made
    unimportable, `import cf_env.core.engine` works and plays a game."""
    code = textwrap.dedent(
        """
        import sys
        for name in ("gymnasium", "pettingzoo", "torch", "PIL"):
            sys.modules[name] = None  # `import name` now raises ImportError
        import cf_env.core.engine
        from cf_env.core.config import ChickenFootConfig
        engine = cf_env.core.engine.Engine(ChickenFootConfig(num_rounds=1), seed=0)
        while not engine.game_over:
            engine.step(engine.legal_actions()[0])
        print("ok", engine.winners)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ok")



def engine_internal_reads(root: Path) -> list[str]:
    """Uses of the engine's private names (its `_` slots and methods) outside its own module,
    on anything but `self`: every other module uses the engine's public methods only."""
    from cf_env.core.engine import Engine

    private = {n for n in Engine.__slots__ if n.startswith("_")}
    private |= {n for n in vars(Engine) if n.startswith("_") and not n.startswith("__")}
    private -= {n for n in private if n.startswith("_repr_")}  # IPython's display protocol
    found = []
    for module, path in modules_under(root).items():
        if module == "cf_env.core.engine":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.append(f"{module}:{node.lineno} reads {ast.unparse(node)}")
    return found


def test_nothing_above_the_core_reaches_into_engine_internals(tmp_path):
    assert engine_internal_reads(ROOT) == []
    # The check sees such a read (a copy of one module with one added):
    play = tmp_path / "cf_env" / "tools" / "play.py"
    play.parent.mkdir(parents=True)
    play.write_text("def peek(engine):\n    return engine._legal\n", encoding="utf-8")
    assert engine_internal_reads(tmp_path) == ["cf_env.tools.play:2 reads engine._legal"]


def private_imports(root: Path) -> list[str]:
    """`from <project module> import _name` in another module: a module's `_` names are its own."""
    modules = modules_under(root)
    found = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in modules:
                found += [f"{module}:{node.lineno} imports {node.module}.{alias.name}"
                          for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")
                          and f"{node.module}.{alias.name}" not in modules]
    return found


def test_modules_import_no_private_name_of_another_module(tmp_path):
    assert private_imports(ROOT) == []
    # The check sees one (a copy of one module with one added):
    kernel = tmp_path / "cf_env" / "core" / "kernel.py"
    kernel.parent.mkdir(parents=True)
    (tmp_path / "cf_env" / "core" / "observation.py").write_text("def _divisors():\n    pass\n")
    kernel.write_text("from cf_env.core.observation import _divisors\n", encoding="utf-8")
    assert private_imports(tmp_path) == ["cf_env.core.kernel:1 imports cf_env.core.observation._divisors"]


def test_the_old_flat_paths_are_gone_and_the_layered_paths_do_not_warn():
    """0.2.0 removed the flat aliases (`cf_env.engine`, `python -m cf_env.play`, ...): they fail
    as any unknown module does. The package's own imports and `from cf_env import
    chicken_foot_v1` (the versioned entry point) warn nothing."""
    old = subprocess.run([sys.executable, "-c", "import cf_env.engine"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert old.returncode != 0 and "No module named 'cf_env.engine'" in old.stderr
    run = subprocess.run([sys.executable, "-m", "cf_env.demo"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "No module named cf_env.demo" in run.stderr
    new = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c",
         "import cf_env, cf_env.envs.env, cf_env.tools.play, cf_env.agents.ismcts, "
         "cf_env.viz.replay\nfrom cf_env import chicken_foot_v1, env\nchicken_foot_v1.env()"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert new.returncode == 0, new.stderr


if __name__ == "__main__":
    tree = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for title, found in (
        ("core imports", core_violations(tree)),
        ("layer order", layer_violations(tree)),
        ("cycles", cycle_violations(tree)),
        ("engine internals", engine_internal_reads(tree)),
        ("private imports", private_imports(tree)),
    ):
        print(f"{title}: {len(found)}")
        for line in found:
            print("  " + line)


def test_no_function_of_the_core_is_longer_than_60_lines():
    """Rules code stays readable: every function in cf_env/core fits in 60 lines."""
    long = []
    for path in sorted((ROOT / "cf_env" / "core").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 60:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
