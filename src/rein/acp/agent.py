"""``rein acp``: the session runtime as an ACP (Agent Client Protocol v1) agent on stdio.

An ACP session is a rein thread (the session id is the thread id, durable in the store), a
prompt is a turn, and everything the client sees is the turn's feed translated by
:mod:`rein.acp.updates`; nothing here decides a state change. A question the turn asks (a
tool call in ``ask``, a graph's digest, a gate) becomes ``session/request_permission``:
``allow_always`` is the runtime's accept-for-session (the same exact action, in this
thread, while this process runs), ``reject_always`` declines the same exact action again
without asking; neither ever widens what rein.toml and the profile allow. The session's
mode is the thread's sandbox policy, which the engine intersects with rein.toml and the
profile, so a mode only narrows.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import acp
from acp import schema

from rein.acp import updates
from rein.engine.protocol_view import Notification
from rein.engine.sessions import ServerRequest, TurnRun
from rein.errors import ConfigError, ReinError

if TYPE_CHECKING:
    from rein.engine.service import Harness

# The session modes: the sandbox policy values a thread runs under.
MODES = (("read-only", "Read only", "reads files and runs commands that only read"),
         ("workspace-write", "Workspace write", "also writes files inside the workspace"),
         ("danger-full-access", "Full access",
          "also fetches from the network, as far as rein.toml allows"))
_MODE_OF = {"readOnly": "read-only", "workspaceWrite": "workspace-write",
            "dangerFullAccess": "danger-full-access", "externalSandbox": "danger-full-access"}
# The kind of tool call a question is about (a digest or gate question is a decision).
_ASKED_KIND: dict[str, Any] = {"item/commandExecution/requestApproval": "execute",
                               "item/fileChange/requestApproval": "edit"}
_GRAPHS = (".agraph.yaml", ".agraph.yml", ".agraph.json")


@dataclass
class _Session:
    thread_id: str
    cwd: str
    rejected: set[str] = field(default_factory=set)  # action digests rejected for good
    turn: TurnRun | None = None
    asking: set[asyncio.Task[Any]] = field(default_factory=set)
    calls: dict[str, Any] = field(default_factory=dict)  # tool call id → its tool_call


def _invalid(message: str) -> acp.RequestError:
    """Bad params, said in the error's message (clients show it) and in its data."""
    return acp.RequestError(-32602, message, {"message": message})


def _error(exc: ReinError) -> acp.RequestError:
    code = -32602 if isinstance(exc, ConfigError) else -32600
    return acp.RequestError(code, f"{exc.code}: {exc.message}",
                            {"code": exc.code, "hint": exc.hint})


