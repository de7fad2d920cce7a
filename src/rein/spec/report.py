"""`rein spec report`: what the specification cost, per document, read from the runs'
records (every run of the flow: a reopened document is counted in each run that wrote it).

As `rein dev report`: steps are the driver turns a document took (its first version and
each answer to a refusal); protocol errors are the envelopes rein refused
(``driver/refused``); wall time runs from the node's start to its end in the event stream;
tokens and cost are summed from the attempts' usage where the driver reported any, and shown
as unreported (``null``) otherwise, never as zero.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from rein.engine.service import Harness
from rein.spec.paths import NAMES, PATHS


def build(harness: Harness, flow: Mapping[str, Any]) -> dict[str, Any]:
    rows = {name: _row(name) for name in NAMES}
    for run_id in flow.get("runs") or [flow["run"]]:
        spans: dict[str, list[str]] = {}
        refused: dict[str, int] = {}
        for event in harness.store.events(run_id):
            key = str(event.payload.get("node", ""))
            if event.type in ("node/started", "node/finished"):
                spans.setdefault(key, []).append(event.at)
            elif event.type == "driver/refused":
                refused[key] = refused.get(key, 0) + 1
        for node in harness.store.nodes(run_id):
            name = node.node_id.removeprefix("write_")
            if not node.node_id.startswith("write_") or name not in rows:
                continue
            row = rows[name]
            attempts = list(node.record.get("attempts") or [])
            row["runs"] += 1
            row["steps"] += len(attempts)
            row["protocol_errors"] += refused.get(node.node_key, 0)
            row["wall_seconds"] = round(row["wall_seconds"]
                                        + _seconds(spans.get(node.node_key, [])), 3)
            for attempt in attempts:
                _add_usage(row, attempt.get("usage"))
    totals = _row("all")
    for row in rows.values():
        for key in ("runs", "steps", "protocol_errors"):
            totals[key] += row[key]
        totals["wall_seconds"] = round(totals["wall_seconds"] + row["wall_seconds"], 3)
        _add_usage(totals, {"total_tokens": row["tokens"], "cost_usd": row["cost_usd"]})
    return {"spec_id": flow["spec_id"], "runs": list(flow.get("runs") or []),
            "documents": list(rows.values()), "totals": totals}


def render(data: Mapping[str, Any]) -> str:
    head = f"{'':34} {'steps':>5} {'errors':>6} {'wall s':>8} {'tokens':>9} {'cost $':>8}"
    lines = [f"SPEC REPORT ({data['spec_id']}, {len(data['runs'])} run(s))", "", head]

    def line(name: str, r: Mapping[str, Any]) -> str:
        tokens = "-" if r["tokens"] is None else str(r["tokens"])
        cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}"
        return (f"{name[:34]:34} {r['steps']:>5} {r['protocol_errors']:>6} "
                f"{r['wall_seconds']:>8.2f} {tokens:>9} {cost:>8}")

    lines += [line(r["path"], r) for r in data["documents"]]
    lines += ["", line("total", data["totals"]), "",
              "tokens and cost: '-' where the driver reported no usage"]
    return "\n".join(lines) + "\n"


def _row(name: str) -> dict[str, Any]:
    return {"document": name, "path": PATHS.get(name, name), "runs": 0, "steps": 0,
            "protocol_errors": 0, "wall_seconds": 0.0, "tokens": None, "cost_usd": None}


def _add_usage(item: dict[str, Any], usage: Any) -> None:
    if not isinstance(usage, Mapping):
        return
    tokens = usage.get("total_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        item["tokens"] = (item["tokens"] or 0) + tokens
    cost = usage.get("cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        item["cost_usd"] = round((item["cost_usd"] or 0.0) + float(cost), 6)


def _seconds(stamps: list[str]) -> float:
    if len(stamps) < 2:
        return 0.0
    try:
        first, last = dt.datetime.fromisoformat(stamps[0]), dt.datetime.fromisoformat(stamps[-1])
    except ValueError:
        return 0.0
    return round((last - first).total_seconds(), 3)
