"""A feature plan, checked by rein: every reason a plan is refused, said specifically.

The driver writes the plan as JSON (``{"features": [...]}``); an existing IAO
``feature_list.json`` (``{"items": [...]}``, ``dependsOn``, ``implementationContext``) or
``specs/active/40-development-plan.json`` reads the same way. Nothing is cut or dropped
silently: a plan over a cap is refused with the cap, so the driver splits or merges.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rein.core.frozen import Frozen
from rein.dev.settings import check_verify
from rein.errors import ConfigError

CONTEXT_KEYS = ("requirements", "decisions", "constraints", "files", "acceptance")
MAX_TITLE = 120
MAX_DESCRIPTION = 2000
MAX_CONTEXT = 4000  # characters of one feature's implementation context, all keys together
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


class Feature(Frozen):
    """One feature of an accepted plan: what the driver is told, and how it is verified."""

    id: str
    title: str
    description: str
    priority: int
    depends_on: tuple[str, ...]
    context: Mapping[str, tuple[str, ...]]
    verify: tuple[str, ...] | None  # None: the plan's or the control plane's command
    serves: tuple[str, ...] = ()  # the requirement ids it serves (a plan `rein spec` published)

    @property
    def node_id(self) -> str:
        return "feature_" + self.id.replace("-", "_")


class Checked(Frozen):
    features: tuple[Feature, ...]  # in the order they will be built
    verify: tuple[str, ...] | None
    problems: tuple[str, ...]  # empty: the plan is accepted


def check_plan(data: Any, *, max_features: int = 20) -> Checked:
    """The plan's features in build order, or every problem found (the feedback)."""
    problems: list[str] = []
    # What `rein spec` records of its sources ("spec") is rein's, never written to a graph.
    broken = _not_text({k: v for k, v in data.items() if k != "spec"}
                       if isinstance(data, Mapping) else data)
    if broken is not None:  # json.loads accepts it; nothing can write it as UTF-8
        why = (f"the string {broken[:40]!r} holds an unpaired surrogate escape (\\uD800 to "
               "\\uDFFF), which is not Unicode text: write the character itself, or both "
               "halves of its pair")
        return Checked(features=(), verify=None, problems=(why,))
    items, verify = _items(data, problems)
    features: list[Feature] = []
    for index, item in enumerate(items):
        feature = _feature(item, index, problems)
        if feature is not None:
            features.append(feature)
    if len(items) > max_features:
        problems.append(f"the plan has {len(items)} features; at most {max_features} are "
                        "accepted ([dev] max_features): merge small ones or plan in stages")
    seen: dict[str, int] = {}
    for f in features:
        seen[f.id] = seen.get(f.id, 0) + 1
    problems += [f"feature id {i!r} is used {n} times; ids must be unique"
                 for i, n in seen.items() if n > 1]
    for f in features:
        for dep in f.depends_on:
            if dep not in seen:
                problems.append(f"feature {f.id!r} depends on {dep!r}, which is not in the "
                                "plan")
            elif dep == f.id:
                problems.append(f"feature {f.id!r} depends on itself")
    order = [] if problems else build_order(features)
    if not problems and len(order) < len(features):
        stuck = sorted({f.id for f in features} - {f.id for f in order})
        problems.append("the dependencies form a cycle through " + ", ".join(stuck))
    if verify is None and any(f.verify is None for f in features):
        missing = [f.id for f in features if f.verify is None]
        problems.append("no verify command for feature(s) " + ", ".join(missing) + ": give "
                        "the plan a top-level \"verify\" or each feature one")
    return Checked(features=tuple(order) if not problems else tuple(features), verify=verify,
                   problems=tuple(problems))