class ReinAgent:
    """One client's connection: its sessions, over one :class:`Harness`."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.conn: Any = None
        self.sessions: dict[str, _Session] = {}
        self._background: set[asyncio.Future[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> schema.InitializeResponse:
        from rein.core.version import VERSION

        return schema.InitializeResponse(
            protocol_version=min(int(protocol_version), acp.PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(
                    image=False, audio=False, embedded_context=False),
                mcp_capabilities=schema.McpCapabilities(http=False, sse=False),
                session_capabilities=schema.SessionCapabilities(
                    list=schema.SessionListCapabilities())),
            auth_methods=[],
            agent_info=schema.Implementation(name="rein", title="rein", version=VERSION))

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    # -- sessions ------------------------------------------------------------------------

    def _opened(self, cwd: str, mcp_servers: Sequence[Any] | None) -> None:
        if not os.path.isabs(cwd):
            raise _invalid(f"cwd must be an absolute path, got {cwd!r}")
        if mcp_servers:
            names = ", ".join(str(getattr(s, "name", "?")) for s in mcp_servers)
            raise _invalid(
                f"rein acp does not launch a client's MCP servers ({names}): declare them "
                "in rein.toml under [mcp], where their tools go through rein's policy")

    async def new_session(self, cwd: str, additional_directories: Any = None,
                          mcp_servers: Any = None, **kwargs: Any) -> schema.NewSessionResponse:
        self._opened(cwd, mcp_servers)
        try:
            row = self.harness.sessions.start_thread(cwd=cwd)
        except ReinError as exc:
            raise _error(exc) from exc
        self.sessions[row.thread_id] = _Session(row.thread_id, cwd)
        return schema.NewSessionResponse(session_id=row.thread_id,
                                         modes=self._modes(row.data["sandbox"]))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           additional_directories: Any = None, **kwargs: Any
                           ) -> schema.LoadSessionResponse:
        self._opened(cwd, mcp_servers)
        sessions = self.harness.sessions
        try:
            row = sessions.thread(session_id)
            history = sessions.replay(session_id)
        except ReinError as exc:
            raise _error(exc) from exc
        where = str(row.data.get("cwd") or cwd)
        self.sessions[session_id] = _Session(session_id, where)
        for message in history:
            if isinstance(message, Notification):
                for update in updates.updates(message, cwd=where, replay=True):
                    await self.conn.session_update(session_id=session_id, update=update)
        # A turn its process left unfinished (a crash, a kill) goes on here: its pending
        # questions are asked again and its updates follow the replay.
        turn = sessions.reopen(session_id)
        if turn is not None:
            going = asyncio.ensure_future(
                self._follow(self.sessions[session_id], turn, replay=False))
            self._background.add(going)
            going.add_done_callback(self._background.discard)
        return schema.LoadSessionResponse(modes=self._modes(row.data["sandbox"]))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> schema.ListSessionsResponse:
        """The workspace's threads, newest first (in ``cwd`` when given), 50 a page."""
        rows = [r for r in self.harness.sessions.threads()
                if cwd is None or r.data.get("cwd") == cwd]
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = rows[start:start + 50]
        more = start + len(page) < len(rows)
        return schema.ListSessionsResponse(
            sessions=[schema.SessionInfo(session_id=r.thread_id, cwd=str(r.data["cwd"]),
                                         title=r.data.get("name") or r.data.get("preview"),
                                         updated_at=r.updated_at) for r in page],
            next_cursor=str(start + len(page)) if more else None)

    def _modes(self, sandbox: Mapping[str, Any]) -> schema.SessionModeState:
        return schema.SessionModeState(
            current_mode_id=_MODE_OF.get(str(sandbox.get("type")), "workspace-write"),
            available_modes=[schema.SessionMode(id=i, name=n, description=d)
                             for i, n, d in MODES])

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise _invalid(f"unknown session {session_id}: session/new or session/load")
        return session

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any
                               ) -> schema.SetSessionModeResponse:
        from rein.engine.sessions.policy import sandbox_policy

        session = self._session(session_id)
        if mode_id not in {m[0] for m in MODES}:
            raise _invalid(
                f"unknown mode {mode_id!r}: one of " + ", ".join(m[0] for m in MODES))
        # The thread's sandbox is what every later turn asks for; the engine grants it
        # only as far as rein.toml and the profile allow.
        self.harness.sessions.update(session.thread_id, sandbox=sandbox_policy(mode_id))
        return schema.SetSessionModeResponse()

    # -- prompts -------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[Any], **kwargs: Any
                     ) -> schema.PromptResponse:
        session = self._session(session_id)
        try:
            turn = await self.harness.sessions.begin_turn(session.thread_id, _input(prompt))
        except ReinError as exc:
            raise _error(exc) from exc
        status = await self._follow(session, turn)
        return schema.PromptResponse(
            stop_reason="cancelled" if status == "interrupted" else "end_turn")

    async def _follow(self, session: _Session, turn: TurnRun, *, replay: bool = True
                      ) -> str:
        """Drive ``turn``, send its feed as updates and its questions as permission
        requests, until it completes; its final status."""
        session.turn = turn
        driving = asyncio.ensure_future(turn.drive())
        status = "failed"
        try:
            async for message in turn.stream(replay=replay):
                if isinstance(message, ServerRequest):
                    task = asyncio.ensure_future(self._ask(session, turn, message))
                    session.asking.add(task)
                    task.add_done_callback(session.asking.discard)
                    continue
                if message.method == "turn/completed":
                    status = str(message.params["turn"]["status"])
                for update in updates.updates(message, cwd=session.cwd):
                    if update.session_update == "tool_call":
                        session.calls[update.tool_call_id] = update
                    await self.conn.session_update(session_id=session.thread_id,
                                                   update=update)
        except ReinError as exc:  # the run never started
            await self.conn.session_update(session_id=session.thread_id, update=(
                acp.update_agent_message_text(f"error: {exc.code}: {exc.message}\n")))
        finally:
            for task in list(session.asking):
                task.cancel()
            session.turn = None
        try:
            await driving
        except ReinError as exc:
            print(f"rein acp: {exc.code}: {exc.message}", file=sys.stderr)
        return status

    async def _ask(self, session: _Session, turn: TurnRun, request: ServerRequest) -> None:
        """One question as ``session/request_permission``, and its answer to the turn."""
        action = _action(self.harness, request.id)
        if action is not None and action in session.rejected:
            await _answer(turn, request.id, "decline")
            return
        tool = request.method != "item/tool/requestUserInput"
        choices = updates.TOOL_OPTIONS if tool else updates.QUESTION_OPTIONS
        params = request.params
        title = str(params.get("reason") or "") if tool else \
            str((params.get("questions") or [{}])[0].get("question") or "Approve?")
        kind = _ASKED_KIND.get(request.method, "other" if tool else "think")
        call_id = str(params.get("itemId") or request.id)
        shown = session.calls.get(call_id)  # what the editor shows with the question
        call = schema.ToolCallUpdate(
            tool_call_id=call_id, title=title, status="pending", kind=kind,
            content=shown.content if shown is not None else None,
            locations=shown.locations if shown is not None else None,
            raw_input=shown.raw_input if shown is not None else None)
        response = await self.conn.request_permission(
            session_id=session.thread_id, tool_call=call, options=updates.options(choices))
        outcome = response.outcome
        picked = getattr(outcome, "option_id", None)
        decision = next((d for kind, _, d in choices if kind == picked), None)
        if getattr(outcome, "outcome", None) == "cancelled" or decision is None:
            decision = "cancel"  # the client withdrew the prompt: the turn is interrupted
        if picked == "reject_always" and action is not None:
            session.rejected.add(action)
        await _answer(turn, request.id, decision)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None or session.turn is None or session.turn.done:
            return
        try:
            await session.turn.interrupt()
        except ReinError as exc:
            print(f"rein acp: cancel: {exc.code}: {exc.message}", file=sys.stderr)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


