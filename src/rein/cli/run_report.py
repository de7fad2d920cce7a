"""``rein runs show RUN`` for a person: everything asked after a run, from the store.

What ran and how long it took, every attempt that failed with its reason and the evidence
of its failed criteria, who approved what, when and how (the surface, the identity and how
it was established, confined or not, a terminal or not, the driver turn before), and why a cancelled run stopped (who
asked, and their note). A node the store still has in flight in a run that has ended is
shown as stopped with the run, never as ``running``. ``--json`` keeps its shape
(:func:`rein.cli.runs.show_run`); this module is only the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from rein.cli.approval_view import how_given, refused_line, refused_of
from rein.cli.live_state import MARKS, duration, seconds_between
from rein.cli.output import shown

_EVIDENCE = 240  # characters of a criterion's evidence shown; the record has all of it


def print_report(run: Any, nodes: Sequence[Any], approvals: Sequence[Any],
                 children: Sequence[Any], usage: Mapping[str, Any],
                 cancel: Mapping[str, Any] | None, refused: str | None = None, *,
                 counts: Mapping[tuple[str, Any], int] | None = None) -> None:
    """The text of ``rein runs show`` for a stored run; ``cancel`` is the operator's
    request to stop it (its ``run/cancel_requested`` event), if any; ``refused``: why its
    approval does not verify, where approvals are signed; ``counts``: how many nodes of
    each (type, status) it has, when ``nodes`` are only some of them."""
    for line in report_lines(run, nodes, approvals, children, usage, cancel, refused,
                             counts=counts):
        click.echo(shown(line))


def report_lines(run: Any, nodes: Sequence[Any], approvals: Sequence[Any],
                 children: Sequence[Any], usage: Mapping[str, Any],
                 cancel: Mapping[str, Any] | None = None,
                 refused: str | None = None, *,
                 counts: Mapping[tuple[str, Any], int] | None = None) -> list[str]:
    status = run.status.value
    took = duration(seconds_between(run.started_at, run.finished_at))
    out = [f"run      {run.run_id} ({status})" + (f"  wall {took}" if took else "")]
    out.append(f"graph    {run.graph_id}  {run.graph_path}")
    out.append(f"digest   {run.graph_digest}")
    out.append(f"started  {run.started_at}"
               + (f" · finished {run.finished_at}" if run.finished_at else ""))
    if run.parent_run_id:
        out.append(f"parent   {run.parent_run_id} (node {run.parent_node_key})")
    if isinstance(cancel, Mapping):
        note = f": {cancel['note']}" if cancel.get("note") else " (no note given)"
        out.append(f"stopped  cancelled by {cancel.get('actor') or 'an operator'}{note}")
    if refused is not None:
        out.append(f"refused  its approval does not verify (APPROVAL005: {refused}): nothing "
                   "of it runs")
    total = sum(counts.values()) if counts is not None else len(nodes)
    if total == len(nodes):
        out.append("nodes")
    else:  # a large run: summed up, and the nodes that did not end well (some of them)
        out.append(f"nodes    {total}: {_counted(counts or {})}")
    for n in nodes:
        out.extend(_node_lines(n, status, run.status.terminal))
    if total != len(nodes):
        rest = total - len(nodes) - sum(c for (_, s), c in (counts or {}).items()
                                        if s.value in ("succeeded", "skipped"))
        if rest > 0:
            out.append(f"  ... and {rest} more that did not succeed: `rein runs show "
                       f"{run.run_id} --json` lists every node, `rein runs record` the "
                       "details")
    answered = [a for a in approvals if a.status.value != "pending"]
    pending = [a for a in approvals if a.status.value == "pending"]
    if answered:
        out.append("approvals")
        for a in answered:
            out.append(f"  {_answer_line(a)}")
            out.append(f"      {how_given(a.answer if isinstance(a.answer, Mapping) else None)}")
    for a in pending:
        if run.status.terminal:  # nobody needs to answer it any more
            out.append(f"  approval {a.approval_id} ({a.kind.value}) was still open when the "
                       f"run ended: {a.request.get('prompt', '')}".rstrip(": "))
            continue
        out.append(f"  waiting: approval {a.approval_id} ({a.kind.value}) "
                   f"{a.request.get('prompt', '')}".rstrip())
        if (why := refused_of(a)) is not None:
            out.append(f"           {refused_line(why)}")
        out.append(f"           look with `rein approvals show {a.approval_id}`")
    for c in children:
        out.append(f"child    {c.run_id} ({c.status.value}) for {c.parent_node_key}")
    if usage:
        out.append("usage    " + _usage(usage))
    return out


def _counted(counts: Mapping[tuple[str, Any], int]) -> str:
    """``49990 succeeded, 10 failed``: how many nodes end in each status, most first."""
    by: dict[str, int] = {}
    for (_, status), n in counts.items():
        by[status.value] = by.get(status.value, 0) + n
    return ", ".join(f"{n} {s}" for s, n in sorted(by.items(), key=lambda x: (-x[1], x[0])))


def _node_lines(n: Any, run_status: str, run_ended: bool) -> list[str]:
    record: Mapping[str, Any] = n.record if isinstance(n.record, Mapping) else {}
    status = n.status.value
    note = ""
    if run_ended and not n.status.terminal:
        # The store kept the node as it was when the run stopped: say what happened.
        note = f" (was {status} when the run ended {run_status})"
        status = "cancelled" if run_status == "cancelled" else "stopped"
    attempts = [a for a in record.get("attempts") or [] if isinstance(a, Mapping)]
    # One definition wherever a node's time is shown (the live lines, the reports): wall,
    # from its first start to its end, waits included; not the time the last process that
    # took it up spent on it (x-rein-duration-seconds), which leaves out an agent's turn.
    took = duration(seconds_between(record.get("started_at"), record.get("finished_at")))
    facts = [x for x in (f"wall {took}" if took else "",
                         f"{len(attempts)} attempts" if len(attempts) > 1 else "") if x]
    reason = record.get("x-rein-cancel-reason") or record.get("skip_reason")
    if reason:
        facts.append(str(reason))
    line = f"  {MARKS.get(status, '·')} {status:<15} {n.node_key} ({n.type})" \
        + (f"  {', '.join(facts)}" if facts else "") + note
    out = [line]
    for a in attempts:
        if a.get("status") in (None, "succeeded"):
            continue
        took = duration(seconds_between(a.get("started_at"), a.get("finished_at")))
        error = a.get("error") or a.get("status")
        out.append(f"{'':<20}attempt {a.get('attempt', '?')} {a.get('status')}"
                   + (f" after {took}" if took else "") + f": {error}")
        out.extend(f"{'':<22}{c}" for c in _failed_criteria(a))
    if not attempts and status in ("failed", "blocked") and record.get("error"):
        out.append(f"{'':<20}{record['error']}")
    refusal = record.get("x-rein-blocked")
    if isinstance(refusal, Mapping) and refusal.get("message"):
        out.append(f"{'':<20}{refusal.get('code')}: {refusal['message']}")
    return out


def _failed_criteria(attempt: Mapping[str, Any]) -> list[str]:
    out = []
    for result in (attempt.get("success") or {}).get("results") or []:
        if not isinstance(result, Mapping) or result.get("passed") is not False:
            continue
        evidence = str(result.get("evidence") or result.get("error") or "")
        if len(evidence) > _EVIDENCE:
            evidence = evidence[:_EVIDENCE - 3] + "..."
        severity = result.get("severity", "required")
        out.append(f"criterion {result.get('id')} ({result.get('kind')}, {severity}) failed"
                   + (f": {evidence}" if evidence else ""))
    return out


def _answer_line(a: Any) -> str:
    answer: Mapping[str, Any] = a.answer if isinstance(a.answer, Mapping) else {}
    what = a.request.get("node") or ("the graph" if a.kind.value == "graph" else "the run")
    who = answer.get("actor") or "someone rein did not name"
    note = f' "{answer["note"]}"' if answer.get("note") else ""
    when = f" at {a.answered_at}" if a.answered_at else ""
    return f"{a.approval_id}  {a.kind.value} {what}: {a.status.value} by {who}{when}{note}"


def _usage(usage: Mapping[str, Any]) -> str:
    """What the run spent; what no worker measured (a driver that reported no usage) reads
    ``unknown``, never ``$0.00`` or 0 tokens."""
    parts = []
    cost, tokens = usage.get("cost_usd"), usage.get("total_tokens")
    parts.append("cost unknown" if cost is None else f"${float(cost):.2f}")
    if tokens is None or tokens:
        parts.append("tokens unknown" if tokens is None else f"{tokens} tokens")
    if usage.get("tool_calls"):
        parts.append(f"{usage['tool_calls']} tool calls")
    if usage.get("node_executions") is not None:
        parts.append(f"{usage['node_executions']} node executions")
    sources = [s for s in usage.get("sources") or () if s in _SOURCES]
    if sources and sources != ["measured"]:  # a driver's turns are in it: say whose figure
        parts.append("(" + "; ".join(_SOURCES[s] for s in sources) + ")")
    return " · ".join(parts[:-1]) + " " + parts[-1] if len(parts) > 1 and \
        parts[-1].startswith("(") else " · ".join(parts)


_SOURCES = {"measured": "measured by rein",
            "attributed": "attributed from the agent's own records",
            "self-reported": "self-reported by the agent",
            "unknown": "unknown for a driver's turn"}


__all__ = ["print_report", "report_lines"]
