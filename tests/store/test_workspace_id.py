"""A workspace's identity: made once, kept by a moved workspace, never shared by a copy."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import RunId
from rein.core.states import RunStatus
from rein.errors import Refused, StoreError
from rein.store.base import RunRow, WorkspaceRef
from rein.store.sqlite import SQLiteStore
from rein.store.workspace_id import FILE, belongs, here, refuse_elsewhere, runs_here


def _ws(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def test_an_identity_is_made_once_and_read_back(tmp_path: Path) -> None:
    ws = _ws(tmp_path / "ws")
    assert here(ws) is None  # a read makes nothing
    assert not (ws / ".rein").exists()
    made = here(ws, create=True)
    assert made is not None and made.id.startswith("ws-") and len(made.id) == 35
    assert (made.path, made.host) == (str(ws), socket.gethostname())
    assert here(ws) == made and here(ws, create=True) == made
    assert json.loads((ws / FILE).read_text()) == made.to_json()


def test_a_copy_gets_an_identity_of_its_own_and_the_original_keeps_its(tmp_path: Path
                                                                      ) -> None:
    original = _ws(tmp_path / "original")
    made = here(original, create=True)
    assert made is not None
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    copy = copy.resolve()
    assert here(copy) is None  # a copy has no run yet, and is told none of the original's
    own = here(copy, create=True)
    assert own is not None and own.id != made.id and own.path == str(copy)
    assert here(copy) == own and here(original) == made


def test_a_moved_workspace_keeps_its_identity(tmp_path: Path) -> None:
    before = _ws(tmp_path / "before")
    made = here(before, create=True)
    assert made is not None
    after = (tmp_path / "after")
    before.rename(after)
    after = after.resolve()
    seen = here(after)
    assert seen is not None and seen.id == made.id and seen.path == str(after)
    assert json.loads((after / FILE).read_text())["path"] == str(before)  # a read writes not
    kept = here(after, create=True)
    assert kept == seen and json.loads((after / FILE).read_text())["path"] == str(after)


def test_a_workspace_moved_where_a_new_one_was_made_is_not_taken_for_a_copy(
        tmp_path: Path) -> None:
    """The old folder holds another workspace's identity now: this one was moved."""
    first = _ws(tmp_path / "first")
    made = here(first, create=True)
    assert made is not None
    moved = tmp_path / "moved"
    first.rename(moved)
    other = here(_ws(tmp_path / "first"), create=True)
    assert other is not None and other.id != made.id
    seen = here(moved.resolve())
    assert seen is not None and seen.id == made.id


def _file(ws: Path, **data: Any) -> None:
    (ws / ".rein").mkdir(parents=True, exist_ok=True)
    (ws / FILE).write_text(json.dumps(data))


def test_another_machines_file_names_the_same_folder_only_at_the_same_path(
        tmp_path: Path) -> None:
    """At its own path it is one folder seen from two machines (a shared mount); at
    another path it is a copy, since that machine's folder cannot be looked at."""
    shared = _ws(tmp_path / "shared")
    _file(shared, id="ws-" + "a" * 32, path=str(shared), host="elsewhere")
    assert here(shared) == WorkspaceRef(id="ws-" + "a" * 32, path=str(shared), host="elsewhere")
    copied = _ws(tmp_path / "copied")
    _file(copied, id="ws-" + "b" * 32, path="/srv/somewhere", host="elsewhere")
    assert here(copied) is None
    own = here(copied, create=True)
    assert own is not None and own.id != "ws-" + "b" * 32


@pytest.mark.parametrize("text", ["{", '{"id": 3}', '{"id": "x", "path": "/"}', "[]"])
def test_an_unreadable_identity_is_an_error_never_a_new_workspace(tmp_path: Path,
                                                                  text: str) -> None:
    ws = _ws(tmp_path / "ws")
    (ws / ".rein").mkdir()
    (ws / FILE).write_text(text)
    for create in (False, True):
        with pytest.raises(StoreError) as raised:
            here(ws, create=create)
        assert raised.value.code == "WORKSPACE001"
    assert (ws / FILE).read_text() == text  # left for a person to restore


def _run(run_id: str, where: WorkspaceRef | None) -> RunRow:
    return RunRow(run_id=RunId(run_id), graph_id="g", graph_path="g.agraph.yaml",
                  graph_digest="sha256-x=", status=RunStatus.WAITING,
                  started_at="2026-01-01T00:00:00Z", workspace=where)


def test_runs_here_are_this_workspaces_and_older_runs_only_in_its_own_store(
        tmp_path: Path) -> None:
    ws, other = _ws(tmp_path / "ws"), _ws(tmp_path / "other")
    mine, theirs = here(ws, create=True), here(other, create=True)
    for path in (ws / ".rein" / "rein.db", tmp_path / "shared.db"):
        store = SQLiteStore(path)
        try:
            for run_id, where in (("old", None), ("theirs", theirs), ("mine", mine)):
                store.create_run(_run(run_id, where), event_type="run/started", payload={})
            embedded = path.parent == ws / ".rein"
            assert [r.run_id for r in runs_here(store, ws)] == \
                (["mine", "old"] if embedded else ["mine"])
            assert [r.run_id for r in runs_here(store, other)] == ["theirs"]
        finally:
            store.close()


def test_acting_on_another_workspaces_run_is_refused(tmp_path: Path) -> None:
    ws, other = _ws(tmp_path / "ws"), _ws(tmp_path / "other")
    theirs = here(other, create=True)
    run = _run("theirs", theirs)
    assert not belongs(run, ws) and belongs(run, other)
    assert belongs(_run("old", None), ws)  # nothing recorded to tell otherwise
    with pytest.raises(Refused) as raised:
        refuse_elsewhere(run, ws, doing="advance it")
    assert raised.value.code == "RUN010"
    assert str(other) in raised.value.message and str(other) in (raised.value.hint or "")
    refuse_elsewhere(run, other)  # its own workspace: nothing to refuse


def test_an_identity_that_cannot_be_kept_is_an_error(tmp_path: Path) -> None:
    ws = _ws(tmp_path / "ws")
    (ws / ".rein").write_text("a file where the folder goes\n")
    assert here(ws) is None
    with pytest.raises(StoreError) as raised:
        here(ws, create=True)
    assert raised.value.code == "WORKSPACE001" and "make .rein/ writable" in (
        raised.value.hint or "")


def test_a_file_made_through_a_symbolic_link_names_the_same_workspace(tmp_path: Path
                                                                      ) -> None:
    real = _ws(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    _file(real, id="ws-" + "c" * 32, path=str(link), host=socket.gethostname())
    for seen_from in (real, link):
        found = here(seen_from)
        assert found is not None and found.id == "ws-" + "c" * 32 and found.path == str(real)
    assert here(link, create=True) == here(real)
