"""No store write keeps a known secret, whichever table it lands in (every store kind)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.ids import ApprovalId, NodeKey, RunId
from rein.core.states import ApprovalKind, ApprovalStatus, NodeStatus, RunStatus, TurnStatus
from rein.formats.redaction import Secrets, known_secrets
from rein.store.base import ApprovalRow, DriverTurn, NodeRow, RunRow, Transition

# The event an answer is written with: the caller names it (the engine: approvals).
ANSWERED: dict[str, Any] = {"event_type": "approval/answered",
                            "payload": {"status": "answered"}}

T = "2026-01-01T00:00:00Z"
GH = "ghp_lEaKmE0123456789abcdef"  # a REIN_SECRET_ value
KEY = "sk-proj-NotARealKey-0123456789"  # a provider key
CUSTOM = "custom-key-9f8e7d6c5b"  # the key of a provider with its own api_key_env


@pytest.fixture
def store(any_store: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    any_store.know(known_secrets({"REIN_SECRET_GITHUB_TOKEN": GH, "OPENAI_API_KEY": KEY,
                                  "LOCAL_KEY": CUSTOM}, ["LOCAL_KEY"]))
    return any_store


def leaky(*extra: str) -> dict[str, Any]:
    return {"text": f"token {GH} and key {KEY}", "nested": [{"k": KEY}, CUSTOM, *extra],
            KEY: "as a key"}


def raw_rows(store: Any) -> str:
    """Every stored row of every table, as text: what a person with the database file sees."""
    out = []
    for table in ("runs", "events", "nodes", "approvals", "driver_turns"):
        out += [repr(r) for r in store._x(f"SELECT * FROM {table}").fetchall()]
    return "\n".join(out)


def test_every_table_is_written_redacted(store: Any) -> None:
    run = RunRow(run_id=RunId("r1"), graph_id="g", graph_path="g.agraph.yaml",
                 graph_digest="sha256-x=", status=RunStatus.RUNNING, started_at=T,
                 binding={"params": leaky()}, summary={"outputs": leaky()})
    started = store.create_run(run, event_type="run/started", payload=leaky())
    node = NodeRow(run_id=RunId("r1"), node_key=NodeKey("a"), node_id="a", scope_path="",
                   type="task", status=NodeStatus.SUCCEEDED,
                   record={"outputs": leaky(), "attempts": [{"success": {"results": [
                       {"id": "c", "evidence": f"stdout: {KEY}"}]}}]})
    ask = ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=RunId("r1"), key="gate:g",
                      kind=ApprovalKind.GATE, status=ApprovalStatus.PENDING, digest="d",
                      request={"material": leaky()}, created_at=T)
    event = store.transition(RunId("r1"), "node/finished", leaky(), T,
                             Transition(node=node, summary={"outputs": leaky()},
                                        binding={"params": leaky()}, approval=ask))
    answered, _ = store.answer_approval("apv-1", ApprovalStatus.ACCEPTED,
                                        {"note": f"ok {GH}"}, T, **ANSWERED)
    turn = DriverTurn(token="tok", run_id=RunId("r1"), root_run_id=RunId("r1"),
                      node_key="a", attempt=1, kind="task", status=TurnStatus.PENDING,
                      instruction={"inputs": leaky()}, baseline={"paths": {CUSTOM: "x"}},
                      created_at=T)
    stored, _ = store.add_driver_turn(turn, event_type="driver/instructed", payload=leaky())
    envelope = {"token": "tok", "outputs": leaky(), "message": f"used {KEY}"}
    done, _ = store.answer_driver_turn("tok", {"envelope": envelope, "checks": {}}, T,
                                       event_type="driver/answered", payload=leaky())
    text = raw_rows(store)
    for secret in (GH, KEY, CUSTOM):
        assert secret not in text
    assert "[secret:github_token]" in text and "[secret:OPENAI_API_KEY]" in text
    assert "[secret:LOCAL_KEY]" in text
    # What a write returns (listeners print it, the driver shows it) is what was stored.
    for value in (started.payload, event.payload, answered.answer, stored.instruction,
                  stored.baseline, done.answer):
        assert not any(s in repr(value) for s in (GH, KEY, CUSTOM))
    assert done.answer == store.driver_turn("tok").answer


def test_the_same_envelope_resent_is_recognised_after_redaction(store: Any) -> None:
    store.create_run(RunRow(run_id=RunId("r1"), graph_id="g", graph_path="g",
                            graph_digest="d", status=RunStatus.RUNNING, started_at=T),
                     event_type="run/started", payload={})
    turn = DriverTurn(token="tok", run_id=RunId("r1"), root_run_id=RunId("r1"), node_key="a",
                      attempt=1, kind="task", status=TurnStatus.PENDING, instruction={},
                      baseline={}, created_at=T)
    store.add_driver_turn(turn, event_type="driver/instructed", payload={})
    answer = {"envelope": {"token": "tok", "outputs": {"x": KEY}}, "checks": {}}
    _, changed = store.answer_driver_turn("tok", answer, T, event_type="driver/answered",
                                          payload={})
    assert changed
    _, again = store.answer_driver_turn("tok", answer, T, event_type="driver/answered",
                                        payload={})
    assert again is False


def test_a_store_knows_the_process_environment_from_the_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.store.sqlite import SQLiteStore

    monkeypatch.setenv("REIN_SECRET_DEPLOY", "deploy-secret-value")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-notreal-000111")
    store = SQLiteStore(tmp_path / "rein.db")
    try:
        event = store.create_run(
            RunRow(run_id=RunId("r1"), graph_id="g", graph_path="g", graph_digest="d",
                   status=RunStatus.RUNNING, started_at=T), event_type="run/started",
            payload={"a": "deploy-secret-value", "b": "sk-ant-notreal-000111"})
        assert event.payload == {"a": "[secret:deploy]", "b": "[secret:ANTHROPIC_API_KEY]"}
    finally:
        store.close()


def test_open_store_learns_the_key_variables_rein_toml_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rein.store.open import open_store

    for name in ("HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "home"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("MY_GATEWAY_KEY", CUSTOM)
    (tmp_path / "rein.toml").write_text(
        '[providers.gw]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "MY_GATEWAY_KEY"\n')
    store = open_store(tmp_path)
    try:
        assert store.redact({"x": CUSTOM}) == {"x": "[secret:MY_GATEWAY_KEY]"}
    finally:
        store.close()


def test_secrets_merge_longest_first() -> None:
    merged = Secrets.of({"short": "abcd"}) | Secrets.of({"long": "abcdefgh"})
    assert merged.text("abcdefgh abcd") == "[secret:long] [secret:short]"
