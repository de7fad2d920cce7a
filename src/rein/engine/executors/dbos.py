"""The DBOS executor: node attempts as durable workflows on PostgreSQL queues.

Imported only when ``[executor] kind = "dbos"`` (or ``REIN_EXECUTOR=dbos``) is chosen, or by
``rein worker``: ``import dbos`` costs seconds and the default path never pays it.

**Coordinator side.** :class:`DbosExecutor` wraps each configured worker in a
:class:`QueuedWorker`. Its ``run`` enqueues the attempt as workflow ``rein_attempt`` with the
id ``<run>/<node key>#<attempt>`` and waits for the answer: the id makes the enqueue
idempotent, so a coordinator that died and was resumed elsewhere attaches to the attempt
already queued or finished instead of running it again. Everything else (criteria, the
failure ladder, budgets, the record) stays with the engine in this process.

**Worker side.** :func:`serve` launches DBOS under the worker's executor id and listens on
the queues it can serve. The workflow has two steps: ``claim`` (checkpointed: who took it
first) and ``run`` (the worker call). A worker killed mid-``run`` leaves the workflow
PENDING; supervision (:mod:`rein.engine.executors.heartbeat`) resumes it on a live worker,
whose ``run`` sees a claim by someone else and marks the answer a re-run.

**Workspace.** An attempt that needs the workspace goes to the queue ``<queue>@<tree>``,
``<tree>`` naming the workspace path and its git HEAD; a worker listens there only when its
own ``--workspace`` is that path at that HEAD and writable, so an attempt never runs against
another tree: it stays queued until a worker that has it comes. ``workspace: none`` attempts
go to ``<queue>`` itself, which every worker serves.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSClient

from rein.core.failures import FailureClass
from rein.engine.executors import heartbeat
from rein.engine.executors.wire import (
    decode_answer,
    decode_request,
    encode_answer,
    encode_request,
)
from rein.engine.routing import worker_id
from rein.errors import ReinError
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind, Worker

APP_NAME = "rein"
APP_VERSION = "rein-attempt-1"  # the workflow's contract: coordinators and workers agree
WORKFLOW = "rein_attempt"
DONE = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]
POLL_SECONDS = 0.05
SUPERVISE_SECONDS = 1.0


def system_url(url: str) -> str:
    return "postgresql://" + url.split("://", 1)[1] if url.startswith("postgres://") else url


def tree_of(workspace: Path) -> dict[str, str]:
    """The workspace as attempts need it: its resolved path and git HEAD ("" outside git).

    Checked before every attempt, so a worker reads HEAD with ``git rev-parse`` only when
    the files that move it (``.git/HEAD``, the branch's ref, ``packed-refs``) changed since
    the last read.
    """
    path = str(workspace.resolve())
    stamp = _ref_stamp(Path(path))
    cached = _HEADS.get(path)
    if cached is not None and stamp is not None and cached[0] == stamp:
        return {"workspace": path, "head": cached[1]}
    try:
        head = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = ""
    if stamp is not None:
        _HEADS[path] = (stamp, head)
    return {"workspace": path, "head": head}


_HEADS: dict[str, tuple[tuple[int, ...], str]] = {}


def _ref_stamp(root: Path) -> tuple[int, ...] | None:
    """When the files that say where HEAD points last changed (``None``: not a plain
    ``.git`` directory, always asked of git)."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        files = [git / "HEAD", git / "packed-refs"]
        if head.startswith("ref: "):
            files.append(git / head[5:])
        return tuple(f.stat().st_mtime_ns if f.exists() else 0 for f in files) + (
            hash(head),)
    except OSError:
        return None


def tree_queue(base: str, tree: Mapping[str, str]) -> str:
    digest = hashlib.sha256(f"{tree['workspace']}\0{tree['head']}".encode()).hexdigest()
    return f"{base}@{digest[:16]}"


# -- coordinator ---------------------------------------------------------------------------


class DbosExecutor:
    """Places attempts on DBOS queues and waits for their answers."""

    def __init__(self, *, url: str, settings: Mapping[str, Any]) -> None:
        self.url = system_url(url)
        self.queue = str(settings.get("queue") or "rein")
        self._client: DBOSClient | None = None
        self._waiting: dict[str, asyncio.Future[str]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._tree: dict[str, str] | None = None
        self._hb: Any = None

    def place(self, workers: tuple[Worker, ...]) -> tuple[Worker, ...]:
        # The driver is the IDE agent talking to this process: it never goes on a queue.
        return tuple(w if w.name == "driver" else QueuedWorker(w, self) for w in workers)

    def _connect(self) -> DBOSClient:
        if self._client is None:
            try:
                self._client = DBOSClient(system_database_url=self.url,
                                          application_name=APP_NAME)
                self._client.list_workflows(limit=1, load_input=False, load_output=False)
            except Exception as exc:
                self._client = None
                raise ReinError(
                    f"the attempt queues are not reachable: {str(exc).strip()[:300]}",
                    code="SCALE003",
                    hint="start a worker first (it creates them): rein worker --store URL")\
                    from exc
            self._hb = heartbeat.connect(self.url)
        return self._client

    async def submit(self, worker: Worker, request: AttemptRequest) -> str:
        """Enqueue the attempt (or attach to it) and wait for the worker's answer."""
        client = await asyncio.to_thread(self._connect)
        if self._tree is None:
            self._tree = await asyncio.to_thread(tree_of, Path(request.workspace))
        needs_tree = request.workspace_access != "none"
        queue = tree_queue(self.queue, self._tree) if needs_tree else self.queue
        placement = {**self._tree, "access": request.workspace_access, "queue": queue}
        workflow_id = f"{request.run_id}/{request.node_id}#{request.attempt}"
        payload = encode_request(request, worker=worker_id(worker), placement=placement)
        await asyncio.to_thread(_enqueue, client, queue, workflow_id, payload)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[workflow_id] = future
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll(client))
        return await future

    async def _poll(self, client: DBOSClient) -> None:
        """One loop for every attempt in flight: a batched status read per tick, and
        supervision of dead workers every :data:`SUPERVISE_SECONDS`."""
        loop = asyncio.get_running_loop()
        last_supervised = loop.time()
        while self._waiting:
            ids = list(self._waiting)
            rows = await asyncio.to_thread(client.list_workflows, workflow_ids=ids,
                                           status=DONE, load_input=False)
            for row in rows:
                future = self._waiting.pop(row.workflow_id, None)
                if future is None or future.done():
                    continue
                if row.status == "SUCCESS":
                    future.set_result(str(row.output))
                else:
                    future.set_exception(ReinError(
                        f"attempt workflow {row.workflow_id} ended {row.status}: "
                        f"{row.error}", code="SCALE004"))
            if loop.time() - last_supervised >= SUPERVISE_SECONDS:
                last_supervised = loop.time()
                await asyncio.to_thread(supervise_with_client, client, self._hb)
            await asyncio.sleep(POLL_SECONDS)


def _enqueue(client: DBOSClient, queue: str, workflow_id: str, payload: str) -> None:
    # An id already in use attaches to that workflow (DBOS's default reuse policy).
    client.enqueue({"queue_name": queue, "workflow_name": WORKFLOW,
                    "workflow_id": workflow_id, "app_version": APP_VERSION}, payload)


def supervise_with_client(client: Any, conn: Any) -> list[str]:
    def pending_of(executor_id: str) -> list[str]:
        rows = client.list_workflows(executor_id=executor_id, status="PENDING",
                                     name=WORKFLOW, load_input=False, load_output=False)
        return [r.workflow_id for r in rows]

    return heartbeat.supervise(conn, pending_of, client.resume_workflow)


class QueuedWorker:
    """A configured worker whose attempts run on whichever ``rein worker`` takes them."""

    def __init__(self, inner: Worker, executor: DbosExecutor) -> None:
        self.inner = inner
        self.name = inner.name
        self._executor = executor

    def __getattr__(self, name: str) -> Any:  # tiers, id, ...: as the worker it stands for
        return getattr(self.inner, name)

    def can_serve(self, request: AttemptRequest) -> bool:
        return self.inner.can_serve(request)

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        items, result, about = decode_answer(await self._executor.submit(self.inner, request))
        placement = {"executor": "dbos", **about}
        yield Item(kind=ItemKind.NOTICE, data={"placement": placement})
        for item in items:
            yield item
        yield dataclasses.replace(result, extra={**result.extra,
                                                 "x-rein-placement": placement})


# -- worker --------------------------------------------------------------------------------


@dataclasses.dataclass
class _Serving:
    """What this worker process serves with: set by :func:`serve`."""

    executor_id: str = ""
    workspace: Path = Path(".")
    workers: tuple[Worker, ...] = ()
    tree: Mapping[str, str] = dataclasses.field(default_factory=dict)
    secrets: Any = None


SERVING = _Serving()


@DBOS.step(name="rein_claim")
def _claim() -> str:
    return SERVING.executor_id


@DBOS.step(name="rein_run", retries_allowed=False)
def _run(payload: str, claimed_by: str) -> str:
    return run_payload(payload, rerun=claimed_by != SERVING.executor_id)


@DBOS.workflow(name=WORKFLOW)
def attempt_workflow(payload: str) -> str:
    claimed_by = _claim()
    return _run(payload, claimed_by)


def run_payload(payload: str, *, rerun: bool) -> str:
    """Run one attempt here and answer with its items and result."""
    name, placement, request = decode_request(payload, os.environ)
    about = {"worker": SERVING.executor_id, "queue": placement.get("queue"), "rerun": rerun}
    problem = workspace_problem(placement)
    if problem is not None:  # the tree moved under this worker since it began to listen
        return encode_answer([], AttemptResult(failure=FailureClass.TRANSIENT,
                                               message=problem), **about)
    request = dataclasses.replace(request, workspace=str(SERVING.workspace))
    chosen = next((w for w in SERVING.workers
                   if worker_id(w) == name and w.can_serve(request)), None)
    if chosen is None:
        return encode_answer([], AttemptResult(
            failure=FailureClass.TRANSIENT,
            message=f"worker {SERVING.executor_id} has no worker {name!r} configured "
                    "that serves this attempt"), **about)
    # A DBOS step runs in a thread of its own with no event loop: the attempt gets a fresh
    # one, closed when it ends.
    loop = asyncio.new_event_loop()
    try:
        items, result = loop.run_until_complete(_collect(chosen, request))
    finally:
        loop.close()
    text = encode_answer(items, result, **about)
    return SERVING.secrets.text(text) if SERVING.secrets else text


async def _collect(worker: Worker, request: AttemptRequest) -> tuple[list[Item],
                                                                      AttemptResult]:
    items: list[Item] = []
    stream = worker.run(request)
    try:
        async for got in stream:
            if isinstance(got, AttemptResult):
                return items, got
            items.append(got)
    except Exception as exc:  # noqa: BLE001 - the coordinator records it as the attempt's end
        return items, AttemptResult(failure=FailureClass.TRANSIENT,
                                    message=f"{type(exc).__name__}: {exc}")
    finally:
        # Closed here, on this loop: left to the collector it would outlive the loop.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return items, AttemptResult(failure=FailureClass.MODEL_ERROR,
                                message=f"worker {worker.name!r} ended without a result")


