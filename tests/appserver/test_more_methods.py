"""The app-server methods beyond threads and turns, driven by the official SDK, each answer
checked against Codex's own schema; and the coverage table of docs/app-server.md is the
one the code writes."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import yaml
from openai_codex.generated import v2_all as codex_types
from support import ROOT

from rein.appserver import coverage
from rein.appserver.methods import METHODS
from rein.protocol import requests
from rein.workers.compaction import SUMMARY_HEADER
from tests.appserver import codex_schema
from tests.appserver.codex_env import Recorded, client, off_codex, turn_notifications
from tests.appserver.serve import reply, workspace


def call(c: Any, method: str, params: dict[str, Any], model: str) -> Any:
    return c.request(method, params, response_model=getattr(codex_types, model))


def test_the_methods_an_integrator_meets_first(tmp_path: Path) -> None:
    root = workspace(tmp_path, [reply("one"), reply("two")])
    with (root / "rein.toml").open("a") as toml:
        toml.write('\n[policy]\ndeny_paths = [".git", ".rein", "secrets"]\n')
    (root / "src").mkdir()
    (root / "src" / "reader.py").write_text("")
    (root / "src" / "other.txt").write_text("")
    (root / "secrets").mkdir()  # a file no turn may read: its name is not shown either
    (root / "secrets" / "reader.key").write_text("")
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
    answered = {"initialize", *METHODS}
    # each method rein answers: in Codex's list, in the schema rein publishes, and driven
    # by the test the table names
    assert answered <= set(coverage.CODEX_METHODS)
    assert set(requests.CLIENT_REQUESTS) == answered == set(coverage.PINNED)
    for method, test in coverage.PINNED.items():
        text = (ROOT / "tests" / "appserver" / test).read_text()
        sdk = method.replace("/", "_")  # the SDK's method (thread_compact: no _start)
        assert any(name in text for name in (f'"{method}"', f"c.{sdk}(",
                                             f"c.{sdk.removesuffix('_start')}(")), method


def test_every_unimplemented_method_is_refused_with_its_code(tmp_path: Path) -> None:
    """Each of Codex's methods rein does not answer, sent on one connection: -32601 and
    THREAD009, every one; and the server reads on."""
    root = workspace(tmp_path, [])
    refused = [m for m in coverage.CODEX_METHODS if m != "initialize" and m not in METHODS]
    seen = Recorded()
    with client(root, lambda m, p: {}, seen) as c:
        c.initialize()
        for method in refused:
            with contextlib.suppress(Exception):  # the answers are read from the wire
                c._request_raw(method, {})
        assert c.model_list().data  # still serving
    errors = {seen.sent[m["id"]]: m["error"] for m in seen.wire if "error" in m}
    assert sorted(errors) == sorted(refused)
    assert {(e["code"], e["data"]["code"]) for e in errors.values()} == {(-32601, "THREAD009")}


PRE_COMPACT = """[hooks.keep]
command = "sh {root}/keep.sh"
events = ["PreCompact"]

[hooks.hello]
command = "true"
events = ["SessionStart", "SessionEnd"]
"""
KEEP = """[ -e {root}/block ] && {{ echo "keep it whole" >&2; exit 2; }}
cat > {root}/compacted.json
"""


def test_hooks_mcp_servers_compaction_and_review(tmp_path: Path) -> None:
    """hooks/list shows rein.toml's hooks in Codex's shape; mcpServerStatus/list a thread's
    servers (none here); thread/compact/start runs PreCompact (a block refuses it), then a
    turn whose summary the next turn carries in place of the earlier ones; review/start is
    an inline turn of the thread whose brief names the target."""
    (tmp_path / "ws").mkdir()
    root = workspace(tmp_path / "ws", [reply("one"), reply("the summary"), reply("two"),
                                       reply("no findings")])
    (root / "keep.sh").write_text(KEEP.format(root=root))
    user = tmp_path / "user.toml"
    user.write_text(PRE_COMPACT.format(root=root))
    seen = Recorded()
    with client(root, lambda m, p: {"decision": "accept"}, seen,
                env={"REIN_USER_CONFIG": str(user)}) as c:
        c.initialize()
        hooks = call(c, "hooks/list", {"cwds": [str(root)]}, "HooksListResponse")
        thread = c.thread_start({}).thread.id
        servers = call(c, "mcpServerStatus/list", {"threadId": thread},
                       "ListMcpServerStatusResponse")
        list(turn_notifications(c, c.turn_start(thread, "first").turn.id))
        (root / "block").write_text("")
        with contextlib.suppress(Exception):  # the error is read from the wire below
            c.thread_compact(thread)
        blocked = next(m["error"] for m in seen.wire if "error" in m)
        (root / "block").unlink()
        c.thread_compact(thread)
        latest = call(c, "thread/turns/list", {"threadId": thread, "sortDirection": "desc",
                                               "limit": 1}, "ThreadTurnsListResponse")
        compaction = list(turn_notifications(c, latest.data[0].id))
        second = c.turn_start(thread, "second").turn.id
        list(turn_notifications(c, second))
        review = c.request("review/start", {"threadId": thread, "target": {
            "type": "baseBranch", "branch": "main"}},
            response_model=codex_types.ReviewStartResponse)
        reviewed = list(turn_notifications(c, review.turn.id))

    assert off_codex(seen) == []
    [entry] = hooks.data
    assert [(h.root.key, h.root.event_name.value, h.root.command) for h in entry.hooks] == [
        ("keep:PreCompact", "preCompact", f"sh {root}/keep.sh"),
        ("hello:SessionStart", "sessionStart", "true"),
        ("hello:SessionEnd", "sessionEnd", "true")]
    assert servers.data == []
    assert blocked["data"]["code"] == "THREAD011"
    assert '"trigger": "manual"' in (root / "compacted.json").read_text()
    assert compaction[-1].payload.turn.status.value == "completed"
    graph = yaml.safe_load(next((root / ".rein" / "threads" / thread).glob(
        f"{second}.agraph.yaml")).read_text())
    carried = graph["nodes"]["turn"]["x-rein-transcript"]
    assert carried == [{"role": "user", "content": SUMMARY_HEADER + "the summary"}]
    assert review.review_thread_id == thread
    assert reviewed[-1].payload.turn.status.value == "completed"
    brief = [i for n in reviewed if n.method == "item/completed"
             for i in [n.payload.item.root] if i.type == "userMessage"]
    assert "git diff main...HEAD" in brief[0].content[0].root.text
