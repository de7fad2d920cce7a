"""The record of calls, written. Every invocation of a driver-facing command appends one line to .rein/calls.jsonl of its
workspace (read by rein.workers.driver.calls, which documents the fields): when, how
long, the command and its arguments, the exit code, what it printed (an instruction's
token, a status, a refusal's code), and which agent session ran it where the agent says
so in its environment. One write of one line with O_APPEND, after the command's output:
nothing the turn does waits for it, a read-only workspace skips it, and it imports
nothing a turn does not import already.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as in rein.cli: a turn's plain forms import little
if TYPE_CHECKING:
    from collections.abc import Sequence

CALLS_FILE = ".rein/calls.jsonl"
_CALL: dict[str, object] = {}  # what this process's command noted of its outcome


def start() -> None:
    """Forget what an earlier command of this process noted (tests run many)."""
    _CALL.clear()


def note(printed: object = None, /, **fields: object) -> None:
    """Put what the command printed on this invocation's record: a status as ``rein next``
    or ``rein dev`` prints it (its instruction's token, its status, its run), and fields."""
    if isinstance(printed, dict):
        nested = printed.get("instruction")
        told = nested if isinstance(nested, dict) else printed
        if told.get("status") == "instruction" and isinstance(told.get("token"), str):
            _CALL["token"] = told["token"]
        for key, value in (("status", told.get("status") or printed.get("reason")),
                           ("run", printed.get("run_id") or told.get("run_id")),
                           ("for", told.get("for"))):
            if isinstance(value, str):
                _CALL[key] = value
    _CALL.update({k: v for k, v in fields.items() if v is not None})


def _agent_of(env: dict[str, str]) -> dict[str, str] | None:
    """The agent session that runs this command, as the agent's environment says it."""
    if env.get("CODEX_THREAD_ID"):
        found = {"name": "codex", "session": env["CODEX_THREAD_ID"],
                 "call": env.get("CODEX_TOOL_CALL_ID", ""),
                 "logs": env.get("CODEX_HOME") or env.get("HOME", "") + "/.codex"}
    elif env.get("CLAUDE_CODE_SESSION_ID") or env.get("CLAUDECODE"):
        found = {"name": "claude-code", "session": env.get("CLAUDE_CODE_SESSION_ID", ""),
                 "logs": env.get("CLAUDE_CONFIG_DIR") or env.get("HOME", "") + "/.claude"}
    else:
        return None
    return {k: v for k, v in found.items() if v}


def record_call(args: Sequence[str], code: int, started: float) -> None:
    import json
    import os
    import time

    workspace = "."
    for i, arg in enumerate(args):  # the click forms may name another workspace
        if arg == "--workspace" and i + 1 < len(args):
            workspace = args[i + 1]
        elif arg.startswith("--workspace="):
            workspace = arg.split("=", 1)[1]
    path = os.path.join(workspace, CALLS_FILE)
    if not os.path.isdir(os.path.dirname(path)):
        return  # not a workspace of rein's (yet): nothing to add to
    ended = time.time()
    kind = " ".join(args[:2]) if args[0] in ("dev", "spec") and \
        args[1:2] in (["status"], ["start"]) else args[0]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started))
    entry: dict[str, object] = {
        "v": 1, "at": f"{stamp}.{int(started % 1 * 1_000_000):06d}Z",
        "seconds": round(ended - started, 6), "command": kind,
        "args": [a for a in args[1:] if len(a) <= 200][:20], "exit": code, **_CALL}
    agent = _agent_of(dict(os.environ))
    if agent is not None:
        entry["agent"] = agent
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass  # a read-only or full workspace: the turn's own work stands without it


__all__ = ["CALLS_FILE", "note", "record_call", "start"]
