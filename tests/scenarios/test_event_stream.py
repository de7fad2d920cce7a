"""Every stored event is published exactly once: for each of rein's own examples, what
``rein run --json`` and ``rein approvals accept --json`` stream is exactly what they stored,
child runs and the events other layers write (driver instructions, approval answers)
included; and ``driver-demo`` is driven through ``rein next`` / ``rein submit`` to its gate
and accepted."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from support import EXAMPLES

from rein.store.open import open_store
from tests.scenarios.harness import Scenario

GRAPHS = sorted(p.name for p in EXAMPLES.glob("*.agraph.yaml"))
FIXTURES = EXAMPLES.parent / "tests" / "scenarios" / "fixtures" / "examples"
PARAMS = {"incident-review.agraph.yaml": ("--param", "incident_id=INC-42")}
VALUES = {"gather_facts": ["notes=Alerts fired at 01:00; api-3 restarted at 01:09.",
                           "started_at=01:00", "severity=sev2"]}
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


def _stored(scenario: Scenario) -> dict[str, list[dict[str, Any]]]:
    """Every stored event of every run in the workspace, by run."""
    store = open_store(scenario.root, create=False)
    if store is None:  # nothing stored yet
        return {}
    try:
        return {run.run_id: [e.to_json() for e in store.events(run.run_id)]
                for run in store.list_runs(include_children=True)}
    finally:
        store.close()


def _streams_what_it_stores(scenario: Scenario, *args: str) -> int:
    """Run one streaming command; its event lines are exactly the events it stored."""
    before = _stored(scenario)
    code, out = scenario.rein(*args)
    after = _stored(scenario)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    streamed = [line for line in lines if "seq" in line]
    new = {run: events[len(before.get(run, [])):] for run, events in after.items()}
    assert sum(map(len, new.values())) > 0, out  # the command did store something
    for run, events in new.items():
        assert [e for e in streamed if e["run_id"] == run] == events, run
    assert len(streamed) == sum(map(len, new.values()))  # nothing twice, nothing foreign
    return code


def _setup(scenario: Scenario, name: str) -> None:
    for path in EXAMPLES.glob("*.agraph.yaml"):
        scenario.copy(path)
    scenario.file("logs/api.log", "01:02 error: connection pool exhausted\n")
    answers = FIXTURES / name.replace(".agraph.yaml", ".answers.yaml")
    if answers.exists():
        scenario.monkeypatch.setenv("REIN_SCRIPTED_ANSWERS", str(answers))
    # The greets criterion of driver-demo runs `python3 -c ...`: this interpreter.
    scenario.stub("python3", script=f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')


def _start(scenario: Scenario, name: str) -> int:
    code, out = scenario.rein("graph", "digest", name)
    assert code == 0, out
    return _streams_what_it_stores(scenario, "run", name, "--approve", out.strip(), "--json",
                                   *PARAMS.get(name, ()))


def _accept_all(scenario: Scenario) -> None:
    for _ in range(20):
        pending = scenario.pending()
        if not pending:
            return
        first = pending[0]
        values = [a for v in VALUES.get(str(first["request"].get("node")), [])
                  for a in ("--value", v)]
        _streams_what_it_stores(scenario, "approvals", "accept", first["approval_id"],
                                "--json", *values)
    raise AssertionError("approvals did not settle")


@pytest.mark.parametrize("name", GRAPHS)
def test_each_example_streams_every_stored_event_once(scenario: Scenario, name: str) -> None:
    _setup(scenario, name)
    _start(scenario, name)
    _accept_all(scenario)
    from rein.engine.events import EventType

    written = {e["type"] for events in _stored(scenario).values() for e in events}
    assert written - set(EventType) == set()  # the catalogue names everything written


def test_driver_demo_streams_its_instruction_and_its_answer(scenario: Scenario) -> None:
    _setup(scenario, "driver-demo.agraph.yaml")
    assert _start(scenario, "driver-demo.agraph.yaml") == 3  # the instruction is out
    [run] = _stored(scenario).values()
    assert [e["type"] for e in run].count("driver/instructed") == 1
    code, out = scenario.rein("next", "--json")
    pending = json.loads(out)
    assert pending["status"] == "instruction", out
    scenario.file("greet.py", RIGHT)
    scenario.file(".rein/inbox.json", json.dumps(pending["example"]))
    code, out = scenario.rein("submit", "--json")
    assert code == 3, out  # the gate asks
    [gate] = scenario.pending()
    assert _streams_what_it_stores(scenario, "approvals", "accept", gate["approval_id"],
                                   "--json") == 0
    [run] = _stored(scenario).values()
    types = [e["type"] for e in run]
    assert types.count("approval/answered") == 2  # the graph's digest, then the gate
    assert types[-1] == "run/finished"
