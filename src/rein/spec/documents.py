"""The bundle's documents, checked by rein: every reason a document is refused, said
specifically.

Each document is JSON in ``specs/active/`` (``rein spec`` prints the shape in its
instruction). A check reads one document and the ones before it, and returns the problems
found (none: accepted):

* **structure**: the keys and types of the document's shape, non-empty texts;
* **ids**: unique in the bundle, of the document's pattern (``FR-1``, ``D-2``, ``AC-3``),
  and **stable**: an id published once (the published plan records them) stays, or is
  listed in ``retired``, and a retired id is never used again;
* **traceability**: every requirement is traced to at least one acceptance check, every
  functional requirement is allocated to a component, and every requirement is served by
  a slice of the plan;
* **references**: every id a document names exists (no dangling reference);
* **open questions**: the readiness review lists them (an empty list says "none"), each with
  the assumption the build makes meanwhile, and no document leaves a ``TBD`` or ``TODO``
  behind instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rein.spec.paths import NAMES, PATHS

# One id pattern per kind of thing; the prefix says what an id names.
ID_PATTERNS = {
    "constraint": re.compile(r"^C-[0-9]{1,4}$"),
    "functional": re.compile(r"^FR-[0-9]{1,4}$"),
    "non-functional": re.compile(r"^NFR-[0-9]{1,4}$"),
    "component": re.compile(r"^CMP-[0-9]{1,4}$"),
    "interface": re.compile(r"^IF-[0-9]{1,4}$"),
    "data": re.compile(r"^DATA-[0-9]{1,4}$"),
    "decision": re.compile(r"^D-[0-9]{1,4}$"),
    "acceptance check": re.compile(r"^AC-[0-9]{1,4}$"),
    "open question": re.compile(r"^Q-[0-9]{1,4}$"),
    "risk": re.compile(r"^RISK-[0-9]{1,4}$"),
}
EXAMPLE_IDS = {"constraint": "C-1", "functional": "FR-1", "non-functional": "NFR-1",
               "component": "CMP-1", "interface": "IF-1", "data": "DATA-1",
               "decision": "D-1", "acceptance check": "AC-1", "open question": "Q-1",
               "risk": "RISK-1"}
PRIORITIES = ("must", "should", "could")
UNRESOLVED = re.compile(r"\b(TBD|TODO|FIXME)\b|\?\?\?")
MAX_TEXT = 2000  # characters of one text field: a document is a specification, not a dump

SHAPES = {
    "charter": """\
{"goal": "one paragraph: what the product is for",
 "scope": ["what is in scope"],
 "non_goals": ["what is deliberately out of scope"],
 "stakeholders": [{"name": "who", "interest": "what they need from it"}],
 "constraints": [{"id": "C-1", "text": "a constraint every part must respect"}]}""",
    "requirements": """\
{"requirements": [
   {"id": "FR-1", "kind": "functional", "statement": "what the product does",
    "fit_criterion": "how a test decides it is met", "priority": "must",
    "constraints": ["C-1"]},
   {"id": "NFR-1", "kind": "non-functional", "statement": "...", "fit_criterion": "...",
    "priority": "should"}],
 "retired": []}
Ids: FR-n for functional, NFR-n for non-functional requirements; never renumber. An id
published once stays, or moves to "retired" (and is never used again).""",
    "design": """\
{"components": [{"id": "CMP-1", "name": "...", "responsibility": "...",
                 "requirements": ["FR-1"]}],
 "interfaces": [{"id": "IF-1", "name": "...", "description": "...",
                 "components": ["CMP-1"]}],
 "data": [{"id": "DATA-1", "name": "...", "description": "..."}],
 "decisions": [{"id": "D-1", "decision": "...", "reason": "why, against what else",
                "requirements": ["NFR-1"]}]}
Every functional requirement is allocated to at least one component.""",
    "acceptance": """\
{"checks": [{"id": "AC-1", "requirements": ["FR-1"],
             "check": "an observable, testable check, e.g. c_to_f(100) == 212"}]}
