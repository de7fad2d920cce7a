"""The app-server methods beyond threads and turns, driven by the official SDK, each answer
checked against Codex's own schema; and the coverage table of docs/app-server.md is the
one the code writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openai_codex.generated import v2_all as codex_types
from support import ROOT

from rein.appserver import coverage
from tests.appserver import codex_schema
from tests.appserver.codex_env import Recorded, client, off_codex, turn_notifications
from tests.appserver.serve import reply, workspace


def call(c: Any, method: str, params: dict[str, Any], model: str) -> Any:
    return c.request(method, params, response_model=getattr(codex_types, model))


def test_the_methods_an_integrator_meets_first(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("one"), reply("two")])
    (root / "src").mkdir()
    (root / "src" / "reader.py").write_text("")
    (root / "src" / "other.txt").write_text("")
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, seen) as c:
        c.initialize()
        models = c.model_list()
        account = c.account_read()
        thread = c.thread_start({}).thread.id
        for text in ("first", "second"):
            turn = c.turn_start(thread, text).turn.id
            list(turn_notifications(c, turn))
        loaded = call(c, "thread/loaded/list", {}, "ThreadLoadedListResponse")
        page = call(c, "thread/turns/list", {"threadId": thread, "limit": 1,
                                             "sortDirection": "desc"},
                    "ThreadTurnsListResponse")
        rest = call(c, "thread/turns/list", {"threadId": thread, "limit": 1,
                                             "sortDirection": "desc",
                                             "cursor": page.next_cursor},
                    "ThreadTurnsListResponse")
        config = call(c, "config/read", {}, "ConfigReadResponse")
        skills = call(c, "skills/list", {"cwds": [str(root)]}, "SkillsListResponse")
        # (a method of Codex's v1 surface: the SDK has no model for it)
        found = c._request_raw("fuzzyFileSearch", {"query": "rdr", "roots": [str(root)]})
        gone = call(c, "thread/unsubscribe", {"threadId": thread},
                    "ThreadUnsubscribeResponse")
        again = call(c, "thread/unsubscribe", {"threadId": thread},
                     "ThreadUnsubscribeResponse")
        after = call(c, "thread/loaded/list", {}, "ThreadLoadedListResponse")

    assert off_codex(seen) == []
    assert [(m.model, m.is_default) for m in models.data] == [("scripted-1", True)]
    assert account.account is None and account.requires_openai_auth is False
    assert loaded.data == [thread] and after.data == [thread]  # loaded, as in Codex
    assert gone.status.value == "unsubscribed" and again.status.value == "notSubscribed"
    texts = [[i.root.text for i in t.items if i.root.type == "agentMessage"]
             for t in (*page.data, *rest.data)]
    assert texts == [["two"], ["one"]] and rest.next_cursor is None
    assert config.config.model == "scripted-1"
    assert [(e.cwd, e.skills) for e in skills.data] == [(str(root), [])]
    assert [f["path"] for f in found["files"]] == [str(Path("src") / "reader.py")]


def test_an_unimplemented_method_is_refused_with_its_code(tmp_path: Path) -> None:
    root = workspace(tmp_path, [])
    seen = Recorded()
    with client(root, lambda m, p: {}, seen) as c:
        c.initialize()
        try:
            c.request("plugin/list", {}, response_model=codex_types.PluginListResponse)
        except Exception as exc:  # noqa: BLE001 - the SDK's error, read below
            refused = exc
    assert "method not implemented by rein app-server: plugin/list" in str(refused)
    error = next(m["error"] for m in seen.wire if "error" in m)
    assert error["code"] == -32601 and error["data"]["code"] == "THREAD009"


def test_the_coverage_table_is_current_and_lists_codex_s_methods() -> None:
    assert coverage.CODEX_METHODS == codex_schema.client_methods()
    doc = (ROOT / "docs" / "app-server.md").read_text()
    assert coverage.table() in doc, "run: python -m rein.appserver.coverage"
