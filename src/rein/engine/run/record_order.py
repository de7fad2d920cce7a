"""One order for a run record's lists, whatever order the work happened in.

Nodes of parallel branches (a map beside a loop, two tasks side by side) start and end in an
order that timing decides, and so do the edges they resolve and the diagnostics they raise.
A record must not depend on it: two uninterrupted runs of one graph, or a run resumed after
a crash and one that was not, list the same things in the same order. The order is the
graph's: each scope's canonical topological order, ties by declaration order (AGS §17.4),
a container followed by what ran inside it (its iterations or items by index), a node
followed by the nodes that stood in for it (alternates, compensation).

The layout (each scope's node ids in that order) is taken from the document when the run
is created and kept with the run (:data:`LAYOUT`), so the record is built from the store
alone, and a graph file edited later cannot reorder an old run's record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from rein.engine.run.graph import scope_model

LAYOUT = "x-rein-node-order"  # in a run's binding: scope path → node ids, in order

_SEGMENT = re.compile(r"(?P<ids>[^\[\]]+)(?:\[(?P<index>\d+)\])?")
_LAST = 1 << 30  # a name the layout does not know sorts after the ones it does

T = TypeVar("T")


def layout(fragment: Mapping[str, Any], document: Mapping[str, Any] | None = None
           ) -> dict[str, list[str]]:
    """Each scope of ``fragment`` that runs in this run, by path (``""`` for the fragment,
    ``"fan"`` for the body of its node ``fan``, ``"fan.inner"`` below that), with its node
    ids in scheduling order. ``document``: where named fragments (``use``) are declared.
    Subgraph children are runs of their own, with their own layout."""
    doc = document if document is not None else fragment
    out: dict[str, list[str]] = {}

    def walk(frag: Mapping[str, Any], path: str) -> None:
        if path in out:
            return
        model = scope_model(frag)
        out[path] = sorted(model.nodes, key=model.rank.__getitem__)
        for nid, node in model.nodes.items():
            kind = model.node_type(nid)
            if kind not in ("loop", "map"):
                continue
            body = _body(node.get(kind) or {}, doc)
            if body is not None:
                walk(body, f"{path}.{nid}" if path else nid)

    walk(fragment, "")
    return out


def _body(block: Mapping[str, Any], document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    body = block.get("body")
    if isinstance(body, Mapping):
        return body
    named = document.get("subgraphs") or {}
    found = named.get(block.get("use")) if isinstance(named, Mapping) else None
    return found if isinstance(found, Mapping) else None


class RecordOrder:
    """Sort keys under one layout: of a node key (``fan[2].work~alt``), and of a node in a
    scope instance (``fan[2]``)."""

    def __init__(self, order: Mapping[str, Sequence[str]]) -> None:
        self.ranks = {path: {nid: i for i, nid in enumerate(ids)} for path, ids in order.items()}

    def of(self, name: str) -> tuple[Any, ...]:
        """Per segment, the ranks of the node and of what stood in for it, then the index
        of the iteration or item (-1: the container itself, before what ran inside it)."""
        out: list[tuple[tuple[int, ...], int]] = []
        path = ""
        for segment in name.split(".") if name else ():
            m = _SEGMENT.fullmatch(segment)
            if m is None:
                return (*out, ((_LAST,), -1))
            ids = m["ids"].split("~")
            here = self.ranks.get(path, {})
            out.append((tuple(here.get(i, _LAST) for i in ids),
                        -1 if m["index"] is None else int(m["index"])))
            path = f"{path}.{ids[-1]}" if path else ids[-1]
        return tuple(out)

    def rank(self, scope: str, node_id: str) -> int:
        """The rank of ``node_id`` in the scope instance ``scope`` (``""``: the run's own)."""
        static = []
        for segment in scope.split(".") if scope else ():
            m = _SEGMENT.fullmatch(segment)
            static.append(m["ids"].split("~")[-1] if m else segment)
        return self.ranks.get(".".join(static), {}).get(node_id, _LAST)


def order_of(binding: Mapping[str, Any]) -> RecordOrder | None:
    """The order a run's record keeps (``None`` for a run recorded before it was kept)."""
    order = binding.get(LAYOUT)
    return RecordOrder(order) if isinstance(order, Mapping) and order else None


def in_order(items: Sequence[T], name: Callable[[T], str], order: RecordOrder | None
             ) -> list[T]:
    """``items`` sorted by the node key ``name`` gives each; as they are without an
    ``order``. Stable: items of one key keep their order."""
    if order is None:
        return list(items)
    return sorted(items, key=lambda item: order.of(name(item)))


__all__ = ["LAYOUT", "RecordOrder", "in_order", "layout", "order_of"]
