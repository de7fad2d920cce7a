"""``rein next``'s answer for a cold process, read straight from the workspace's embedded
store.

An IDE agent runs ``rein next`` as a fresh process every turn. Through the Harness
(:func:`rein.workers.driver.status.status_of`) the answer costs the configuration, the
store's role modules and rows, the state enums and :mod:`pathlib`: more than the read
itself, and more than the interpreter. :func:`glance` reads the same tables with
``sqlite3``, ``json`` and ``os.path`` alone, builds the answer with the same functions
(:mod:`rein.workers.driver.answers`), and gives up (``None``) wherever it would have to
know more, leaving the answer to the Harness:

- answered here: the workspace's instruction (or a wait for the one handed out first), a
  wait for a person's approval, a run that succeeded or was cancelled; of the run
  ``--run`` names too;
- read beside it: the ``rein.toml`` files, the account's own approver files included,
  when they leave the answer alone: the embedded store is the one read, and rein.config
  refuses none of them (:mod:`rein.workers.driver.glance_config` says which);
- left to the Harness: any other ``rein.toml`` (another store, a table that needs trust or
  that pins files, a file rein.config would refuse); a store that is missing, not a
  regular file, empty, damaged, or of another schema version than :data:`SCHEMA_VERSION`;
  a workspace identity file made for another path (a moved or copied workspace) or
  unreadable; no run in the workspace, or a ``--run`` that names no run or another
  workspace's; a run that failed or ended partial (the reason is read from its nodes and
  events) or that waits on nothing named here (an interrupted run, an answer not taken
  up, a node no worker serves); any error at all.

The store owns its tables (:mod:`rein.store.sql`); this module reads them as they are at
:data:`SCHEMA_VERSION`, which it checks first, with the store's own statements.
tests/workers/driver/test_glance.py holds every answer equal to ``status_of``'s, state by
state, and the constants here equal to the store's.
"""

from __future__ import annotations

import json
import os
import stat

from rein.core.config_places import authority_files, config_files, exists
from rein.workers.driver import answers

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

# The store's schema this module reads: rein.store.sqlite.SCHEMA_VERSION.
SCHEMA_VERSION = 7
STORE = os.path.join(".rein", "rein.db")  # rein.store.sqlite.db_path
IDENTITY = os.path.join(".rein", "workspace.json")  # rein.store.workspace_id.FILE
DAMAGE_SUFFIX = ".damage"  # rein.store.sqlite_errors.DAMAGE_SUFFIX
# rein.core.states: every status a run or a node may have, and a node's terminal ones.
RUN_STATUSES = frozenset({"running", "waiting", "awaiting_human", "succeeded", "partial",
                          "failed", "cancelled"})
NODE_STATUSES = frozenset({"pending", "ready", "running", "awaiting_human", "succeeded",
                           "failed", "skipped", "cancelled", "blocked"})
NODE_TERMINAL = frozenset({"succeeded", "failed", "skipped", "cancelled", "blocked"})

# The store's own statements (rein.store.sql), so that SQLite reads the rows in the same
# order: runs by creation, turns by issue, approvals as queued.
_RUN = ("SELECT run_id, parent_run_id, parent_node_key, graph_id, graph_path, graph_digest,"
        " status, started_at, finished_at, binding, summary, workspace_id, workspace_path,"
        " workspace_host FROM runs")
_TURNS = ("SELECT token, run_id, root_run_id, node_key, attempt, kind, status, instruction,"
          " baseline, answer, created_at, answered_at FROM driver_turns"
          " WHERE root_run_id = ? AND status = ? ORDER BY ord, token")
_NODE = ("SELECT node_key, node_id, scope_path, type, status, seq, record"
         " FROM nodes WHERE run_id = ? AND node_key = ?")
_APPROVALS = ("SELECT approval_id, run_id, key, kind, status, digest, request, answer,"
              " created_at, answered_at FROM approvals WHERE status = ? ORDER BY rowid")


