"""Every driver turn is a fresh process, so what a command imports is most of what it costs.

Deterministic, not timed: a fresh interpreter runs one command through ``rein.cli.main`` and
reports ``sys.modules``, which is held to a written budget per command: a ceiling on the
modules of rein itself and on all modules, and a deny-list. A change that makes one of
these commands import more fails here, with the modules named; raise a ceiling only with
the reason in the commit.

The budgets are for the driver demo in a workspace with no ``rein.toml``: no provider, no
tier, no command worker configured, the driver serving every node; and for ``rein next``,
also beside a ``rein.toml`` that leaves its answer alone.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

DEMO = ROOT / "examples" / "driver-demo.agraph.yaml"
REIN = str(Path(sys.executable).parent / "rein")
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'

# Provider SDKs, the MCP client, HTTP clients and the PostgreSQL driver: no driver turn in
# a workspace that configures none of them has a use for them.
SDKS = ("openai", "anthropic", "mcp", "httpx", "httpx2", "psycopg", "psycopg_pool", "anyio")

# `rein --help`: the command line and the error tree, none of the layers below the CLI.
HELP_REIN_MODULES = {"rein", "rein.cli", "rein.cli.app", "rein.core", "rein.core.frozen",
                     "rein.core.version", "rein.errors"}
HELP_DENIED = ("rein.formats", "rein.config", "rein.store", "rein.engine", "rein.workers",
               "rein.providers", "rein.tools", "rein.profiles", "rein.telemetry",
               "yaml", "jsonschema", "jsonschema_rs", "sqlite3", "asyncio", *SDKS)
HELP_CEILING = 130  # 120 when written

# `rein next`: a read of the store and the driver's status; no event loop, no engine
# execution, no document parser, no schema validator, and (its plain forms) not even click.
# No dataclass either: `dataclasses` brings `inspect`, `ast` and `dis`, and every class it
# builds is code generated and compiled at import (the rows are rein.core.frozen values).
# No `typing` (8% of the turn's instructions: every name it gave the read path is for
# the type checker) and no `threading` (the store's checkpoint thread, which a read never
# starts). In a workspace with no rein.toml the answer is read from the embedded store by
# rein.workers.driver.glance, without the Harness: so none of the engine, the store's
# modules, the configuration, the error tree or the state enums, and no `pathlib` (with
# `urllib.parse`, `ipaddress` and `fnmatch`, 17 M instructions of the 157 M the turn cost
# through the Harness).
NEXT_DENIED = ("rein.engine", "rein.store", "rein.config", "rein.errors", "rein.formats",
               "rein.core.states", "rein.core.frozen", "rein.workers.driver.status",
               "rein.workers.driver.protocol", "rein.workers.driver.current",
               "rein.cli.output", "rein.providers", "rein.profiles", "rein.tools",
               "rein.cli.run", "rein.cli.app", "click", "asyncio", "yaml", "tomllib",
               "jsonschema", "jsonschema_rs", "dataclasses", "inspect", "ast", "dis",
               "tokenize", "getpass", "typing", "threading", "pathlib", "urllib",
               "ipaddress", "fnmatch", *SDKS)
# The rein modules of a plain `rein next` (the text form adds rein.workers.driver.render):
# the entry and its parser, the read, the answers it shares with the Harness's read, the
# inbox's name and where rein.toml files may be.
NEXT_REIN_MODULES = {"rein", "rein.core.version", "rein.cli", "rein.cli.calls",
                     "rein.cli.plain", "rein.cli.quick.next", "rein.cli.safe_output",
                     "rein.core.config_places", "rein.core.flows",
                     "rein.workers.driver.glance", "rein.workers.driver.answers",
                     "rein.workers.driver.places", "rein.workers.driver.render"}
# rein's own: 35 when written (38 before the rows were hand-written, 41 before
# the read went loop-free; +1 for the plain forms' parser; +8 when the SQL store became one
# module per role over one connection, rein.store.sql.*); 45 measured; +1: the record of
# calls (rein.cli.calls, no imports of its own), apart so that the quick paths reach it
# without an import cycle; 46 measured since, the ceiling lowered to it; 43 measured
# (the folders of modules alone not counted), the ceiling lowered to it; +1: where rein.toml
# files may be (rein.core.config_places, so that `rein graph validate` needs no rein.config);
# 13 since the answer is read without the Harness (44 before)
NEXT_REIN_CEILING = 13
NEXT_CEILING = 79  # 113 when written (135 with the dataclasses, 258 before); 126 measured
# with the store's role modules; +1: rein.cli.calls; 127 measured since, the ceiling lowered
# to it; 118 without `typing` (with typing.io, typing.re and _typing) and `threading` (with
# _weakrefset) on the read path (124 before); +1: rein.core.config_places; 79 since the
# answer is read without the Harness, `pathlib`, `contextlib`, `fcntl` and `datetime`'s
# users (119 before: `json` with `re` and `enum`, and `sqlite3` with `datetime`, stay)

# `rein next` beside a rein.toml that leaves its answer alone: the cold read reads the files
# itself (rein.workers.driver.glance_config), with the rules rein.config refuses a file by
# (rein.core.config_rules) and, for plain TOML, without tomllib (rein.core.toml_plain):
# tomllib brings `typing` and compiles its patterns, 38 M instructions. Still none of the
# configuration's modules, the Harness or `pathlib`: before, any rein.toml took the turn
# through the Harness (224 M instructions against 94 M).
NEXT_CONFIG_MODULES = {"rein.core.config_rules", "rein.core.reading", "rein.core.toml_plain",
                       "rein.workers.driver.glance_config"}
PLAIN_TOML = ('[driver]\ntiers = ["standard", "deep"]\n[tiers.standard]\nprovider = "openai"\n'
              '[policy]\nshell = "ask"\nmax_cost_usd = 2.5\n[limits]\nmax_depth = 64\n[store]\n')

# `rein submit`: the engine runs (the attempt is checked, the run advances to the gate),
# but nothing that only a model worker, a profile, a child graph, an MCP server, an
# external checker or a declared output schema needs: rein's own respond_with is decided
# without a schema validator, and with no project rein.toml there is no trust to look up.
# No YAML parser either: the envelope is JSON and the approved graph comes from the graph
# cache, both for the advance and for the approval check before the envelope is consumed.
SUBMIT_DENIED = ("rein.providers", "rein.workers.model", "rein.workers.model_attempt",
                 "rein.workers.profile", "rein.workers.scripted", "rein.workers.command",
                 "rein.profiles.apply", "rein.profiles.resolve", "rein.formats.oap",
                 "rein.formats.ags.validate", "rein.tools.mcp", "importlib.metadata",
                 "jsonschema", "jsonschema_rs", "rein.config.trust", "yaml",
                 "rein.formats.loader_yaml", "rein.formats.locations",
                 # every value and record is a rein.core.frozen class (asyncio still
                 # brings inspect, ast and dis)
                 "dataclasses",
                 # its plain forms are answered without click (cli/quick/submit.py)
                 "click", "rein.cli.app", "rein.cli.driver", "rein.cli.run",
                 "rein.cli.workspace",
                 # the node kinds and criteria kinds the turn's nodes do not have (the demo:
                 # a task with file and command checks, then a gate)
                 "rein.engine.run.kinds.loop", "rein.engine.run.kinds.map",
                 "rein.engine.run.kinds.subgraph", "rein.engine.run.criteria.judge",
                 "rein.engine.run.criteria.human", "rein.engine.run.criteria.external",
                 # a new id is os.urandom's; the run record's schema file is found only when
                 # the record is checked against it
                 "secrets", "hmac", "importlib.resources",
                 # the gate's present entries are dotted names, read by rein.formats.dotted
                 # without the expression language
                 "rein.formats.agx",
                 # the scheduler's order and edges are rein.formats.ags.plan_order's; the
                 # planner itself (a run's plan is made when it starts) is not imported
                 "rein.formats.ags.plan", "rein.formats.ags.plan_notices",
                 "rein.formats.shapes", *SDKS)
# rein's own modules: 144 when written (134 at first, 191 before the engine was
# trimmed; the hand-written value classes and the graph cache added a few small modules;
# then rein.core.loops and rein.engine.run.material, 149 measured; 148 without the re-export
# rein.formats.frozen; +8 when the SQL store became one module per role, rein.store.sql.*,
# and the follower of the log its own, 156 measured; +1: the record of calls, rein.cli.calls);
# 150 since the loop, map and subgraph kinds and the judge, human and external criteria are
# imported on first use (157 before); 145 measured (the folders of modules alone not counted);
# +1: rein.core.config_places; +1: rein next's answers, built by one module for both of its
# reads (rein.workers.driver.answers), and the inbox's name apart from the protocol
# (rein.workers.driver.places), less rein.core.flows' import by the status; +1: the rules a
# rein.toml is refused by (rein.core.config_rules), which rein.config shares with the cold
# read of rein next; 137 since the gate's present entries, dotted names, are read without
# rein.formats.agx (+1: rein.formats.dotted, less the 12 modules of AGX; 148 before); 134
# since the engine's scope model takes the order and the edges from plan_order, not
# through the planner (rein.formats.ags.plan, plan_notices and shapes); +1: the collector's
# pause of a turn's start (rein.core.collector, 6.5 ms of a cold submit's own time)
SUBMIT_REIN_CEILING = 135
# all modules: 323 when written (340 with click, 361 with the YAML parser, 378 with
# jsonschema_rs, 560 before; +1 for rein.core.loops, the loop that wakes in a sandbox; +1:
# what an approval shows is its own module, engine.material, so that the signature checks of
# engine.signed can use it without an import cycle; 327 measured without dataclasses; 335
# with the store's role modules; +1: rein.cli.calls); 322 since the kinds and criteria a
# turn does not run, `secrets` (with hmac and random) and importlib.resources are imported
# only where used (336 before); 315 since the retry's `random` and the canonical form's
# fallback, `rfc8785`, are imported where used (317 before); +1: rein.core.config_places;
# +1: rein.workers.driver.answers and .places, which rein next's cold read shares; +1:
# rein.core.config_rules, the rules rein.config shares with that read; 307 without AGX
# (318 before: its 12 modules and `math`, less rein.formats.dotted); 304 without the planner;
# +2: rein.core.collector and `gc`, the pause of a turn's start
SUBMIT_CEILING = 306

# Each dataclass built at import generates and compiles its methods: a few million
# instructions of every submit apiece. rein's own, counted after the turn.
SUBMIT_DATACLASSES = 0  # 0 since every value and record is a rein.core.frozen class (32
# before, 45 before the plan and node-spec classes were hand-written, 58 before the worker
# boundary's records, usage, budget and the node and run outcomes were, 101 before the
# store's rows were)

_PROBE = """
import json, sys
from rein.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
built = sorted(f"{n}.{k}" for n, m in list(sys.modules.items())
               if n.startswith("rein.") for k, v in vars(m).items()
               if isinstance(v, type) and "__dataclass_fields__" in vars(v)
               and v.__module__ == n)
