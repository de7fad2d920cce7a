"""Codes of the session runtime (threads and turns) and the surfaces that carry it."""

from __future__ import annotations

from rein.core.codes.model import Code, Kind
from rein.core.extras import install_hint

THREADS = "Threads, turns and the app-server"


def _c(code: str, kind: Kind, meaning: str, hint: str) -> Code:
    return Code(code=code, area=THREADS, severity="error", kind=kind, meaning=meaning,
                hint=hint)


CODES = (
    _c("THREAD001", "refused", "a turn is already in progress on the thread",
       "wait for turn/completed, or interrupt the turn first"),
    _c("THREAD002", "usage", "the sandbox or approval policy is not one rein knows, or the "
       "directory is outside the workspace",
       "use a Codex spelling (readOnly, workspaceWrite, dangerFullAccess, externalSandbox; "
       "untrusted, on-failure, on-request, never) and a directory inside the workspace"),
    _c("THREAD003", "refused", "the thread is archived", "unarchive it first"),
    _c("THREAD004", "usage", "the turn's input is empty or names no graph rein can read",
       "send a text item, or a mention item naming an .agraph.yaml file"),
    _c("THREAD005", "refused", "no turn is in progress on the thread, or not the one the "
       "request expected (turn/steer)", "steer the active turn: pass its id as "
       "expectedTurnId, or start a turn (turn/start)"),
    _c("THREAD006", "refused", "the active turn takes no more input: a graph turn runs "
       "exactly the graph approved by its digest",
       "interrupt it (turn/interrupt) and start a new turn"),
    _c("THREAD007", "usage", "a request field rein cannot honour (on turn/start a model no "
       "tier serves, a reasoning effort, an output schema, ...; an ephemeral thread)",
       "leave the field out, or configure a [tiers] route that serves that model"),
    _c("THREAD008", "error", "a turn never started its run: the process serving it stopped "
       "between recording the turn and starting its run; the turn ends interrupted",
       "start the turn again (turn/start)"),
    _c("THREAD009", "usage", "a method of Codex's app-server that rein does not implement "
       "(answered with JSON-RPC error -32601)",
       "see the coverage table in docs/app-server.md for the methods rein answers"),
    _c("THREAD010", "refused", "command/exec did not run its command: rein.toml's [policy] "
       "or the sandbox refuses it, or it needs a person's approval and was declined, "
       "cancelled, not askable (approvalPolicy never, no thread named)",
       "allow the command in rein.toml's [policy], or name a thread (threadId) whose "
       "client answers, and accept it"),
    _c("THREAD011", "refused", "thread/compact/start: a PreCompact hook blocked the "
       "compaction; nothing was compacted", "the hook decides; see its reason"),
    _c("THREAD404", "error", "no thread or turn with that id in this workspace",
       "list the threads (thread/list)"),
    _c("ACP001", "usage", "rein acp needs the ACP SDK (agent-client-protocol), which is not "
       "installed (the acp extra)", install_hint("acp")),
)

__all__ = ["CODES"]
