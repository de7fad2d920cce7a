"""The worker's own check that a job belongs to an approved run, and what the approved graph
declares for the node it names.

A signed job (:mod:`rein.executors.queue_key`) comes from a holder of the queue key;
this is the defence behind it, so that a key alone does not run what no approved graph
contains. Before anything runs, :meth:`ApprovedRuns.node` reads the store and the files:

- the run exists, and neither it nor any run above it (a subgraph's child runs under its
  parent) has ended;
- the top run was approved (its binding names the approved digest), and the job names the
  digest the run was started under;
- the graph file, read now, still has the digest the run is bound to (the engine's own
  RT053 check), or a forced resume recorded the change; a child run's document is the top
  run's or a referenced one whose digest the approval pinned, and holds a fragment with the
  child run's digest;
- the node key names a node of that fragment (map and loop items, stand-ins, judges);
- where approvals are signed (the worker's own ``[approver] allowed_signers``), the top
  run's approval verifies, as the engine checks it on every continuation: the engine
  hands that check in (``approval_problem``), so this module, below the engine, imports
  nothing of it.

What the job then runs is taken from that node, not from the job: the environment variables
and secrets it declares, its profile, worker choice and constraints, its permissions and
tools (a job can only narrow them), and a command criterion's command line. Graph files are read at the path the run names, so the
workers must see them at the same path as the coordinator (keep them in the workspace).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rein.core.reading import read_small_file
from rein.errors import ReinError, RunError, StoreError
from rein.formats.ags.plan import effective_node
from rein.formats.canonical import ags_digest
from rein.formats.loader import format_for, load_bytes
from rein.formats.redaction import secrets_from_env

_MAX_BYTES = 32 * 1024 * 1024  # the loader's own limit for a graph
_MAX_DEPTH = 64  # runs above a child run, at most
_DOCS_KEPT = 16
# One segment of a node key: an optional stand-in (``a~b``: b in a's place), the node id,
# and the item of a map or loop it contains (``fan[3]``).
_SEGMENT = re.compile(r"(?:[a-z0-9][a-z0-9_-]*~)?([a-z0-9][a-z0-9_-]*)(?:\[(\d+)\])?")
_ACCESS = ("none", "read_only", "read_write")
_NETWORK = ("none", "restricted", "full")


def rejected(message: str) -> RunError:
    """``SCALE012``: the job does not belong to an approved run; nothing of it runs."""
    return RunError(f"not part of an approved run, not run: {message}", code="SCALE012",
                    hint="a worker runs only the nodes of runs a person approved, as the "
                         "graph files on its disk declare them; check that the workers see "
                         "the run's graph files at the coordinator's paths, unchanged")


class ApprovedNode:
    """A node of an approved run, as its graph declares it."""

    def __init__(self, *, run_id: str, key: str, node: Mapping[str, Any],
                 judge: Mapping[str, Any] | None = None) -> None:
        self.run_id = run_id
        self.key = key
        self.node = node
        self.judge = judge  # the llm_judge criterion, for a judge's attempt

    @property
    def attempt_kind(self) -> str | None:
        """What an attempt of this node is (``None``: the node runs no attempts)."""
        if self.judge is not None:
            return "judge"
        kind = str(self.node.get("type", "task"))
        return kind if kind in ("task", "decision") else None

    def environment(self, env: Mapping[str, str]) -> tuple[dict[str, str], frozenset[str]]:
        """The variables and secrets the node declares, filled from ``env`` as the engine
        fills them in process (a judge gets none)."""
        if self.judge is not None:
            return {}, frozenset()
        req = self.node.get("requirements") or {}
        out = {name: env[name] for name in req.get("environment") or [] if name in env}
        secrets = secrets_from_env(env)
        names = set()
        for name in req.get("secrets") or []:
            if name in secrets:
                out[name] = secrets[name]
                names.add(name)
        return out, frozenset(names)

    def narrow(self, request: Any, env: Mapping[str, str]) -> Any:
        """``request`` (an AttemptRequest) held to the node: the environment, profile,
        worker choice and constraints it declares, and the permissions, tools, workspace
        access and network the job asks for only where the node grants them too."""
        filled, secret_names = self.environment(env)
        if self.judge is not None:
            return request.replace(env=filled, secret_names=secret_names, permissions=(),
                                   tools=(), profile=None, worker=None, kind="judge",
                                   transcript=())
        req = self.node.get("requirements") or {}
        request = request.replace(kind=self.attempt_kind or "task",
                                  profile=self.node.get("x-rein-profile"),
                                  worker=self.node.get("x-rein-worker"),
                                  transcript=tuple(self.node.get("x-rein-transcript") or ()),
                                  constraints=dict(self.node.get("constraints") or {}))
        granted = {str(p) for p in req.get("permissions") or ()}
        tools = {t if isinstance(t, str) else str(t.get("name"))
                 for t in req.get("tools") or ()}
        return request.replace(
            env=filled, secret_names=secret_names,
            permissions=tuple(p for p in request.permissions if p in granted),
            tools=tuple(t for t in request.tools if t in tools),
            workspace_access=_least(_ACCESS, request.workspace_access,
                                    req.get("workspace", "read_only")),
            network=_least(_NETWORK, request.network, req.get("network", "none")))

    def command_criterion(self, criterion_id: str) -> Mapping[str, Any]:
        """The node's ``command`` criterion ``criterion_id``, as the graph declares it."""
        for criterion in (self.node.get("success") or {}).get("criteria") or ():
            if isinstance(criterion, Mapping) and criterion.get("id") == criterion_id \
                    and criterion.get("kind") == "command":
                return criterion
        raise rejected(f"node {self.key} of run {self.run_id} has no command criterion "
                       f"{criterion_id!r}")


