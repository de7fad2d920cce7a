"""The client requests rein's app-server implements, with Codex's names and shapes.

Each handler reads its params, calls the session runtime, and returns the result object;
notifications that follow a result (``thread/started``, ``thread/archived``, ...) are sent
after it. A method Codex defines and rein does not implement is answered with an error that
names it (:mod:`rein.appserver.server`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from rein.appserver import wire
from rein.appserver.command_exec import command_exec
from rein.appserver.handling import Connection
from rein.appserver.more_methods import METHODS as MORE
from rein.appserver.wire import MethodError
from rein.errors import ConfigError
from rein.protocol import threads
from rein.protocol.messages import Notification

if TYPE_CHECKING:
    from rein.engine.service import ThreadRow
    from rein.protocol.turns import TurnRun


Handler = Callable[[Connection, Mapping[str, Any]], Awaitable[Any]]


def _thread_id(params: Mapping[str, Any]) -> str:
    value = params.get("threadId")
    if not isinstance(value, str) or not value:
        raise MethodError(wire.INVALID_PARAMS, "threadId is required")
    return value


def _load(c: Connection, thread_id: str) -> None:
    c.loaded[thread_id] = None
    c.unsubscribed.discard(thread_id)


def _session(c: Connection, row: ThreadRow) -> dict[str, Any]:
    """The result of thread/start, thread/resume and thread/fork."""
    _load(c, row.thread_id)
    d = row.data
    return {"thread": threads.to_json(c.harness, row, include_turns=True),
            "model": d.get("model") or "", "modelProvider": d.get("modelProvider") or "rein",
            "cwd": d["cwd"], "approvalPolicy": d["approvalPolicy"],
            "approvalsReviewer": "user", "sandbox": d["sandbox"]}


def _started(c: Connection, row: ThreadRow) -> None:
    thread = threads.to_json(c.harness, row)
    c.then(lambda: c.notify(Notification(method="thread/started", params={"thread": thread})))


def _durable(method: str, params: Mapping[str, Any]) -> None:
    # Every rein thread is in the store: it is what a resume or another process reads.
    if params.get("ephemeral"):
        raise ConfigError(f"{method} ephemeral is not supported: every rein thread is "
                          "durable (a turn is resumable from the store)", code="THREAD007",
                          hint="leave ephemeral out; archive the thread when done with it")


async def thread_start(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    _durable("thread/start", params)
    row = c.harness.sessions.start_thread(
        cwd=params.get("cwd"), sandbox=params.get("sandbox"),
        approval_policy=params.get("approvalPolicy"),
        profile=(params.get("config") or {}).get("rein.profile")
        if isinstance(params.get("config"), Mapping) else None)
    _started(c, row)
    return _session(c, row)


async def thread_resume(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    sessions = c.harness.sessions
    row = sessions.thread(_thread_id(params))
    result = _session(c, row)
    turn = sessions.reopen(row.thread_id)
    if turn is not None and not any(t.turn is turn for t in c.questions.values()):
        c.then(lambda: c.run_turn(turn, replay=False))
    return result


async def thread_fork(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    _durable("thread/fork", params)
    row = c.harness.sessions.fork(_thread_id(params))
    _started(c, row)
    return _session(c, row)


async def thread_read(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    row = c.harness.sessions.thread(_thread_id(params))
    _load(c, row.thread_id)
    return {"thread": threads.to_json(c.harness, row,
                                      include_turns=bool(params.get("includeTurns")))}


async def thread_list(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    sessions = c.harness.sessions
    rows = sessions.threads(archived=bool(params.get("archived")))
    term = params.get("searchTerm")
    if isinstance(term, str) and term:
        rows = [r for r in rows if term.lower() in (r.data.get("preview") or "").lower()
                or term.lower() in (r.data.get("name") or "").lower()]
    cwd = params.get("cwd")
    if isinstance(cwd, str) and cwd:
        rows = [r for r in rows if r.data.get("cwd") == cwd]
    start = int(params["cursor"]) if str(params.get("cursor") or "").isdigit() else 0
    given = params.get("limit")
    limit = given if isinstance(given, int) else 50
    page = rows[start:start + max(1, limit)]
    more = start + len(page) < len(rows)
    return {"data": [threads.to_json(c.harness, r) for r in page],
            "nextCursor": str(start + len(page)) if more else None}


async def thread_archive(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    row = c.harness.sessions.update(_thread_id(params), archived=True)
    c.then(lambda: c.notify(Notification(method="thread/archived",
                                         params={"threadId": row.thread_id})))
    return {}


async def thread_unarchive(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    row = c.harness.sessions.update(_thread_id(params), archived=False)
    c.then(lambda: c.notify(Notification(method="thread/unarchived",
                                         params={"threadId": row.thread_id})))
    return {"thread": threads.to_json(c.harness, row)}


async def thread_name_set(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    row = c.harness.sessions.update(_thread_id(params),
                                    name=name if isinstance(name, str) else None)
    c.then(lambda: c.notify(Notification(method="thread/name/updated", params={
        "threadId": row.thread_id, "threadName": row.data.get("name")})))
    return {}


# The turn/start overrides Codex defines that rein cannot honour: refused by name, never
# accepted without effect. (clientUserMessageId, parentTurnId, rootTurnId and turnTrigger
# are labels that change nothing, and are accepted.)
NOT_HONOURED = {
    "effort": "rein's model requests carry no reasoning effort",
    "summary": "rein's model requests ask for no reasoning summary",
    "outputSchema": "a conversation turn answers with its reply output; no schema applies",
    "personality": "rein has no personalities",
    "serviceTier": "the model is chosen by tier in rein.toml: name it with model",
    "serviceTierForTurn": "the model is chosen by tier in rein.toml: name it with model",
    "toolOutput": "rein has no tool output settings",
    "disabledPluginIds": "rein has no plugins",
}


def _refused_overrides(params: Mapping[str, Any]) -> None:
    for name, why in NOT_HONOURED.items():
        if params.get(name) not in (None, []):
            raise ConfigError(f"turn/start {name} is not supported: {why}", code="THREAD007",
                              hint=f"leave {name} out")
    reviewer = params.get("approvalsReviewer")
    if reviewer not in (None, "user"):
        raise ConfigError(f"turn/start approvalsReviewer {reviewer!r} is not supported: "
                          "rein has no automatic reviewer", code="THREAD007",
                          hint="leave approvalsReviewer out, or send user")


def _optional_str(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is not None and not isinstance(value, str):
        raise MethodError(wire.INVALID_PARAMS, f"{name} must be a string")
    return value


async def turn_start(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    items = params.get("input")
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise MethodError(wire.INVALID_PARAMS, "input must be a list of input items")
    _refused_overrides(params)
    turn = await c.harness.sessions.begin_turn(
        _thread_id(params), items, sandbox=params.get("sandboxPolicy"),
        approval_policy=params.get("approvalPolicy"), model=_optional_str(params, "model"),
        cwd=_optional_str(params, "cwd"))
    c.then(lambda: c.run_turn(turn))
    return {"turn": {"id": turn.turn_id, "items": [], "status": "inProgress"}}


def _active(c: Connection, params: Mapping[str, Any], expected: Any) -> Any:
    thread_id = _thread_id(params)
    sessions = c.harness.sessions
    turn = sessions.active.get(thread_id)
    if turn is not None and not turn.done:
        _expected(turn, thread_id, expected)
        return turn
    turn = sessions.reopen(thread_id)  # a turn another process left (a crash, a kill)
    try:
        _expected(turn, thread_id, expected)
        assert turn is not None
        run_id = turn.run_id.result() if turn.run_id.done() else None
        if run_id is not None and c.harness.advancing(run_id):
            raise MethodError(wire.INVALID_REQUEST, f"turn {turn.turn_id} runs in another "
                                                    "process: interrupt it there")
    except MethodError:
        sessions.active.pop(thread_id, None)  # nobody here follows it
        raise
    c.then(lambda: c.run_turn(turn, replay=False, drive=False))  # followed to its end
    return turn


def _expected(turn: TurnRun | None, thread_id: str, expected: Any) -> None:
    if turn is None or turn.done or (isinstance(expected, str) and turn.turn_id != expected):
        raise MethodError(wire.INVALID_REQUEST, f"no active turn {expected or ''} on thread "
                                                f"{thread_id}".replace("  ", " "))


async def turn_interrupt(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    turn = _active(c, params, params.get("turnId"))
    c.spawn(turn.interrupt())
    return {}


async def turn_steer(c: Connection, params: Mapping[str, Any]) -> dict[str, Any]:
    """More input for the turn in progress: the model reads it before its next step."""
    items = params.get("input")
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise MethodError(wire.INVALID_PARAMS, "input must be a list of input items")
    expected = params.get("expectedTurnId")
    if not isinstance(expected, str) or not expected:
        raise MethodError(wire.INVALID_PARAMS, "expectedTurnId is required")
    turn_id = await c.harness.sessions.steer(_thread_id(params), items,
                                             expected_turn_id=expected)
    return {"turnId": turn_id}


METHODS: dict[str, Handler] = {
    "thread/start": thread_start, "thread/resume": thread_resume, "thread/fork": thread_fork,
    "thread/read": thread_read, "thread/list": thread_list,
    "thread/archive": thread_archive, "thread/unarchive": thread_unarchive,
    "thread/name/set": thread_name_set, "turn/start": turn_start,
    "turn/interrupt": turn_interrupt, "turn/steer": turn_steer,
    "command/exec": command_exec,
    **MORE,
}
