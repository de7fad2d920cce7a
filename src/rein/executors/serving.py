"""The worker side of the DBOS executor: ``rein worker`` takes attempts from the queues.

:func:`serve` launches DBOS under the worker's executor id, listening only on the queues it
can serve (:func:`listening_queues`): ``<queue>`` for attempts with ``workspace: none``,
``<queue>@<tree>`` when its own ``--workspace`` is writable, and the ``~<provider>`` twin of
each for the providers ``[executor.rate_limits]`` limits.

An attempt is one workflow with no step: the worker call is its body, and the answer (items
and result as JSON) its output. A checkpointed step would cost two more transactions per
attempt and save nothing, since an attempt interrupted mid-call runs again from its start
anyway. Whether a run is a re-run is counted in rein's own table
(:func:`~rein.executors.heartbeat.mark_run`, one statement), so a worker that
resumes a dead worker's attempt marks its answer ``rerun``.

**Nothing runs that nobody approved.** Before a job runs, and before anything of it is
decoded but its text, the worker opens it with the queue key (``SCALE010``: not signed by a
holder of the key) and checks it against the store and the graph files (``SCALE012``: not a
node of a live, approved run; :mod:`rein.executors.approved`). A rejected job is
logged, ends ``ERROR`` and runs nothing; rows DBOS would unpickle are refused before that
(``SCALE011``, :mod:`rein.executors.serialization`). The attempt then gets only what
the approved node declares: its environment variables and secrets from this worker's
environment, its permissions and tools (a job can only narrow them), and a command
criterion's command line.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from dbos import DBOS

from rein.core.failures import FailureClass
from rein.core.frozen import Record, field
from rein.core.loops import new_loop
from rein.errors import ReinError
from rein.executors import heartbeat, polling, queue_settings
from rein.executors.approved import ApprovedNode, ApprovedRuns, rejected
from rein.executors.names import (
    APP_NAME,
    APP_VERSION,
    CHECK_WORKFLOW,
    POLL_SECONDS,
    WORKFLOW,
    answer_label,
    provider_queue,
    rate_limits,
    system_url,
)
from rein.executors.polling import QuietPolls
from rein.executors.queue_key import QueueKey
from rein.executors.remote_checks import CommandCheck, check_target, private_queue, run_check
from rein.executors.remote_session import RemoteSession
from rein.executors.serialization import json_only
from rein.executors.tree import tree_of, tree_problem, tree_queue
from rein.executors.wire import Job, attempt_target, decode_request, encode_answer
from rein.workers.base import (
    AttemptRequest,
    AttemptResult,
    Item,
    Worker,
    WorkerPaused,
    worker_id,
)


class _Serving(Record, kw_only=False):
    """What this worker process serves with: set by :func:`serve`."""

    executor_id: str = ""
    workspace: Path = Path(".")
    workers: tuple[Worker, ...] = ()
    tree: Mapping[str, str] = field(default_factory=dict)
    secrets: Any = None
    url: str = ""
    key: QueueKey | None = None  # None: not serving, every job is refused
    runs: ApprovedRuns | None = None
    say: Callable[[str], None] = print
    check_command: CommandCheck | None = None  # the engine's check of a command criterion


SERVING = _Serving()
_T = TypeVar("_T")
# Connections for mark_run, at most one per slot (it runs inside one): DBOS's own pool and
# every worker share the server's connection limit.
_CONNS: queue.SimpleQueue[Any] = queue.SimpleQueue()
# The attempts this machine runs at once. DBOS may hand it a few more (``prefetch``) so a
# slot that frees finds its next attempt here instead of waiting for the next look at the
# queue; those wait for a slot before they begin (and count as begun only then).
_SLOTS = threading.BoundedSemaphore(4)


def _mark_run(workflow_id: str) -> bool:
    try:
        conn = _CONNS.get_nowait()
    except queue.Empty:
        conn = heartbeat.connect(SERVING.url)
    try:
        return heartbeat.mark_run(conn, workflow_id, SERVING.executor_id)
    finally:
        if not conn.closed:
            _CONNS.put(conn)


@DBOS.workflow(name=WORKFLOW)
def attempt_workflow(payload: str) -> str:
    workflow_id = str(DBOS.workflow_id)
    with _SLOTS:
        job, node = admit_attempt(workflow_id, payload)
        rerun = _mark_run(workflow_id)
        answer = run_job(job, node, rerun=rerun, workflow_id=workflow_id)
    return _signed(WORKFLOW, workflow_id, answer)


@DBOS.workflow(name=CHECK_WORKFLOW)
def check_workflow(payload: str) -> str:
    workflow_id = str(DBOS.workflow_id)
    text = _opened(CHECK_WORKFLOW, workflow_id, payload)
    doc, run_id, digest, key = _read(workflow_id, check_target, text)
    node = _approved(workflow_id, run_id, digest, key)
    return _signed(CHECK_WORKFLOW, workflow_id, run_check(doc, node, SERVING, os.environ))


def admit_attempt(workflow_id: str, payload: str) -> tuple[Job, ApprovedNode]:
    """The attempt job ``payload`` and the approved node it runs, or the error that
    rejects it (logged; the workflow then ends ``ERROR`` and nothing runs)."""
    text = _opened(WORKFLOW, workflow_id, payload)
    run_id, digest, key = _read(workflow_id, attempt_target, text)
    node = _approved(workflow_id, run_id, digest, key)
    if node.attempt_kind is None:
        raise _refused(workflow_id, rejected(f"node {key} of run {run_id} is a "
                                             f"{node.node.get('type')} node: it runs no "
                                             "attempts"))
    return _read(workflow_id, decode_request, text), node


def _read(workflow_id: str, read: Callable[[str], _T], text: str) -> _T:
    """``read(text)``, a job that does not parse as one refused (SCALE012)."""
    try:
        return read(text)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _refused(workflow_id, rejected(f"the job is malformed ({type(exc).__name__}: "
                                             f"{str(exc)[:200]})")) from None


def _opened(name: str, workflow_id: str, payload: str) -> str:
    if SERVING.key is None:
        raise _refused(workflow_id, ReinError("this process serves no queue",
                                              code="SCALE010"))
    try:
        return SERVING.key.open(name, workflow_id, payload)
    except ReinError as exc:
        raise _refused(workflow_id, exc) from None


def _approved(workflow_id: str, run_id: str, digest: str, key: str) -> ApprovedNode:
    if SERVING.runs is None:
        raise _refused(workflow_id, ReinError("this process serves no queue",
                                              code="SCALE012"))
    try:
        return SERVING.runs.node(run_id, digest, key)
    except ReinError as exc:
        raise _refused(workflow_id, exc) from None


def _refused(workflow_id: str, exc: ReinError) -> ReinError:
    SERVING.say(f"refused job {workflow_id}: {exc.code}: {exc.message}")
    return exc


REFUSALS = ("SCALE010", "SCALE011", "SCALE012")


class QuietRefusals(logging.Filter):
    """DBOS logs a refused job again, with a traceback; the worker has said why already."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ReinError) and exc.code in REFUSALS:
            return False
        text = record.getMessage()
        return not any(f"{code}:" in text for code in REFUSALS)