async def _answer(turn: TurnRun, request_id: str, decision: str) -> None:
    try:
        await turn.answer(request_id, decision)
    except ReinError as exc:  # answered elsewhere first, or the run ended meanwhile
        print(f"rein acp: {exc.code}: {exc.message}", file=sys.stderr)


def _action(harness: Harness, approval_id: str) -> str | None:
    row = harness.store.get_approval(approval_id)
    value = row.request.get("action_digest") if row is not None else None
    return str(value) if value else None


def _input(prompt: Sequence[Any]) -> list[dict[str, Any]]:
    """The prompt's content blocks as the runtime's input items: text, and a link to an
    AGS graph as a ``mention`` (the turn then runs that graph)."""
    items: list[dict[str, Any]] = []
    for block in prompt:
        kind = getattr(block, "type", None)
        if kind == "text":
            items.append({"type": "text", "text": block.text})
        elif kind == "resource_link":
            uri = str(block.uri)
            path = uri.removeprefix("file://")
            if path.endswith(_GRAPHS):
                items.append({"type": "mention", "name": block.name, "path": path})
            else:
                items.append({"type": "text", "text": f"@{path}"})
        elif kind == "resource":
            text = getattr(block.resource, "text", None)
            if isinstance(text, str):
                items.append({"type": "text", "text": text})
    return items


async def serve(harness: Harness) -> None:
    """Serve one client on this process's stdin and stdout until it closes them."""
    agent: Any = ReinAgent(harness)  # the SDK's Agent protocol, by its method names
    await acp.run_agent(agent)