print(json.dumps({"code": code, "modules": sorted(sys.modules), "dataclasses": built}),
      file=sys.stderr)
"""


def _modules(cwd: Path, *args: str) -> tuple[int, list[str], str]:
    """(exit code, sys.modules, stdout) of a fresh interpreter that ran ``rein ARGS``."""
    code, modules, out, _ = _probe(cwd, *args)
    return code, modules, out


def _probe(cwd: Path, *args: str) -> tuple[int, list[str], str, list[str]]:
    """As :func:`_modules`, and the dataclasses of rein's modules."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
    env["HOME"] = str(cwd / "home")  # no user rein.toml reaches the budget
    env["PYTHONIOENCODING"] = "utf-8"  # as a terminal's or an agent's pipe is
    env.pop("XDG_CONFIG_HOME", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=env,
                          check=False, capture_output=True, text=True)
    seen = json.loads(done.stderr.strip().splitlines()[-1])
    modules = [m for m in seen["modules"] if not _folder_only(m)]
    return seen["code"], modules, done.stdout, seen["dataclasses"]


def _loaded(modules: list[str], denied: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == d or m.startswith(d + ".") for d in denied)]


def _folder_only(module: str) -> bool:
    """A package whose ``__init__`` is a docstring and nothing else: a folder of modules,
    no code of its own (``rein.engine``, ``rein.workers.driver.worker``). The budgets count the
    modules that run, so not these."""
    init = ROOT / "src" / Path(*module.split(".")) / "__init__.py"
    if not init.is_file():
        return False
    body = ast.parse(init.read_text(encoding="utf-8")).body
    return len(body) == 1 and isinstance(body[0], ast.Expr) \
        and isinstance(body[0].value, ast.Constant)


