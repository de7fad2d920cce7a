"""What ``rein resume`` would do, read before it does anything.

A resume adopts what is done, marks what was in flight when a rein died and runs it again
(or asks a person first), stops again at every question still open, and refuses (RT053)
when the files changed since the approval. :func:`resume_plan` says all of that from the
store and the files as they are now; it takes no lock, records nothing and writes nothing
(the graph is parsed without the graph cache, which would write an entry).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen
from rein.core.states import NodeStatus, RunStatus
from rein.errors import ReinError
from rein.store.base import RunRow, Store

if TYPE_CHECKING:
    from rein.formats.loader import LoadLimits

__all__ = ["Gate", "InFlight", "ResumePlan", "resume_plan"]


class InFlight(Frozen):
    """An attempt that was running when its rein stopped: its effects are uncertain."""

    node: str
    attempt: int
    confirm: str | None  # why a person confirms the re-run first, or None: it runs again


class Gate(Frozen):
    """A question of the approval queue the run still waits for."""

    approval_id: str
    kind: str
    node: str
    prompt: str


class ResumePlan(Frozen):
    """What a resume of one run would do, and what it would meet."""

    run_id: str
    status: RunStatus
    policy: str  # the graph's policy.resume
    action: str  # one of ACTIONS
    completed: tuple[tuple[str, str], ...]  # (node key, status) adopted as they are
    rerun: tuple[str, ...]  # terminal nodes that run again (policy resume_failed)
    in_flight: tuple[InFlight, ...]
    gates: tuple[Gate, ...]
    changed: tuple[str, ...]  # graph, params, children: what differs from the approval
    refusal: str | None  # why the resume is refused without --force (RT053), else None
    advancing: bool  # another rein process holds the run now (RUN_LOCKED)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "status": self.status.value, "policy": self.policy,
            "action": self.action, "graph_changed": bool(self.changed),
            "changed": list(self.changed), "refusal": self.refusal,
            "advancing": self.advancing,
            "completed": [{"node": n, "status": s} for n, s in self.completed],
            "rerun": list(self.rerun),
            "in_flight": [{"node": f.node, "attempt": f.attempt, "confirm": f.confirm}
                          for f in self.in_flight],
            "gates": [{"approval_id": g.approval_id, "kind": g.kind, "node": g.node,
                       "prompt": g.prompt} for g in self.gates],
        }


# continue: the run goes on from where it stopped; recover: it was interrupted (in-flight
# attempts are marked and run again); reopen: a failed run runs its failed nodes again;
# restart: a new run under the same approval; nothing: it ended and stays as it is;
# refused: the files changed (RT053); locked: another rein process advances it.
ACTIONS = ("continue", "recover", "reopen", "restart", "nothing", "refused", "locked")


def resume_plan(store: Store, run: RunRow, *, advancing: bool,
                limits: LoadLimits | None = None) -> ResumePlan:
    """What resuming the top-level run ``run`` would do now (``advancing``: another process
    holds its lock; ``limits``: the loader's, rein.toml's ``[limits]``)."""
    from rein.engine.run.prepare import binding_changes, binding_override
    from rein.engine.run.recovery import INTERRUPTED, adoptable, confirmation_reason, resume_policy
    from rein.formats.loader import DEFAULT_LIMITS, load_path
    from rein.store.lineage import family

    limits = limits or DEFAULT_LIMITS
    try:
        data: Any = load_path(run.graph_path, limits=limits).data
    except ReinError:
        data = None  # said by the binding check below: the files no longer load
    graph = data if isinstance(data, Mapping) else {}
    policy = resume_policy(graph)
    changed, _ = binding_changes(run, data=data, limits=limits)
    refusal: str | None = None
    if changed:
        try:
            binding_override(run, force=False, data=data, now=lambda: "", limits=limits)
        except ReinError as exc:  # RT053, the message a resume would refuse with
            refusal = f"{exc.code}: {exc.message}"
    action = _action(run, policy, refusal=refusal, advancing=advancing)
    reopening = action in ("reopen", "recover") and policy == "resume_failed"
    completed: list[tuple[str, str]] = []
    rerun: list[str] = []
    in_flight: list[InFlight] = []
    members = family(store, run.run_id)
    for member in members:
        prefix = "" if member.run_id == run.run_id else f"{member.run_id}:"
        for row in sorted(store.nodes(member.run_id), key=lambda r: r.seq):
            key = prefix + str(row.node_key)
            if row.status.terminal:
                if reopening and not adoptable(row.status, policy):
                    rerun.append(key)
                else:
                    completed.append((key, row.status.value))
                continue
            last = (list(row.record.get("attempts") or []) or [{}])[-1]
            if row.status is NodeStatus.RUNNING and "status" not in last and (
                    last.get(INTERRUPTED) or run.status is RunStatus.RUNNING):
                spec = _node_spec(graph, row.node_id) if not prefix else {}
                confirm = confirmation_reason(spec, mutating=True)
                in_flight.append(InFlight(node=key, attempt=int(last.get("attempt") or 1),
                                          confirm=confirm))
    ids = {m.run_id for m in members}
    gates = tuple(
        Gate(approval_id=str(a.approval_id), kind=a.kind.value,
             node=str(a.request.get("node") or "graph"), prompt=str(a.request.get("prompt") or ""))
        for a in store.approvals(status=_pending()) if a.run_id in ids)
    return ResumePlan(run_id=run.run_id, status=run.status, policy=policy, action=action,
                      completed=tuple(completed), rerun=tuple(rerun),
                      in_flight=tuple(in_flight), gates=gates, changed=tuple(changed),
                      refusal=refusal, advancing=advancing)


def _pending() -> Any:
    from rein.core.states import ApprovalStatus

    return ApprovalStatus.PENDING


def _action(run: RunRow, policy: str, *, refusal: str | None, advancing: bool) -> str:
    if advancing:
        return "locked"
    reopenable = run.status in (RunStatus.FAILED, RunStatus.PARTIAL) and \
        policy != "resume_incomplete"
    if run.status.terminal and not reopenable:
        return "nothing"
    if refusal is not None:
        return "refused"
    if run.status is RunStatus.RUNNING or reopenable:
        return "restart" if policy == "restart" else (
            "recover" if run.status is RunStatus.RUNNING else "reopen")
    return "continue"


def _node_spec(graph: Mapping[str, Any], node_id: str) -> Mapping[str, Any]:
    """The spec of the node ``node_id`` wherever it is declared (ids are unique per scope:
    the first found)."""
    for nodes in _scopes(graph):
        spec = nodes.get(node_id)
        if isinstance(spec, Mapping):
            return spec
    return {}


def _scopes(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        nodes = value.get("nodes")
        if isinstance(nodes, Mapping):
            yield nodes
        for child in value.values():
            yield from _scopes(child)
    elif isinstance(value, list):
        for child in value:
            yield from _scopes(child)

