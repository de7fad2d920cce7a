"""`rein dev report`: what the development flow cost, per command, feature, turn and model.

The flow's runs (planning, features, and those of the same plan before a budget was
raised) are one report of :mod:`rein.engine.cases.usage_report`: steps are the invocations
of the driver-facing commands rein recorded (every one counted), protocol errors every
refusal among them (the agent's apart from rein's own), times split into the agent's, a
person's, rein's verification and the rest, and tokens and cost read from the agent's own
records, attributed by turn token (else what the agent reported of itself, labelled so;
else unknown, never zero). Each feature's row adds rein's attempts.

Money spent on earlier plans (`rein dev start --new` abandons a plan, not what it cost) is
not hidden: ``earlier_plans`` sums the workspace's other runs of the flow's graphs, apart
from the figures of this plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rein.dev.paths import FEATURES_ID, PLANNING_ID
from rein.dev.stops import features_of
from rein.engine.service import Harness


def stages(flow: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The flow's runs, in order: ``(stage, run id)``; the runs of this plan before a
    budget was raised (``earlier_runs``: planning and features, pair by pair) first."""
    earlier = list(flow.get("earlier_runs") or [])
    out = [(("planning", "features")[i % 2], str(r)) for i, r in enumerate(earlier) if r]
    out.append(("planning", str(flow["planning_run"])))
    if flow.get("features_run"):
        out.append(("features", str(flow["features_run"])))
    return out


def build(harness: Harness, flow: Mapping[str, Any], places: Iterable[Path] = ()
          ) -> dict[str, Any]:
    from rein.engine.cases.usage_report import build as report
    from rein.engine.cases.usage_report import configured

    more, prices = configured(harness.config)
    places = [*places, *more]
    mine = stages(flow)
    data = report(harness.store, harness.workspace, mine,
                  features=features_of(harness, flow), places=places, prices=prices)
    ours = {run_id for _, run_id in mine}
    names = {PLANNING_ID: "planning", FEATURES_ID: "features"}
    earlier = [(names[r.graph_id], str(r.run_id)) for r in reversed(harness.runs_here())
               if r.graph_id in names and str(r.run_id) not in ours]
    return {"plan_id": flow["plan_id"], **data, "earlier_plans": _earlier(
        report(harness.store, harness.workspace, earlier, places=places, prices=prices))
        if earlier else None}


def _earlier(data: Mapping[str, Any]) -> dict[str, Any]:
    """What the earlier plans' runs cost, in one figure each."""
    totals = data["totals"]
    return {"runs": [s["run"] for s in data["stages"]], "turns": totals["turns"],
            "protocol_errors": totals["protocol_errors"], "usage": totals["usage"],
            "usage_known": totals["usage_known"], "usage_source": totals["usage_source"],
            "models": data["models"], "unpriced": data["unpriced"]}


__all__ = ["build", "stages"]