class Declined(Exception):
    """A state this module does not answer: the Harness does."""


class Turn:
    """A pending driver turn, as far as an answer names it."""

    __slots__ = ("created_at", "instruction", "node_key", "root_run_id", "run_id", "token")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.token, self.run_id, self.root_run_id, self.node_key = row[0:4]
        self.instruction: dict[str, Any] = json.loads(row[7])
        if row[9] is not None:
            json.loads(row[9])  # as the store parses it: a damaged answer is not read past
        self.created_at: str = row[10]


def glance(workspace: str, run_id: str | None = None) -> dict[str, Any] | None:
    """The ``rein next --json`` object of ``workspace`` (as ``os.getcwd()`` gives it) for
    the run ``run_id`` (``None``: the one ``rein next`` picks), or ``None`` to leave it to
    the Harness (see the module docstring)."""
    workspace = os.path.realpath(workspace)
    path = os.path.join(workspace, STORE)
    try:
        # rein.config.load_config reads every one of these that exists, the account's own
        # approver files too: the answer is this module's when they leave it alone.
        files = [(scope, p) for scope, p in config_files(workspace) if exists(p)]
        files += [("approvers", p) for _scope, p in authority_files() if exists(p)]
        if files and not _settled(files):
            return None
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size == 0 \
            or os.path.exists(path + DAMAGE_SUFFIX):
        return None
    try:
        ref = _identity(workspace)
    except (Declined, OSError, ValueError):
        return None
    import sqlite3

    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                             timeout=30.0)
    except sqlite3.Error:
        return None
    try:
        db.execute("BEGIN")  # every read below sees one state of the store
        return _status(db, ref, run_id)
    except (Declined, sqlite3.Error, ValueError):
        return None
    finally:
        db.close()


def _settled(files: list[tuple[str, str]]) -> bool:
    """Whether the ``rein.toml`` files that exist leave the answer to this module
    (:mod:`rein.workers.driver.glance_config`, imported only when one exists)."""
    from rein.workers.driver.glance_config import settled

    return settled(files)


def _identity(workspace: str) -> str | None:
    """The workspace's id when its identity file was made here, ``None`` without one
    (rein.store.workspace_id.here)."""
    try:
        with open(os.path.join(workspace, IDENTITY), encoding="utf-8") as handle:
            text = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    data = json.loads(text)
    if not (isinstance(data, dict) and isinstance(data.get("id"), str)
            and data["id"].startswith("ws-") and isinstance(data.get("path"), str)):
        raise Declined("an unreadable identity: the Harness says so")
    if data["path"] != workspace:
        raise Declined("moved or copied: the Harness decides which")
    return str(data["id"])


def _status(db: sqlite3.Connection, ref: str | None, run_id: str | None) -> dict[str, Any]:
    got = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    if int(got[0] or 0) != SCHEMA_VERSION:
        raise Declined("another schema: the store upgrades it, or refuses it")
    # rein.store.workspace_id.runs_here, for the workspace's own embedded store: its runs
    # and those stored before runs recorded a workspace.
    where = "(workspace_id IN (?) OR workspace_id IS NULL)" if ref else "(workspace_id IS NULL)"
    mine: list[tuple[Any, ...]] = db.execute(
        f"{_RUN} WHERE parent_run_id IS NULL AND {where} ORDER BY created DESC",
        [ref] if ref else []).fetchall()
    if any(r[6] not in RUN_STATUSES for r in mine):
        raise Declined("a run status this rein does not know")
    queue = sorted((t for r in mine if r[6] in answers.UNFINISHED for t in _waiting(db, r[0])),
                   key=lambda t: (t.created_at, t.token))
    run: tuple[Any, ...] | None
    if run_id is not None:
        run = _named(db, run_id, ref)
    elif not mine:
        raise Declined("no run here (STORE404, with a hint that reads the whole store)")
    else:  # the run of the current instruction, else the newest unfinished, else the newest
        run = next((r for r in mine if queue and r[0] == queue[0].root_run_id), None) or \
            next((r for r in mine if r[6] in answers.UNFINISHED), mine[0])
    root, status = run[0], run[6]
    base = answers.base_of(root, run[3], status)
    if status == "succeeded":
        return answers.done(base)
    if status == "cancelled":
        return answers.stopped(base, *answers.cancelled(root))
    if status not in answers.UNFINISHED:
        raise Declined("failed or partial: why is read from its nodes and events")
    pending = _waiting(db, root)
    if pending:
        return answers.instruction(base, pending[0], queue)
    family = _family(db, root)
    waiting = []
    for row in db.execute(_APPROVALS, ("pending",)).fetchall():
        request = json.loads(row[6])
        if row[7] is not None:
            json.loads(row[7])
        if row[1] in family:
            waiting.append((row[0], row[3], request, _awaited(db, row[1], request)))
    if waiting:
        return answers.approvals(base, waiting)
    raise Declined("nothing named waits: the run is stalled, interrupted or advancing")


