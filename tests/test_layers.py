"""Imports point down only (DESIGN.md, "Layers"): a surface may use the engine, never the
reverse, and the document layer (formats) depends on nothing but the error tree."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

# Higher ranks may import lower ranks (and their peers); never the other way round.
RANK = {
    "errors": 0, "core": 0,
    "formats": 1,
    "config": 2,
    "providers": 3, "tools": 3, "store": 3, "profiles": 3,
    "workers": 4, "telemetry": 4,
    # Where a node's attempt runs: in process, or queued (DBOS). Below the engine, as
    # DESIGN draws it: the engine places attempts through an executor and hands it what it
    # needs of its own (the approval check, the command criterion's check) as callables.
    "executors": 5,
    "engine": 6,
    # Flows built on the engine's one runtime: the development, specification and evaluation
    # flows.
    "dev": 7, "spec": 7, "eval": 7,
    # How a test runs a graph: on the Harness, with the scripted worker.
    "testing": 7,
    # One projection of the event log into threads, turns and items (the Codex and ACP
    # vocabulary), between the engine and the surfaces that speak it.
    "protocol": 8,
    # Surfaces: the app-server, the web console and the ACP agent. They translate; the CLI
    # may launch them.
    "appserver": 9, "web": 9, "acp": 9,
    "cli": 10,
    "__init__": 11, "__main__": 11,
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rein."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("rein.")}
    return found


def test_every_layer_is_ranked_and_imports_point_down() -> None:
    package = ROOT / "src" / "rein"
    upward = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        layer = parts[0] if len(parts) > 1 else parts[0][:-3]
        assert layer in RANK, f"{layer} has no place in the layer ranks: add it"
        for target in _imports(path) - {layer}:
            assert target in RANK, f"{path.name} imports unranked rein.{target}"
            if RANK[target] > RANK[layer]:  # peers of one rank (config modules) may share
                upward.append(f"{path.relative_to(package)} imports rein.{target}")
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rein.engine.run.runner import Engine\n")
    assert _imports(module) == {"engine"}


# -- no cycle inside a layer --------------------------------------------------------------
#
# Every import counts: function-level ones (a lazy import only moves a cycle from import
# time to call time) and type-only ones under ``if TYPE_CHECKING:`` (an annotation that names
# a module which imports this one is the same knot, only hidden from the interpreter: a
# module that needs the other's type takes a Protocol of its own, or the type moves down).
#
# A cycle accepted for a while would be named here; the test fails when a listed one is gone
# or an unlisted one appears. There are none: keep it that way.
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


def _module_name(package: Path, path: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _every_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth: in functions and under ``if TYPE_CHECKING:``."""
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def module_graph(package: Path) -> dict[str, set[str]]:
    """Module → the package modules it imports. ``from pkg import sub`` names ``pkg.sub``
    when that is a module (the package ``__init__`` is then only a parent, like any)."""
    paths = {_module_name(package, p): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        deps: set[str] = set()
        for node in _every_import(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in paths}
                continue
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[:len(here) - (node.level - 1)]
                base = ".".join(here + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                deps.add(target if target in paths else base)
        graph[name] = {d for d in deps if d in paths and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def test_no_layer_has_an_import_cycle() -> None:
    found = cycles(module_graph(ROOT / "src" / "rein"))
    assert sorted(sorted(c) for c in found - KNOWN_CYCLES) == []
    assert sorted(sorted(c) for c in KNOWN_CYCLES - found) == [], \
        "a known cycle is gone: remove it from KNOWN_CYCLES"


def test_the_cycle_check_sees_a_lazy_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "kinds").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kinds" / "__init__.py").write_text("")
    (package / "runner.py").write_text("from pkg.kinds import task\n")
    (package / "kinds" / "task.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import runner\n"
        "def f():\n    from ..runner import go\n")
    assert cycles(module_graph(package)) == {frozenset({"pkg.runner", "pkg.kinds.task"})}


def test_the_cycle_check_sees_a_type_only_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "app.py").write_text("from pkg import pages\n")
    (package / "pages.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.app import Console\n")
    (package / "alone.py").write_text("from pkg import pages\n")
    assert cycles(module_graph(package)) == {frozenset({"pkg.app", "pkg.pages"})}


# -- the surfaces reach the engine through the Harness ------------------------------------
#
# As the command line does (tests/cli/test_uses_the_service.py): the app-server, the ACP
# agent and the web console import no store module and, of the engine, only the Harness's
# module (``rein.engine.service``, which also names the rows it hands out), and never read
# a Harness's ``store``. Their protocol vocabulary is the protocol layer's (``rein.protocol``).
SURFACES = ("appserver", "acp", "web")


def _reaches_past_the_harness(path: Path) -> list[str]:
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if node.module not in ("rein", "rein.engine") else \
                [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith(("rein.store", "rein.engine")) and name != "rein.engine.service":
                wrong.append(f"imports {name}")
        if isinstance(node, ast.Attribute) and node.attr == "store":
            wrong.append(f"reads .store (line {node.lineno})")
    return wrong


def test_the_surfaces_reach_the_engine_only_through_the_harness() -> None:
    package = ROOT / "src" / "rein"
    wrong = [f"{path.relative_to(package)} {what}" for surface in SURFACES
             for path in sorted((package / surface).rglob("*.py"))
             for what in _reaches_past_the_harness(path)]
    assert wrong == []


def test_the_surface_check_sees_a_store_read(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from rein.engine.service import Harness\nfrom rein.engine import events\n"
                      "def f(h):\n    from rein.store.base import Event\n"
                      "    return h.store.events('r')\n")
    assert _reaches_past_the_harness(module) == [
        "imports rein.engine.events", "imports rein.store.base", "reads .store (line 5)"]
