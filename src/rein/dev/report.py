"""`rein dev report`: what the session cost, per feature, read from the runs' records.

Steps are the driver turns a feature took (its first implementation and each repair);
protocol errors are the envelopes rein refused and recorded (``driver/refused``); wall time
runs from the node's start to its end in the event stream; tokens and cost are summed from
the attempts' usage where the driver reported any, and shown as unreported (``null``)
otherwise, never as zero.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from rein.dev.stops import features_of
from rein.engine.service import Harness


def build(harness: Harness, flow: Mapping[str, Any]) -> dict[str, Any]:
    runs = [("planning", flow["planning_run"])]
    if flow.get("features_run"):
        runs.append(("features", flow["features_run"]))
    rows: dict[str, dict[str, Any]] = {}
    stages = []
    for stage, run_id in runs:
        spans: dict[str, list[str]] = {}
        refused: dict[str, int] = {}
        for event in harness.store.events(run_id):
            node = str(event.payload.get("node", ""))
            if event.type in ("node/started", "node/finished"):
                spans.setdefault(node, []).append(event.at)
            elif event.type == "driver/refused":
                refused[node] = refused.get(node, 0) + 1
        total = _row(stage, stage)
        for row in harness.store.nodes(run_id):
            item = rows.setdefault(row.node_id, _row(stage, row.node_id))
            attempts = list(row.record.get("attempts") or [])
            item["status"] = row.status.value
            item["steps"] += len(attempts)
            item["protocol_errors"] += refused.get(row.node_key, 0)
            item["wall_seconds"] = _seconds(spans.get(row.node_key, []))
            for attempt in attempts:
                _add_usage(item, attempt.get("usage"))
            for key in ("steps", "protocol_errors"):
                total[key] += item[key]
            total["wall_seconds"] = round(total["wall_seconds"] + item["wall_seconds"], 3)
            _add_usage(total, {"total_tokens": item["tokens"], "cost_usd": item["cost_usd"]})
        stages.append(total)
    features = features_of(harness, flow)
    by_node = {f["node"]: f for f in features}
    out_features = []
    for node_id, item in rows.items():
        f = by_node.get(node_id)
        if f is not None:
            out_features.append({"id": f["id"], "title": f["title"],
                                 "serves": f["serves"], **item})
    totals = _row("all", "all")
    for s in stages:
        for key in ("steps", "protocol_errors"):
            totals[key] += s[key]
        totals["wall_seconds"] = round(totals["wall_seconds"] + s["wall_seconds"], 3)
        _add_usage(totals, {"total_tokens": s["tokens"], "cost_usd": s["cost_usd"]})
    return {"plan_id": flow["plan_id"], "stages": stages, "features": out_features,
            "totals": totals}


def render(data: Mapping[str, Any]) -> str:
    head = f"{'':24} {'steps':>5} {'errors':>6} {'wall s':>8} {'tokens':>9} {'cost $':>8}"
    lines = [f"DEV REPORT (plan {data['plan_id']})", "", head]

    def line(name: str, r: Mapping[str, Any]) -> str:
        tokens = "-" if r["tokens"] is None else str(r["tokens"])
        cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}"
        return (f"{name[:24]:24} {r['steps']:>5} {r['protocol_errors']:>6} "
                f"{r['wall_seconds']:>8.2f} {tokens:>9} {cost:>8}")

    for s in data["stages"]:
        lines.append(line(s["name"], s))
    lines.append("")
    for f in data["features"]:
        lines.append(line(f"feature {f['id']}", f))
    served = [f"  {f['id']}: {', '.join(f['serves'])}" for f in data["features"]
              if f.get("serves")]
    if served:  # a plan `rein spec` published: each feature links back to its requirements
        lines += ["", "requirements served:", *served]
    lines += ["", line("total", data["totals"]),
              "", "tokens and cost: '-' where the driver reported no usage"]
    return "\n".join(lines) + "\n"


def _row(stage: str, name: str) -> dict[str, Any]:
    return {"stage": stage, "name": name, "status": None, "steps": 0, "protocol_errors": 0,
            "wall_seconds": 0.0, "tokens": None, "cost_usd": None}


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
