"""Notices: facts about a planned graph that are not document defects.

Validation findings say a document is wrong; a notice says something a reviewer should
know before approving: the worst case passes ``max_node_executions``, node estimates add
up to more than the budget, scopes nest deeper than allowed, or the graph uses a feature
above the ``requires_conformance`` it declares (so a harness at that level must refuse it),
or a node's ``requirements.environment`` hands a provider key (or a ``REIN_SECRET_*``
variable) to its worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.formats.ags.plan_model import Feature, Notice, Plan

DEFAULT_MAX_SUBGRAPH_DEPTH = 5  # AGS Appendix A

NOTICE_WORST_CASE = "PLAN001"  # worst case above constraints.max_node_executions
NOTICE_LEVEL = "PLAN002"  # a feature above the declared requires_conformance
NOTICE_COST = "PLAN003"  # projected cost above constraints.max_cost_usd
NOTICE_TOKENS = "PLAN004"  # projected tokens above constraints.max_total_tokens
NOTICE_DEPTH = "PLAN005"  # nesting deeper than constraints.max_subgraph_depth
NOTICE_REF = "PLAN006"  # a referenced child could not be planned (count is a lower bound)
NOTICE_INTEGRITY = "PLAN007"  # a referenced child does not match its integrity or id
NOTICE_RECURSION = "PLAN008"  # a fragment or document contains itself (cut)
NOTICE_PROVIDER_KEY = "PLAN009"  # requirements.environment hands a provider key to a worker


def key_notice(node: str, names: list[str], pointer: str, file: str | None) -> Notice:
    """A node's environment names provider keys: the person approving should see it."""
    listed = ", ".join(names)
    return Notice(
        code=NOTICE_PROVIDER_KEY, pointer=pointer, file=file,
        message=f"node {node} hands {listed} to its worker through requirements.environment: "
                "the worker and every command it runs can read and send the value (rein "
                "redacts it from events and records, not from what the worker does with it); "
                "remove it unless the node must call that provider itself, or bind a "
                "credential under secrets")


def is_key_variable(name: str, known: frozenset[str]) -> bool:
    """A provider key's variable: one rein or rein.toml names, ``*_API_KEY``, or a
    ``REIN_SECRET_*`` variable smuggled past the node's ``secrets`` declaration."""
    upper = name.upper()
    return (name in known or upper.endswith("API_KEY") or upper.startswith("REIN_SECRET_"))


def budget_notices(plan: Plan, constraints: Mapping[str, Any]) -> list[Notice]:
    """Worst case, projected cost and tokens, and nesting depth against the graph's limits."""
    out: list[Notice] = []
    ceiling = constraints.get("max_node_executions")
    if isinstance(ceiling, int) and plan.worst_case_executions > ceiling:
        out.append(Notice(
            code=NOTICE_WORST_CASE, pointer="/constraints/max_node_executions",
            message=f"the worst case is {plan.worst_case_executions} node executions, above "
                    f"constraints.max_node_executions ({ceiling}); a run that gets there stops "
                    "with RT061"))
    max_cost = constraints.get("max_cost_usd")
    if isinstance(max_cost, (int, float)) and plan.projected_cost_usd > max_cost:
        out.append(Notice(
            code=NOTICE_COST, pointer="/constraints/max_cost_usd",
            message=f"node estimates add up to ${plan.projected_cost_usd:.2f}, above "
                    f"constraints.max_cost_usd (${max_cost:.2f}); every branch is counted, "
                    "so a run may well stay within it"))
    max_tokens = constraints.get("max_total_tokens")
    if isinstance(max_tokens, int) and plan.projected_tokens > max_tokens:
        out.append(Notice(
            code=NOTICE_TOKENS, pointer="/constraints/max_total_tokens",
            message=f"node estimates add up to {plan.projected_tokens:,} tokens, above "
                    f"constraints.max_total_tokens ({max_tokens:,})"))
    depth_limit = constraints.get("max_subgraph_depth", DEFAULT_MAX_SUBGRAPH_DEPTH)
    deepest = max(s.depth for s in plan.scopes())
    if isinstance(depth_limit, int) and deepest > depth_limit:
        out.append(Notice(
            code=NOTICE_DEPTH, pointer="/constraints/max_subgraph_depth",
            message=f"scopes nest {deepest} deep, above max_subgraph_depth ({depth_limit}); "
                    "the deepest nodes fail at run time"))
    return out


def level_notices(features: list[Feature], levels: Mapping[str | None, int],
                  root_source: str | None) -> list[Notice]:
    """One notice per feature (and document) used above the declared conformance level.

    ``levels`` maps each planned document to its declared ``requires_conformance``.
    """
    first: dict[tuple[str | None, str], tuple[Feature, int]] = {}
    for f in features:
        hit = first.get((f.file, f.name))
        first[(f.file, f.name)] = (hit[0], hit[1] + 1) if hit else (f, 1)
    out: list[Notice] = []
    for (file, name), (f, count) in first.items():
        level = levels.get(file, 1)
        if f.level > level:
            times = f" ({count} uses)" if count > 1 else ""
            out.append(Notice(
                code=NOTICE_LEVEL, pointer=f.pointer,
                file=None if file == root_source else file,
                message=f"requires_conformance is {level} (1 when not declared) but the graph "
                        f"uses {_article(name)} {name}{times}, a level {f.level} feature; "
                        f"declare requires_conformance: {f.level} so that a level {level} "
                        "harness refuses it up front"))
    return out


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
