"""The DBOS executor, coordinator side: node attempts as durable workflows on PostgreSQL queues.

Imported only when ``[executor] kind = "dbos"`` (``REIN_EXECUTOR=dbos``, ``--executor dbos``)
is chosen: ``import dbos`` costs seconds and the default path never pays it. The worker side
is :mod:`rein.executors.serving`.

:class:`DbosExecutor` wraps each configured worker in a :class:`QueuedWorker`. Its ``run``
enqueues the attempt as workflow ``rein_attempt`` with the id ``<run>/<node key>#<attempt>``
and waits for the answer: the id makes the enqueue idempotent, so a coordinator that died and
was resumed elsewhere attaches to the attempt already queued or finished instead of running
it again. Everything else (criteria, the failure ladder, budgets, the record) stays with the
engine in this process; a ``command`` criterion's command is sent to the worker that ran the
attempt (:meth:`DbosExecutor.check`), since it reads the tree that worker wrote.

**Queues.** An attempt that needs the workspace goes to ``<queue>@<tree>`` (path and git
HEAD); ``workspace: none`` attempts to ``<queue>``, which every worker serves. An attempt whose
provider ``[executor.rate_limits]`` names goes to the ``~<provider>`` twin of that queue,
which DBOS's limiter holds to that provider's rate across all workers.

**Authentication.** Every job goes on the queue signed with the queue key
(:mod:`rein.executors.queue_key`) and names the digest its run was started under;
every answer is opened with the same key before anything of it is used (``SCALE010``), and
nothing is ever unpickled (:mod:`rein.executors.serialization`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from dbos import DBOSClient

from rein.core.loops import within
from rein.errors import ReinError
from rein.executors import heartbeat
from rein.executors.ended import Ended, EndedReader, listed
from rein.executors.names import (
    APP_NAME,
    APP_VERSION,
    CHECK_WORKFLOW,
    WORKFLOW,
    answer_label,
    provider_queue,
    rate_limits,
    system_url,
)
from rein.executors.queue_key import QueueKey
from rein.executors.remote_session import settle, turn_of, turn_suffix
from rein.executors.serialization import json_only
from rein.executors.tree import tree_of, tree_queue
from rein.executors.wire import decode_answer, encode_request
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    Item,
    ItemKind,
    Worker,
    worker_id,
)

MAX_TURNS = 64
DONE = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]
WAIT_SECONDS = 0.5  # without a notification, every attempt in flight is read this often
SUPERVISE_SECONDS = 1.0


class DbosExecutor:
    """Places attempts on DBOS queues and waits for their answers."""

    def __init__(self, *, url: str, settings: Mapping[str, Any], key: QueueKey,
                 store: Any = None) -> None:
        self.url = system_url(url)
        self.key = key
        self.store = store
        self._digests: dict[str, str] = {}  # run id -> the digest it was started under
        self.queue = str(settings.get("queue") or "rein")
        self.limits = rate_limits(settings)
        self._client: DBOSClient | None = None
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._ended: Callable[[list[str], list[str]], list[Ended]] | None = None
        self._tree: dict[str, str] | None = None
        self._hb: Any = None
        self._lock = threading.Lock()  # the first attempts connect at once, from threads
        self._listener: heartbeat.Listener | None = None  # hears attempts end
        self._heard_ids: set[str] = set()  # heard ended, not yet read (under _lock)
        self._heard_all = False  # the listener (re)connected: read every attempt waited on
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        if store is not None and hasattr(store, "group_commits"):
            # An attempt's answer is durable in DBOS's tables: the records of attempts
            # that end together may share one commit (a crash before it loses nothing
            # that resuming does not find again under the same workflow id).
            store.group_commits()

    def place(self, workers: tuple[Worker, ...]) -> tuple[Worker, ...]:
        # The driver is the IDE agent talking to this process: it never goes on a queue.
        return tuple(w if w.name == "driver" else QueuedWorker(w, self) for w in workers)

    def _connect(self) -> DBOSClient:
        with self._lock:
            return self._connect_once()

    def _connect_once(self) -> DBOSClient:
        if self._client is not None:
            return self._client
        try:
            client = DBOSClient(system_database_engine=_engine(self.url),
                                application_name=APP_NAME, serializer=json_only())
            client.list_workflows(limit=1, load_input=False, load_output=False)
        except Exception as exc:
            raise ReinError(
                f"the attempt queues are not reachable: {str(exc).strip()[:300]}",
                code="SCALE003",
                hint="start a worker first (it creates them): rein worker --store URL")\
                from exc
        self._hb = heartbeat.connect(self.url)
        fallback = listed(client.list_workflows)
        reader = EndedReader.open(self.url, json_only(), fallback)
        self._ended = fallback if reader is None else reader.read
        # Set last: an attempt that finds the client (without a thread hop) finds the
        # rest set too.
        self._client = client
        return client

    @property
    def tree(self) -> dict[str, str]:
        """The coordinator's workspace tree (known once an attempt was placed)."""
        assert self._tree is not None
        return self._tree

    def tree_queue(self) -> str:
        return tree_queue(self.queue, self.tree)

    def queue_for(self, request: AttemptRequest, provider: str) -> str:
        """Where an attempt waits: its tree's queue (or the base one), per limited provider."""
        assert self._tree is not None
        needs_tree = request.workspace_access != "none"
        queue = tree_queue(self.queue, self._tree) if needs_tree else self.queue
        return provider_queue(queue, provider) if provider in self.limits else queue

    async def submit(self, worker: Worker, request: AttemptRequest,
                     turn: Mapping[str, Any] | None = None) -> str:
        """Enqueue the attempt (or attach to it) and wait for the worker's answer; ``turn``:
        the state and answers of a paused attempt (``None``: it has no session)."""
        client = self._client
        if client is None:
            client = await asyncio.to_thread(self._connect)
        if self._tree is None:
            self._tree = await asyncio.to_thread(tree_of, Path(request.workspace))
        provider = request.routed.provider if request.routed else worker_id(worker)
        queue = self.queue_for(request, provider)
        placement = {**self._tree, "access": request.workspace_access, "queue": queue}
        workflow_id = (f"{request.run_id}/{request.node_id}#{request.attempt}"
                       f"{turn_suffix(turn)}")
        payload = encode_request(request, worker=worker_id(worker), placement=placement,
                                 digest=self.digest_of(request.run_id), turn=turn)
        return await self._wait(client, WORKFLOW, queue, workflow_id, payload)

    def digest_of(self, run_id: str) -> str:
        """The graph digest run ``run_id`` was started under, as its row holds it (it never
        changes, so it is read once): the worker holds the job to it."""
        digest = self._digests.get(run_id)
        if digest is None:
            if self.store is None:
                return ""
            flush = getattr(self.store, "flush", None)
            if callable(flush):
                flush()  # a run (a child run) created this turn is seen by the workers
            run = self.store.get_run(run_id)
            digest = self._digests[run_id] = "" if run is None else str(run.graph_digest)
        return digest

    async def check(self, workflow_id: str, queue: str, payload: str) -> str:
        """Run a command criterion's workflow on ``queue`` and wait for its answer."""
        client = self._client
        if client is None:
            client = await asyncio.to_thread(self._connect)
        return await self._wait(client, CHECK_WORKFLOW, queue, workflow_id, payload)

    async def _wait(self, client: DBOSClient, name: str, queue: str, workflow_id: str,
                    payload: str) -> str:
        # Waiting before the enqueue: the end of a quick attempt finds its waiter.
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[workflow_id] = future
        if self._poller is None or self._poller.done():
            self._wake = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            if self._listener is None:
                self._listener = heartbeat.Listener(self.url, heartbeat.DONE_CHANNEL,
                                                    self._heard)
            self._poller = asyncio.create_task(self._poll(client))
        signed = self.key.sign(name, workflow_id, payload)
        try:
            await asyncio.to_thread(_enqueue, client, name, queue, workflow_id, signed)
        except BaseException:
            self._waiting.pop(workflow_id, None)
            raise
        return self.key.open(answer_label(name), workflow_id, await future)

    def _heard(self, workflow_id: str | None) -> None:
        """The listener's thread: ``workflow_id`` ended (``None``: any may have)."""
        with self._lock:
            if workflow_id is None:
                self._heard_all = True
            else:
                self._heard_ids.add(workflow_id)
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wake.set)

    async def _poll(self, client: DBOSClient) -> None:
        """One loop for every workflow in flight: woken when the listener hears that some
        ended, it reads those in one status query (:mod:`.ended`); every :data:`WAIT_SECONDS` it reads all
        of them anyway (a notification missed while the listener reconnected), and every
        :data:`SUPERVISE_SECONDS` it supervises dead workers."""
        loop = asyncio.get_running_loop()
        last_supervised = last_all = loop.time()
        wake = self._wake
        assert wake is not None
        while self._waiting:
            with contextlib.suppress(TimeoutError):
                await within(wake.wait(), WAIT_SECONDS)
            wake.clear()
            with self._lock:
                heard, self._heard_ids = self._heard_ids, set()
                everything = self._heard_all or loop.time() - last_all >= WAIT_SECONDS
                self._heard_all = False
            if everything:
                last_all = loop.time()
                ids = list(self._waiting)
            else:
                ids = [i for i in heard if i in self._waiting]
            assert self._ended is not None  # connected before the first wait
            rows = [] if not ids else await asyncio.to_thread(self._ended, ids, DONE)
            for row in rows:
                future = self._waiting.pop(row.workflow_id, None)
                if future is None or future.done():
                    continue
                if row.status == "SUCCESS":
                    future.set_result(row.output)
                else:
                    future.set_exception(ReinError(
                        f"workflow {row.workflow_id} ended {row.status}: {row.error}",
                        code="SCALE004"))
            if loop.time() - last_supervised >= SUPERVISE_SECONDS:
                last_supervised = loop.time()
                await asyncio.to_thread(supervise_with_client, client, self._hb)