def _least(order: tuple[str, ...], asked: Any, declared: Any) -> Any:
    ranks = [order.index(v) if v in order else 0 for v in (asked, declared)]
    return order[min(ranks)]


class _Doc:
    """A graph file as read: its data, its digest, and its fragments by digest."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.digest = ags_digest(data)
        self._fragments: dict[str, Mapping[str, Any]] | None = None

    def fragment(self, digest: str) -> Mapping[str, Any] | None:
        if self._fragments is None:
            self._fragments = {ags_digest(f): f for f in _fragments(self.data)}
        return self._fragments.get(digest)


def _fragments(data: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every fragment a child run can run: the document, loop and map bodies, inline and
    named subgraphs, at any depth."""
    yield data
    for node in (data.get("nodes") or {}).values():
        if not isinstance(node, Mapping):
            continue
        for kind in ("loop", "map"):
            body = (node.get(kind) or {}).get("body")
            if isinstance(body, Mapping):
                yield from _fragments(body)
        inline = (node.get("subgraph") or {}).get("inline")
        if isinstance(inline, Mapping):
            yield from _fragments(inline)
    for fragment in (data.get("subgraphs") or {}).values():
        if isinstance(fragment, Mapping):
            yield from _fragments(fragment)


# Why a top run's approval does not verify (``None``: it does), given the store and the run.
ApprovalProblem = Callable[[Any, Any], "str | None"]


