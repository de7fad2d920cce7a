"""`rein runs cancel`: stop a run whatever it waits for; it ends cancelled, once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES

from rein.cli import main
from rein.config.approver import os_account

GRAPH = EXAMPLES / "driver-demo.agraph.yaml"


def _out(capsys: Any, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cancel_a_run_waiting_for_its_driver(workspace: Path, capsys: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REIN_USER_CONFIG", str(workspace / "no-user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(workspace / "no-managed.toml"))
    _, digest = _out(capsys, "graph", "digest", str(GRAPH))
    code, out = _out(capsys, "run", str(GRAPH), "--approve", digest.strip(), "--json")
    assert code == 3
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]

    code, out = _out(capsys, "runs", "cancel", run_id, "--note", "wrong branch", "--json")
    assert code == 1
    assert json.loads(out.strip().splitlines()[-1])["status"] == "cancelled"

    code, out = _out(capsys, "next", "--json")
    status = json.loads(out)
    assert (code, status["status"], status["reason"]) == (1, "stopped", "cancelled")

    _, out = _out(capsys, "runs", "events", run_id, "--json")
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    requested = [e for e in events if e.get("type") == "run/cancel_requested"]
    assert len(requested) == 1
    # Who cancelled is the approver rein knows (here the OS account), never a typed name.
    assert requested[0]["payload"] == {"actor": os_account(), "note": "wrong branch"}

    # A second cancel is refused and changes nothing.
    assert main(["runs", "cancel", run_id]) == 4
    _, out = _out(capsys, "runs", "events", run_id, "--json")
    assert sum('"run/cancel_requested"' in line for line in out.splitlines()) == 1


def test_cancel_an_unknown_run(workspace: Path, capsys: Any) -> None:
    _, digest = _out(capsys, "graph", "digest", str(GRAPH))
    _out(capsys, "run", str(GRAPH), "--approve", digest.strip())
    assert main(["runs", "cancel", "run-nope"]) == 1
    assert "RUN404" in capsys.readouterr().err
