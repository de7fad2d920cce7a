"""The results of an evaluation, as one JSON object (what ``rein eval --json`` prints).

Its keys, which suites and CI rely on::

    {"evaluation": ID, "created_at": ..., "trials_per_scenario": N, "alpha": 0.05,
     "configurations": [{"name", "digest", "worker", "solve_rate", "ci_low", "ci_high",
                         "trials", "solved", "cost_usd", "tokens", "turns", "wall_seconds",
                         "not_graded": {...}, "failures": [...]}],
     "scenarios": [{"name", "kind", "digest", "results": {CONFIG: {"solved", "trials",
                    "state"}}}],
     "comparisons": [...], "validation": {...}, "risk": {...}, "trials": [...]}

Rates are between 0 and 1. ``trials`` counts the graded trials (solved, failed or errored,
an error counting as not solved, as Harbor's mean counts it); trials that could not run
here (``unsupported``), oracle trials of a scenario without a solution (``no_solution``) and
trials interrupted twice are listed under ``not_graded`` and left out of the rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rein.eval.configs import Configuration, area, diff
from rein.eval.scenarios import Scenario
from rein.eval.stats import (
    Pair,
    change,
    ks,
    paired_test,
    pass_at_k,
    pass_hat_k,
    state,
    wilson,
)
from rein.eval.trial import Trial


def build(plan: Mapping[str, Any], trials: Sequence[Trial], scenarios: Sequence[Scenario],
          configs: Sequence[Configuration], *, alpha: float,
          hook_share: float = 0.2) -> dict[str, Any]:
    by: dict[tuple[str, str], list[Trial]] = {}
    for trial in trials:
        by.setdefault((trial.scenario, trial.configuration), []).append(trial)
    out: dict[str, Any] = {
        "evaluation": plan["evaluation"], "created_at": plan.get("created_at"),
        "trials_per_scenario": plan["options"]["trials"], "alpha": alpha,
        "approval": _approval(plan.get("approval")),
        "configurations": [_configuration(c, [t for t in trials if t.configuration == c.name])
                           for c in configs],
        "scenarios": [_scenario(s, configs, by) for s in scenarios],
    }
    compared = [c for c in configs if not c.builtin]
    out["comparisons"] = [compare(compared[0], other, scenarios, by, alpha=alpha)
                          for other in compared[1:]]
    out["validation"] = validation(scenarios, configs, by)
    out["risk"] = {"changes": [_risk(c) for c in out["comparisons"]],
                   "hooks": hook_flags(compared, trials, share=hook_share)}
    out["trials"] = [t.to_json() for t in trials]
    return out


def _approval(approved: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Who approved what the configurations run (None: they run nothing that needs it)."""
    if not approved:
        return None
    return {k: approved.get(k) for k in ("digest", "approver", "approved_at",
                                         "configurations")}


def _configuration(config: Configuration, trials: Sequence[Trial]) -> dict[str, Any]:
    graded = [t for t in trials if t.graded]
    solved = sum(t.solved for t in graded)
    low, high = wilson(solved, len(graded))
    costs = [t.cost_usd for t in graded if t.cost_usd is not None]
    tokens = [t.tokens for t in graded if t.tokens is not None]
    not_graded: dict[str, list[str]] = {}
    for t in trials:
        if not t.graded:
            not_graded.setdefault(t.status, []).append(t.trial)
    return {**config.summary(),
            "solve_rate": solved / len(graded) if graded else 0.0,
            "ci_low": low, "ci_high": high, "trials": len(graded), "solved": solved,
            "errors": sum(t.status == "error" for t in graded),
            "not_graded": not_graded,
            "cost_usd": round(sum(costs), 6) if costs else None,
            "cost_complete": len(costs) == len(graded),
            "tokens": sum(tokens) if tokens else None,
            "tokens_complete": len(tokens) == len(graded),
            "input_tokens": sum(t.input_tokens or 0 for t in graded),
            "output_tokens": sum(t.output_tokens or 0 for t in graded),
            "turns": sum(t.turns for t in graded),
            "wall_seconds": round(sum(t.wall_seconds for t in trials), 3),
            **passes(graded),
            "overlays": overlays(trials),
            "failures": failures(graded)}