def _rein(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "rein" or m.startswith("rein.")]


def test_a_folder_of_modules_is_not_counted_and_a_module_is() -> None:
    assert _folder_only("rein.engine")
    assert not _folder_only("rein.cli")  # the command line's entry: code
    assert not _folder_only("rein.engine.service")  # a module, not a folder


@pytest.fixture
def waiting(tmp_path: Path) -> Path:
    """A workspace whose demo run waits for the driver."""
    shutil.copy(DEMO, tmp_path / DEMO.name)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("XDG_CONFIG_HOME", None)
    digest = subprocess.run([REIN, "graph", "digest", DEMO.name], cwd=tmp_path, env=env,
                            check=True, capture_output=True, text=True).stdout.strip()
    started = subprocess.run([REIN, "run", DEMO.name, "--approve", digest], cwd=tmp_path,
                             env=env, check=False, capture_output=True, text=True)
    assert started.returncode == 3, started.stderr  # waiting for the driver
    return tmp_path


def test_rein_help_imports_none_of_the_layers_below_the_cli(tmp_path: Path) -> None:
    code, modules, out = _modules(tmp_path, "--help")
    assert code == 0 and "rein next" not in out and "Commands" in out
    assert _loaded(modules, HELP_DENIED) == []
    assert sorted(set(_rein(modules)) - HELP_REIN_MODULES) == []
    assert len(modules) <= HELP_CEILING, len(modules)


