"""MCP servers as tools (OAP §3.4, L3-M1, L3-M2), through the official ``mcp`` SDK.

A profile's ``spec.tools.mcp_servers`` are launched (``stdio``) or reached (``http``, the
streamable HTTP transport) for one session, and their tools are offered as
``mcp/<server>/<tool>``. Four rules hold:

1. **Nothing launches without a yes.** A server's command is the only executable thing a
   profile can name (T2), so each launch is shown as a :class:`LaunchRequest` (command line
   or URL, the names, never the values, of the variables it gets) and needs an answer:
   ``confirm`` returns ``accept``, ``decline`` (that server is skipped and recorded) or
   ``cancel`` (nothing launches); ``assume_yes=True`` is the explicit ``--yes``. With
   neither, the session is refused.
2. **Credentials come from the environment only.** ``env`` and ``headers`` hold
   ``${VAR}`` / ``Bearer ${VAR}`` references (literals are refused when the profile is
   loaded); each is read from ``VAR``, else ``REIN_SECRET_VAR``, at launch. A stdio server
   gets the SDK's minimal inherited environment plus exactly those variables, and their
   values are redacted from every tool result.
3. **The grant is checked before listing and before every call**: the server's own
   ``tools.allow`` / ``tools.deny`` (bare tool names), then ``gate(mcp/<server>/<tool>)``,
   which answers ``allow``, ``ask`` or ``deny`` (an effective profile's ``decide``: the
   profile's tool policy, rein's policy and the node's requirements, intersected). A
   denied tool is not listed; a call to it is refused without reaching the server; an
   ``ask`` runs only when the caller says the call was approved.
4. **Servers stop with the session.** Leaving the ``async with`` closes every connection;
   the SDK closes a stdio server's stdin, waits, then terminates its process tree.
5. **Nothing starts that cannot be used.** A server whose every tool is denied (its own
   ``tools.allow`` is empty or its ``tools.deny`` matches everything; or ``unusable``, the
   caller's reading of its grants, names a rule that denies them all) is neither asked
   about nor launched: its status is ``skipped``, with that rule as the reason. A tool
   hidden at listing says which rule hid it (``explain``).

The SDK is the ``mcp`` extra: a hub with a server to launch and no SDK installed is
ConfigError MCP003 when it is built, before anyone is asked about a launch; a profile whose
servers are all skipped needs no SDK.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal, Self

from rein.core.extras import require
from rein.core.frozen import Frozen, Record, field
from rein.errors import ConfigError, Refused
from rein.formats.canonical import canonical_json
from rein.tools.catalog import MCP_PREFIX, ToolResult

Answer = Literal["accept", "decline", "cancel"]
Gate = Callable[[str], str]  # "mcp/<server>/<tool>" -> "allow" | "ask" | "deny"
PREFIX = MCP_PREFIX
STARTUP_TIMEOUT = 30.0
CALL_TIMEOUT = 120.0
_REF = re.compile(r"^(Bearer )?\$\{([A-Z][A-Z0-9_]{0,63})\}$")
_WIRE = re.compile(r"[^A-Za-z0-9_-]")


class McpServer(Frozen):
    """One ``mcp_servers`` entry of a profile, as rein launches it."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # key -> "${VAR}"
    headers: Mapping[str, str] = field(default_factory=dict)  # key -> "[Bearer ]${VAR}"
    allow: tuple[str, ...] | None = None  # the server's tools.allow (None: all)
    deny: tuple[str, ...] = ()

    @classmethod
    def from_profile(cls, entry: Mapping[str, Any]) -> McpServer:
        """From a validated profile entry; a literal credential is refused (L1-I6)."""
        for where in ("env", "headers"):
            for key, value in (entry.get(where) or {}).items():
                if not isinstance(value, str) or not _REF.match(value) or (
                        where == "env" and value.startswith("Bearer ")):
                    raise ConfigError(f"mcp server {entry.get('name')!r}: {where}.{key} must be "
                                      "a ${VARIABLE} reference, not a literal [L1-I6]",
                                      code="MCP001")
        tools = entry.get("tools") or {}
        return cls(name=entry["name"], transport=entry["transport"],
                   command=entry.get("command"), args=tuple(entry.get("args") or ()),
                   url=entry.get("url"), env=dict(entry.get("env") or {}),
                   headers=dict(entry.get("headers") or {}),
                   allow=tuple(tools["allow"]) if "allow" in tools else None,
                   deny=tuple(tools.get("deny") or ()))

    def unusable(self) -> str | None:
        """Why the server's own ``tools`` filter lets no tool through, if it lets none."""
        if self.allow is not None and not self.allow:
            return "its tools.allow is empty"
        every = next((p for p in self.deny if set(p) <= {"*"}), None)
        return f"its tools.deny {every!r} matches every tool" if every else None

    def filters(self, tool: str) -> bool:
        """Whether the server's own allow/deny lets ``tool`` (a bare name) through."""
        def hit(patterns: Iterable[str]) -> bool:
            return any(fnmatch.fnmatchcase(tool, p) for p in patterns)

        return (self.allow is None or hit(self.allow)) and not hit(self.deny)