def passes(graded: Sequence[Trial]) -> dict[str, Any]:
    """pass@k and pass^k of a configuration: per scenario from its graded trials (the
    unbiased estimators), averaged over the scenarios with at least k graded trials; keyed
    by k as a string (JSON), with how many scenarios each average is over."""
    by: dict[str, list[Trial]] = {}
    for t in graded:
        by.setdefault(t.scenario, []).append(t)
    counts = [(len(ts), sum(t.solved for t in ts)) for ts in by.values()]
    most = max((n for n, _ in counts), default=0)
    at: dict[str, float] = {}
    hat: dict[str, float] = {}
    over: dict[str, int] = {}
    for k in ks(most):
        used = [(n, c) for n, c in counts if n >= k]
        at[str(k)] = float(sum(pass_at_k(n, c, k) for n, c in used) / len(used))
        hat[str(k)] = float(sum(pass_hat_k(n, c, k) for n, c in used) / len(used))
        over[str(k)] = len(used)
    return {"pass_at_k": at, "pass_hat_k": hat, "pass_k_scenarios": over}


def overlays(trials: Sequence[Trial]) -> dict[str, Any] | None:
    """What a configuration's prompt overlay changed over its trials: the model calls each
    overlay changed, and the described tools no call of any trial offered (None: the
    configuration overlays nothing)."""
    seen = [t.overlays for t in trials if t.overlays]
    if not seen:
        return None
    out: dict[str, Any] = {"calls": sum(int(o.get("calls") or 0) for o in seen)}
    if any("system" in o for o in seen):
        out["system"] = sum(int(o.get("system") or 0) for o in seen)
    tools: dict[str, int] = {}
    for o in seen:
        for name, n in (o.get("tools") or {}).items():
            tools[name] = tools.get(name, 0) + int(n)
    if tools:
        out["tools"] = dict(sorted(tools.items()))
        out["never_offered"] = sorted(n for n, c in tools.items() if c == 0)
    return out


def failures(trials: Sequence[Trial]) -> list[dict[str, Any]]:
    """The failed trials grouped by their failing criterion, largest group first, each with
    the scenarios it failed and its evidence (a few distinct samples)."""
    groups: dict[str, dict[str, Any]] = {}
    for trial in trials:
        if trial.solved:
            continue
        found = trial.failures or [{"criterion": trial.status, "node": None,
                                    "evidence": trial.reason or "", "description": ""}]
        for f in found:
            key = str(f.get("criterion"))
            group = groups.setdefault(key, {
                "criterion": key, "nodes": [], "kind": f.get("kind"),
                "description": f.get("description", ""), "trials": 0, "scenarios": [],
                "evidence": []})
            group["trials"] += 1
            if f.get("node") and f["node"] not in group["nodes"]:
                group["nodes"].append(f["node"])
            if trial.scenario not in group["scenarios"]:
                group["scenarios"].append(trial.scenario)
            evidence = str(f.get("evidence") or "")
            if evidence and evidence not in group["evidence"] and len(group["evidence"]) < 3:
                group["evidence"].append(evidence)
    return sorted(groups.values(), key=lambda g: (-g["trials"], g["criterion"]))


def _scenario(scenario: Scenario, configs: Sequence[Configuration],
              by: Mapping[tuple[str, str], list[Trial]]) -> dict[str, Any]:
    results = {}
    for config in configs:
        trials = by.get((scenario.name, config.name), [])
        graded = [t for t in trials if t.graded]
        solved = sum(t.solved for t in graded)
        entry: dict[str, Any] = {"solved": solved, "trials": len(graded),
                                 "state": state(solved, len(graded))}
        reasons = sorted({t.status for t in trials if not t.graded})
        if reasons:
            entry["not_graded"] = reasons
            entry["reason"] = next(t.reason for t in trials if not t.graded)
        results[config.name] = entry
    return {**scenario.summary(), "results": results}


def _pair(scenario: str, a: Sequence[Trial], b: Sequence[Trial]) -> Pair:
    ga, gb = [t for t in a if t.graded], [t for t in b if t.graded]
    return Pair(scenario=scenario, solved_a=sum(t.solved for t in ga), trials_a=len(ga),
                solved_b=sum(t.solved for t in gb), trials_b=len(gb))


def compare(a: Configuration, b: Configuration, scenarios: Sequence[Scenario],
            by: Mapping[tuple[str, str], list[Trial]], *, alpha: float) -> dict[str, Any]:
    """B against A on every scenario: the exact paired test and what changed where."""
    pairs = [_pair(s.name, by.get((s.name, a.name), []), by.get((s.name, b.name), []))
             for s in scenarios]
    return comparison(a.name, b.name, pairs, alpha=alpha, changed=diff(a, b))


