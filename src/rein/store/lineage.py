"""How runs hang together: a subgraph's child run points at its parent run.

Walking up to the top-level run (whose lock, approval and driver queue a child shares) and
down to every child is written here once. Both walks are bounded by the runs they have
seen, so a store whose ``parent_run_id`` links loop (damaged, or written by hand) ends the
walk with an error instead of hanging every command that touches the run.
"""

from __future__ import annotations

from rein.errors import StoreError

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from rein.store.base import RunRow, Store


def top_run(store: Store, run_id: str) -> RunRow | None:
    """The top-level run ``run_id`` belongs to (the run itself when it has no parent);
    ``None`` when there is no run ``run_id``. A parent that is missing ends the walk at the
    last run found. STORE002 when the parent links loop."""
    run = store.get_run(run_id)
    seen: set[str] = set()
    while run is not None and run.parent_run_id is not None:
        seen.add(run.run_id)
        if run.parent_run_id in seen:
            raise StoreError(
                f"run {run_id} has a parent chain that loops back to {run.parent_run_id}",
                code="STORE002",
                hint="the store is damaged: restore .rein/ from a backup, or start a new run")
        parent = store.get_run(run.parent_run_id)
        if parent is None:
            break
        run = parent
    return run


def top_run_id(store: Store, run_id: str) -> str:
    """The id of :func:`top_run` (``run_id`` itself when there is no such run)."""
    run = top_run(store, run_id)
    return run_id if run is None else run.run_id


def family(store: Store, run_id: str) -> list[RunRow]:
    """A run and every child run below it, parents first (each run once)."""
    top = store.get_run(run_id)
    out = [] if top is None else [top]
    seen = {r.run_id for r in out}
    stack = list(out)
    while stack:
        for child in store.child_runs(stack.pop().run_id):
            if child.run_id in seen:
                continue
            seen.add(child.run_id)
            out.append(child)
            stack.append(child)
    return out


def approved_in_a_sandbox(store: Store, run_id: str) -> bool:
    """Whether top-level run ``run_id`` was approved by a confined process (an agent that
    started what it wrote, where approvals are not signed): its start's graph approval
    records how it was given (``given.confined``). A person's answer does not advance such
    a run outside a sandbox."""
    from rein.core.states import ApprovalKind, ApprovalStatus

    for row in store.approvals(run_id=run_id):  # type: ignore[arg-type]
        if row.kind is ApprovalKind.GRAPH and row.status is ApprovalStatus.ACCEPTED:
            given = (row.answer or {}).get("given")
            return isinstance(given, dict) and given.get("confined") is True
    return False


__all__ = ["approved_in_a_sandbox", "family", "top_run", "top_run_id"]