def workspace_problem(placement: Mapping[str, Any]) -> str | None:
    """Why this worker must not run an attempt placed with ``placement``, or ``None``."""
    if placement.get("access") == "none":
        return None
    mine = tree_of(SERVING.workspace)
    if mine["workspace"] != placement.get("workspace"):
        return (f"worker {SERVING.executor_id} has workspace {mine['workspace']}, the attempt "
                f"needs {placement.get('workspace')}")
    if mine["head"] != placement.get("head"):
        return (f"worker {SERVING.executor_id} is at HEAD {mine['head'] or '(none)'}, the "
                f"attempt needs {placement.get('head') or '(none)'}")
    return None


def listening_queues(base: str, workspace: Path) -> tuple[list[str], str]:
    """The queues this worker takes attempts from, and what it says about its workspace."""
    tree = tree_of(workspace)
    queues = [base]
    if not os.access(tree["workspace"], os.W_OK):
        return queues, (f"workspace {tree['workspace']} is not writable: taking only "
                        "attempts with workspace: none")
    queues.append(tree_queue(base, tree))
    return queues, (f"workspace {tree['workspace']} at HEAD {tree['head'] or '(no git)'}: "
                    "taking its attempts and those with workspace: none")


def serve(*, url: str, queue: str, executor_id: str, workspace: Path,
          workers: tuple[Worker, ...], settings: Mapping[str, Any], stop: threading.Event,
          say: Callable[[str], None], secrets: Any = None) -> None:
    """Take attempts until ``stop`` is set; beat and supervise meanwhile."""
    queues, note = listening_queues(queue, workspace)
    SERVING.executor_id, SERVING.workspace, SERVING.workers = executor_id, workspace, workers
    SERVING.tree, SERVING.secrets = tree_of(workspace), secrets
    conn = heartbeat.connect(system_url(url))
    heartbeat.beat(conn, executor_id, queues)
    DBOS(config={"name": APP_NAME, "system_database_url": system_url(url),
                 "executor_id": executor_id, "application_version": APP_VERSION,
                 "log_level": "WARNING", "run_admin_server": False})  # type: ignore[typeddict-unknown-key]
    DBOS.launch()
    try:
        limiter = settings.get("rate_limit")
        for name in queues:
            DBOS.register_queue(
                name, worker_concurrency=int(settings.get("worker_concurrency", 4)),
                global_concurrency=settings.get("global_concurrency"),
                limiter=dict(limiter) if isinstance(limiter, Mapping) else None,  # type: ignore[arg-type]
                polling_interval_sec=float(settings.get("polling_seconds", POLL_SECONDS)))
        say(f"worker {executor_id} ready on {', '.join(queues)}; {note}")
        while not stop.wait(heartbeat.BEAT_SECONDS):
            heartbeat.beat(conn, executor_id, queues)
            resumed = heartbeat.supervise(conn, _pending_of, DBOS.resume_workflow)
            for workflow_id in resumed:
                say(f"resumed {workflow_id}: its worker stopped beating")
    finally:
        heartbeat.leave(conn, executor_id)
        DBOS.destroy()


def _pending_of(executor_id: str) -> list[str]:
    rows = DBOS.list_workflows(executor_id=executor_id, status="PENDING", name=WORKFLOW,
                               load_input=False, load_output=False)
    return [r.workflow_id for r in rows]


__all__ = ["DbosExecutor", "QueuedWorker", "serve", "tree_of"]
