"""Failure ladders that cannot be run as written, found before a run starts.

AGS §14's ladder is ``retry → fallback → escalation → on_exhausted``. Three dispositions
name the escalation rung as what happens next: ``failure.on_exhausted: escalate``, a loop's
``on_max_iterations: escalate`` and a gate's ``on_timeout: escalate`` (or, for a gate that
says nothing, ``policy.on_human_timeout: escalate``). When the node (after ``defaults``) declares no
``failure.escalation`` there is nothing to escalate to; the schema allows it and the spec
assigns no code, so rein refuses the graph with its own code rather than let the node end
``failed`` as though the author had asked for that.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.formats.ags.plan_order import effective_node
from rein.formats.shapes import mapping_of

NO_ESCALATION = "LADDER001"  # a disposition says escalate, and no escalation is declared


class LadderProblem(Frozen):
    """A ladder that cannot run as written."""

    code: str
    pointer: str  # JSON Pointer of the field that asks to escalate
    message: str
    hint: str


def ladder_problems(data: Mapping[str, Any]) -> list[LadderProblem]:
    """Every node, at every depth, whose ladder asks to escalate with nothing to escalate to."""
    out = []
    policy = mapping_of(data.get("policy"))
    for base, fragment in fragments(data, ""):
        defaults = fragment.get("defaults")
        for nid, raw in (fragment.get("nodes") or {}).items():
            if not isinstance(raw, Mapping):
                continue
            node = effective_node(raw, defaults if isinstance(defaults, Mapping) else None)
            failure = mapping_of(node.get("failure"))
            if isinstance(failure.get("escalation"), Mapping):
                continue
            here = f"{base}/nodes/{_escape(str(nid))}"
            asks = []
            if failure.get("on_exhausted") == "escalate":
                asks.append(("/failure/on_exhausted", "failure.on_exhausted"))
            loop = node.get("loop")
            if isinstance(loop, Mapping) and loop.get("on_max_iterations") == "escalate":
                asks.append(("/loop/on_max_iterations", "loop.on_max_iterations"))
            gate = node.get("gate")
            if node.get("type") == "gate" and isinstance(gate, Mapping):
                # A gate's timeout takes policy.on_human_timeout when it says nothing itself.
                if gate.get("on_timeout") == "escalate":
                    asks.append(("/gate/on_timeout", "gate.on_timeout"))
                elif "on_timeout" not in gate and policy.get("on_human_timeout") == "escalate":
                    asks.append(("/gate", "policy.on_human_timeout (for this gate)"))
            for tail, field in asks:
                out.append(LadderProblem(
                    code=NO_ESCALATION, pointer=here + tail,
                    message=f"node {nid!r} sets {field}: escalate but declares no "
                            "failure.escalation, so there is nothing to escalate to",
                    hint="add failure.escalation (to: human, node, supervisor or external), "
                         "or choose another disposition (fail, skip, succeed_degraded)"))
    return out


def fragments(fragment: Mapping[str, Any], base: str
               ) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each scope of the document with the JSON Pointer it hangs from."""
    yield base, fragment
    for nid, node in (fragment.get("nodes") or {}).items():
        if not isinstance(node, Mapping):
            continue
        here = f"{base}/nodes/{_escape(str(nid))}"
        for kind in ("loop", "map"):
            body = (node.get(kind) or {}).get("body") if isinstance(node.get(kind), Mapping) \
                else None
            if isinstance(body, Mapping):
                yield from fragments(body, f"{here}/{kind}/body")
        sub = node.get("subgraph")
        inline = sub.get("inline") if isinstance(sub, Mapping) else None
        if isinstance(inline, Mapping):
            yield from fragments(inline, f"{here}/subgraph/inline")
    for name, named in (fragment.get("subgraphs") or {}).items():
        if isinstance(named, Mapping):
            yield from fragments(named, f"{base}/subgraphs/{_escape(str(name))}")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
