"""Reads of the run store that a surface shows: runs, nodes, the queue, events, records.

They change nothing, take no lock and decide nothing; :class:`rein.engine.service.Harness`
inherits them so that a surface needs no store of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from rein.core.ids import RunId
from rein.core.states import ApprovalStatus, NodeStatus
from rein.errors import ReinError
from rein.store.base import ApprovalRow, Event, NodeRow, RunRow, Store
from rein.store.lineage import family, top_run_id

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

    from rein.config import Config
    from rein.engine.cases.resume_plan import ResumePlan


class Reads:
    """What a surface may look at. Subclasses provide :attr:`store`, :attr:`workspace` and
    :attr:`config`."""

    workspace: Path
    config: Config

    @property
    def store(self) -> Store:
        raise NotImplementedError

    def run(self, run_id: str) -> RunRow:
        """The run ``run_id``; RUN404 when the store does not know it."""
        run = self.store.get_run(run_id)
        if run is None:
            from rein.core.suggest import with_suggestion

            known = (r.run_id for r in self.store.list_runs(include_children=True))
            raise ReinError(f"no run {run_id!r}", code="RUN404",
                            hint=with_suggestion("list runs with `rein runs list --all`",
                                                 run_id, known))
        return run

    def runs(self, *, include_children: bool = False) -> list[RunRow]:
        """Runs, newest first (top-level runs unless ``include_children``)."""
        return self.store.list_runs(include_children=include_children)

    def runs_here(self) -> list[RunRow]:
        """The top-level runs of this workspace, newest first: a store may be shared by
        several workspaces (:mod:`rein.store.workspace_id`)."""
        from rein.store.workspace_id import runs_here

        return runs_here(self.store, self.workspace)

    def resume_plan(self, run_id: str) -> ResumePlan:
        """What ``rein resume`` would do with the top-level run of ``run_id`` now
        (:class:`rein.engine.cases.resume_plan.ResumePlan`): read only, nothing recorded."""
        from rein.engine.cases.resume_plan import resume_plan
        from rein.store.lineage import top_run

        run = top_run(self.store, self.run(run_id).run_id)
        assert run is not None
        return resume_plan(self.store, run, advancing=self.store.run_locked(run.run_id),
                           limits=self.config.limits)

    def top_run_id(self, run_id: str) -> str:
        """The top-level run ``run_id`` belongs to (itself when it has no parent)."""
        return top_run_id(self.store, self.run(run_id).run_id)

    def owner(self, log_id: str) -> str:
        """The top-level run a log belongs to: a run's top-level run, or the log's own id
        for a thread's or a turn's log (a question asked before any run exists)."""
        return top_run_id(self.store, log_id)

    def advancing(self, run_id: str) -> bool:
        """Whether some rein process holds the run's lock now (advances it). A run found
        ``running`` that nobody advances was interrupted: ``rein resume`` continues it."""
        return self.store.run_locked(self.top_run_id(run_id))

    def nodes(self, run_id: str) -> list[NodeRow]:
        return self.store.nodes(self.run(run_id).run_id)

    def node_counts(self, run_id: str) -> dict[tuple[str, NodeStatus], int]:
        """How many nodes of each (type, status) a run has, counted by the store."""
        return self.store.node_counts(self.run(run_id).run_id)

    def iter_nodes(self, run_id: str, *, exclude: Sequence[NodeStatus] = (),
                   records: bool = True) -> Iterator[NodeRow]:
        """A run's node rows in order, streamed (see :meth:`rein.store.base.Runs.iter_nodes`)."""
        return self.store.iter_nodes(self.run(run_id).run_id, exclude=exclude, records=records)

    def node(self, run_id: str, node_key: str) -> NodeRow | None:
        """One node row of a run, or None."""
        return self.store.node(RunId(run_id), node_key)

    def child_runs(self, run_id: str) -> list[RunRow]:
        return self.store.child_runs(self.run(run_id).run_id)

    def approvals(self, *, run_id: str | None = None, pending_only: bool = True,
                  include_children: bool = True) -> list[ApprovalRow]:
        """The approval queue, oldest first; ``run_id``: that run (and its child runs),
        chosen by the store (the queue's other entries are not read)."""
        status = ApprovalStatus.PENDING if pending_only else None
        if run_id is None:
            return self.store.approvals(status=status)
        if not include_children:
            return self.store.approvals(run_id=RunId(run_id), status=status)
        members = [run_id, *(r.run_id for r in family(self.store, run_id))]
        return self.store.approvals(run_ids=members, status=status)

    def limits(self, run_id: str) -> dict[str, Any]:
        """The graph's ``constraints`` of a run (its budget limits), for a view of what was
        spent against them; empty when the graph file can no longer be read."""
        constraints = self._graph(run_id).get("constraints")
        return dict(constraints) if isinstance(constraints, dict) else {}

    def top_nodes(self, run_id: str) -> list[tuple[str, str, str]]:
        """(id, type, title) of the graph's top-level nodes, in declaration order, for a
        view that lists them before they start; empty when the file can no longer be
        read."""
        nodes = self._graph(run_id).get("nodes")
        if not isinstance(nodes, dict):
            return []
        return [(str(k), str(v.get("type") or "task"), str(v.get("title") or ""))
                for k, v in nodes.items() if isinstance(v, dict)]

    def _graph(self, run_id: str) -> dict[str, Any]:
        from rein.errors import LoadError
        from rein.formats.loader import load_path

        try:
            data = load_path(self.run(run_id).graph_path, limits=self.config.limits).data
        except LoadError:
            return {}
        return data if isinstance(data, dict) else {}

    def usage(self, run_id: str) -> dict[str, Any]:
        """What a run and its child runs spent, summed over every attempt (as its record
        says)."""
        from rein.engine.run.record import usage_of

        return usage_of(self.store, self.run(run_id).run_id, include_children=True)

    def usage_sources(self, run_id: str) -> list[str]:
        """Where a run's usage comes from: ``measured``, ``attributed``, ``self-reported``,
        ``unknown`` (:func:`rein.engine.run.record.usage_sources`)."""
        from rein.engine.run.record import usage_sources

        return usage_sources(self.store, self.run(run_id).run_id)

    def usage_with_sources(self, run_id: str) -> dict[str, Any]:
        """:meth:`usage` with its ``sources`` (:meth:`usage_sources`), from one read of the
        store (:func:`rein.engine.run.record.usage_with_sources`)."""
        from rein.engine.run.record import usage_with_sources

        return usage_with_sources(self.store, self.run(run_id).run_id)

    def usage_report(self, run_ids: Sequence[str], places: Sequence[Path] = ()
                     ) -> dict[str, Any]:
        """What the driving agent spent on some runs (:mod:`rein.engine.cases.usage_report`),
        reading the agents' records in ``places`` too. A read: what it attributes is not
        recorded (the Harness's ``record_usage`` does that)."""
        from rein.engine.cases.usage_report import for_runs

        return for_runs(self, [self.run(r).run_id for r in run_ids], places)

    def approval(self, approval_id: str) -> ApprovalRow:
        """One entry of the approval queue, answered or not; APPROVAL404 when unknown."""
        row = self.store.get_approval(approval_id)
        if row is None:
            raise ReinError(f"no approval {approval_id!r}", code="APPROVAL404",
                            hint="list them with `rein approvals list --all`")
        return row

    def find_run(self, run_id: str) -> RunRow | None:
        """The run ``run_id``, or None (a surface that shows what it may not find)."""
        return self.store.get_run(run_id)

    def find_approval(self, approval_id: str) -> ApprovalRow | None:
        """One entry of the approval queue, or None."""
        return self.store.get_approval(approval_id)

    def log(self, log_id: str, *, after: int = 0,
            types: Sequence[str] | None = None) -> list[Event]:
        """The stored events of a log after ``after``: a run's, or the log a thread or a
        turn keeps for what happens before any run (a digest question, an editor's MCP
        launch, a turn's end)."""
        return self.store.events(RunId(log_id), after=after, types=types)

    def events(self, run_id: str, *, after: int = 0,
               types: Sequence[str] | None = None) -> list[Event]:
        """The run's stored events after ``after`` (only of ``types`` when given)."""
        return self.store.events(self.run(run_id).run_id, after=after, types=types)

    def record(self, run_id: str) -> dict[str, Any]:
        """The AGS run record (agentic-graph-run-1.0) of a run."""
        from rein.engine.run.record import build_record

        return build_record(self.store, self.run(run_id).run_id)

    def driver_status(self, run_id: str | None = None) -> dict[str, Any]:
        """The one thing a run waits for: an instruction for the driver, or why it waits
        (what ``rein next`` prints). A plain read, so a driver turn needs no event loop."""
        from rein.workers.driver.status import status_of

        return status_of(self.store, self.workspace, run_id)

    def spans(self, run_id: str) -> tuple[str, list[Any]]:
        """(the trace id, every span of the run and its child runs, by start time)."""
        from rein.telemetry.spans import build_spans, trace_id

        run = self.run(run_id)
        return trace_id(top_run_id(self.store, run.run_id)), build_spans(self.store, run.run_id)


__all__ = ["Reads"]
