"""AG131: a graph must not run itself, directly or through other graphs (§7.6).

Two kinds of reference can close a loop:

* named fragments: ``loop.use``, ``map.use`` and ``subgraph.use`` anywhere inside a fragment
  (its own nodes, and the inline bodies nested in them) name other fragments;
* external documents: ``subgraph.ref.uri`` names another file, resolved relative to the
  directory of the document that holds the reference. Only local paths are followed; a URL
  is never fetched while validating.

External files are read with the same loader and limits; a file that cannot be read is not
a recursion finding (running the graph reports it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from rein.errors import LoadError
from rein.formats.ags.report import Collector
from rein.formats.ags.scopes import CONTAINER_TYPES, Model, Scope, dict_of, node_type
from rein.formats.loader import DEFAULT_LIMITS, LoadLimits, load_path


def check_fragment_recursion(model: Model, out: Collector) -> None:
    """Cycles among named fragments through ``use``."""
    deps: dict[str, list[tuple[str, Scope, str, str]]] = {name: [] for name in model.fragments}
    for name, users in model.uses.items():
        for scope, node_id, kind in users:
            home = _home(scope)
            if home is not None and name in model.fragments:
                deps[home].append((name, scope, node_id, kind))
    reported: set[frozenset[str]] = set()
    state: dict[str, int] = {}
    for start in model.fragments:
        if state.get(start):
            continue
        # Iterative DFS: fragments may nest as deep as the document does.
        path: list[str] = [start]
        stack: list[tuple[str, int]] = [(start, 0)]
        state[start] = 1
        while stack:
            name, k = stack[-1]
            if k < len(deps[name]):
                stack[-1] = (name, k + 1)
                target, scope, node_id, kind = deps[name][k]
                if state.get(target) == 1:
                    cycle = path[path.index(target):] + [target]
                    key = frozenset(cycle)
                    if key not in reported:
                        reported.add(key)
                        out.add("AG131", scope.node_pointer(node_id, kind, "use"),
                                "named fragments run each other in a cycle: "
                                + " -> ".join(cycle))
                elif not state.get(target):
                    state[target] = 1
                    stack.append((target, 0))
                    path.append(target)
            else:
                state[name] = 2
                stack.pop()
                path.pop()


def _home(scope: Scope) -> str | None:
    """The named fragment a scope belongs to (None for the root graph's own tree)."""
    s: Scope | None = scope
    while s is not None:
        if s.kind == "fragment":
            return s.name
        s = s.parent
    return None


def check_ref_recursion(model: Model, source: str, out: Collector,
                        limits: LoadLimits = DEFAULT_LIMITS) -> None:
    """Cycles through ``subgraph.ref`` files reachable from the document at ``source``."""
    here = Path(source)
    if not here.is_file():
        return  # text without a file has no directory to resolve against
    start = here.resolve()
    cache: dict[Path, list[Path]] = {}
    for scope in model.scopes:
        for node_id, node in scope.nodes.items():
            uri = _ref_uri(node)
            if uri is None:
                continue
            target = _resolve(start.parent, uri)
            if target is None:
                continue
            cycle = _cycle_from(start, target, cache, limits)
            if cycle:
                names = " -> ".join(_show(p, start) for p in cycle)
                out.add("AG131", scope.node_pointer(node_id, "subgraph", "ref", "uri"),
                        f"subgraph ref {uri!r} leads into a cycle of graphs: {names}")


def _cycle_from(start: Path, first: Path, cache: dict[Path, list[Path]],
                limits: LoadLimits) -> list[Path] | None:
    """A cycle of documents reachable by following refs from ``start`` through ``first``."""
    path = [start, first]
    on_path = {start: 0, first: 1}
    if first == start:
        return path
    stack: list[tuple[Path, Iterator[Path]]] = [(first, iter(_refs_of(first, cache, limits)))]
    done: set[Path] = set()
    while stack:
        current, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            path.pop()
            del on_path[current]
            done.add(current)
            continue
        if child in on_path:
            return path[on_path[child]:] + [child]
        if child in done:
            continue
        on_path[child] = len(path)
        path.append(child)
        stack.append((child, iter(_refs_of(child, cache, limits))))
    return None


def _refs_of(file: Path, cache: dict[Path, list[Path]], limits: LoadLimits) -> list[Path]:
    hit = cache.get(file)
    if hit is not None:
        return hit
    cache[file] = []  # guards against re-entry while this file is being read
    try:
        data = load_path(file, limits=limits).data
    except LoadError:
        return []
    refs = []
    for uri in _iter_uris(data):
        target = _resolve(file.parent, uri)
        if target is not None:
            refs.append(target)
    cache[file] = refs
    return refs


def _iter_uris(fragment: Any) -> Iterator[str]:
    """Every ``subgraph.ref.uri`` in a document or fragment, nested bodies included."""
    stack = [fragment]
    while stack:
        frag = stack.pop()
        if not isinstance(frag, dict):
            continue
        stack.extend(dict_of(frag.get("subgraphs")).values())
        for node in dict_of(frag.get("nodes")).values():
            if not isinstance(node, dict):
                continue
            uri = _ref_uri(node)
            if uri is not None:
                yield uri
            kind = node_type(node)
            if kind in CONTAINER_TYPES:
                block = dict_of(node.get(kind))
                stack.append(block.get("inline" if kind == "subgraph" else "body"))


def _ref_uri(node: dict[str, Any]) -> str | None:
    if node_type(node) != "subgraph":
        return None
    uri = dict_of(dict_of(node.get("subgraph")).get("ref")).get("uri")
    return uri if isinstance(uri, str) and uri else None


def _resolve(base: Path, uri: str) -> Path | None:
    """A local file for ``uri`` (relative to ``base``), or None for remote URIs."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        raw = unquote(parsed.path)
    elif parsed.scheme and len(parsed.scheme) > 1:  # http:, https:, … (a drive letter is 1)
        return None
    else:
        raw = uri
    try:
        target = (base / raw).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return target if target.is_file() else None


def _show(path: Path, start: Path) -> str:
    try:
        return str(path.relative_to(start.parent))
    except ValueError:
        return path.name