def _signed(name: str, workflow_id: str, answer: str) -> str:
    assert SERVING.key is not None
    return SERVING.key.sign(answer_label(name), workflow_id, answer)


def run_job(job: Job, node: ApprovedNode, *, rerun: bool, workflow_id: str = "") -> str:
    """Run one admitted attempt here and answer with its items and result."""
    session = None if job.turn is None else RemoteSession(job.turn)
    placement = job.placement
    about = {"worker": SERVING.executor_id, "queue": placement.get("queue"), "rerun": rerun,
             "workflow": workflow_id}
    problem = workspace_problem(placement)
    if problem is not None:  # the tree moved under this worker since it began to listen
        return encode_answer([], AttemptResult(failure=FailureClass.TRANSIENT,
                                               message=problem), **about)
    request = node.narrow(job.request, os.environ).replace(
        workspace=str(SERVING.workspace), session=session)
    chosen = next((w for w in SERVING.workers
                   if worker_id(w) == job.worker and w.can_serve(request)), None)
    if chosen is None:
        return encode_answer([], AttemptResult(
            failure=FailureClass.TRANSIENT,
            message=f"worker {SERVING.executor_id} has no worker {job.worker!r} configured "
                    "that serves this attempt"), **about)
    # A workflow runs in a thread of its own with no event loop: the attempt gets a fresh
    # one, closed when it ends.
    loop = new_loop()
    try:
        items, result, pause = loop.run_until_complete(_collect(chosen, request))
    finally:
        loop.close()
    if session is not None:
        about["session"] = session.to_json(pause)
    text = encode_answer(items, result, **about)
    return SERVING.secrets.text(text) if SERVING.secrets else text


