"""``rein acp``: the session runtime as an ACP (Agent Client Protocol v1) agent on stdio.

An ACP session is a rein thread (the session id is the thread id, durable in the store), a
prompt is a turn, and everything the client sees is the turn's feed translated by
:mod:`rein.acp.updates`; nothing here decides a state change. A question the turn asks (a
tool call in ``ask``, a graph's digest, a gate) becomes ``session/request_permission``:
``allow_always`` is the runtime's accept-for-session (the same exact action, in this
thread, while this process runs), ``reject_always`` declines the same exact action again
without asking; neither ever widens what rein.toml and the profile allow. The session's
mode is the thread's sandbox policy, which the engine intersects with rein.toml and the
profile, so a mode only narrows; the mode and the model are config options too
(:mod:`rein.acp.options`).

A turn this agent drives is bound to its session (:mod:`rein.tools.backend`): where the
client granted ``fs`` or ``terminal``, the checked tool calls do their I/O through it
(:mod:`rein.acp.client_tools`), and the client's ``mcpServers``, each launched after its own
approval (a queue entry asked as a permission request, :mod:`rein.acp.mcp_servers`), add
their tools.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import acp
from acp import schema

from rein.acp import mcp_servers as client_mcp
from rein.acp import options, updates
from rein.acp.client_tools import ClientTools
from rein.core.frozen import Record, field
from rein.errors import ConfigError, ReinError
from rein.protocol import threads
from rein.protocol.messages import Notification, ServerRequest
from rein.protocol.turns import TurnFeed, TurnRun
from rein.tools.backend import SessionBinding, bound

if TYPE_CHECKING:
    from rein.engine.service import Harness
    from rein.tools.mcp import McpServer
    from rein.workers.profile_mcp import HubHost

# The kind of tool call a question is about (a digest or gate question is a decision).
_ASKED_KIND: dict[str, Any] = {"item/commandExecution/requestApproval": "execute",
                               "item/fileChange/requestApproval": "edit"}
_GRAPHS = (".agraph.yaml", ".agraph.yml", ".agraph.json")


class _Session(Record, kw_only=False):
    thread_id: str
    cwd: str
    rejected: set[str] = field(default_factory=set)  # action digests rejected for good
    turn: TurnRun | None = None
    asking: set[asyncio.Task[Any]] = field(default_factory=set)
    calls: dict[str, Any] = field(default_factory=dict)  # tool call id → its tool_call
    client: ClientTools | None = None  # the editor's buffers and terminals, where granted
    servers: list[McpServer] = field(default_factory=list)  # the client's, not yet asked
    values: dict[str, str] = field(default_factory=dict)  # their variables' values
    mcp: HubHost | None = None  # the accepted ones, running until the session ends
    launched: bool = False
    # One flag per session/prompt not yet answered, set by a session/cancel that comes
    # before its answer is sent: that prompt then ends "cancelled", whatever its turn did.
    cancels: list[asyncio.Event] = field(default_factory=list)

    def binding(self) -> SessionBinding:
        return SessionBinding(
            backend=self.client if self.client is not None and self.client.used else None,
            mcp=self.mcp.hub if self.mcp is not None else None)

    async def close(self) -> None:
        host, self.mcp = self.mcp, None
        if host is not None:
            await host.__aexit__(None, None, None)


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
        self.capabilities: Any = None  # what the client's initialize granted
        self._background: set[asyncio.Future[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> schema.InitializeResponse:
        from rein.core.version import VERSION

        self.capabilities = client_capabilities
        return schema.InitializeResponse(
            protocol_version=min(int(protocol_version), acp.PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(
                    image=False, audio=False, embedded_context=False),
                mcp_capabilities=schema.McpCapabilities(http=False, sse=False),  # stdio
                session_capabilities=schema.SessionCapabilities(
                    list=schema.SessionListCapabilities(),
                    resume=schema.SessionResumeCapabilities(),
                    close=schema.SessionCloseCapabilities(),
                    delete=schema.SessionDeleteCapabilities())),
            auth_methods=[],
            agent_info=schema.Implementation(name="rein", title="rein", version=VERSION))

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    # -- sessions ------------------------------------------------------------------------

    def _opened(self, thread_id: str, cwd: str, mcp_servers: Sequence[Any] | None
                ) -> _Session:
        """The session's state, its client's MCP servers checked (not launched yet)."""
        if not os.path.isabs(cwd):
            raise _invalid(f"cwd must be an absolute path, got {cwd!r}")
        try:
            servers, values = client_mcp.checked(mcp_servers)
        except client_mcp.Invalid as exc:
            raise _invalid(str(exc)) from None
        return _Session(thread_id, cwd, servers=servers, values=values,
                        client=ClientTools(self.conn, thread_id, self.capabilities))

    async def new_session(self, cwd: str, additional_directories: Any = None,
                          mcp_servers: Any = None, **kwargs: Any) -> schema.NewSessionResponse:
        self._opened("", cwd, mcp_servers)  # refused before a thread is made
        try:
            row = self.harness.sessions.start_thread(cwd=cwd)
        except ReinError as exc:
            raise _error(exc) from exc
        self.sessions[row.thread_id] = self._opened(row.thread_id, cwd, mcp_servers)
        return schema.NewSessionResponse(
            session_id=row.thread_id, modes=options.modes(row.data),
            config_options=options.config_options(row.data, self.harness.config.data))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           additional_directories: Any = None, **kwargs: Any
                           ) -> schema.LoadSessionResponse:
        row = await self._attach(session_id, cwd, mcp_servers, replay=True)
        return schema.LoadSessionResponse(
            modes=options.modes(row.data),
            config_options=options.config_options(row.data, self.harness.config.data))

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                             additional_directories: Any = None, **kwargs: Any
                             ) -> schema.ResumeSessionResponse:
        """``session/load`` without the history: the client shows it already."""
        row = await self._attach(session_id, cwd, mcp_servers, replay=False)
        return schema.ResumeSessionResponse(
            modes=options.modes(row.data),
            config_options=options.config_options(row.data, self.harness.config.data))

    async def _attach(self, session_id: str, cwd: str, mcp_servers: Any, *, replay: bool
                      ) -> Any:
        """The thread ``session_id`` as this connection's session (its history sent as
        updates when ``replay``); a turn its process left unfinished goes on."""
        self._opened(session_id, cwd, mcp_servers)
        sessions = self.harness.sessions
        try:
            row = sessions.thread(session_id)
            history = threads.replay(self.harness, session_id) if replay else []
        except ReinError as exc:
            raise _error(exc) from exc
        where = str(row.data.get("cwd") or cwd)
        earlier = self.sessions.get(session_id)
        if earlier is not None:  # attached again: the servers it launched stop first
            await earlier.close()
        self.sessions[session_id] = self._opened(session_id, where, mcp_servers)
        for message in history:
            if isinstance(message, Notification):
                for update in updates.updates(message, cwd=where, replay=True,
                                              window=self._window(session_id, message)):
                    await self.conn.session_update(session_id=session_id, update=update)
        # A turn its process left unfinished (a crash, a kill) goes on here: its pending
        # questions are asked again and its updates follow.
        turn = sessions.reopen(session_id)
        if turn is not None:
            self._spawn(self._follow(self.sessions[session_id], turn, replay=False))
        return row

    async def close_session(self, session_id: str, **kwargs: Any
                            ) -> schema.CloseSessionResponse:
        """The session ends in this process: its turn is interrupted (as by
        ``session/cancel``) and its MCP servers stop; the thread stays, to load later."""
        session = self._session(session_id)
        await self.cancel(session_id)
        del self.sessions[session_id]
        await session.close()
        return schema.CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any
                             ) -> schema.DeleteSessionResponse:
        """The thread leaves ``session/list``: closed here when open, then archived (its
        record stays in the store; a prompt to it is refused, THREAD003)."""
        try:
            self.harness.sessions.thread(session_id)
        except ReinError as exc:
            raise _error(exc) from exc
        if session_id in self.sessions:
            await self.close_session(session_id)
        try:
            self.harness.sessions.update(session_id, archived=True)
        except ReinError as exc:
            raise _error(exc) from exc
        return schema.DeleteSessionResponse()

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

    def _window(self, thread_id: str, message: Notification) -> int | None:
        """The session's context window, for a usage message (read only for those)."""
        if message.method != "thread/tokenUsage/updated":
            return None
        return options.window(self.harness.sessions.thread(thread_id).data,
                              self.harness.config.data)

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise _invalid(f"unknown session {session_id}: session/new or session/load")
        return session

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any
                               ) -> schema.SetSessionModeResponse:
        self._set(self._session(session_id), "mode", mode_id)
        return schema.SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> schema.SetSessionConfigOptionResponse:
        session = self._session(session_id)
        row = self._set(session, config_id, value)
        return schema.SetSessionConfigOptionResponse(
            config_options=options.config_options(row.data, self.harness.config.data))

    def _set(self, session: _Session, option: str, value: Any) -> Any:
        """Change the thread's mode or model for its next turns (invalid params for an
        option or value rein does not offer)."""
        allowed = options.allowed_values(option, self.harness.config.data)
        if allowed is None:
            raise _invalid(f"unknown config option {option!r}: mode or model")
        if value not in allowed:
            raise _invalid(f"unknown {option} {value!r}: one of " + ", ".join(allowed))
        if option == "model":
            return self.harness.sessions.update(session.thread_id, tier=value)
        # The thread's sandbox is what every later turn asks for; the engine grants it
        # only as far as rein.toml and the profile allow.
        return self.harness.sessions.update(session.thread_id, sandbox=value)

    # -- prompts -------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[Any], **kwargs: Any
                     ) -> schema.PromptResponse:
        session = self._session(session_id)
        cancelled = asyncio.Event()
        session.cancels.append(cancelled)
        try:
            try:
                turn = await self.harness.sessions.begin_turn(session.thread_id,
                                                              _input(prompt))
            except ReinError as exc:
                raise _error(exc) from exc
            try:
                if cancelled.is_set():  # cancelled while the turn was being recorded
                    self._spawn(self._interrupt(turn))
                status = await self._follow(session, turn)
            finally:
                turn.release()  # (its drive let go already, unless it never began)
        finally:
            session.cancels.remove(cancelled)
        # ACP: once the client cancels, the prompt's answer is "cancelled", also when the
        # turn ended on its own before the cancel could stop it (the client no longer
        # waits for its outcome; the thread records what the turn did).
        ended = cancelled.is_set() or status == "interrupted"
        return schema.PromptResponse(stop_reason="cancelled" if ended else "end_turn")

    def _spawn(self, work: Any) -> None:
        going = asyncio.ensure_future(work)
        self._background.add(going)
        going.add_done_callback(self._background.discard)

    async def _follow(self, session: _Session, turn: TurnRun, *, replay: bool = True
                      ) -> str:
        """Drive ``turn``, send its feed as updates and its questions as permission
        requests, until it completes; its final status."""
        session.turn = turn
        if not session.launched:
            session.launched = True
            await self._launch(session, turn.turn_id)
        with bound(session.binding()):  # the turn's tasks inherit it (tools/backend.py)
            driving = asyncio.ensure_future(turn.drive())
        status = "failed"
        feed = TurnFeed(self.harness, turn)
        try:
            async for message in feed.stream(replay=replay):
                if isinstance(message, ServerRequest):
                    with bound(session.binding()):  # an answer continues the run
                        task = asyncio.ensure_future(self._ask(session, feed, message))
                    session.asking.add(task)
                    task.add_done_callback(session.asking.discard)
                    continue
                if message.method == "turn/completed":
                    status = str(message.params["turn"]["status"])
                for update in updates.updates(message, cwd=session.cwd,
                                              window=self._window(session.thread_id, message)):
                    if update.session_update == "tool_call":
                        session.calls[update.tool_call_id] = update
                    await self.conn.session_update(session_id=session.thread_id,
                                                   update=update)
        except ReinError as exc:  # the feed cannot be read (a turn that ends says so)
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

    async def _launch(self, session: _Session, turn_id: str) -> None:
        """The client's MCP servers, each an entry of rein's approval queue asked as a
        permission request too: the first answer, on the wire or in the queue, holds."""
        if not session.servers:
            return
        queued: dict[str, str] = {}
        try:
            session.mcp, queued = await client_mcp.launch(
                self.conn, self.harness, session.thread_id, turn_id, session.servers,
                session.values, cwd=session.cwd,
                mode=lambda: options.mode_of(
                    self.harness.sessions.thread(session.thread_id).data))
        except ReinError as exc:
            print(f"rein acp: MCP servers: {exc.code}: {exc.message}", file=sys.stderr)
        sessions = self.harness.sessions
        launches = client_mcp.recorded(session.mcp, queued,
                                       self.harness.clock.now().isoformat())
        if launches:
            earlier = list(sessions.thread(session.thread_id).data.get("mcpLaunches") or ())
            sessions.update(session.thread_id, mcpLaunches=earlier + launches)
        text = client_mcp.said(session.mcp)
        if text:
            await self.conn.session_update(session_id=session.thread_id,
                                           update=acp.update_agent_thought_text(text))

    async def close(self) -> None:
        """The client is gone: every session's MCP servers stop."""
        for session in self.sessions.values():
            await session.close()

    async def _ask(self, session: _Session, turn: TurnFeed, request: ServerRequest) -> None:
        """One question as ``session/request_permission``, and its answer to the turn."""
        action = turn.turn.action_digest(request.id)
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
            # A command's question shows the command as checked (a hook may rewrite it).
            raw_input={"command": params["command"], "cwd": params.get("cwd")}
            if "command" in params else shown.raw_input if shown is not None else None)
        # The call opened `pending` (ACP: awaiting approval) and stays so while asked.
        response = await self.conn.request_permission(
            session_id=session.thread_id, tool_call=call, options=updates.options(choices))
        outcome = response.outcome
        picked = getattr(outcome, "option_id", None)
        decision = next((d for kind, _, d in choices if kind == picked), None)
        if getattr(outcome, "outcome", None) == "cancelled" or decision is None:
            decision = "cancel"  # the client withdrew the prompt: the turn is interrupted
        if picked == "reject_always" and action is not None:
            session.rejected.add(action)
        if shown is not None and decision in ("accept", "acceptForSession"):
            await self.conn.session_update(session_id=session.thread_id, update=acp
                                           .update_tool_call(call_id, status="in_progress"))
        await _answer(turn, request.id, decision)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            return
        for cancelled in session.cancels:
            cancelled.set()
        if session.turn is not None:
            await self._interrupt(session.turn)

    async def _interrupt(self, turn: TurnRun) -> None:
        if turn.done:
            return
        try:
            await turn.interrupt()
        except ReinError as exc:
            if exc.code != "RUN_ENDED":  # too late to stop: the prompt still says cancelled
                print(f"rein acp: cancel: {exc.code}: {exc.message}", file=sys.stderr)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


async def _answer(turn: TurnFeed, request_id: str, decision: str) -> None:
    try:
        await turn.answer(request_id, decision)
    except ReinError as exc:  # answered elsewhere first, or the run ended meanwhile
        print(f"rein acp: {exc.code}: {exc.message}", file=sys.stderr)


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
    from rein.acp.transport import serve_stdio

    agent = ReinAgent(harness)
    try:
        await serve_stdio(agent)  # every line answered: rein.acp.transport
    finally:
        await agent.close()
