"""Delta generation (L2-G1..G5): valid deltas, the instantiated revision, no writes,
contract changes only as proposals, operations only from evidence, secrets redacted."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from profile_env import data_fixture, isolated_env_fixture, ws_fixture  # noqa: F401
from support import shared_path

from rein.cli import main
from rein.config import load_config
from rein.config.trusting import trust_project
from rein.formats.oap import load_oap
from rein.formats.oap.schema import schema_for
from rein.profiles.generate import (
    Evidence,
    Forget,
    Learned,
    Proposal,
    SessionInfo,
    ThreadUpdate,
    draft_delta,
    propose_delta,
    slug_id,
)
from rein.profiles.records import ProfileError
from rein.profiles.resolve import ResolvedProfile, resolve_profile
from rein.profiles.writeback import apply_delta

pytestmark = pytest.mark.usefixtures("isolated_env")
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
USER = (Evidence(kind="user_statement", ref="turn 4", quote="we always squash merges"),)
FILE = (Evidence(kind="file", ref=".github/workflows/ci.yml"),)
OAP_VALIDATE = Path(sys.executable).parent / "oap-validate"


def resolved_copy(ws: Path, source: Path) -> tuple[Path, ResolvedProfile]:
    path = Path(shutil.copy(source, ws / source.name))
    return path, resolve_profile(path, workspace=ws, config=load_config(ws))


def schema_valid(delta: dict[str, Any]) -> None:
    """The installed package's delta schema, through a validator rein does not use."""
    jsonschema.Draft202012Validator(schema_for("AgentStateDelta")).validate(delta)


def test_target_is_the_instantiated_revision_and_nothing_is_written(ws: Path,
                                                                    data: Path) -> None:
    path, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns,
              sorted(p.name for p in ws.rglob("*")))
    delta = propose_delta(resolved, session=SessionInfo(id="s-1", tool_calls=3, cost_usd=0.5),
                          learned=[Learned(text="Release notes use past tense.",
                                           evidence=USER)], now=NOW)
    schema_valid(delta)
    assert delta["target"] == {"name": "scribe", "revision": 3, "digest": resolved.digest}
    assert delta["session"] == {"id": "s-1", "harness": "rein", "tool_calls": 3,
                                "cost_usd": 0.5}
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns,
             sorted(p.name for p in ws.rglob("*")))
    assert after == before  # L2-G3: not a byte, not a lock file, not a queue


def test_operations_come_from_evidence_and_say_where(ws: Path, data: Path) -> None:
    _, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    draft = draft_delta(resolved, session="s-2", now=NOW, learned=[
        Learned(text="We always squash merges.", evidence=USER, confidence=0.9),
        Learned(text="The team likes emoji.", evidence=()),
        Learned(text="Answer in English.", evidence=FILE, collection="preferences")],
        working_context="Preparing 2.0.", record_metrics=False)
    ops = draft.delta["operations"]
    assert [(o["op"], o["path"]) for o in ops] == [("add", "/state/facts/-"),
                                                  ("add", "/state/preferences/-")]
    assert ops[0]["value"] == {"id": "fact-we-always-squash-merges",
                               "text": "We always squash merges.",
                               "source": "user statement: turn 4",
                               "learned_at": "2026-03-01T12:00:00Z", "confidence": 0.9}
    assert ops[0]["reason"] == '"we always squash merges" (user statement: turn 4)'
    assert ops[1]["value"]["source"] == "file: .github/workflows/ci.yml"
    assert draft.skipped == ("facts 'The team likes emoji.': no evidence; not written (L2-G5)",
                             "working context: no evidence; not written (L2-G5)")


def test_relearning_updates_in_place_and_keeps_pinning(ws: Path, data: Path) -> None:
    _, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    existing = resolved.state["facts"][0]
    delta = propose_delta(resolved, session="s-3", now=NOW, record_metrics=False, learned=[
        Learned(text=existing["text"].upper(), evidence=FILE),  # same text, other case
        Learned(text="Fresh fact.", evidence=FILE, id="fact-fresh")])
    ops = delta["operations"]
    assert ops[0]["op"] == "replace" and ops[0]["path"] == "/state/facts/id:fact-format"
    assert ops[0]["value"]["pinned"] is True
    assert ops[1]["path"] == "/state/facts/-" and ops[1]["value"]["id"] == "fact-fresh"
    assert slug_id("fact", "Éclair & co: 100% sure!") == "fact-clair-co-100-sure"
    assert len(slug_id("fact", "word " * 40)) <= 48