async def _collect(worker: Worker, request: AttemptRequest
                   ) -> tuple[list[Item], AttemptResult, WorkerPaused | None]:
    items: list[Item] = []
    stream = worker.run(request)
    try:
        async for got in stream:
            if isinstance(got, AttemptResult):
                return items, got, None
            items.append(got)
    except WorkerPaused as pause:  # a person must answer: the coordinator queues the question
        return items, AttemptResult(message=f"waiting for {pause.reason}"), pause
    except Exception as exc:  # noqa: BLE001 - the coordinator records it as the attempt's end
        return items, AttemptResult(failure=FailureClass.TRANSIENT,
                                    message=f"{type(exc).__name__}: {exc}"), None
    finally:
        # Closed here, on this loop: left to the collector it would outlive the loop.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return items, AttemptResult(failure=FailureClass.MODEL_ERROR,
                                message=f"worker {worker.name!r} ended without a result"), None


def workspace_problem(placement: Mapping[str, Any]) -> str | None:
    """Why this worker must not run an attempt placed with ``placement``, or ``None``."""
    return tree_problem(SERVING.workspace, SERVING.executor_id, placement)


def listening_queues(base: str, workspace: Path, providers: tuple[str, ...] = (),
                     executor_id: str = "") -> tuple[list[str], str]:
    """The queues this worker takes attempts from, and what it says about its workspace:
    ``<base>``, ``<base>@<tree>`` when the workspace is writable, their ``~<provider>``
    twins, and ``<base>@<tree>#<executor_id>`` for the command criteria of its attempts."""
    tree = tree_of(workspace)
    queues = [base]
    if not os.access(tree["workspace"], os.W_OK):
        note = (f"workspace {tree['workspace']} is not writable: taking only attempts with "
                "workspace: none")
    else:
        queues.append(tree_queue(base, tree))
        note = (f"workspace {tree['workspace']} at HEAD {tree['head'] or '(no git)'}: "
                "taking its attempts and those with workspace: none")
    own = [private_queue(queues[1], executor_id)] if executor_id and len(queues) > 1 else []
    return [*queues, *(provider_queue(q, p) for q in queues for p in providers), *own], note