Every requirement (functional and non-functional) is traced to at least one check.""",
    "readiness": """\
{"open_questions": [{"id": "Q-1", "question": "...",
                     "assumption": "what the build assumes until it is answered"}],
 "risks": [{"id": "RISK-1", "risk": "...", "mitigation": "..."}],
 "verify": "python -m pytest -q",
 "slices": [{"id": "parse", "title": "...", "description": "...", "priority": 1,
             "depends_on": [], "serves": ["FR-1"], "decisions": ["D-1"],
             "constraints": ["C-1"], "files": ["src/parse.py", "tests/test_parse.py"],
             "verify": "python -m pytest -q tests/test_parse.py"}]}
List every open question ([] when there is none). The slices are the development plan:
one small vertical slice per capability, each serving requirement ids; every requirement
is served by at least one slice. "verify" runs without a shell and must fail when the slice
is missing (a slice's own "verify" replaces the top-level one).""",
}


def check(name: str, data: Any, bundle: Mapping[str, Any], *,
          published: Sequence[str] | None = None, max_features: int = 20) -> list[str]:
    """The problems of document ``name`` (``data``, parsed JSON), read with the documents
    before it (``bundle``, by name); ``published``: its ids as last published."""
    if not isinstance(data, Mapping):
        return [f"{PATHS[name]} must be a JSON object (see the shape in the instruction)"]
    problems: list[str] = []
    earlier = NAMES[:NAMES.index(name)]
    missing = [n for n in earlier if not isinstance(bundle.get(n), Mapping)]
    if missing:
        return [(f"{', '.join(PATHS[n] for n in missing)} must be written (and accepted) "
                f"before {PATHS[name]}")]
    known = _ids_of({n: bundle[n] for n in earlier})
    _CHECKS[name](data, bundle, known, problems)
    problems += _unknown(name, data)
    problems += _unresolved(name, data)
    problems += _duplicates(name, data)
    problems += _stable(name, data, published)
    if name == "readiness":  # the slices as `rein dev` will read them
        from rein.spec.publish import compose

        problems += [p for p in compose({**bundle, "readiness": data},
                                        max_features=max_features)[1] if p not in problems]
    return problems


def ids(data: Any, kind_of: str) -> list[str]:
    """The ids of one list of ``data`` (``kind_of``: the list's key)."""
    items = data.get(kind_of) if isinstance(data, Mapping) else None
    return [str(i["id"]) for i in items if isinstance(i, Mapping) and "id" in i] \
        if isinstance(items, list) else []


# -- one check per document -------------------------------------------------------------------


def _charter(data: Mapping[str, Any], _bundle: Mapping[str, Any], _known: set[str],
             problems: list[str]) -> None:
    _text(data, "goal", "the charter", problems)
    _strings(data, "scope", "the charter", problems, at_least=1)
    _strings(data, "non_goals", "the charter", problems, at_least=1)
    for where, item in _items(data, "stakeholders", "the charter", problems, at_least=1):
        _text(item, "name", where, problems)
        _text(item, "interest", where, problems)
    for where, item in _items(data, "constraints", "the charter", problems):
        _id(item, "constraint", where, problems)
        _text(item, "text", where, problems)


def _requirements(data: Mapping[str, Any], _bundle: Mapping[str, Any], known: set[str],
                  problems: list[str]) -> None:
    items = _items(data, "requirements", "the requirements", problems, at_least=1)
    functional = 0
    for where, item in items:
        kind = item.get("kind")
        if kind not in ("functional", "non-functional"):
            problems.append(f"{where}: kind must be \"functional\" or \"non-functional\", "
                            f"not {kind!r}")
        else:
            functional += kind == "functional"
            _id(item, kind, where, problems)
        _text(item, "statement", where, problems)
        # Testable: a requirement says how a test decides it is met.
        _text(item, "fit_criterion", where, problems, why="how a test decides it is met: "
              "a requirement nobody can test is not a requirement yet")
        if item.get("priority") not in PRIORITIES:
            problems.append(f"{where}: priority must be one of {', '.join(PRIORITIES)}, "
                            f"not {item.get('priority')!r}")
        _refs(item, "constraints", where, known, problems, kinds=("constraint",),
              required=False)
    if items and not functional:
        problems.append("the requirements have no functional requirement (kind "
                        "\"functional\"): say what the product does")
    retired = data.get("retired", [])
    if not isinstance(retired, list) or not all(isinstance(r, str) for r in retired):
        problems.append("retired must be a list of requirement ids")
    else:
        used = set(ids(data, "requirements"))
        problems += [f"{r} is retired and used again: a retired id is never reused; give "
                     "the requirement a new id" for r in retired if r in used]


