"""`rein spec report`: what the specification cost, per document, read from the runs'
records (every run of the flow: a reopened document is counted in each run that wrote it).

The figures are those of `rein runs report` on the same runs
(:mod:`rein.engine.cases.usage_report`), grouped by document: protocol errors are the
refusals on rein's record of calls, each counted for the document whose instruction it
answered (by turn token), and on a line of its own when it answered none (a malformed
envelope sent with no instruction pending, a run named wrongly); tokens and cost are each
turn's usage, from the agent's own records where found, else what it reported of itself,
else unknown. A sum over a part that is unknown is unknown, and the known part is shown
beside it, labelled. Steps are the attempts a document took (its first version and each
answer to a refusal); wall time runs from the node's start to its end in the event stream.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.core.ids import RunId
from rein.engine.service import Harness
from rein.spec.paths import NAMES, PATHS

OTHER = "(answered no document's instruction)"


def build(harness: Harness, flow: Mapping[str, Any], places: Iterable[Path] = ()
          ) -> dict[str, Any]:
    from rein.engine.cases.usage_report import build as usage
    from rein.engine.cases.usage_report import configured, known_part

    run_ids = [RunId(str(r)) for r in flow.get("runs") or [flow["run"]]]
    more, prices = configured(harness.config)
    data = usage(harness.store, harness.workspace, [("spec", r) for r in run_ids],
                 features=[{"id": name, "title": PATHS[name], "node": f"write_{name}"}
                           for name in NAMES],
                 places=[*places, *more], prices=prices)
    rows = {name: _row(name) for name in NAMES}
    for run_id in run_ids:
        spans: dict[str, list[str]] = {}
        for event in harness.store.events(run_id):
            if event.type in ("node/started", "node/finished"):
                spans.setdefault(str(event.payload.get("node", "")), []).append(event.at)
        for node in harness.store.nodes(run_id):
            name = node.node_id.removeprefix("write_")
            if not node.node_id.startswith("write_") or name not in rows:
                continue
            row = rows[name]
            row["runs"] += 1
            row["steps"] += len(list(node.record.get("attempts") or []))
            row["wall_seconds"] = round(row["wall_seconds"]
                                        + _seconds(spans.get(node.node_key, [])), 3)
    features = {str(f["id"]): f for f in data["features"]}
    for name, row in rows.items():
        turns = [t["usage"] for t in data["turns"] if t["node"] == f"write_{name}"]
        row["protocol_errors"] = features[name]["protocol_errors"]
        row["rein_errors"] = features[name]["rein_errors"]
        _usage(row, turns, known_part)
    errors, theirs = data["errors"], (list(rows.values()))
    other = _row(OTHER)
    other["path"] = OTHER
    other["protocol_errors"] = errors["agent_total"] - sum(r["protocol_errors"] for r in theirs)
    other["rein_errors"] = errors["rein_total"] - sum(r["rein_errors"] for r in theirs)
    totals = _row("all")
    for row in [*theirs, other]:
        for key in ("runs", "steps", "protocol_errors", "rein_errors"):
            totals[key] += row[key]
        totals["wall_seconds"] = round(totals["wall_seconds"] + row["wall_seconds"], 3)
    _usage(totals, [t["usage"] for t in data["turns"]
                    if str(t["node"]).removeprefix("write_") in rows], known_part)
    return {"spec_id": flow["spec_id"], "runs": list(flow.get("runs") or []),
            "documents": theirs, "unattributed": other, "totals": totals,
            "errors": errors, "models": data["models"], "unpriced": data["unpriced"],
            "prices": data["prices"], "driver": data["driver"]}


def render(data: Mapping[str, Any]) -> str:
    head = f"{'':36} {'steps':>5} {'errors':>6} {'wall s':>8} {'tokens':>9} {'cost $':>8}"
    lines = [f"SPEC REPORT ({data['spec_id']}, {len(data['runs'])} run(s))", "", head]

    def line(name: str, r: Mapping[str, Any]) -> str:
        tokens = "-" if r["tokens"] is None else str(r["tokens"])
        cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}"
        return (f"{name[:36]:36} {r['steps']:>5} {r['protocol_errors']:>6} "
                f"{r['wall_seconds']:>8.2f} {tokens:>9} {cost:>8}")

    lines += [line(r["path"], r) for r in data["documents"]]
    other = data["unattributed"]
    if other["protocol_errors"] or other["rein_errors"]:
        lines.append(line(other["path"], other))
    totals = data["totals"]
    lines += ["", line("total", totals), ""]
    known = totals["known"]
    if totals["tokens"] is None and known["attempts"]:
        cost = "unknown" if known["cost_usd"] is None else f"${known['cost_usd']:.4f}"
        lines.append(f"known part: {known['tokens']:,} tokens over {known['attempts']} of "
                     f"{known['of']} attempts, cost {cost} (the total is unknown)")
    lines += _models(data["models"])
    lines.append("tokens: '-' where an attempt's usage is unknown (the driver reported "
                 "none); cost: '-' there too, and where a model has no price")
    lines += [f"no price for {m}: its cost is unknown (give one in rein.toml under "
              f'[usage.prices."{m}"]: input, output, cache_read in USD per million tokens)'
              for m in data["unpriced"]]
    errors = data["errors"]
    if errors["agent_total"] or errors["rein_total"]:
        listed = ", ".join(f"{k} ×{v}" for side in ("agent", "rein")
                           for k, v in sorted(errors[side].items()))
        lines.append(f"protocol errors: {errors['agent_total']} the agent's, "
                     f"{errors['rein_total']} rein's own ({listed})")
    return "\n".join(lines) + "\n"


def _models(models: Sequence[Mapping[str, Any]]) -> list[str]:
    if not models:
        return []
    out = ["", "models"]
    for m in models:
        cost = "-" if m["cost_usd"] is None else f"${m['cost_usd']:.4f}"
        count = f"{m['turns']} turn(s)" if m["model_calls"] is None else \
            f"{m['model_calls']} model call(s)"
        out.append(f"  {m['model']}: {m['total_tokens']:,} tokens, cost {cost} "
                   f"({count}, {m['source']})")
    return [*out, ""]


def _row(name: str) -> dict[str, Any]:
    return {"document": name, "path": PATHS.get(name, name), "runs": 0, "steps": 0,
            "protocol_errors": 0, "rein_errors": 0, "wall_seconds": 0.0, "tokens": None,
            "cost_usd": None, "known": None}


def _usage(row: dict[str, Any], turns: Sequence[Mapping[str, Any] | None], known_part: Any
           ) -> None:
    """Tokens and cost when every turn's usage is known (else ``None``), and the known
    part beside them: its attempts of how many, its tokens and cost."""
    known = known_part(turns)
    whole = known["turns"] == known["of"] and known["of"] > 0
    row["tokens"] = known.get("total_tokens") if whole else None
    row["cost_usd"] = known.get("cost_usd") if whole else None
    row["known"] = {"attempts": known["turns"], "of": known["of"],
                    "tokens": known.get("total_tokens", 0),
                    "cost_usd": known.get("cost_usd", 0.0)}


def _seconds(stamps: list[str]) -> float:
    if len(stamps) < 2:
        return 0.0
    try:
        first, last = dt.datetime.fromisoformat(stamps[0]), dt.datetime.fromisoformat(stamps[-1])
    except ValueError:
        return 0.0
    return round((last - first).total_seconds(), 3)
