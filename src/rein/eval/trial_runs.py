"""Graph and brief trials: runs of the one Harness, in the trial's own workspace and store.

A **graph** trial prepares the scenario's graph (with the configuration's prompt text and
profile applied), starts it approved by the person running the evaluation, answers the
gates the scenario declares (:mod:`rein.eval.gates`), and is solved when the run succeeds:
the graph's own criteria, checked by the harness, decide.

A **brief** trial is the development flow: the fixture becomes a git repository with one
commit, the brief a one-feature plan (``feature_list.json``, which ``rein dev`` imports) whose
verify command is the scenario's; the flow's plan gate is answered as the scenario declares,
and the trial is solved when the feature is verified and committed.

Under the ``oracle`` and ``nop`` configurations the built-in workers
(:mod:`rein.eval.workers`) serve every node; otherwise the overlay's ``[tiers]`` do. A node
nobody serves leaves the run waiting for a driver: the trial is not solved, and says so.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.engine.service import Harness
from rein.errors import ReinError
from rein.eval.gates import TrialSeal, answer_declared
from rein.eval.overlays import Applied, PromptOverlay
from rein.eval.trial import (
    Trial,
    TrialSpec,
    blank,
    copy_fixture,
    count_tools,
    trial_config,
    with_overlays,
)

# A trial continues its run after each declared answer; a graph with more gates than this
# in a row is answering itself in a loop.
MAX_GATE_ROUNDS = 50


def workers_for(spec: TrialSpec) -> tuple[Any, ...] | None:
    """The built-in worker of ``oracle`` and ``nop``; None: the overlay's workers."""
    from rein.eval.workers import NopWorker, OracleWorker

    match spec.configuration.worker:
        case "nop":
            return (NopWorker(),)
        case "oracle":
            assert spec.scenario.solution is not None
            return (OracleWorker(spec.scenario.solution, timeout_seconds=spec.timeout),)
        case _:
            return None


def open_trial_harness(spec: TrialSpec, workspace: Path,
                       applied: Applied | None = None) -> Harness:
    """The trial's Harness. Its graphs are started, approved, by the person running the
    evaluation, and the record says they were started from an evaluation. With ``applied``
    (the configuration overlays what the model is shown), every request of its model
    workers carries the overlay, counted there."""
    config = trial_config(spec)
    workers = workers_for(spec)
    if workers is None and applied is not None:
        from rein.engine.run.workers_setup import workers_from_config
        from rein.eval.overlays import OverlaidProvider

        overlay = applied.overlay
        workers = workers_from_config(
            workspace.resolve(), config, env=spec.clean_env(),
            wrap_provider=lambda inner: OverlaidProvider(inner, overlay, applied))
    return Harness.open(workspace, config, env=spec.clean_env(), workers=workers,
                        surface="evaluation")


def applied_for(spec: TrialSpec) -> Applied | None:
    """The tally of a configuration's prompt overlay for one trial (None: it has none)."""
    overlay = PromptOverlay.of(spec.configuration.definition)
    return Applied(overlay) if overlay is not None else None


async def graph_trial(spec: TrialSpec) -> Trial:
    from rein.engine.run.prepare import PrepareFailed
    from rein.formats import yaml_text
    from rein.formats.loader import load_path

    scenario = spec.scenario
    assert scenario.graph is not None
    workspace = copy_fixture(scenario.workspace, spec.root / "workspace")
    graph_path = scenario.graph
    if spec.configuration.definition.get("instructions") or \
            spec.configuration.definition.get("profile"):
        data = load_path(scenario.graph).data
        graph_path = spec.root / scenario.graph.name
        graph_path.write_text(yaml_text.dump(with_overlays(data, spec.configuration)),
                              encoding="utf-8")
    applied = applied_for(spec)
    with open_trial_harness(spec, workspace, applied) as harness:
        try:
            prepared = await harness.prepare(graph_path, given=dict(scenario.params))
        except PrepareFailed as exc:
            return blank(spec, "error", cannot_start(exc, scenario.graph))
        outcome = await harness.start(prepared, approved=prepared.digest)
        gates, waiting = await settle(harness, spec, outcome.run_id, workspace)
        return grade(harness, spec, outcome.run_id, gates, waiting,
                     graph=dict(prepared.data), applied=applied)


