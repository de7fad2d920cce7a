"""A client's standalone command (``command/exec``), decided and run as a turn's shell tool
call would be.

The command line is the ``shell_exec`` call a model would make (``/bin/sh -c`` of the
argv, quoted), checked by the same :class:`~rein.tools.toolbox.Toolbox` a conversation
turn's node gets under the same sandbox: the permissions the sandbox requests
(:func:`.policy.requirements`) narrowed by ``rein.toml``'s ``[policy]``, its deny and
``ask`` rules, the protected paths. An allowed call (or an asked one a person accepted)
runs through :func:`rein.tools.shell.run_sandboxed` — bubblewrap where usable, rein's
clean environment, a private ``TMPDIR``, the workspace compared before and after — as
the shell tool runs. A thread with an OAP profile is narrowed by its profile too, which
is resolved per turn: its commands are run in its turns, not here (THREAD007).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.config import Config
from rein.core.frozen import Frozen
from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine import events
from rein.engine.cases.sessions import policy, threads
from rein.errors import ConfigError
from rein.profiles.policy import Policy
from rein.store.base import ApprovalRow, Store, ThreadRow, Transition
from rein.tools.catalog import ToolCall
from rein.tools.gate import Decision, ToolPolicy
from rein.tools.sandbox import SandboxPolicy, protected_paths
from rein.tools.shell import CommandOutcome, run_sandboxed, written_outside_message
from rein.tools.toolbox import Toolbox


class Command(Frozen):
    """One standalone command, checked: what it needs and what rein decided."""

    argv: tuple[str, ...]
    line: str  # the shell command line: what is checked, asked about and run
    cwd: Path
    sandbox: Mapping[str, Any]  # the object form it runs under
    approval_policy: str
    decision: Decision
    toolbox: Toolbox

    @property
    def digest(self) -> str:
        """What a person is shown, as a digest: the command line, where it runs, under
        which sandbox (an answer is bound to it)."""
        shown = json.dumps({"command": self.line, "cwd": str(self.cwd),
                            "sandbox": dict(self.sandbox)}, sort_keys=True)
        return "sha256:" + hashlib.sha256(shown.encode()).hexdigest()


def check(config: Config, workspace: Path, row: ThreadRow | None, argv: Sequence[str], *,
          sandbox: Any = None, cwd: str | None = None) -> Command:
    """Decide ``argv`` under ``row``'s sandbox and approval policy (a new thread's when
    ``row`` is None), ``sandbox`` in place of its sandbox (a request, narrowed as a turn's
    is); THREAD002 for an unknown sandbox or a ``cwd`` outside the workspace, THREAD007 for
    an empty argv or a thread with a profile."""
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        raise ConfigError("command/exec command must be a non-empty list of strings",
                          code="THREAD007", hint='send an argv, e.g. ["ls", "-la"]')
    data = row.data if row is not None else {}
    if data.get("profile"):
        raise ConfigError("command/exec on a thread with an OAP profile is not supported: "
                          "the profile narrows what its turns may run", code="THREAD007",
                          hint="ask for the command in a turn of the thread (turn/start)")
    box = policy.sandbox_policy(sandbox if sandbox is not None else data.get("sandbox"))
    asks = policy.approval_policy(data.get("approvalPolicy"))
    where = threads.new_thread("-", workspace=workspace, now="", cwd=cwd).data["cwd"] \
        if cwd is not None else str(workspace)
    line = shlex.join(argv)
    toolbox = _toolbox(config, workspace, box)
    decision = toolbox.check(ToolCall(id="command/exec", name="shell_exec",
                                      arguments={"command": line}))
    return Command(argv=tuple(argv), line=line, cwd=Path(where), sandbox=box,
                   approval_policy=asks, decision=decision, toolbox=toolbox)


def ask(store: Store, command: Command, *, approval_id: str, thread_id: str, origin: str,
        now: str) -> ApprovalRow:
    """Queue the question of ``command`` (a ``tool_call`` entry, bound to its digest). There
    is no run: the entry and its events are kept under the thread's id where a run id would
    be, as an editor's MCP launch is (:mod:`.launches`, whose ``wait`` and ``withdraw``
    serve this entry too), so ``rein approvals`` lists and answers it."""
    prompt = (f"Run command {command.line!r} in {command.cwd} "
              f"({command.decision.message or command.decision.permission})?")
    request = {"prompt": prompt, "thread": thread_id, "tool": "shell_exec",
               "arguments": {"command": command.line}, "cwd": str(command.cwd),
               "permission": command.decision.permission, "origin": origin}
    row = ApprovalRow(approval_id=ApprovalId(approval_id), run_id=RunId(thread_id),
                      key=f"command_exec:{approval_id}:{command.digest[7:19]}",
                      kind=ApprovalKind.TOOL_CALL, status=ApprovalStatus.PENDING,
                      digest=command.digest, request=request, created_at=now)
    events.append(store, RunId(thread_id), events.EventType.APPROVAL_REQUESTED, {
        "approval_id": row.approval_id, "kind": row.kind.value, "key": row.key,
        "prompt": prompt, "digest": row.digest}, now, Transition(approval=row))
    return row


def readable(config: Config, workspace: Path, row: ThreadRow | None) -> Any:
    """Whether a workspace path (relative, ``/``-separated) is one the thread's (or a new
    thread's) file tools may read: ``fs:read`` under the same grants and deny rules
    (``rein.toml``'s ``deny_paths`` and ``read_roots``) a turn's ``file_search`` gets."""
    from rein.tools.permissions import Permission

    box = policy.sandbox_policy((row.data if row is not None else {}).get("sandbox"))
    grants = _toolbox(config, workspace, box).policy.permissions
    return lambda relative: grants.allows(Permission(scope="fs", action="read",
                                                     target=relative))


def _toolbox(config: Config, workspace: Path, sandbox: Mapping[str, Any]) -> Toolbox:
    """The toolbox a conversation turn's node gets under ``sandbox``, its shell alone."""
    from rein.workers.grants import attempt_grants

    needs = policy.requirements(sandbox)
    grants = attempt_grants(["shell_exec"], needs["permissions"],
                            [("rein.toml", Policy.from_config(config))])
    box = SandboxPolicy.for_attempt(workspace, needs["workspace"],
                                    needs.get("network", "none"),
                                    protected=protected_paths(config, workspace))
    return Toolbox(tools=grants.tools, policy=ToolPolicy.build(
        grants.grants, sandbox=box, denied=grants.denied, ask=grants.ask))


async def run(command: Command, *, env: Mapping[str, str], timeout: float | None,
              max_output_bytes: int) -> CommandOutcome:
    """Run a command rein allowed (or a person accepted), confined as the shell tool runs
    one; a write outside its grants is said on its stderr, as the model is told."""
    tools = command.toolbox.policy
    outcome = await run_sandboxed(["/bin/sh", "-c", command.line], policy=tools.sandbox,
                                  cwd=command.cwd, env=env, timeout=timeout,
                                  max_output_bytes=max_output_bytes,
                                  writes=tools.permissions)
    if outcome.written_outside:
        said = "refused: " + written_outside_message(outcome.written_outside,
                                                     tools.permissions)
        outcome = outcome.replace(stderr=f"{outcome.stderr}{said}\n",
                                  exit_code=outcome.exit_code or 1)
    return outcome
