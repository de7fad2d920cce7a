"""Regular expressions of success criteria that rein will not run, found before a run starts.

A ``regex`` criterion's ``pattern`` (with its ``flags``) and a ``command`` criterion's
``expect_stdout_matches`` are literal text of the graph, so a pattern that is invalid
(CRIT001) or that needs backtracking (CRIT008: a backreference, lookaround, an atomic group,
a possessive quantifier; see :mod:`rein.formats.agx.patterns`) is refused when the graph is
prepared, with the pointer of the field, rather than failing the node's attempts one after
the other. AGX ``matches()`` with a literal pattern is checked when the expression is
parsed (AG204).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.formats.ags.ladder import LadderProblem, fragments
from rein.formats.ags.plan_order import effective_node
from rein.formats.agx.patterns import PatternError, compile_pattern, shown
from rein.formats.shapes import mapping_of

INVALID, REFUSED = "CRIT001", "CRIT008"


def pattern_problems(data: Mapping[str, Any]) -> list[LadderProblem]:
    """Every criterion pattern, at every depth, that rein would not run."""
    out = []
    for base, fragment in fragments(data, ""):
        defaults = fragment.get("defaults")
        for nid, raw in (fragment.get("nodes") or {}).items():
            if not isinstance(raw, Mapping):
                continue
            node = effective_node(raw, defaults if isinstance(defaults, Mapping) else None)
            criteria = mapping_of(node.get("success")).get("criteria")
            here = f"{base}/nodes/{str(nid).replace('~', '~0').replace('/', '~1')}"
            for i, criterion in enumerate(criteria if isinstance(criteria, list) else []):
                if not isinstance(criterion, Mapping):
                    continue
                found = _problem(criterion, f"{here}/success/criteria/{i}", str(nid))
                if found is not None:
                    out.append(found)
    return out


def _problem(criterion: Mapping[str, Any], pointer: str, nid: str) -> LadderProblem | None:
    if criterion.get("kind") == "regex":
        field, flags = "pattern", criterion.get("flags", "")
    elif criterion.get("kind") == "command":
        field, flags = "expect_stdout_matches", ""
    else:
        return None
    pattern = criterion.get(field)
    if not isinstance(pattern, str) or not isinstance(flags, str):
        return None  # the schema reports a wrong type
    try:
        compile_pattern(pattern, flags)
    except PatternError as exc:
        where = f"node {nid!r}, criterion {criterion.get('id')!r}"
        if exc.flags:
            return LadderProblem(code=INVALID, pointer=f"{pointer}/flags",
                                 message=f"{where}: {exc.reason}", hint=exc.hint)
        said = (f"{field} {shown(pattern)} {exc.detail}" if exc.refused
                else f"{field} {shown(pattern)} is not a valid regular expression: "
                     f"{exc.detail}")
        return LadderProblem(code=REFUSED if exc.refused else INVALID,
                             pointer=f"{pointer}/{field}", message=f"{where}: {said}",
                             hint=exc.hint)
    return None


__all__ = ["pattern_problems"]