def _named(db: sqlite3.Connection, run_id: str, ref: str | None) -> tuple[Any, ...]:
    """The top-level run of ``run_id`` when this workspace may hand out its instructions
    (rein.workers.driver.status.pick_run)."""
    run = db.execute(f"{_RUN} WHERE run_id = ?", (run_id,)).fetchone()
    if run is None:
        raise Declined("no such run (RUN404, with its hint)")
    seen: set[str] = set()
    while run[1] is not None:  # up to the top-level run (rein.store.lineage.top_run)
        seen.add(run[0])
        if run[1] in seen:
            raise Declined("the parent links loop (STORE002)")
        parent = db.execute(f"{_RUN} WHERE run_id = ?", (run[1],)).fetchone()
        if parent is None:
            break
        run = parent
    if run[11] is not None and run[11] != ref:
        raise Declined("another workspace's run (RUN010, with where it is)")
    if run[6] not in RUN_STATUSES:
        raise Declined("a run status this rein does not know")
    return tuple(run)


def _waiting(db: sqlite3.Connection, root: str) -> list[Turn]:
    """Pending turns of one run family whose node still waits, oldest first
    (rein.workers.driver.current.waiting_turns)."""
    out = []
    for row in db.execute(_TURNS, (root, "pending")).fetchall():
        turn = Turn(row)
        node = db.execute(_NODE, (turn.run_id, turn.node_key)).fetchone()
        if node is not None and node[4] not in NODE_STATUSES:
            raise Declined("a node status this rein does not know")
        if node is None or node[4] not in NODE_TERMINAL:
            out.append(turn)
    return out


def _awaited(db: sqlite3.Connection, run_id: str, request: Any) -> bool:
    """Whether a pending approval's node has not ended (rein.workers.driver.status.awaited)."""
    key = request.get("node") if isinstance(request, dict) else None
    if not isinstance(key, str) or not key:
        return True
    node = db.execute(_NODE, (run_id, key)).fetchone()
    if node is not None and node[4] not in NODE_STATUSES:
        raise Declined("a node status this rein does not know")
    return node is not None and node[4] not in NODE_TERMINAL


def _family(db: sqlite3.Connection, root: str) -> set[str]:
    """``root`` and every child run below it (rein.store.lineage.family)."""
    out, stack = {root}, [root]
    while stack:
        for (child,) in db.execute("SELECT run_id FROM runs WHERE parent_run_id = ?"
                                   " ORDER BY created", (stack.pop(),)).fetchall():
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


__all__ = ["DAMAGE_SUFFIX", "IDENTITY", "NODE_STATUSES", "NODE_TERMINAL", "RUN_STATUSES",
           "SCHEMA_VERSION", "STORE", "Declined", "Turn", "glance"]
