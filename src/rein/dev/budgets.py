"""A spent budget, raised by a person: the rest of the plan runs again, approved again.

The budgets are part of the feature graph a person approved, so a higher limit in
``[dev]`` of ``rein.toml`` does not change a run under way. When the feature run stopped at
a budget and the configured limits are now higher, `rein dev` writes the graph again with
the features that are not committed yet and the new limits, and puts it before a person
again (a planning run that is only the approval gate). The agent cannot get past a budget:
a changed graph is never run without a new approval of exactly its content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from rein.dev import graphs
from rein.dev.settings import DevSettings
from rein.engine.service import Harness
from rein.errors import Refused


def raised_limits(doc: Mapping[str, Any], settings: DevSettings) -> dict[str, Any] | None:
    """The graph's constraints under the configured limits, if any limit was raised."""
    now = dict(doc.get("constraints") or {})
    wanted = {"max_node_executions": settings.max_steps,
              "max_wall_clock_seconds": settings.max_wall_clock_seconds,
              "max_cost_usd": settings.max_cost_usd}
    raised = False
    for key, value in wanted.items():
        if value is None:
            raised = raised or key in now
            now.pop(key, None)
        elif now.get(key) is None or value > now[key]:
            raised = raised or now.get(key) is not None
            now[key] = value
    return now if raised else None


def _refuse_changed(harness: Harness, run_id: str) -> None:
    """The rest of the plan is the approved graph's (DEV008 otherwise): the graph file is
    the workspace's, and a person asked to approve the rest "with the new limits" must not
    be shown features the agent rewrote meanwhile (a verify command weakened)."""
    from rein.engine.run.prepare import binding_changes

    changed, _now = binding_changes(harness.run(run_id))
    if changed:
        raise Refused(f"{graphs.FEATURES_PATH} changed after it was approved (its "
                      f"{', '.join(changed)}): the features not yet committed are not put "
                      "before a person again from it", code="DEV008",
                      hint=f"restore the approved {graphs.FEATURES_PATH}, or run `rein dev "
                           "start --new` (a changed plan is approved again)")


async def replan_rest(harness: Harness, flow: dict[str, Any], settings: DevSettings
                      ) -> str | None:
    """After a budget stop with raised limits: the rest of the plan put up for approval
    again; the notice to print (None: the limits were not raised, nothing changes)."""
    ws = harness.workspace
    path = ws / graphs.FEATURES_PATH
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    constraints = raised_limits(doc, settings)
    if constraints is None:
        return None
    _refuse_changed(harness, str(flow["features_run"]))
    done = {n.node_id for n in harness.store.nodes(flow["features_run"])
            if n.status.value == "succeeded"}
    nodes: dict[str, Any] = {}
    previous: str | None = None
    for node_id, node in (doc.get("nodes") or {}).items():
        if node_id in done:
            continue
        node = dict(node)
        node.pop("depends_on", None)
        if previous is not None:
            node["depends_on"] = [previous]
        nodes[node_id] = node
        previous = node_id
    outputs = {k: v for k, v in (doc.get("outputs") or {}).items()
               if str(v.get("from", "")).split(".")[1:2] and
               str(v["from"]).split(".")[1] in nodes}
    doc = {**doc, "nodes": nodes, "entrypoints": list(nodes)[:1], "constraints": constraints,
           "outputs": outputs}
    graphs.write_feature_graph(ws, doc)
    gate = graphs.planning_graph(brief="", settings=settings, plan_id=flow["plan_id"],
                                 imported=True)
    planning = graphs.write_graph(ws, graphs.PLANNING_PATH, gate)
    prepared = await harness.prepare(planning, given={})
    outcome = await harness.start(prepared, approved=prepared.digest)
    flow.setdefault("earlier_runs", []).extend([flow["planning_run"], flow["features_run"]])
    flow["planning_run"], flow["features_run"] = str(outcome.run_id), None
    return (f"the budget was raised in rein.toml: the {len(nodes)} feature(s) not yet "
            f"committed are in {graphs.FEATURES_PATH} again, with the new limits, for a "
            "person to approve")