class ApprovedRuns:
    """The runs of one store, as a worker checks its jobs against them (thread-safe)."""

    def __init__(self, open_store: Callable[[], Any], *,
                 approval_problem: ApprovalProblem | None = None) -> None:
        self._open = open_store
        # Where approvals are signed: a run's approval must verify too, so that rows written
        # into the database approve nothing (the engine's own check, handed in).
        self._approval_problem = approval_problem
        self._store: Any = None
        self._lock = threading.Lock()
        self._docs: dict[str, _Doc] = {}  # SHA-256 of a file's bytes -> its data

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def _chain(self, run_id: str) -> list[Any]:
        """The run and every run above it, the top run last."""
        with self._lock:
            if self._store is None:
                self._store = self._open()
            chain = [self._store.get_run(run_id)]
            if chain[0] is None:
                raise rejected(f"there is no run {run_id} in the store")
            while chain[-1].parent_run_id is not None:
                if len(chain) > _MAX_DEPTH:
                    raise rejected(f"run {run_id} is nested over {_MAX_DEPTH} deep")
                parent = self._store.get_run(chain[-1].parent_run_id)
                if parent is None:
                    raise rejected(f"run {chain[-1].parent_run_id} above {run_id} is gone")
                chain.append(parent)
            return chain

    def node(self, run_id: str, digest: str, key: str) -> ApprovedNode:
        """The node ``key`` of run ``run_id`` as its approved graph declares it, once the
        run is found live and approved for ``digest``; ``SCALE012`` otherwise."""
        try:
            return self._node(run_id, digest, key)
        except StoreError:  # the store, not the job: said as it is, on a fresh connection
            self.close()
            raise
        except ReinError as exc:  # a graph file that no longer loads, ...
            if exc.code == "SCALE012":
                raise
            raise rejected(exc.message) from exc

    def _node(self, run_id: str, digest: str, key: str) -> ApprovedNode:
        chain = self._chain(run_id)
        run, top = chain[0], chain[-1]
        for r in chain:
            if r.status.terminal:
                raise rejected(f"run {r.run_id} has ended ({r.status.value})")
        if run.graph_digest != digest:
            raise rejected(f"the job names digest {digest}; run {run_id} was started under "
                           f"{run.graph_digest}")
        binding = top.binding
        approved, bound = binding.get("approved_digest"), binding.get("graph_digest")
        if not approved or approved != top.graph_digest:
            raise rejected(f"run {top.run_id} carries no approval of its digest")
        if bound != approved and "x-rein-forced-resume" not in binding:
            raise rejected(f"run {top.run_id} is bound to {bound}, approved for {approved}")
        if self._approval_problem is not None:
            self._signed(top, self._approval_problem)
        top_doc = self._doc(top.graph_path)
        if top_doc.digest != bound:
            raise rejected(f"the graph {top.graph_path} has digest {top_doc.digest}, not "
                           f"{bound} the run is bound to (changed since it was approved)")
        document = top_doc
        if run.graph_path != top.graph_path:
            pinned = (binding.get("children") or {}).get(run.graph_path)
            if pinned is None:
                raise rejected(f"{run.graph_path} is not a document run {top.run_id}'s "
                               "approval pinned")
            document = self._doc(run.graph_path)
            if document.digest != pinned:
                raise rejected(f"the graph {run.graph_path} has digest {document.digest}, "
                               f"not {pinned} the approval pinned")
        fragment = document.data if run is top else document.fragment(run.graph_digest)
        if fragment is None:
            raise rejected(f"no part of {run.graph_path} has run {run_id}'s digest "
                           f"{run.graph_digest}")
        node_key, _, judged = key.partition(":")
        node = find_node(document.data, fragment, node_key)
        if node is None:
            raise rejected(f"run {run_id}'s graph has no node {node_key!r}")
        judge = None
        if judged:
            judge = next((c for c in (node.get("success") or {}).get("criteria") or ()
                          if isinstance(c, Mapping) and c.get("id") == judged
                          and c.get("kind") == "llm_judge"), None)
            if judge is None:
                raise rejected(f"node {node_key} of run {run_id} has no llm_judge criterion "
                               f"{judged!r}")
        return ApprovedNode(run_id=run_id, key=key, node=node, judge=judge)

    def _signed(self, top: Any, problem: ApprovalProblem) -> None:
        """Where approvals are signed, ``top``'s approval verifies (the engine's own check
        on every continuation)."""
        with self._lock:
            why = problem(self._store, top)
        if why is not None:
            raise rejected(f"run {top.run_id}'s approval does not verify: {why}")

    def _doc(self, path: str) -> _Doc:
        raw = read_small_file(path, _MAX_BYTES)
        if raw is None:
            raise rejected(f"this worker cannot read the graph {path} (it must see the run's "
                           "graph files at the coordinator's paths)")
        source = hashlib.sha256(raw).hexdigest()
        with self._lock:
            doc = self._docs.get(source)
        if doc is None:
            doc = _Doc(load_bytes(raw, source=path, format=format_for(path)).data)
            with self._lock:
                self._docs[source] = doc
                while len(self._docs) > _DOCS_KEPT:
                    del self._docs[next(iter(self._docs))]
        return doc


def find_node(document: Mapping[str, Any], fragment: Mapping[str, Any], key: str
              ) -> Mapping[str, Any] | None:
    """The node ``key`` names in ``fragment`` (defaults merged, as the engine runs it):
    ``fan[3].w`` is node ``w`` of the body of map ``fan``; ``a~b`` is node ``b`` standing
    in for ``a``. ``None`` when the fragment has no such node."""
    parts = key.split(".")
    scope = fragment
    for i, part in enumerate(parts):
        found = _SEGMENT.fullmatch(part)
        if found is None:
            return None
        nodes = scope.get("nodes") or {}
        if "~" in part and part.partition("~")[0] not in nodes:
            return None
        raw = nodes.get(found[1])
        if not isinstance(raw, Mapping):
            return None
        node = effective_node(raw, scope.get("defaults"))
        if i == len(parts) - 1:
            return node if found[2] is None else None
        kind = str(node.get("type", "task"))
        block = node.get(kind) if kind in ("map", "loop") else None
        if found[2] is None or not isinstance(block, Mapping):
            return None
        body = block.get("body")
        if not isinstance(body, Mapping):
            body = (document.get("subgraphs") or {}).get(block.get("use"))
        if not isinstance(body, Mapping):
            return None
        scope = body
    return None


__all__ = ["ApprovalProblem", "ApprovedNode", "ApprovedRuns", "find_node", "rejected"]
