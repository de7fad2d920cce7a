"""A damaged store is refused once found damaged, by every command, until it is recovered:
found by SQLite's full integrity check, which runs when SQLite reports a damaged page and
never merely because a command opens the store."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES

from rein.cli import main
from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import StoreError
from rein.store.base import RunRow
from rein.store.sqlite import SQLiteStore, db_path

PAGE = 4096
MARK = b"damage-me"


def store_with_runs(workspace: Path) -> Path:
    """Three runs of 50 events each; only the events of run-0 carry MARK."""
    store = SQLiteStore.open(workspace)
    assert store is not None
    for i in range(3):
        run_id = RunId(f"run-{i}")
        store.create_run(RunRow(run_id=run_id, graph_id="g", graph_path="g.agraph.yaml",
                                graph_digest="sha256-abc=", status=RunStatus.SUCCEEDED,
                                started_at="2026-01-01T00:00:00Z"),
                         event_type="run/started", payload={})
        text = (MARK.decode() if i == 0 else "kept") + "-" + "x" * 300
        for n in range(50):
            store.transition(run_id, "node/note", {"text": text, "n": n}, "t")
    store.close()
    return db_path(workspace)


def damage_run_0(path: Path) -> int:
    """Overwrite, with garbage, the pages that hold the events of run-0 and nothing of the
    other runs': a damage that a new run never reads. The number of pages damaged."""
    data = path.read_bytes()
    pages = sorted({m.start() // PAGE for m in re.finditer(MARK, data)})
    assert pages and 0 not in pages
    with path.open("r+b") as fh:
        for page in pages:
            fh.seek(page * PAGE)
            fh.write(b"\xa5" * PAGE)
    return len(pages)


def rein(capsys: Any, *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    try:
        return code, json.loads(captured.out)
    except json.JSONDecodeError:
        return code, json.loads(captured.out.strip().splitlines()[-1])


def test_a_store_found_damaged_is_refused_for_new_runs_and_every_command(
        workspace: Path, capsys: Any) -> None:
    path = store_with_runs(workspace)
    damage_run_0(path)
    shutil.copy(EXAMPLES / "no-worker.agraph.yaml", workspace)
    digest = main_out(capsys, "graph", "digest", "no-worker.agraph.yaml")
    # Listing runs reads none of the damaged pages: nothing is found yet.
    code, listed = rein(capsys, "runs", "list")
    assert code == 0 and len(listed["runs"]) == 3
    # Reading run-0's events meets the damage: the whole file is checked, found damaged.
    code, out = rein(capsys, "runs", "events", "run-0")
    assert code == 1
    error = out["error"]
    assert error["code"] == "STORE003"
    assert "integrity check found" in error["message"]
    assert "never overwrite it" in error["hint"]
    verdict = json.loads(path.with_name("rein.db.damage").read_text())
    assert verdict["problems"]
    found = (path.stat().st_size, path.stat().st_mtime_ns)
    # From then on no command uses the store, a new run least of all.
    for args in (("run", "no-worker.agraph.yaml", "--approve", digest), ("runs", "list"),
                 ("runs", "show", "run-1"), ("next",), ("approvals", "list")):
        code, out = rein(capsys, *args)
        assert (code, out["error"]["code"]) == (1, "STORE003"), (args, out)
    assert (path.stat().st_size, path.stat().st_mtime_ns) == found  # nothing written
    assert sorted(p.name for p in path.parent.glob("rein.db*")) == ["rein.db",
                                                                  "rein.db.damage"]


def main_out(capsys: Any, *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return str(capsys.readouterr().out.strip())


def _recovery_commands(hint: str) -> list[str]:
    return re.findall(r"`([^`]+)`", hint)


def _sqlite3_recovers() -> bool:
    """Whether the sqlite3 shell here can run ``.recover`` (it needs the sqlite_dbpage
    table, which some distributions' builds leave out)."""
    if shutil.which("sqlite3") is None:
        return False
    done = subprocess.run(["sqlite3", ":memory:", "SELECT COUNT(*) FROM sqlite_dbpage"],
                          capture_output=True, text=True, check=False)
    return done.returncode == 0


def test_the_recovery_steps_keep_the_damaged_file_and_give_a_sound_store(
        workspace: Path, capsys: Any) -> None:
    path = store_with_runs(workspace)
    damage_run_0(path)
    code, out = rein(capsys, "runs", "events", "run-0")
    assert out["error"]["code"] == "STORE003"
    keep_aside, rebuild = _recovery_commands(out["error"]["hint"])
    damaged = path.read_bytes()
    subprocess.run(["sh", "-c", keep_aside], check=True)
    kept = workspace / ".rein" / "damaged"
    assert (kept / "rein.db").read_bytes() == damaged  # kept as it was, never overwritten
    assert (kept / "rein.db.damage").exists()
    if _sqlite3_recovers():
        subprocess.run(["sh", "-c", f"cd {workspace / '.rein'} && {rebuild}"], check=True)
        code, listed = rein(capsys, "runs", "list")
        assert code == 0
        assert {r["run_id"] for r in listed["runs"]} == {"run-0", "run-1", "run-2"}
        code, out = rein(capsys, "runs", "events", "run-2")
        assert code == 0
    # Without a backup or the rebuilt file, the workspace starts a new store.
    shutil.copy(EXAMPLES / "no-worker.agraph.yaml", workspace)
    if path.exists():
        os.rename(path, workspace / "rebuilt.db")
    digest = main_out(capsys, "graph", "digest", "no-worker.agraph.yaml")
    code, ended = rein(capsys, "run", "no-worker.agraph.yaml", "--approve", digest)
    assert code == 0, ended


def test_opening_a_store_never_checks_it_fully(workspace: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.store import sqlite_damage

    checks: list[Path] = []
    real = sqlite_damage.check

    def counted(path: Path) -> list[str]:
        checks.append(path)
        return real(path)

    monkeypatch.setattr(sqlite_damage, "check", counted)
    path = store_with_runs(workspace)
    for _ in range(3):  # a sound store: no full check
        store = SQLiteStore.open(workspace)
        assert store is not None
        assert len(store.list_runs()) == 3
        store.close()
    assert checks == []
    healthy = path.read_bytes()
    damage_run_0(path)
    store = SQLiteStore.open(workspace)
    assert store is not None
    with pytest.raises(StoreError) as info:
        store.events(RunId("run-0"))
    assert info.value.code == "STORE003"
    with pytest.raises(StoreError):  # the same store again: the verdict found, not a check
        store.events(RunId("run-0"))
    store.close()
    assert len(checks) == 1
    for _ in range(3):  # a verdict on this very file: refused without a full check
        with pytest.raises(StoreError) as info:
            SQLiteStore.open(workspace)
        assert info.value.code == "STORE003"
    assert len(checks) == 1
    # A backup restored over the file: checked once, found whole, the verdict dropped.
    path.write_bytes(healthy)
    for _ in range(2):
        store = SQLiteStore.open(workspace)
        assert store is not None
        assert len(store.events(RunId("run-0"))) == 51
        store.close()
    assert len(checks) == 2
    assert not sqlite_damage.verdict_path(path).exists()


def test_a_store_whose_check_finds_nothing_is_not_refused(workspace: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from rein.store import sqlite_damage

    # SQLite reported a damaged page, but the full check finds the file whole (a read
    # that went wrong once): the error stands for this command, no verdict is written.
    path = store_with_runs(workspace)
    damage_run_0(path)
    monkeypatch.setattr(sqlite_damage, "check", lambda path: [])
    store = SQLiteStore.open(workspace)
    assert store is not None
    with pytest.raises(StoreError) as info:
        store.events(RunId("run-0"))
    store.close()
    assert info.value.code == "STORE001"
    assert not sqlite_damage.verdict_path(path).exists()