def comparison(a: str, b: str, pairs: Sequence[Pair], *, alpha: float,
               changed: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    test = paired_test(pairs)
    changes: dict[str, list[str]] = {"fixed": [], "broken": [], "flaky": [], "unchanged": []}
    for pair in pairs:
        changes[change(pair)].append(pair.scenario)
    significant = test.p_value < alpha
    verdict = ("better" if significant and test.difference > 0 else
               "worse" if significant and test.difference < 0 else "no significant difference")
    out = {"baseline": a, "candidate": b, "p_value": test.p_value,
           "difference": test.difference, "discordant": test.discordant,
           "discordant_needed": discordant_needed(alpha),
           "significant": significant, "verdict": verdict, "method": test.method,
           **changes}
    if changed is not None:
        out["diff"] = changed
    return out


def discordant_needed(alpha: float) -> int:
    """The fewest discordant scenarios with which the paired test can reach p < ``alpha``:
    its smallest p-value over n of them, every one differing the same way, is 2 / 2^n
    (an ``alpha`` of a result file that is not in (0, 1) is taken at its nearest bound)."""
    alpha = min(max(alpha, 2.0 ** -1000), 1.0)
    return math.floor(1 - math.log2(alpha)) + 1


def validation(scenarios: Sequence[Scenario], configs: Sequence[Configuration],
               by: Mapping[tuple[str, str], list[Trial]]) -> dict[str, Any]:
    """What the built-in configurations say of the suite: the oracle must solve every
    scenario that has a solution, nop must solve none; ``ok`` is ``None`` when neither
    ran (the suite was not validated)."""
    out: dict[str, Any] = {}
    names = {c.name for c in configs}
    if "oracle" in names:
        missed, none, unsupported = [], [], []
        for s in scenarios:
            trials = by.get((s.name, "oracle"), [])
            if any(t.status == "no_solution" for t in trials):
                none.append(s.name)
            elif any(t.status == "unsupported" for t in trials):
                unsupported.append(s.name)
            elif not trials or not all(t.solved for t in trials):
                missed.append(s.name)
        out["oracle"] = {"ok": not missed, "not_solved": missed, "no_solution": none,
                         "unsupported": unsupported}
    if "nop" in names:
        solved = sorted({t.scenario for (s, c), ts in by.items() if c == "nop"
                         for t in ts if t.solved})
        out["nop"] = {"ok": not solved, "solved": solved}
    # Nothing validated says so: null, not a pass (neither built-in configuration ran).
    out["ok"] = all(v["ok"] for v in out.values()) if out else None
    return out


def _risk(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration change: what it touched (by area), what it fixed and broke."""
    areas = sorted({area(d["key"]) for d in comparison.get("diff", [])})
    return {"change": f"{comparison['baseline']} -> {comparison['candidate']}",
            "areas": areas, "keys": [d["key"] for d in comparison.get("diff", [])],
            "fixed": comparison["fixed"], "broken": comparison["broken"],
            "flaky": comparison["flaky"]}


def hook_flags(configs: Sequence[Configuration], trials: Sequence[Trial], *,
               share: float) -> list[dict[str, Any]]:
    """Each tool-event hook whose matcher catches a tool that makes up at least ``share`` of
    all the tool calls in the evaluation's traces: a broad hook on a busy tool, the change
    most likely to break many scenarios at once."""
    from rein.config import Config
    from rein.tools.hooks import configured_hooks

    calls: dict[str, int] = {}
    for trial in trials:
        for name, n in trial.tool_calls.items():
            calls[name] = calls.get(name, 0) + n
    total = sum(calls.values())
    out: list[dict[str, Any]] = []
    if total == 0:
        return out
    for config in configs:
        hooks = configured_hooks(Config(data={"hooks": dict(config.overlay.get("hooks") or {})},
                                        sources={}))
        for hook in hooks:
            caught = {tool: n for tool, n in calls.items()
                      if any(hook.selects(event, tool) for event in ("PreToolUse",
                                                                     "PostToolUse"))}
            busy = {tool: round(n / total, 3) for tool, n in caught.items() if n / total >= share}
            if busy and any(e in ("PreToolUse", "PostToolUse") for e in hook.events):
                out.append({"configuration": config.name, "hook": hook.name,
                            "matcher": hook.matcher, "tools": busy,
                            "share": round(sum(caught.values()) / total, 3),
                            "message": f"hook {hook.name!r} of {config.name} catches "
                                       + ", ".join(f"{t} ({v:.0%} of tool calls)"
                                                   for t, v in busy.items())})
    return out


__all__ = ["build", "compare", "comparison", "discordant_needed", "failures", "hook_flags",
           "validation"]
