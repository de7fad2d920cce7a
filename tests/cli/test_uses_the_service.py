"""The command line holds no use case: it parses, calls the Harness, and renders.

The rule, checked on every module of ``rein.cli`` (lazy imports included):

- no import of ``rein.store`` at all: state is reached only through the Harness;
- of the engine, only ``rein.engine.service`` (the Harness and its result types) and the
  modules of plain values and pure functions listed in ``VALUES``;
- ``asyncio.run`` appears only in ``rein.cli.sync`` (the one ``run_sync`` helper);
- no module it imports opens a store itself, but one: ``rein next``'s cold read
  (:mod:`rein.workers.driver.glance`), which reads the embedded store's tables for the
  common answers and leaves every other state to the Harness (docs/driver.md, "Speed").

The engine, in turn, never calls ``asyncio.run`` (a server with its own loop must be able
to start a run) and never reads ``rein.toml`` (the Harness passes the settings in).
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "src" / "rein"
# Engine modules of values and pure functions a surface may use directly.
VALUES = {
    "rein.engine.service",
    "rein.engine.run.prepare",  # PrepareFailed and Prepared: what `rein run` reports and prints
    "rein.engine.run.params",  # parsing NAME=VALUE and parameter files: the command's input
    "rein.engine.cases.record_file",  # reading a run record file given on the command line
    "rein.engine.run.workers_setup",  # `rein config show`: which configured commands are withheld
    "rein.engine.run.outcome",  # RunOutcome, the Harness's result type (`rein runs watch` makes one)
}


def _is_package(module: str) -> bool:
    return module.startswith("rein") and \
        (ROOT / "src" / Path(*module.split(".")) / "__init__.py").is_file()


def _imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if _is_package(node.module):  # `from rein.engine.run import runner`: the module
                found |= {f"{node.module}.{a.name}" for a in node.names}
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def _calls_asyncio_run(path: Path) -> bool:
    """Whether the module runs an event loop to completion: rein's own `run` (imported
    from rein.core.loops), or asyncio's."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "rein.core.loops" and \
                any(a.name == "run" for a in node.names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "run" and isinstance(node.func.value, ast.Name) and \
                node.func.value.id == "asyncio":
            return True
    return False


def _makes_an_asyncio_loop(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("run", "Runner",
                                                              "new_event_loop") and \
                isinstance(node.value, ast.Name) and node.value.id == "asyncio":
            return True
    return False


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def test_the_cli_reaches_state_and_the_engine_only_through_the_service() -> None:
    wrong = []
    for path in _modules("cli"):
        for module in _imported(path):
            store = module == "rein.store" or module.startswith("rein.store.")
            if store or (module.startswith("rein.engine") and module not in VALUES):
                wrong.append(f"{path.name} imports {module}")
    assert wrong == []


def test_only_the_sync_helper_runs_an_event_loop() -> None:
    running = [p.relative_to(PACKAGE).as_posix() for p in [*_modules("cli"),
                                                           *_modules("engine"),
                                                           *_modules("protocol")]
               if _calls_asyncio_run(p)]
    # The SDK's sync wrappers (Thread.run_sync) are for scripts with no loop of their own.
    assert running == ["cli/sync.py", "protocol/sdk.py"]


def test_every_event_loop_is_reins_own() -> None:
    # rein.core.loops' loop wakes without send(2), which an agent's sandbox denies; a loop
    # made by asyncio itself would hang there (tests/core/test_loops.py).
    made = [p.relative_to(PACKAGE).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
            if _makes_an_asyncio_loop(p)]
    assert made == ["core/loops.py"]


def test_the_engine_reads_no_configuration_file_itself() -> None:
    readers = [p.relative_to(PACKAGE).as_posix() for p in _modules("engine")
               if "load_config" in {n.id if isinstance(n, ast.Name) else
                                    getattr(n, "attr", None) for n in
                                    ast.walk(ast.parse(p.read_text(encoding="utf-8")))}]
    assert readers == ["engine/service.py"]  # the composition root, once


# The modules the CLI calls that open a store: the Harness's, and the cold read of `rein next`.
OPENS_A_STORE = {"rein.engine.service", "rein.workers.driver.glance"}
_STORE_OPENERS = ("sqlite3", "psycopg", "rein.store.open", "rein.store.sqlite",
                  "rein.store.postgres")


def _opens_a_store(module: str) -> bool:
    """Whether rein module ``module`` imports a database driver or what opens a store."""
    path = ROOT / "src" / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return path.is_file() and any(m == o or m.startswith(o + ".") for m in _imported(path)
                                  for o in _STORE_OPENERS)


def test_the_cli_opens_no_store_but_through_the_harness_or_the_cold_read() -> None:
    opening = sorted({module for path in _modules("cli") for module in _imported(path)
                      if module.startswith("rein.") and _opens_a_store(module)})
    assert opening == sorted(OPENS_A_STORE)


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rein.store.open import open_store\n"
                      "    from rein.engine.run import runner\n    asyncio.run(g())\n")
    assert _imported(module) == {"rein.store.open", "rein.engine.run.runner"}
    assert _calls_asyncio_run(module)
    assert _opens_a_store("rein.engine.service")  # the Harness, where it opens the store
    assert _opens_a_store("rein.store.sqlite") and not _opens_a_store("rein.cli.output")