def serve(*, url: str, queue: str, executor_id: str, workspace: Path,
          workers: tuple[Worker, ...], settings: Mapping[str, Any], stop: threading.Event,
          say: Callable[[str], None], key: QueueKey, runs: ApprovedRuns,
          check_command: CommandCheck, secrets: Any = None) -> None:
    """Take attempts until ``stop`` is set; beat and supervise meanwhile. ``key``: the queue
    key jobs are opened with; ``runs``: the store's runs, which every job must belong to;
    ``check_command``: the engine's check of a command criterion, for check jobs."""
    serializer = json_only(say)  # before DBOS reads a row
    limits = rate_limits(settings)
    queues, note = listening_queues(queue, workspace, tuple(limits), executor_id)
    url = system_url(url)
    SERVING.executor_id, SERVING.workspace, SERVING.workers = executor_id, workspace, workers
    SERVING.tree, SERVING.secrets, SERVING.url = tree_of(workspace), secrets, url
    SERVING.key, SERVING.runs, SERVING.say = key, runs, say
    SERVING.check_command = check_command
    conn = heartbeat.connect(url)
    heartbeat.beat(conn, executor_id, queues)
    global _SLOTS
    concurrency = int(settings.get("worker_concurrency", 4))
    _SLOTS = threading.BoundedSemaphore(concurrency)
    taken = concurrency + int(settings.get("prefetch", concurrency))
    if settings.get("global_concurrency") is not None:  # DBOS: worker <= global
        taken = max(concurrency, min(taken, int(settings["global_concurrency"])))
    dbos = DBOS(config={"name": APP_NAME, "system_database_url": url,
                        "executor_id": executor_id, "application_version": APP_VERSION,
                        "log_level": "WARNING", "run_admin_server": False,
                        "serializer": serializer,
                        # No ping before each checkout (one round trip fewer per
                        # transaction); DBOS retries a transaction whose connection was
                        # lost. Sized for the running attempts and the claims: prefetched
                        # attempts wait for a slot without a connection, and every worker
                        # shares the server's limit.
                        "db_engine_kwargs": {"pool_pre_ping": False,
                                             "pool_size": taken + len(queues) + 4,
                                             "max_overflow": 0, "pool_timeout": 60},
                        })  # type: ignore[typeddict-unknown-key]
    quiet = QuietRefusals()
    logging.getLogger("dbos").addFilter(quiet)
    # Only the queues of this worker's tree: DBOS otherwise listens on every queue it finds.
    DBOS.listen_queues(queues)
    DBOS.launch()
    heartbeat.install_notify(conn)  # DBOS's tables exist now
    polls = QuietPolls()
    unquiet = polling.install(dbos._sys_db, polls)
    if unquiet is not None:
        say(f"worker {executor_id}: polling every queue at every wake ({unquiet})")
    listener = heartbeat.Listener(url, heartbeat.ENQUEUED_CHANNEL, polls.heard)
    try:
        limiter = settings.get("rate_limit")
        poll = float(settings.get("polling_seconds", POLL_SECONDS))
        for name in queues:
            if "#" in name:  # this worker's own: checks only, no shared limit
                own_queue = DBOS.register_queue(name, worker_concurrency=concurrency,
                                                polling_interval_sec=poll,
                                                on_conflict="always_update")
                polls.own(own_queue)
                continue
            provider = name.rpartition("~")[2] if "~" in name else None
            limit = limits.get(provider) if provider else (
                dict(limiter) if isinstance(limiter, Mapping) else None)
            polls.own(queue_settings.register(
                conn, executor_id, name, worker_concurrency=taken,
                global_concurrency=settings.get("global_concurrency"), limiter=limit,
                polling_interval_sec=poll, register_queue=DBOS.register_queue, say=say))
        say(f"worker {executor_id} ready on {', '.join(queues)}; {note}; queue key "
            f"{key.id}")
        while not stop.wait(heartbeat.BEAT_SECONDS):
            heartbeat.beat(conn, executor_id, queues)
            resumed = heartbeat.supervise(conn, _pending_of, _resume)
            for workflow_id in resumed:
                say(f"resumed {workflow_id}: its worker stopped beating")
    finally:
        listener.close()
        heartbeat.leave(conn, executor_id)
        DBOS.destroy()
        logging.getLogger("dbos").removeFilter(quiet)
        runs.close()
        SERVING.key = SERVING.runs = None


def _pending_of(executor_id: str) -> list[tuple[str, str | None]]:
    return heartbeat.left_by(executor_id, DBOS.list_workflows, [WORKFLOW, CHECK_WORKFLOW])


def _resume(workflow_id: str, queue: str | None) -> None:
    DBOS.resume_workflow(workflow_id, queue_name=queue)


__all__ = ["REFUSALS", "SERVING", "QuietRefusals", "admit_attempt", "listening_queues", "run_job", "serve",
           "workspace_problem"]