def _engine(url: str) -> Any:
    """The coordinator's pool: no ping before each checkout (one round trip fewer per
    enqueue and per status read); DBOS retries an operation whose connection was lost."""
    import sqlalchemy as sa

    return sa.create_engine(sa.make_url(url).set(drivername="postgresql+psycopg"),
                            pool_pre_ping=False, pool_size=8, max_overflow=0,
                            connect_args={"application_name": "rein-coordinator",
                                          "connect_timeout": 10})


def _enqueue(client: DBOSClient, name: str, queue: str, workflow_id: str,
             payload: str) -> None:
    # An id already in use attaches to that workflow (DBOS's default reuse policy).
    client.enqueue({"queue_name": queue, "workflow_name": name,
                    "workflow_id": workflow_id, "app_version": APP_VERSION}, payload)


def supervise_with_client(client: Any, conn: Any) -> list[str]:
    def pending_of(executor_id: str) -> list[tuple[str, str | None]]:
        return heartbeat.left_by(executor_id, client.list_workflows, [WORKFLOW, CHECK_WORKFLOW])

    def resume(workflow_id: str, queue: str | None) -> None:
        client.resume_workflow(workflow_id, queue_name=queue)

    return heartbeat.supervise(conn, pending_of, resume)


class QueuedWorker:
    """A configured worker whose attempts run on whichever ``rein worker`` takes them."""

    def __init__(self, inner: Worker, executor: DbosExecutor) -> None:
        self.inner = inner
        self.name = inner.name
        self.executor = executor

    def __getattr__(self, name: str) -> Any:  # tiers, id, ...: as the worker it stands for
        return getattr(self.inner, name)

    def can_serve(self, request: AttemptRequest) -> bool:
        return self.inner.can_serve(request)

    def commands(self, result: AttemptResult) -> Any:
        """Where the ``command`` criteria of the attempt that gave ``result`` run: on the
        worker that ran it (:mod:`rein.executors.remote_checks`)."""
        from rein.executors.remote_checks import remote_commands

        return remote_commands(self.executor, result.extra.get("x-rein-placement"))

    async def run(self, request: AttemptRequest) -> AsyncIterator[Item | AttemptResult]:
        # A paused attempt goes again once its questions are answered; bounded, since each
        # turn answers at least one more question.
        for _ in range(MAX_TURNS):
            turn = await turn_of(request.session,
                                 may_ask=bool(request.tools or request.profile))
            text = await self.executor.submit(self.inner, request, turn)
            items, result, about = decode_answer(text)
            remote = about.pop("session", None)
            placement = {"executor": "dbos", **about}
            yield Item(kind=ItemKind.NOTICE, data={"placement": placement})
            for item in items:
                yield item
            if not await settle(request.session, turn, remote):
                break
        yield result.replace(extra={**result.extra, "x-rein-placement": placement})


__all__ = ["DbosExecutor", "QueuedWorker", "supervise_with_client"]
