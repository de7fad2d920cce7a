"""The toolbox a worker hands to its model: the offered tools, the check, and the execution.

A call goes through three steps, always in this order:

1. **plan**: which built-in tool it is, which permission it needs (``fs:write:src/a.py``,
   ``shell:exec:pytest -q``, ``net:fetch:https://x.org/a``) and which resolved path it touches;
   a bad argument or a path outside the workspace is refused here;
2. **check**: :meth:`ToolPolicy.check` answers allow, deny or ask;
3. **run**: only an allowed (or approved) call runs; its output has secret values redacted
   before anyone sees it, the model included.

Only tools the node was granted are offered, and a call to any other name is refused with the
list of tools that are available.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rein.core.frozen import Frozen
from rein.formats.redaction import Secrets, known_secrets
from rein.tools.backend import ToolBackend
from rein.tools.catalog import (
    ToolCall,
    ToolDefinition,
    ToolKind,
    ToolResult,
    definitions_for,
    kind_of,
)
from rein.tools.fetch import TIMEOUT_SECONDS, check_url, fetch_tool, http_library
from rein.tools.files import (
    edit_file,
    edited,
    read_file,
    read_result,
    search_files,
    write_content,
    write_file,
    written,
)
from rein.tools.gate import Decision, ToolPolicy, Verdict
from rein.tools.paths import ToolFailure, WorkspacePath, resolve_in_workspace
from rein.tools.permissions import Permission
from rein.tools.shell import DEFAULT_TIMEOUT, shell_tool

if TYPE_CHECKING:
    import httpx2 as httpx


class Plan(Frozen):
    """What a call needs before it may run."""

    call: ToolCall
    kind: ToolKind
    permission: Permission
    target: WorkspacePath | None = None


class Toolbox:
    """The effective tools of one attempt, checked on every call."""

    def __init__(
        self,
        *,
        tools: Iterable[str],
        policy: ToolPolicy,
        env: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        shell_timeout: float = DEFAULT_TIMEOUT,
        backend: ToolBackend | None = None,
    ) -> None:
        self.definitions: tuple[ToolDefinition, ...] = definitions_for(tools)
        self.policy = policy
        self.env = dict(env or {})
        # The node's secrets, and any provider key its declared environment carries.
        self._secrets: Secrets = Secrets.of(secrets) | known_secrets(self.env)
        self._http = http_client
        self.shell_timeout = shell_timeout
        # Where allowed reads, writes and commands do their I/O (None: here, locally).
        self.backend = backend
        self._by_name = {d.name: d for d in self.definitions}
        # A call in the other spelling of an offered tool is the same tool.
        self._by_kind = {d.kind: d for d in self.definitions}
        # Paths shell commands changed outside the fs:write grants; the worker fails for them.
        self.written_outside: list[str] = []

    @property
    def workspace(self) -> Path:
        return self.policy.sandbox.workspace

    def plan(self, call: ToolCall) -> Plan:
        """Work out what ``call`` needs; ToolFailure for an unknown tool or bad arguments."""
        kind = kind_of(call.name)
        definition = self._by_name.get(call.name) or (
            self._by_kind.get(kind) if kind is not None else None)
        if definition is None:
            offered = ", ".join(self._by_name) or "(none)"
            raise ToolFailure(
                f"refused: no tool named {call.name!r} is available to this node; "
                f"available tools: {offered}",
                code="TOOL002",
            )
        args = call.arguments
        match definition.kind:
            case ToolKind.READ | ToolKind.WRITE | ToolKind.EDIT:
                target = resolve_in_workspace(self.workspace, _string(args, "path"))
                action = "read" if definition.kind is ToolKind.READ else "write"
                return Plan(
                    call=call,
                    kind=definition.kind,
                    target=target,
                    permission=Permission(scope="fs", action=action, target=target.relative),
                )
            case ToolKind.SEARCH:
                path = args.get("path", ".")
                target = resolve_in_workspace(self.workspace, path if isinstance(path, str) else "")
                return Plan(
                    call=call,
                    kind=definition.kind,
                    target=target,
                    permission=Permission(scope="fs", action="read", target=target.relative),
                )
            case ToolKind.SHELL:
                command = _string(args, "command")
                return Plan(
                    call=call,
                    kind=definition.kind,
                    permission=Permission(scope="shell", action="exec", target=command),
                )
            case ToolKind.FETCH:
                url = check_url(args.get("url"))
                return Plan(
                    call=call,
                    kind=definition.kind,
                    permission=Permission(scope="net", action="fetch", target=url),
                )

    def check(self, call: ToolCall) -> Decision:
        """Allow, deny (with a message the model can act on) or ask, without running anything."""
        try:
            plan = self.plan(call)
        except ToolFailure as exc:
            return Decision(verdict=Verdict.DENY, permission=f"tool:{call.name}", message=_say(exc))
        return self._check_plan(plan)

    def _check_plan(self, plan: Plan) -> Decision:
        writes = None
        if plan.kind in (ToolKind.WRITE, ToolKind.EDIT) and plan.target is not None:
            writes = plan.target.absolute
        return self.policy.check(
            plan.permission, writes=writes, uses_network=plan.kind is ToolKind.FETCH
        )

    async def run(self, call: ToolCall, *, approved: bool = False) -> tuple[Decision, ToolResult]:
        """Check and, when allowed (or ``ask`` and ``approved``), run the call."""
        try:
            plan = self.plan(call)
        except ToolFailure as exc:
            decision = Decision(
                verdict=Verdict.DENY, permission=f"tool:{call.name}", message=_say(exc)
            )
            return decision, ToolResult(ok=False, content=_say(exc), refused=True)
        decision = self._check_plan(plan)
        if decision.verdict is Verdict.DENY or (decision.verdict is Verdict.ASK and not approved):
            message = decision.message or f"refused {decision.permission}"
            return decision, ToolResult(ok=False, content=message, refused=True)
        try:
            result = await self._execute(plan)
        except ToolFailure as exc:
            result = ToolResult(ok=False, content=_say(exc))
        except OSError as exc:
            result = ToolResult(ok=False, content=f"{call.name} failed: {exc.strerror or exc}")
        return decision, self.redact_result(result)

    async def _execute(self, plan: Plan) -> ToolResult:
        args = plan.call.arguments
        client = self.backend
        if client is not None and plan.target is not None and {
                ToolKind.READ: client.reads, ToolKind.WRITE: client.writes,
                ToolKind.EDIT: client.reads and client.writes}.get(plan.kind, False):
            return await _through(client, plan.kind, plan.target, args)
        match plan.kind:
            case ToolKind.READ:
                assert plan.target is not None
                return read_file(plan.target, args)
            case ToolKind.WRITE:
                assert plan.target is not None
                return write_file(plan.target, args)
            case ToolKind.EDIT:
                assert plan.target is not None
                return edit_file(plan.target, args)
            case ToolKind.SEARCH:
                assert plan.target is not None
                return search_files(
                    plan.target, args, workspace=self.workspace.resolve(), readable=self._readable
                )
            case ToolKind.SHELL:
                result = await shell_tool(
                    args,
                    policy=self.policy.sandbox,
                    cwd=self.workspace.resolve(),
                    env=self.env,
                    max_timeout=self.shell_timeout,
                    writes=self.policy.permissions,
                    # A secret in the command's environment never goes over the wire.
                    runner=client.run if client is not None and client.runs
                    and not self._secrets else None,
                )
                self.written_outside += (result.data or {}).get("written_outside", [])
                return result
            case ToolKind.FETCH:
                return await self._fetch(args)

    def _readable(self, relative: str) -> bool:
        return self.policy.permissions.allows(
            Permission(scope="fs", action="read", target=relative)
        )

    async def _fetch(self, args: Mapping[str, object]) -> ToolResult:
        def allowed(url: str) -> str | None:
            decision = self.policy.check(
                Permission(scope="net", action="fetch", target=url), uses_network=True
            )
            return None if decision.verdict is Verdict.ALLOW else decision.message

        if self._http is not None:
            return await fetch_tool(args, client=self._http, allowed=allowed)
        async with http_library().AsyncClient(timeout=TIMEOUT_SECONDS) as client:
            return await fetch_tool(args, client=client, allowed=allowed)

    def redact(self, text: str) -> str:
        """``text`` with every secret value replaced by ``[secret:NAME]``."""
        return self._secrets.text(text)

    def redact_result(self, result: ToolResult) -> ToolResult:
        if not self._secrets:
            return result
        return ToolResult(
            ok=result.ok,
            content=self.redact(result.content),
            data=result.data,
            refused=result.refused,
        )


def _string(args: Mapping[str, object], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise ToolFailure(f"argument {key!r} must be a non-empty string", code="TOOL023")
    return value


def _say(exc: ToolFailure) -> str:
    return f"{exc.message} (hint: {exc.hint})" if exc.hint else exc.message


async def _through(client: ToolBackend, kind: ToolKind, target: WorkspacePath,
                   args: Mapping[str, object]) -> ToolResult:
    """A checked file call done by ``client`` (an editor's buffers), said to the model as
    the local tools say it."""
    path = target.absolute
    if kind is ToolKind.WRITE:
        content = write_content(target, args)
        existed = path.exists()
        await client.write_text(path, content)
        return written(target, len(content.encode()), existed=existed)
    if path.is_dir():
        raise ToolFailure(f"{target.relative} is a directory", code="TOOL021",
                          hint="use search to list files")
    text = await client.read_text(path)
    if kind is ToolKind.READ:
        return read_result(target, text, args, size=len(text.encode()))
    updated, result = edited(target, text, args)
    await client.write_text(path, updated)
    return result
