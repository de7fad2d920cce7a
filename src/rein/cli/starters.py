"""What ``rein init`` writes to start from: a first graph, a first brief, a shipped example.

The examples ship inside the package (``rein/examples``, read through
:mod:`importlib.resources`), so a wheel installed anywhere has them: ``rein init --example
no-worker`` copies one into the workspace, with the child documents it references. A file
that exists is never overwritten: it is kept, and said to be.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from rein.errors import ConfigError

GRAPH = "first.agraph.yaml"  # what `rein init --graph` writes
BRIEF = "specs/brief.md"  # what `rein init --brief` writes (where `rein dev` reads briefs)
_SUFFIXES = (".agraph.yaml", ".agent.yaml")


def _shipped() -> Traversable:
    return files("rein").joinpath("examples")


def examples() -> dict[str, Traversable]:
    """The shipped examples by name (the file name without its suffix), sorted."""
    found: dict[str, Traversable] = {}
    for item in _shipped().iterdir():
        for suffix in _SUFFIXES:
            if item.name.endswith(suffix) and item.is_file():
                found[item.name[:-len(suffix)]] = item
    return dict(sorted(found.items()))


def describe(item: Traversable) -> str:
    """An example's title (a graph's ``title``, a profile's description)."""
    import yaml

    data = yaml.safe_load(item.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return ""
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return str(data.get("title") or (meta or {}).get("description") or "")


def write_new(root: Path, relative: str, text: str) -> dict[str, str]:
    """Write ``text`` to ``root/relative`` unless a file is there: ``created`` or ``kept``."""
    path = root / relative
    if path.exists():
        return {"path": relative, "action": "kept"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return {"path": relative, "action": "created"}


def write_graph(root: Path) -> dict[str, str]:
    text = _shipped().joinpath("starters", "first.agraph.yaml").read_text(encoding="utf-8")
    return {**write_new(root, GRAPH, text), "what": "a first graph"}


def write_brief(root: Path) -> dict[str, str]:
    text = _shipped().joinpath("starters", "brief.md").read_text(encoding="utf-8")
    return {**write_new(root, BRIEF, text), "what": "a first brief for `rein dev`"}


def write_example(root: Path, name: str) -> list[dict[str, str]]:
    """Copy the example ``name`` and every child document it references (INIT002 for a
    name that is not shipped)."""
    known = examples()
    if name not in known:
        from rein.core.suggest import with_suggestion

        raise ConfigError(f"no example named {name!r}", code="INIT002",
                          hint=with_suggestion("the examples are " + ", ".join(known),
                                               name, known))
    done: list[dict[str, str]] = []
    todo, seen = [known[name]], set()
    while todo:
        item = todo.pop(0)
        if item.name in seen:
            continue
        seen.add(item.name)
        text = item.read_text(encoding="utf-8")
        done.append({**write_new(root, item.name, text), "what": f"the example {name}"})
        todo.extend(_shipped().joinpath(uri) for uri in _refs(text))
    return done


def _refs(text: str) -> Iterator[str]:
    """The files beside it that a graph references (``ref: {uri: ./x.agraph.yaml}``)."""
    import yaml

    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            ref = value.get("ref")
            if isinstance(ref, dict) and isinstance(ref.get("uri"), str):
                uri = ref["uri"].removeprefix("./")
                if "/" not in uri and uri.endswith(_SUFFIXES):
                    yield uri
            for child in value.values():
                yield from walk(child)
        elif isinstance(value, list):
            for child in value:
                yield from walk(child)

    yield from walk(yaml.safe_load(text))


__all__ = ["BRIEF", "GRAPH", "describe", "examples", "write_brief", "write_example",
           "write_graph", "write_new"]