def _design(data: Mapping[str, Any], bundle: Mapping[str, Any], known: set[str],
            problems: list[str]) -> None:
    mine = set(ids(data, "components"))
    for where, item in _items(data, "components", "the design", problems, at_least=1):
        _id(item, "component", where, problems)
        _text(item, "name", where, problems)
        _text(item, "responsibility", where, problems)
        _refs(item, "requirements", where, known, problems,
              kinds=("functional", "non-functional"))
    for where, item in _items(data, "interfaces", "the design", problems):
        _id(item, "interface", where, problems)
        _text(item, "name", where, problems)
        _text(item, "description", where, problems)
        _refs(item, "components", where, mine, problems, kinds=("component",))
    for where, item in _items(data, "data", "the design", problems):
        _id(item, "data", where, problems)
        _text(item, "name", where, problems)
        _text(item, "description", where, problems)
    for where, item in _items(data, "decisions", "the design", problems):
        _id(item, "decision", where, problems)
        _text(item, "decision", where, problems)
        _text(item, "reason", where, problems, why="a decision keeps its reason, so a later "
              "change can weigh it")
        _refs(item, "requirements", where, known, problems,
              kinds=("functional", "non-functional"), required=False)
    allocated = _named(data, "components", "requirements")
    loose = [r for r in ids(bundle["requirements"], "requirements")
             if r.startswith("FR-") and r not in allocated]
    if loose:
        problems.append(f"functional requirement(s) {', '.join(loose)} are allocated to no "
                        "component: name them in a component's \"requirements\"")


def _acceptance(data: Mapping[str, Any], bundle: Mapping[str, Any], known: set[str],
                problems: list[str]) -> None:
    for where, item in _items(data, "checks", "the acceptance checks", problems, at_least=1):
        _id(item, "acceptance check", where, problems)
        _text(item, "check", where, problems)
        _refs(item, "requirements", where, known, problems,
              kinds=("functional", "non-functional"))
    traced = _named(data, "checks", "requirements")
    untraced = [r for r in ids(bundle["requirements"], "requirements") if r not in traced]
    if untraced:
        problems.append(f"requirement(s) {', '.join(untraced)} are traced to no acceptance "
                        "check: every requirement needs at least one")


def _readiness(data: Mapping[str, Any], bundle: Mapping[str, Any], known: set[str],
               problems: list[str]) -> None:
    if "open_questions" not in data:
        problems.append("the readiness review must list the open questions "
                        "(\"open_questions\": [] when there is none)")
    for where, item in _items(data, "open_questions", "the readiness review", problems):
        _id(item, "open question", where, problems)
        _text(item, "question", where, problems)
        _text(item, "assumption", where, problems, why="what the build assumes until the "
              "question is answered (a question nothing can be assumed for is answered "
              "in the brief first)")
    for where, item in _items(data, "risks", "the readiness review", problems):
        _id(item, "risk", where, problems)
        _text(item, "risk", where, problems)
        _text(item, "mitigation", where, problems)
    slices = _items(data, "slices", "the readiness review", problems, at_least=1)
    for where, item in slices:
        _refs(item, "serves", where, known, problems, kinds=("functional", "non-functional"))
        _refs(item, "decisions", where, known, problems, kinds=("decision",), required=False)
        _refs(item, "constraints", where, known, problems, kinds=("constraint",),
              required=False)
        files = item.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            problems.append(f"{where}: files must be a list of paths")
    served = _named(data, "slices", "serves")
    unserved = [r for r in ids(bundle["requirements"], "requirements") if r not in served]
    if unserved:
        problems.append(f"requirement(s) {', '.join(unserved)} are served by no slice: "
                        "name each in a slice's \"serves\"")