def test_contract_changes_are_proposals_with_reins_risk(ws: Path, data: Path) -> None:
    _, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    delta = propose_delta(resolved, session="s-4", now=NOW, record_metrics=False, proposals=[
        Proposal(path="/spec/tools/allow", value=["read", "shell"], rationale="run tests"),
        Proposal(path="/metadata/tags", value=["docs"], rationale="findability")])
    assert "operations" not in delta
    assert [(p["path"], p["risk"]) for p in delta["proposals"]] == [
        ("/spec/tools/allow", "high"), ("/metadata/tags", "low")]
    for bad in ("/state/facts/-", "/history/-", "/oap"):
        with pytest.raises(ProfileError, match="L2-G4"):
            propose_delta(resolved, session="s", proposals=[Proposal(path=bad, value=1,
                                                                     rationale="x")])


def test_threads_forget_summary_and_metrics(ws: Path, data: Path) -> None:
    _, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    draft = draft_delta(
        resolved, now=NOW,
        session=SessionInfo(id="s-5", ended_at=NOW, tool_calls=4, cost_usd=0.25),
        threads=[ThreadUpdate(title="Changelog for 2.0", status="blocked", evidence=USER,
                              refs=("docs/releases/2.0.md",))],
        forget=[Forget(collection="facts", id="fact-format", evidence=USER),
                Forget(collection="facts", id="fact-missing", evidence=USER)],
        working_context="Cutting 2.0.", working_context_evidence=USER)
    ops = {o["path"]: o for o in draft.delta["operations"]}
    thread = ops["/state/open_threads/-"]["value"]
    assert thread["id"] == "thread-changelog-for-2-0" and thread["status"] == "blocked"
    assert thread["opened_at"] == "2026-03-01T12:00:00Z"
    assert ops["/state/facts/id:fact-format"]["op"] == "remove"
    assert ops["/state/summary"] == {"op": "replace", "path": "/state/summary",
                                     "value": "Cutting 2.0.", "reason":
                                     '"we always squash merges" (user statement: turn 4)'}
    assert ops["/state/metrics"]["value"] == {"sessions": 1,
                                              "last_session_at": "2026-03-01T12:00:00Z",
                                              "total_tool_calls": 4, "total_cost_usd": 0.25}
    assert draft.skipped == ("forget facts/fact-missing: no such entry",)


def test_an_id_holding_a_slash_is_one_pointer_token(ws: Path, data: Path) -> None:
    path = ws / "scribe.agent.yaml"
    path.write_text((data / "scribe.agent.yaml").read_text().replace("id: fact-format",
                                                                     "id: docs/format~1"))
    resolved = resolve_profile(path, workspace=ws, config=load_config(ws))
    fact = resolved.state["facts"][0]
    relearned = propose_delta(resolved, session="s-7", now=NOW, record_metrics=False,
                              learned=[Learned(text=fact["text"], evidence=FILE)])
    assert relearned["operations"][0]["path"] == "/state/facts/id:docs~1format~01"
    forgotten = propose_delta(resolved, session="s-8", now=NOW, record_metrics=False,
                              forget=[Forget(collection="facts", id="docs/format~1",
                                             evidence=USER)])
    assert forgotten["operations"][0]["path"] == "/state/facts/id:docs~1format~01"
    result = apply_delta(load_oap(path).data, forgotten, approve=True, actor="a", now=NOW)
    assert result.warnings == () and result.document["state"]["facts"] == []


def test_secrets_are_redacted_from_every_value(ws: Path, data: Path) -> None:
    _, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    key = "sk-" + "a1B2" * 8
    delta = propose_delta(resolved, session="s-6", now=NOW, record_metrics=False,
                          secrets={"DEPLOY_TOKEN": "hunter2-deploy"},
                          learned=[Learned(text=f"Deploys use hunter2-deploy and {key}.",
                                           evidence=(Evidence(kind="tool_result",
                                                              ref="call 3", quote=key),))],
                          summary=f"found {key}")
    text = json.dumps(delta)
    assert key not in text and "hunter2-deploy" not in text
    assert delta["operations"][0]["value"]["text"] == (
        "Deploys use [secret:DEPLOY_TOKEN] and [redacted].")
    assert delta["summary"] == "found [redacted]"


def test_an_invalid_result_is_refused_with_the_pointer(ws: Path, data: Path) -> None:
    _, resolved = resolved_copy(ws, data / "scribe.agent.yaml")
    with pytest.raises(ProfileError) as err:
        propose_delta(resolved, session="s-7", learned=[Learned(text="x" * 4001,
                                                                evidence=USER)])
    assert err.value.code == "OAP277"
    assert "/state/facts/1/text" in err.value.message  # the new entry, after the pinned one