def servers_from_profile(entries: Iterable[Mapping[str, Any]]) -> tuple[McpServer, ...]:
    """The servers of a resolved profile (``ResolvedProfile.mcp_servers``)."""
    return tuple(McpServer.from_profile(e) for e in entries)


class LaunchRequest(Frozen):
    """What a person sees before a server is launched, and the digest an answer binds to."""

    server: str
    transport: str
    profile: str
    trust: str
    command: tuple[str, ...] = ()
    url: str | None = None
    variables: tuple[str, ...] = ()  # names only

    def to_json(self) -> dict[str, Any]:
        return {"server": self.server, "transport": self.transport, "profile": self.profile,
                "trust": self.trust, "command": list(self.command), "url": self.url,
                "variables": list(self.variables)}

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(canonical_json(self.to_json())).hexdigest()

    def render(self) -> str:
        what = " ".join(self.command) if self.command else f"connect to {self.url}"
        env = f" with {', '.join(self.variables)} from the environment" if self.variables else ""
        return (f"profile {self.profile} ({self.trust}) wants MCP server {self.server!r} "
                f"({self.transport}): {what}{env}")


Confirm = Callable[[LaunchRequest], Awaitable[str]]
# Why no tool of a server can be granted (None: some might be), and why one tool is not.
Unusable = Callable[[str], str | None]
Explain = Callable[[str], str]


class McpTool(Frozen):
    """A server tool as offered to a model."""

    name: str  # mcp/<server>/<tool>
    wire_name: str  # the same, spelled for provider APIs that refuse "/" in names
    server: str
    tool: str
    description: str
    parameters: Mapping[str, Any]
    decision: str  # allow | ask (denied tools are never listed)


class _Connection(Record):
    server: McpServer
    request: LaunchRequest
    status: str = "pending"  # pending | running | declined | failed | skipped
    reason: str | None = None
    client: Any = None
    tools: dict[str, McpTool] = field(default_factory=dict)
    hidden: list[str] = field(default_factory=list)
    secrets: dict[str, str] = field(default_factory=dict)


def _variable(ref: str) -> str:
    match = _REF.match(ref)
    assert match is not None  # checked in from_profile
    return match.group(2)


def _lookup(name: str, environ: Mapping[str, str]) -> str | None:
    return environ.get(name) if name in environ else environ.get(f"REIN_SECRET_{name}")