_CHECKS = {"charter": _charter, "requirements": _requirements, "design": _design,
           "acceptance": _acceptance, "readiness": _readiness}

# The lists of each document whose items carry an id.
ID_LISTS = {"charter": ("constraints",), "requirements": ("requirements",),
            "design": ("components", "interfaces", "data", "decisions"),
            "acceptance": ("checks",), "readiness": ("open_questions", "risks")}


# The keys each document and each item of its lists may have: any other key is a mistake
# (a misspelt key would otherwise be read as a missing one, or silently ignored).
KEYS: dict[str, dict[str, frozenset[str]]] = {
    "charter": {"": frozenset({"goal", "scope", "non_goals", "stakeholders", "constraints"}),
                "stakeholders": frozenset({"name", "interest"}),
                "constraints": frozenset({"id", "text"})},
    "requirements": {"": frozenset({"requirements", "retired"}),
                     "requirements": frozenset({"id", "kind", "statement", "fit_criterion",
                                                "priority", "constraints"})},
    "design": {"": frozenset({"components", "interfaces", "data", "decisions"}),
               "components": frozenset({"id", "name", "responsibility", "requirements"}),
               "interfaces": frozenset({"id", "name", "description", "components"}),
               "data": frozenset({"id", "name", "description"}),
               "decisions": frozenset({"id", "decision", "reason", "requirements"})},
    "acceptance": {"": frozenset({"checks"}),
                   "checks": frozenset({"id", "requirements", "check"})},
    "readiness": {"": frozenset({"open_questions", "risks", "verify", "slices"}),
                  "open_questions": frozenset({"id", "question", "assumption"}),
                  "risks": frozenset({"id", "risk", "mitigation"}),
                  "slices": frozenset({"id", "title", "description", "priority",
                                       "depends_on", "serves", "decisions", "constraints",
                                       "files", "verify"})},
}


def _unknown(name: str, data: Mapping[str, Any]) -> list[str]:
    """Every key the document's shape does not have, with the nearest one it does."""
    from rein.core.suggest import did_you_mean

    shapes = KEYS[name]
    places: list[tuple[str, Mapping[str, Any], frozenset[str]]] = [(PATHS[name], data,
                                                                     shapes[""])]
    for key, allowed in shapes.items():
        items = data.get(key) if key else None
        if isinstance(items, list):
            places += [(f"{PATHS[name]}: {key}[{index}]", item, allowed)
                       for index, item in enumerate(items) if isinstance(item, Mapping)]
    out = []
    for where, item, allowed in places:
        for key in item:
            if key not in allowed:
                near = did_you_mean(str(key), allowed)
                out.append(f"{where}: unknown key {str(key)!r}" + (f" ({near})" if near else
                           f" (the keys are {', '.join(sorted(allowed))})"))
    return out


# -- the pieces -----------------------------------------------------------------------------


def _items(data: Mapping[str, Any], key: str, doc: str, problems: list[str], *,
           at_least: int = 0) -> list[tuple[str, Mapping[str, Any]]]:
    raw = data.get(key, [] if at_least == 0 else None)
    if not isinstance(raw, list):
        problems.append(f"{doc} needs \"{key}\", a list" + (
            f" of at least {at_least}" if at_least else ""))
        return []
    if len(raw) < at_least:
        problems.append(f"{doc}: \"{key}\" is empty; at least {at_least} is needed")
    out = []
    for index, item in enumerate(raw):
        label = item.get("id") if isinstance(item, Mapping) else None
        where = f"{doc}, {key}[{index}]" + (f" ({label})" if isinstance(label, str) else "")
        if not isinstance(item, Mapping):
            problems.append(f"{where} is not an object")
            continue
        out.append((where, item))
    return out


def _text(item: Mapping[str, Any], key: str, where: str, problems: list[str], *,
          why: str = "") -> None:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where} needs a non-empty \"{key}\"" + (f" ({why})" if why else ""))
    elif len(value) > MAX_TEXT:
        problems.append(f"{where}: \"{key}\" has {len(value)} characters; at most {MAX_TEXT}")