def _not_text(data: Any) -> str | None:
    """The first string (key or value) of ``data`` that is not Unicode text, or None."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return value
    return None


def build_order(features: Sequence[Feature]) -> list[Feature]:
    """Ready features first, the lowest (priority, id) among them: Kahn's algorithm with a
    priority queue, so the order is the one a picker choosing at each step would take."""
    left = {f.id: f for f in features}
    done: set[str] = set()
    order: list[Feature] = []
    while left:
        ready = [f for f in left.values() if set(f.depends_on) <= done]
        if not ready:
            break
        pick = min(ready, key=lambda f: (f.priority, f.id))
        order.append(pick)
        done.add(pick.id)
        del left[pick.id]
    return order


def _items(data: Any, problems: list[str]) -> tuple[list[Any], tuple[str, ...] | None]:
    verify: tuple[str, ...] | None = None
    items: Any = data
    if isinstance(data, Mapping):
        items = data.get("features", data.get("items"))
        if data.get("verify") is not None:
            verify = _verify(data["verify"], "the plan's \"verify\"", problems)
    if not isinstance(items, list) or not items:
        problems.append("the plan must be a JSON object with a non-empty \"features\" list "
                        "(or a non-empty list of features)")
        return [], verify
    return items, verify


def _feature(item: Any, index: int, problems: list[str]) -> Feature | None:
    where = f"feature #{index + 1}"
    if not isinstance(item, Mapping):
        problems.append(f"{where} is not an object")
        return None
    raw_id = item.get("id")
    fid = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) \
        else ""
    if not _ID.match(fid):
        problems.append(f"{where} needs an id of lowercase letters, digits, - or _ (at most "
                        f"40), not {raw_id!r}")
        return None
    where = f"feature {fid!r}"
    title = item.get("title")
    if not isinstance(title, str) or not title.strip():
        problems.append(f"{where} needs a non-empty title")
        title = ""
    elif len(title) > MAX_TITLE:
        problems.append(f"{where}: the title has {len(title)} characters; at most {MAX_TITLE}")
    description = item.get("description", "")
    if not isinstance(description, str):
        problems.append(f"{where}: description must be a string")
        description = ""
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"{where}: the description has {len(description)} characters; at "
                        f"most {MAX_DESCRIPTION} (put details in the context lists)")
    priority = item.get("priority", 1)
    if isinstance(priority, bool) or not isinstance(priority, int) or priority < 1:
        problems.append(f"{where}: priority must be a whole number of at least 1 (1 = "
                        f"first), not {priority!r}")
        priority = 1
    deps = item.get("depends_on", item.get("dependsOn")) or []
    if not isinstance(deps, list) or not all(isinstance(d, (str, int)) for d in deps):
        problems.append(f"{where}: depends_on must be a list of feature ids")
        deps = []
    context = _context(item.get("context", item.get("implementationContext")), where,
                       problems)
    verify = None
    if item.get("verify") is not None:
        verify = _verify(item["verify"], f"{where}'s verify", problems)
    serves = item.get("serves") or []
    if not isinstance(serves, list) or not all(isinstance(s, str) and s for s in serves):
        problems.append(f"{where}: serves must be a list of requirement ids")
        serves = []
    return Feature(id=fid, title=title.strip(), description=description.strip(),
                   priority=priority, depends_on=tuple(str(d) for d in deps),
                   context=context, verify=verify, serves=tuple(serves))


def _context(raw: Any, where: str, problems: list[str]) -> Mapping[str, tuple[str, ...]]:
    if raw is None:
        return {}
    if isinstance(raw, str):  # IAO's old single-string context
        raw = {"requirements": [raw]}
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: context must be an object of lists ({', '.join(CONTEXT_KEYS)})")
        return {}
    unknown = sorted(set(raw) - set(CONTEXT_KEYS))
    if unknown:
        problems.append(f"{where}: context has unknown key(s) {', '.join(unknown)}; the keys "
                        f"are {', '.join(CONTEXT_KEYS)}")
    out: dict[str, tuple[str, ...]] = {}
    for key in CONTEXT_KEYS:
        values = raw.get(key) or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}: context.{key} must be a list of strings")
            continue
        if values:
            out[key] = tuple(values)
    size = sum(len(v) for vs in out.values() for v in vs)
    if size > MAX_CONTEXT:
        problems.append(f"{where}: the context has {size} characters; at most {MAX_CONTEXT} "
                        "(the feature gets only this context: keep it to what it needs)")
    return out


def _verify(raw: Any, source: str, problems: list[str]) -> tuple[str, ...] | None:
    try:
        return check_verify(raw, source)
    except ConfigError as exc:
        problems.append(exc.message)
        return None