class McpHub:
    """The MCP servers of one session. Use as ``async with McpHub(...) as hub``."""

    def __init__(self, servers: Iterable[McpServer], *, gate: Gate, profile: str,
                 trust: str, workspace: Path, confirm: Confirm | None = None,
                 assume_yes: bool = False, environ: Mapping[str, str] | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT,
                 call_timeout: float = CALL_TIMEOUT, unusable: Unusable | None = None,
                 explain: Explain | None = None) -> None:
        import os

        self.gate = gate
        self.explain = explain
        self.confirm = confirm
        self.assume_yes = assume_yes
        self.workspace = Path(workspace)
        self.environ = os.environ if environ is None else environ
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self._connections = [
            _Connection(server=s, request=LaunchRequest(
                server=s.name, transport=s.transport, profile=profile, trust=trust,
                command=(s.command, *s.args) if s.command else (), url=s.url,
                variables=tuple(sorted({_variable(v) for v in (*s.env.values(),
                                                                *s.headers.values())}))))
            for s in servers]
        for connection in self._connections:
            server = connection.server
            why = server.unusable() or (unusable(server.name) if unusable else None)
            if why is not None:
                connection.status = "skipped"
                connection.reason = f"not launched: no tool of it may be used ({why})"
        if any(c.status != "skipped" for c in self._connections):
            require("mcp", f"launching profile {profile}'s MCP servers", code="MCP003")
        self._stack: AsyncExitStack | None = None

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        answers = [await self._ask(c) if c.status != "skipped" else "skipped"
                   for c in self._connections]
        self._stack = AsyncExitStack()
        await self._stack.__aenter__()
        try:
            for connection, answer in zip(self._connections, answers, strict=True):
                if answer == "skipped":
                    continue
                if answer == "accept":
                    await self._start(connection)
                else:
                    connection.status, connection.reason = "declined", "launch declined"
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every server (idempotent)."""
        stack, self._stack = self._stack, None
        if stack is not None and any(c.status == "running" for c in self._connections):
            import anyio

            with anyio.CancelScope(shield=True):
                await stack.aclose()
        elif stack is not None:  # nothing was started: nothing to shield, no SDK to import
            await stack.aclose()
        for connection in self._connections:
            if connection.status == "running":
                connection.status, connection.client = "stopped", None

    async def _ask(self, connection: _Connection) -> str:
        if self.assume_yes:
            return "accept"
        if self.confirm is None:
            raise Refused(f"launching MCP server {connection.server.name!r} needs confirmation: "
                          f"{connection.request.render()}", code="MCP010",
                          hint="read the command line, then pass --yes (or answer the "
                               "approval request)")
        answer = await self.confirm(connection.request)
        if answer == "cancel":
            raise Refused(f"launching MCP server {connection.server.name!r} was cancelled",
                          code="MCP011")
        return "accept" if answer == "accept" else "decline"

    async def _start(self, connection: _Connection) -> None:
        import anyio
        from mcp import Client

        server = connection.server
        missing = [_variable(v) for v in (*server.env.values(), *server.headers.values())
                   if _lookup(_variable(v), self.environ) is None]
        if missing:
            connection.status = "failed"
            connection.reason = f"environment variable(s) {', '.join(missing)} not set"
            return
        env = {k: _lookup(_variable(v), self.environ) or "" for k, v in server.env.items()}
        headers = {k: v.replace(f"${{{_variable(v)}}}", _lookup(_variable(v), self.environ)
                                or "") for k, v in server.headers.items()}
        connection.secrets = {_variable(v): _lookup(_variable(v), self.environ) or ""
                              for v in (*server.env.values(), *server.headers.values())}
        assert self._stack is not None
        inner = AsyncExitStack()
        try:
            # The SDK's own read timeout bounds the handshake: a cancel scope cannot wrap
            # entering a client whose task groups outlive this call.
            transport = await self._transport(server, env, headers, inner)
            client = await inner.enter_async_context(
                Client(transport, mode="legacy", read_timeout_seconds=self.startup_timeout))
            listed = await _list_all(client)
        except Exception as exc:  # noqa: BLE001 - vendor errors are translated here
            with anyio.CancelScope(shield=True):
                await _quiet_close(inner)
            connection.status, connection.reason = "failed", _describe(exc, self.startup_timeout)
            return
        self._stack.push_async_callback(_quiet_close, inner)
        connection.client, connection.status = client, "running"
        self._index(connection, listed)

    async def _transport(self, server: McpServer, env: dict[str, str],
                         headers: dict[str, str], stack: AsyncExitStack) -> Any:
        if server.transport == "stdio":
            from mcp import StdioServerParameters

            return StdioServerParameters(command=server.command or "", args=list(server.args),
                                         env=env, cwd=str(self.workspace))
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        url = server.url or ""
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"MCP server {server.name!r}: {url!r} is not an http(s) URL",
                              code="MCP002")
        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)))
        return streamable_http_client(url, http_client=http)

    def _index(self, connection: _Connection, listed: list[Any]) -> None:
        server = connection.server
        used = {t.wire_name for c in self._connections for t in c.tools.values()}
        for tool in listed:
            name = f"{PREFIX}{server.name}/{tool.name}"
            if not server.filters(tool.name):
                connection.hidden.append(f"{name}: excluded by the server's tools allow/deny")
                continue
            decision = self.gate(name)
            if decision == "deny":
                why = self.explain(name) if self.explain else "not granted by the effective profile"
                connection.hidden.append(f"{name}: {why}")
                continue
            wire = _WIRE.sub("_", f"mcp__{server.name}__{tool.name}")[:64]
            if wire in used:
                wire = wire[:55] + "_" + hashlib.sha256(name.encode()).hexdigest()[:8]
            used.add(wire)
            connection.tools[name] = McpTool(
                name=name, wire_name=wire, server=server.name, tool=tool.name,
                description=tool.description or "", parameters=dict(tool.input_schema or {}),
                decision=decision)

    # ------------------------------------------------------------------ use

    @property
    def tools(self) -> tuple[McpTool, ...]:
        """Every tool a session may call, in server then listing order."""
        return tuple(t for c in self._connections for t in c.tools.values())

    def find(self, name: str) -> McpTool | None:
        """A listed tool by ``mcp/<server>/<tool>`` or by its wire name."""
        return next((t for t in self.tools if name in (t.name, t.wire_name)), None)

    def check(self, name: str) -> tuple[str, str | None]:
        """``(decision, message)`` for a call to ``name``, without calling anything."""
        tool = self.find(name)
        if tool is None:
            offered = ", ".join(t.name for t in self.tools) or "(none)"
            return "deny", f"refused: no MCP tool named {name!r}; available: {offered}"
        connection = next(c for c in self._connections if c.server.name == tool.server)
        if connection.status != "running":
            return "deny", f"refused: MCP server {tool.server!r} is not running"
        if not connection.server.filters(tool.tool):
            return "deny", f"refused: {tool.name} is excluded by the server's tools allow/deny"
        decision = self.gate(tool.name)
        if decision == "deny":
            return "deny", f"refused: {tool.name} is not granted by the effective profile"
        if decision == "ask":
            return "ask", f"{tool.name} needs a person's approval before it runs"
        return "allow", None

    async def call(self, name: str, arguments: Mapping[str, Any], *,
                   approved: bool = False) -> tuple[str, ToolResult]:
        """Check, then call. ``(decision, result)``; a refused call never reaches the server."""
        decision, message = self.check(name)
        if decision == "deny" or (decision == "ask" and not approved):
            return decision, ToolResult(ok=False, content=message or "refused", refused=True)
        tool = self.find(name)
        assert tool is not None
        connection = next(c for c in self._connections if c.server.name == tool.server)
        import anyio

        try:
            with anyio.fail_after(self.call_timeout):
                result = await connection.client.call_tool(
                    tool.tool, dict(arguments), read_timeout_seconds=self.call_timeout)
        except Exception as exc:  # noqa: BLE001 - vendor errors are translated here
            return decision, ToolResult(ok=False, content=self._redact(
                connection, f"{tool.name} failed: {_describe(exc, self.call_timeout)}"))
        text = "\n".join(_render(block) for block in result.content or [])
        data = {"server": tool.server, "tool": tool.tool}
        if result.structured_content is not None:
            data["structured"] = result.structured_content
        return decision, ToolResult(ok=not result.is_error, content=self._redact(connection, text),
                                    data=data)

    @staticmethod
    def _redact(connection: _Connection, text: str) -> str:
        from rein.formats.redaction import Secrets

        return Secrets.of(connection.secrets).text(text)

    def to_json(self) -> dict[str, Any]:
        """Every server: its launch request, status, tools and what was hidden."""
        return {"servers": [{
            "name": c.server.name, "transport": c.server.transport, "status": c.status,
            "reason": c.reason, "launch": {**c.request.to_json(), "digest": c.request.digest},
            "tools": [{"name": t.name, "wire_name": t.wire_name, "description": t.description,
                       "decision": t.decision} for t in c.tools.values()],
            "hidden": list(c.hidden)} for c in self._connections]}


async def _list_all(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _quiet_close(stack: AsyncExitStack) -> None:
    # A server that dies while being closed is stopped all the same.
    with contextlib.suppress(Exception):
        await stack.aclose()


def _render(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        inner = block.resource
        return getattr(inner, "text", None) or f"[resource {inner.uri}]"
    if kind == "resource_link":
        return f"[resource link {block.uri}]"
    return f"[{kind or 'content'} {getattr(block, 'mime_type', '')}]".replace(" ]", "]")


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e, timeout) for e in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