@pytest.mark.skipif(not OAP_VALIDATE.exists(), reason="oap-validate is not installed")
def test_generate_apply_validate_round_trip_on_markdown(ws: Path, data: Path) -> None:
    path, _ = resolved_copy(ws, data / "notes.agent.md")
    findings = ws / "findings.json"
    findings.write_text(json.dumps({
        "session": {"id": "s-8", "outcome": "completed", "tool_calls": 2},
        "summary": "Learned the naming rule.",
        "learned": [{"text": "Notes are named by date.",
                     "evidence": [{"kind": "user_statement", "ref": "turn 2"}]}],
        "changes": [{"path": "/spec/permissions/shell", "value": "allow",
                     "rationale": "to run the formatter"}]}))
    out = ws / "s-8.delta.yaml"
    assert main(["profile", "propose", str(path), str(findings), "-o", str(out),
                 "--workspace", str(ws)]) == 0
    assert subprocess.run([str(OAP_VALIDATE), str(out)], check=False, capture_output=True).returncode == 0
    before = json.loads(_json(["profile", "show", str(path), "--json", "--workspace",
                               str(ws)]))["revision"]
    assert main(["profile", "apply", str(path), str(out), "--approve", "--workspace",
                 str(ws)]) == 0
    assert path.read_text().startswith("---\n")  # still Markdown
    checked = subprocess.run([str(OAP_VALIDATE), str(path)], check=False, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
    shown = json.loads(_json(["profile", "show", str(path), "--json", "--workspace", str(ws)]))
    assert shown["revision"] == before + 1
    facts = shown["document"]["state"]["facts"]
    assert facts[-1]["id"] == "fact-notes-are-named-by-date"
    queued = json.loads(_json(["profile", "proposals", "list", "--json", "--workspace",
                               str(ws)]))["proposals"]
    assert [(q["path"], q["risk"]) for q in queued] == [("/spec/permissions/shell", "high")]
    # The same delta again targets a revision the profile has left: refused, not re-applied.
    assert main(["profile", "apply", str(path), str(out), "--approve", "--workspace",
                 str(ws)]) == 4


@pytest.mark.shared
@pytest.mark.skipif(not OAP_VALIDATE.exists(), reason="oap-validate is not installed")
def test_round_trip_on_the_official_code_reviewer(ws: Path, shared_dir: Path) -> None:
    (ws / "rein.toml").write_text('[hooks.redact-secrets]\ncommand = ["true"]\n')
    trust_project(ws)
    path, resolved = resolved_copy(ws, shared_path("oap-examples", "code-reviewer.agent.yaml"))
    thread = resolved.state["open_threads"][0]
    delta = propose_delta(resolved, session="s-9", now=NOW, learned=[
        Learned(text="Reviews cite the CI job that failed.", evidence=FILE)],
        threads=[ThreadUpdate(id=thread["id"], title=thread["title"], status="done",
                              evidence=(Evidence(kind="thread_status", ref="turn 7"),))])
    out = ws / "s-9.delta.json"
    out.write_text(json.dumps(delta))
    assert subprocess.run([str(OAP_VALIDATE), str(out)], check=False, capture_output=True).returncode == 0
    assert main(["profile", "apply", str(path), str(out), "--approve", "--workspace",
                 str(ws)]) == 0
    result = subprocess.run([str(OAP_VALIDATE), str(path)], check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    # The reference applicator accepts rein's delta too (on a fresh copy).
    fresh = ws / "fresh" / path.name
    fresh.parent.mkdir()
    shutil.copy(shared_path("oap-examples", "code-reviewer.agent.yaml"), fresh)
    ref = subprocess.run([str(OAP_VALIDATE.parent / "oap-apply"), "--approve", "--dry-run",
                          str(fresh), str(out)], check=False, capture_output=True, text=True)
    assert ref.returncode == 0, ref.stderr


def test_cli_refuses_to_write_over_the_profile_and_reports_bad_findings(
        ws: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = resolved_copy(ws, data / "scribe.agent.yaml")
    findings = ws / "f.json"
    findings.write_text(json.dumps({"session": {"id": "s"}}))
    assert main(["profile", "propose", str(path), str(findings), "-o", str(path),
                 "--workspace", str(ws)]) == 64
    findings.write_text(json.dumps({"session": {"id": "s"},
                                    "learned": [{"text": "no evidence key"}]}))
    assert main(["profile", "propose", str(path), str(findings), "--workspace", str(ws)]) == 1
    assert "/learned/0" in capsys.readouterr().err
    findings.write_text(json.dumps({"session": {"id": "s"}, "changes": [
        {"path": "/spec/model/id", "value": "m"}]}))
    assert main(["profile", "propose", str(path), str(findings), "--workspace", str(ws)]) == 1
    assert "needs a rationale" in capsys.readouterr().err


def _json(argv: list[str]) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return buffer.getvalue()
