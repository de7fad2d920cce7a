"""Writeback: /state only, revision checks, atomicity, retention, history, queue, and a test
for each defect of the reference applicator (research E.6)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from profile_env import data_fixture, isolated_env_fixture, ws_fixture  # noqa: F401

from rein.errors import Refused
from rein.formats.oap import load_oap, spec_digest, validate_file
from rein.profiles import store
from rein.profiles.apply import accept, apply_file, decline
from rein.profiles.proposals import Queue
from rein.profiles.writeback import OperationError, apply_delta

pytestmark = pytest.mark.usefixtures("isolated_env")
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def delta(name: str, revision: int, ops: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"oap": "1.0", "kind": "AgentStateDelta", "target": {"name": name,
                                                                "revision": revision},
            "session": {"id": "sess-t"}, "operations": ops, **extra}


def fact(i: str, **kw: Any) -> dict[str, Any]:
    return {"id": i, "text": f"fact {i}", **kw}


def scribe(data: Path) -> dict[str, Any]:
    return load_oap(data / "scribe.agent.yaml").data


def copy_in(ws: Path, source: Path) -> Path:
    return Path(shutil.copy(source, ws / source.name))


def write_delta(ws: Path, d: dict[str, Any]) -> Path:
    import json

    path = ws / "d.delta.json"
    path.write_text(json.dumps(d))
    return path


def test_apply_bumps_revision_appends_history_keeps_spec(data: Path) -> None:
    doc = scribe(data)
    result = apply_delta(doc, delta("scribe", 3, [{"op": "add", "path": "/state/facts/-",
                                                   "value": fact("new")}]),
                         approve=False, actor="ann", now=NOW)
    out = result.document
    assert out["metadata"]["revision"] == 4 and out["state"]["revision"] == 2
    assert out["history"][-1]["revision"] == 4 and out["history"][-1]["sections"] == ["state"]
    assert "approved_by" not in out["history"][-1]
    assert spec_digest(out) == spec_digest(doc)
    assert out["metadata"]["annotations"] == {"other-harness.example/x": "1"}
    assert doc["metadata"]["revision"] == 3  # the input is never mutated


def test_operations_outside_state_are_refused_without_bypass(data: Path) -> None:
    for path in ("/spec/permissions/shell", "/metadata/revision", "/history/-", "/oap",
                 "/stateful/x", "/"):
        with pytest.raises(OperationError):
            apply_delta(scribe(data), delta("scribe", 3, [{"op": "add", "path": path,
                                                           "value": "x"}]),
                        approve=True, actor="a", now=NOW)


def test_stale_revision_and_digest_are_refused(data: Path) -> None:
    with pytest.raises(Refused) as info:
        apply_delta(scribe(data), delta("scribe", 2, []), approve=True, actor="a", now=NOW)
    assert info.value.exit_code == 4 and "revision 2" in info.value.message
    d = delta("scribe", 3, [])
    d["target"]["digest"] = "sha256:" + "0" * 64
    with pytest.raises(Refused):
        apply_delta(scribe(data), d, approve=True, actor="a", now=NOW)


def test_writeback_modes(data: Path) -> None:
    doc = scribe(data)
    op = [{"op": "add", "path": "/state/facts/-", "value": fact("n")}]
    doc["spec"]["lifecycle"]["writeback"] = "off"
    with pytest.raises(Refused, match="off"):
        apply_delta(doc, delta("scribe", 3, op), approve=True, actor="a", now=NOW)
    doc["spec"]["lifecycle"]["writeback"] = "propose"
    with pytest.raises(Refused, match="approval"):
        apply_delta(doc, delta("scribe", 3, op), approve=False, actor="a", now=NOW)
    result = apply_delta(doc, delta("scribe", 3, op), approve=True, actor="ann", now=NOW)
    assert result.history_entry["approved_by"] == "ann"


def test_operations_are_all_or_nothing(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")
    before = path.read_bytes()
    d = delta("scribe", 3, [{"op": "add", "path": "/state/facts/-", "value": fact("ok")},
                            {"op": "replace", "path": "/state/facts/999", "value": fact("x")}])
    with pytest.raises(OperationError):
        apply_file(path, write_delta(ws, d), workspace=ws, approve=True, dry_run=False,
                   actor="a", now=NOW)
    assert path.read_bytes() == before


def test_a_crash_during_rename_leaves_the_original(ws: Path, data: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")
    before = path.read_bytes()

    def boom(*_: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(store.os, "replace", boom)
    d = delta("scribe", 3, [{"op": "add", "path": "/state/facts/-", "value": fact("n")}])
    with pytest.raises(OSError):
        apply_file(path, write_delta(ws, d), workspace=ws, approve=True, dry_run=False,
                   actor="a", now=NOW)
    assert path.read_bytes() == before
    assert not [p for p in ws.iterdir() if p.name.endswith(".tmp")]


def test_remove_of_a_missing_entry_is_a_warning(data: Path) -> None:
    result = apply_delta(scribe(data), delta("scribe", 3, [
        {"op": "remove", "path": "/state/facts/id:nope"}]), approve=True, actor="a", now=NOW)
    assert result.revision == 4 and "ignored" in result.warnings[0]


def test_retention_keeps_pinned_and_honours_the_cap(data: Path) -> None:
    ops = [{"op": "add", "path": "/state/facts/-",
            "value": fact(f"f{i}", learned_at=f"2026-02-0{i}T00:00:00Z")} for i in range(1, 6)]
    result = apply_delta(scribe(data), delta("scribe", 3, ops), approve=True, actor="a", now=NOW)
    ids = [f["id"] for f in result.document["state"]["facts"]]
    assert len(ids) == 3 and "fact-format" in ids  # the oldest entry is pinned and stays
    assert ids[1:] == ["f4", "f5"]
    assert any("evicted" in w for w in result.warnings)


def test_ttl_uses_learned_at_and_history_is_trimmed(data: Path) -> None:
    doc = scribe(data)
    doc["spec"]["lifecycle"]["retention"].update(fact_ttl_days=30, max_history=1)
    ops = [{"op": "add", "path": "/state/facts/-",
            "value": fact("old", learned_at="2025-01-01T00:00:00+02:00")}]
    result = apply_delta(doc, delta("scribe", 3, ops), approve=True, actor="a", now=NOW)
    assert [f["id"] for f in result.document["state"]["facts"]] == ["fact-format"]
    assert [h["revision"] for h in result.document["history"]] == [4]


# ---------------------------------------------------------------------------- E.6 defects


def test_e6_1_markdown_stays_markdown(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "notes.agent.md")
    outcome = apply_file(path, data / "notes.delta.yaml", workspace=ws, approve=True,
                         dry_run=False, actor="a", now=NOW)
    text = path.read_text()
    assert outcome.revision == 2 and text.startswith("---\n")
    assert text.endswith("\nYou take notes: decisions made, open questions, next steps.\n")
    assert "instructions" not in text.split("\n---\n")[0]
    assert validate_file(path).ok


@pytest.mark.parametrize("name", ["notes.agent.md", "notes.agent.json"])
def test_e6_2_first_append_creates_an_array(ws: Path, data: Path, name: str) -> None:
    path = copy_in(ws, data / name)
    apply_file(path, data / "notes.delta.yaml", workspace=ws, approve=True, dry_run=False,
               actor="a", now=NOW)
    state = load_oap(path).data["state"]
    assert state["facts"] == [{"id": "fact-first", "text": "Notes are kept in NOTES.md."}]


def test_e6_3_adding_an_existing_id_replaces_it(data: Path) -> None:
    ops = [{"op": "add", "path": "/state/facts/-",
            "value": {"id": "fact-format", "text": "updated", "pinned": True}}]
    result = apply_delta(scribe(data), delta("scribe", 3, ops), approve=True, actor="a", now=NOW)
    facts = result.document["state"]["facts"]
    assert facts == [{"id": "fact-format", "text": "updated", "pinned": True}]


def test_e6_5_state_updated_at_is_set_on_every_write(data: Path) -> None:
    result = apply_delta(scribe(data), delta("scribe", 3, []), approve=True, actor="a", now=NOW)
    assert result.document["state"]["updated_at"] == "2026-03-01T00:00:00Z"


def test_the_result_is_revalidated_before_writing(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")
    before = path.read_bytes()
    d = delta("scribe", 3, [{"op": "add", "path": "/state/facts/-", "value": {"id": "no-text"}}])
    with pytest.raises(Exception) as info:
        apply_file(path, write_delta(ws, d), workspace=ws, approve=True, dry_run=False,
                   actor="a", now=NOW)
    assert getattr(info.value, "code", "") == "OAP252"
    assert path.read_bytes() == before


# ---------------------------------------------------------------------------- queue


def test_proposals_are_queued_never_applied_and_risk_is_reins(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")  # writeback: auto
    outcome = apply_file(path, data / "scribe.delta.yaml", workspace=ws, approve=False,
                         dry_run=False, actor="a", now=NOW)
    assert outcome.status == "written"
    assert load_oap(path).data["spec"]["permissions"]["shell"] == "deny"
    (item,) = Queue.for_workspace(ws).items("pending")
    assert item["risk"] == "high" and item["declared_risk"] == "low"
    result = accept(ws, item["id"], actor="ann", now=NOW)
    doc = load_oap(path).data
    assert doc["spec"]["permissions"]["shell"] == "allow" and result["revision"] == 5
    assert doc["history"][-1]["sections"] == ["spec"]
    assert doc["history"][-1]["approved_by"] == "ann"
    assert Queue.for_workspace(ws).items("pending") == []


def test_a_stale_proposal_is_refused_and_declining_writes_nothing(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")
    apply_file(path, data / "scribe.delta.yaml", workspace=ws, approve=False, dry_run=False,
               actor="a", now=NOW)
    (item,) = Queue.for_workspace(ws).items("pending")
    text = path.read_text().replace("tone: plain", "tone: warm")
    path.write_text(text)
    with pytest.raises(Refused):
        accept(ws, item["id"], actor="ann", now=NOW)
    decline(ws, item["id"], actor="ann", now=NOW, reason="no")
    assert path.read_text() == text
    assert Queue.for_workspace(ws).items("declined")[0]["note"] == "no"


def test_propose_without_approval_queues_the_operations(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "notes.agent.md")
    before = path.read_bytes()
    outcome = apply_file(path, data / "notes.delta.yaml", workspace=ws, approve=False,
                         dry_run=False, actor="a", now=NOW)
    assert outcome.status == "queued" and path.read_bytes() == before
    (item,) = Queue.for_workspace(ws).items("pending")
    assert item["kind"] == "operations"
    accept(ws, item["id"], actor="ann", now=NOW)
    assert load_oap(path).data["metadata"]["revision"] == 2


def test_a_held_lock_refuses_the_write(ws: Path, data: Path) -> None:
    from filelock import FileLock

    path = copy_in(ws, data / "notes.agent.md")
    with FileLock(str(ws / f".{path.name}.lock")), pytest.raises(Refused), \
            store.profile_lock(path, timeout=0.01):
        pass
    assert not os.path.exists(ws / "d.delta.json")


def test_a_write_leaves_no_lock_file_beside_the_profile(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")
    before = sorted(p.name for p in ws.iterdir())
    d = delta("scribe", 3, [{"op": "add", "path": "/state/facts/-", "value": fact("new")}])
    apply_file(path, write_delta(ws, d), workspace=ws, approve=True, dry_run=False,
               actor="ann", now=NOW)
    assert load_oap(path).data["metadata"]["revision"] == 4
    assert sorted(p.name for p in ws.iterdir()) == sorted([*before, "d.delta.json"])


def test_the_lock_excludes_while_held_and_is_gone_after(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "notes.agent.md")
    lock = ws / f".{path.name}.lock"
    with store.profile_lock(path):
        assert lock.exists()
        with pytest.raises(Refused) as held, store.profile_lock(path, timeout=0.01):
            pass
    assert held.value.code == "OAP253" and not lock.exists()
    with store.profile_lock(path, timeout=0.01):  # free again, on a new file
        assert lock.exists()
    assert not lock.exists()


def test_annotations_round_trip_through_a_write(ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")
    apply_file(path, data / "scribe.delta.yaml", workspace=ws, approve=False, dry_run=False,
               actor="a", now=NOW)
    assert load_oap(path).data["metadata"]["annotations"] == {"other-harness.example/x": "1"}
    assert path.read_text().startswith("# A small profile")  # the header comment is kept


def test_id_pointers_address_entries_by_id(data: Path) -> None:
    ops = [{"op": "replace", "path": "/state/facts/id:fact-format/text", "value": "changed"},
           {"op": "remove", "path": "/state/facts/id:fact-format/pinned"}]
    result = apply_delta(scribe(data), delta("scribe", 3, ops), approve=True, actor="a", now=NOW)
    (entry,) = result.document["state"]["facts"]
    assert entry["text"] == "changed" and "pinned" not in entry
    with pytest.raises(OperationError):
        apply_delta(scribe(data), delta("scribe", 3, [
            {"op": "replace", "path": "/state/facts/id:nope", "value": fact("x")}]),
            approve=True, actor="a", now=NOW)


# -- writeback: propose holds every write, an empty delta included (L2-A6) -------------------


@pytest.mark.parametrize("ops", [[], None])
def test_propose_refuses_a_delta_without_operations_unapproved(data: Path, ops: Any) -> None:
    doc = scribe(data)
    doc["spec"]["lifecycle"]["writeback"] = "propose"
    empty = delta("scribe", 3, ops or [])
    if ops is None:
        del empty["operations"]
    with pytest.raises(Refused) as info:
        apply_delta(doc, empty, approve=False, actor="a", now=NOW)
    assert info.value.code == "OAP245"
    assert apply_delta(doc, empty, approve=True, actor="ann", now=NOW).revision == 4


def test_an_empty_delta_under_propose_is_queued_and_nothing_is_written(
        ws: Path, data: Path) -> None:
    path = copy_in(ws, data / "notes.agent.md")  # writeback: propose
    before = path.read_bytes()
    empty = {"oap": "1.0", "kind": "AgentStateDelta", "target": {"name": "notes",
                                                                 "revision": 1},
             "session": {"id": "sess-e"}, "summary": "Nothing learned.",
             "proposals": [{"path": "/spec/permissions/shell", "value": "allow",
                            "rationale": "faster", "risk": "low"}]}
    outcome = apply_file(path, write_delta(ws, empty), workspace=ws, approve=False,
                         dry_run=False, actor="a", now=NOW)
    assert outcome.status == "queued" and outcome.revision == 1
    assert path.read_bytes() == before  # no revision bump, no history entry
    kinds = sorted(i["kind"] for i in Queue.for_workspace(ws).items("pending"))
    assert kinds == ["operations", "proposal"]


@pytest.mark.parametrize("cap,status", [("propose", "queued"), ("off", None)])
def test_reins_policy_caps_the_profiles_writeback(ws: Path, data: Path, cap: str,
                                                  status: str | None) -> None:
    path = copy_in(ws, data / "scribe.agent.yaml")  # writeback: auto
    before = path.read_bytes()
    if status is None:
        with pytest.raises(Refused) as info:
            apply_file(path, data / "scribe.delta.yaml", workspace=ws, approve=True,
                       dry_run=False, actor="a", now=NOW, cap=cap)
        assert info.value.code == "OAP244"
    else:
        outcome = apply_file(path, data / "scribe.delta.yaml", workspace=ws, approve=False,
                             dry_run=False, actor="a", now=NOW, cap=cap)
        assert outcome.status == status
    assert path.read_bytes() == before