def _strings(data: Mapping[str, Any], key: str, doc: str, problems: list[str], *,
             at_least: int) -> None:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip()
                                              for v in value):
        problems.append(f"{doc} needs \"{key}\", a list of non-empty strings")
    elif len(value) < at_least:
        problems.append(f"{doc}: \"{key}\" is empty; at least {at_least} is needed")


def _id(item: Mapping[str, Any], kind: str, where: str, problems: list[str]) -> None:
    value = item.get("id")
    if not isinstance(value, str) or not ID_PATTERNS[kind].match(value):
        problems.append(f"{where}: a {kind} id looks like {EXAMPLE_IDS[kind]}, not "
                        f"{value!r}")


def _refs(item: Mapping[str, Any], key: str, where: str, known: set[str],
          problems: list[str], *, kinds: Sequence[str], required: bool = True) -> None:
    value = item.get(key, None if required else [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{where}: \"{key}\" must be a list of ids")
        return
    if required and not value:
        problems.append(f"{where}: \"{key}\" is empty; name at least one")
    for ref in value:
        if not any(ID_PATTERNS[k].match(ref) for k in kinds):
            problems.append(f"{where}: {ref!r} in \"{key}\" is not a {' or '.join(kinds)} id")
        elif ref not in known:
            problems.append(f"{where}: {ref} in \"{key}\" does not exist (a dangling "
                            "reference)")


def _named(data: Mapping[str, Any], key: str, refs: str) -> set[str]:
    """Every id the items of ``data[key]`` name in their ``refs`` list (lists only)."""
    items = data.get(key)
    return {r for item in items if isinstance(item, Mapping)
            and isinstance(item.get(refs), list)
            for r in item[refs] if isinstance(r, str)} if isinstance(items, list) else set()


def _ids_of(bundle: Mapping[str, Any]) -> set[str]:
    return {i for name, data in bundle.items() for key in ID_LISTS.get(name, ())
            for i in ids(data, key)}


def _duplicates(name: str, data: Mapping[str, Any]) -> list[str]:
    # Unique in the bundle too: each kind of id has its own prefix, and each kind is
    # declared by one document.
    seen: dict[str, int] = {}
    for key in ID_LISTS[name]:
        for i in ids(data, key):
            seen[i] = seen.get(i, 0) + 1
    out = [f"id {i} is used {n} times in {PATHS[name]}; ids are unique" for i, n in
           seen.items() if n > 1]
    if name == "readiness":
        slices = ids(data, "slices")
        out += [f"slice id {s!r} is used {slices.count(s)} times; ids are unique"
                for s in sorted(set(slices)) if slices.count(s) > 1]
    return out


def declared(name: str, data: Any) -> list[str]:
    """The ids document ``name`` declares, in order."""
    return [i for key in ID_LISTS[name] for i in ids(data, key)]


def _stable(name: str, data: Mapping[str, Any], published: Sequence[str] | None
            ) -> list[str]:
    """Ids published once stay: each is kept, or (requirements) listed in ``retired``."""
    if not published:
        return []
    now = set(declared(name, data))
    retired = data.get("retired") if name == "requirements" else None
    retired = {r for r in retired if isinstance(r, str)} if isinstance(retired, list) \
        else set()
    gone = [i for i in published if isinstance(i, str) and i not in now and i not in retired]
    if not gone:
        return []
    how = ("keep them, or list them in \"retired\"" if name == "requirements"
           else "keep them (ids are never renumbered or reused)")
    return [f"id(s) {', '.join(gone)} were published in {PATHS[name]} and are gone: {how}"]


def _unresolved(name: str, data: Any) -> list[str]:
    out = []
    for key, value in data.items():
        if name == "readiness" and key == "open_questions":
            continue  # where the unresolved points belong
        for where, text in _walk(value, str(key)):
            found = UNRESOLVED.search(text)
            if found:
                out.append(f"{PATHS[name]}: {where} says {found.group(0)!r}: list it as an "
                           "open question in the readiness review, with the assumption "
                           "made meanwhile, instead")
    return out


def _walk(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{where}[{index}]")