@pytest.mark.parametrize("form", [["--json"], []])
def test_rein_next_reads_without_the_engine_the_loop_or_a_validator(waiting: Path,
                                                                   form: list[str]) -> None:
    code, modules, out = _modules(waiting, "next", *form)
    assert code == 0
    if form:
        assert json.loads(out)["status"] == "instruction"
    else:
        assert out.startswith("INSTRUCTION drv-"), out
    assert _loaded(modules, NEXT_DENIED) == []
    assert sorted(set(_rein(modules)) - NEXT_REIN_MODULES) == []
    assert len(_rein(modules)) <= NEXT_REIN_CEILING, _rein(modules)
    assert len(modules) <= NEXT_CEILING, len(modules)


@pytest.mark.parametrize("form", [["--json"], []])
def test_rein_next_beside_a_rein_toml_reads_it_without_the_configuration_or_tomllib(
        waiting: Path, form: list[str]) -> None:
    (waiting / "rein.toml").write_text(PLAIN_TOML)
    code, modules, out = _modules(waiting, "next", *form)
    assert code == 0
    assert (json.loads(out)["status"] == "instruction") if form else \
        out.startswith("INSTRUCTION drv-"), out
    assert _loaded(modules, NEXT_DENIED) == []
    assert sorted(set(_rein(modules)) - NEXT_REIN_MODULES - NEXT_CONFIG_MODULES) == []
    assert len(_rein(modules)) <= NEXT_REIN_CEILING + len(NEXT_CONFIG_MODULES), \
        _rein(modules)
    assert len(modules) <= NEXT_CEILING + len(NEXT_CONFIG_MODULES), len(modules)


def test_rein_next_beside_toml_that_only_tomllib_reads_still_reads_without_the_harness(
        waiting: Path) -> None:
    (waiting / "rein.toml").write_text(PLAIN_TOML + '[x-notes]\nwhen = 2026-01-01\n')
    code, modules, out = _modules(waiting, "next", "--json")
    assert code == 0 and json.loads(out)["status"] == "instruction"
    assert "tomllib" in modules  # a date: beyond the plain reader, tomllib reads it
    assert _loaded(modules, tuple(d for d in NEXT_DENIED if d not in ("tomllib", "typing"))) \
        == []
    assert sorted(set(_rein(modules)) - NEXT_REIN_MODULES - NEXT_CONFIG_MODULES) == []


@pytest.mark.parametrize("form", [["--json"], []])
def test_rein_submit_imports_only_what_the_turn_it_checks_needs(waiting: Path,
                                                                form: list[str]) -> None:
    code, _, out = _modules(waiting, "next", "--json")
    (waiting / "greet.py").write_text(RIGHT)
    (waiting / ".rein" / "inbox.json").write_text(json.dumps(json.loads(out)["example"]))
    code, modules, out, built = _probe(waiting, "submit", *form)
    if form:
        status = json.loads(out)
        assert status["submitted"].startswith("accepted"), out
        assert status["status"] == "waiting" and status["for"] == "approval"  # the gate
    else:
        assert out.startswith("WAITING: a person must answer gate"), out
    assert code == 3
    assert _loaded(modules, SUBMIT_DENIED) == []
    assert len(_rein(modules)) <= SUBMIT_REIN_CEILING, len(_rein(modules))
    assert len(modules) <= SUBMIT_CEILING, len(modules)
    assert len(built) <= SUBMIT_DATACLASSES, built