def cannot_start(exc: ReinError, graph: Path) -> str:
    """Why a scenario's graph cannot start, with where and the fix, as a trial's reason."""
    at = exc.location
    where = "" if at is None or at.line is None else \
        f", at {at.file}:{at.line}" + (f":{at.column}" if at.column is not None else "")
    fix = f"; {exc.hint}" if exc.hint else ""
    return (f"the scenario's graph cannot start: {exc.code}: {exc.message}{where}{fix} "
            f"(every finding: `rein graph validate {graph}`)")


async def settle(harness: Harness, spec: TrialSpec, run_id: str, workspace: Path
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """Answer the run's declared gates and continue it, until it ends or waits for
    something no declaration answers: (the answers given, what it still waits for)."""
    seal = TrialSeal.open(evaluation=spec.evaluation, trials_root=spec.trials_root,
                          trial=spec.trial_id, scenario=spec.scenario.name,
                          workspace=workspace)
    given: list[dict[str, Any]] = []
    for _ in range(MAX_GATE_ROUNDS):
        run = harness.run(run_id)
        if run.status.terminal:
            return given, None
        answered, left = await answer_declared(harness, run_id, seal, spec.scenario.gates)
        given += answered
        if not answered:
            if left:
                return given, "; ".join(u.text() for u in left)
            pending = harness.driver_status(run_id)
            if pending.get("status") == "instruction":
                return given, (f"waiting for a driver at node {pending.get('node')}: no "
                               "worker of this configuration serves it")
            return given, f"the run is {run.status.value}"
        await harness.engine.proceed(harness.top_run_id(run_id))
    return given, f"more than {MAX_GATE_ROUNDS} gates answered in a row"


def grade(harness: Harness, spec: TrialSpec, run_id: str, gates: list[dict[str, Any]],
          waiting: str | None, *, graph: Mapping[str, Any],
          applied: Applied | None = None) -> Trial:
    """The trial as the run's record tells it (and what its prompt overlay changed)."""
    record = harness.record(run_id)
    trial = blank(spec, "solved" if record.get("status") == "succeeded" else "failed")
    trial.run_id, trial.gates = run_id, gates
    trial.overlays = applied.to_json() if applied is not None else None
    if spec.configuration.worker not in ("oracle", "nop"):  # those call no model: zero
        children = [harness.record(child.run_id) for child in harness.child_runs(run_id)]
        trial.input_tokens, trial.output_tokens, trial.cost_usd = spent([record, *children])
    trial.turns, trial.tool_calls = count_tools(harness.events(run_id))
    for child in harness.child_runs(run_id):
        turns, calls = count_tools(harness.events(child.run_id))
        trial.turns += turns
        for name, n in calls.items():
            trial.tool_calls[name] = trial.tool_calls.get(name, 0) + n
    from rein.eval.atif import first_instruction, write_trajectory

    write_trajectory(harness, run_id, spec.root / "agent" / "trajectory.json",
                     configuration=spec.configuration.name,
                     instruction=first_instruction(graph) or spec.scenario.description
                     or spec.scenario.name)
    if not trial.solved:
        trial.failures = failures_of(record, graph)
        if waiting is not None:
            trial.failures.append({"node": None, "criterion": "waiting", "evidence": waiting,
                                   "description": "the run waits for something the "
                                                  "evaluation does not answer"})
        trial.reason = waiting or (trial.failures[0]["evidence"] if trial.failures
                                   else f"the run ended {record.get('status')}")
    return trial


def spent(records: list[dict[str, Any]]) -> tuple[int | None, int | None, float | None]:
    """Input tokens, output tokens and cost over every attempt of ``records``; each is None
    (unknown, never zero) when an attempt did not report it: a command worker's agent, a
    provider without prices."""
    totals: dict[str, float] = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    known = dict.fromkeys(totals, True)
    for record in records:
        for node in record.get("nodes") or []:
            for attempt in node.get("attempts") or []:
                usage = attempt.get("usage") or {}
                for key in totals:
                    if isinstance(usage.get(key), (int, float)):
                        totals[key] += usage[key]
                    else:
                        known[key] = False
    return (int(totals["input_tokens"]) if known["input_tokens"] else None,
            int(totals["output_tokens"]) if known["output_tokens"] else None,
            round(totals["cost_usd"], 6) if known["cost_usd"] else None)


def failures_of(record: Mapping[str, Any], graph: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each failed node's failing criteria (with their evidence) from its last attempt, or
    the attempt's failure class when no criterion decided."""
    described = {(nid, c.get("id")): c.get("description", "")
                 for nid, node in (graph.get("nodes") or {}).items() if isinstance(node, dict)
                 for c in ((node.get("success") or {}).get("criteria") or [])}
    out = []
    for node in record.get("nodes") or []:
        if node.get("status") not in ("failed", "blocked") or not node.get("attempts"):
            continue
        last = node["attempts"][-1]
        results = [r for r in (last.get("success") or {}).get("results") or []
                   if r.get("passed") is False]
        for result in results:
            out.append({"node": node["node_id"], "criterion": result.get("id"),
                        "kind": result.get("kind"),
                        "description": described.get((node["node_id"], result.get("id")), ""),
                        "evidence": short(str(result.get("evidence") or ""))})
        if not results:
            out.append({"node": node["node_id"],
                        "criterion": last.get("x-rein-failure-class") or last.get("status"),
                        "kind": "attempt", "description": "the attempt failed",
                        "evidence": short(str(last.get("error") or ""))})
    return out


def short(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit // 3] + " … " + text[-limit // 2:]


# -- brief scenarios -------------------------------------------------------------------------


async def brief_trial(spec: TrialSpec) -> Trial:
    from rein.dev import flow

    scenario = spec.scenario
    assert scenario.brief is not None and scenario.verify is not None
    workspace = copy_fixture(scenario.workspace, spec.root / "workspace")
    text = scenario.brief.strip()
    (workspace / "specs").mkdir(exist_ok=True)
    (workspace / "specs" / "brief.md").write_text(text + "\n", encoding="utf-8")
    feature: dict[str, Any] = {"id": "brief", "title": text.splitlines()[0][:100],
                               "description": text[:2000], "priority": 1,
                               "verify": list(scenario.verify)}
    instructions = spec.configuration.definition.get("instructions")
    if instructions:  # the configuration's prompt text reaches the feature as its context
        feature["context"] = {"constraints": [str(instructions)]}
    (workspace / "feature_list.json").write_text(
        json.dumps({"features": [feature]}, indent=2), encoding="utf-8")
    _commit_fixture(workspace)
    applied = applied_for(spec)
    with open_trial_harness(spec, workspace, applied) as harness:
        env = spec.clean_env()
        where = await flow.advance(harness, env=env)
        gates, waiting = await settle(harness, spec, where["planning_run"], workspace)
        if waiting is not None:
            return grade(harness, spec, where["planning_run"], gates, waiting, graph={},
                         applied=applied)
        where = await flow.advance(harness, env=env)
        features_run = where.get("features_run")
        if not features_run:
            return grade(harness, spec, where["planning_run"], gates,
                         f"the feature run did not start: {where.get('message', '')}",
                         graph={}, applied=applied)
        more, waiting = await settle(harness, spec, features_run, workspace)
        from rein.formats.loader import load_path

        graph = load_path(workspace / "specs" / "plan.agraph.yaml").data
        return grade(harness, spec, features_run, gates + more, waiting,
                     graph=graph if isinstance(graph, dict) else {},
                     applied=applied)


def _commit_fixture(workspace: Path) -> None:
    """``git init`` and one commit of the fixture, so the feature's change is the diff. No
    hook, no signing and no system or global configuration take part."""
    with tempfile.TemporaryDirectory(prefix="rein-eval-hooks-") as hooks:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": hooks, "LC_ALL": "C"}
        base = ["git", "-c", f"core.hooksPath={hooks}", "-c", "commit.gpgsign=false",
                "-c", "user.name=rein eval", "-c", "user.email=rein-eval@localhost"]
        for args in (["init", "-q"], ["add", "-A"],
                     ["commit", "-q", "--allow-empty", "-m", "fixture"]):
            subprocess.run([*base, *args], cwd=workspace, env=env, check=True,
                           capture_output=True, timeout=60)


__all__ = ["applied_for", "brief_trial", "failures_of", "grade", "graph_trial", "settle",
           "workers_for"]
