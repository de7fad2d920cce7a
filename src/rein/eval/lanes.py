"""Trials on DBOS lanes: an evaluation's trials run by ``rein eval --serve`` processes.

Optional, as all scale-out is: ``rein eval ... --executor dbos`` needs the ``scale`` extra and
a PostgreSQL database (``--store URL`` or ``[store] url``), and this module, which imports
``dbos``, is imported only then.

**The coordinator** (the ``rein eval`` that plans and records the evaluation) puts each trial
on the queue ``rein-eval`` as workflow ``rein_eval_trial`` with the id
``eval:<evaluation>/<trial>#<attempt>`` and waits for its answer; it keeps the evaluation's
journal as in process, so a killed coordinator resumes as one does. The id makes an enqueue
idempotent, and a resumed coordinator first attaches to an earlier attempt of the trial that
the queue still holds (queued, running on a worker, or finished): a trial a worker ran
while its coordinator was down is adopted, not run twice.

**A worker** (``rein eval --serve``) holds the same workspace as its coordinators (the same
path: the evaluation's plan and its trial folders are under ``.rein/evals/``) and the
suite's files at the paths the plan names. Before a trial runs it:

* opens the job with the queue key (``SCALE010`` for a job nobody of the fleet wrote:
  :mod:`rein.executors.queue_key`), and nothing on the queue is unpickled;
* reads the evaluation's plan itself, and refuses (``EVAL025``) a plan whose digest is not
  the one the job names (edited on disk since the coordinator planned it);
* loads the scenarios and configurations as they are now, refused (``EVAL010``) when any of
  them changed since the evaluation began, and reviews what the configurations run: its
  digest must be the approval the job names (``EVAL025`` otherwise). The coordinator
  enqueues only what a person approved (:mod:`rein.eval.approval`), and the worker runs
  only those bytes.

The answer is the trial's record, signed with the queue key; the coordinator opens it before
anything of it is recorded. A worker that dies mid-trial leaves its workflow pending: a
worker restarted under the same ``--name`` recovers it (DBOS's recovery), in a fresh trial
folder; the earlier folder is kept beside it as ``a<N>.lost-<k>``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient

from rein.core.frozen import Record, field
from rein.errors import ConfigError, Refused, ReinError
from rein.eval.trial import Trial, TrialSpec, blank
from rein.executors.names import APP_NAME, answer_label, system_url
from rein.executors.queue_key import QueueKey
from rein.executors.serialization import json_only

if TYPE_CHECKING:
    from rein.config import Config

WORKFLOW = "rein_eval_trial"
# Coordinators and workers of one version see each other's trials only.
APP_VERSION = "rein-eval-trial-1"
QUEUE = "rein-eval"
WAIT_SECONDS = 0.5  # how often a pending trial's status is read
_FAILED = ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


def workflow_id(evaluation: str, trial: str, attempt: int) -> str:
    return f"eval:{evaluation}/{trial}#{attempt}"


def plan_digest(plan: Mapping[str, Any]) -> str:
    """What a job binds of the evaluation's plan."""
    from rein.formats.canonical import canonical_json

    return "sha256:" + hashlib.sha256(canonical_json(dict(plan))).hexdigest()


def postgres_url(given: str | None, base: Config) -> str:
    """The database of the queues: ``--store`` or ``[store] url`` (EVAL026 otherwise)."""
    url = given or (base.get("store") or {}).get("url")
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError("trials on DBOS lanes need a PostgreSQL database for their queues",
                          code="EVAL026", hint="pass --store postgresql://USER@HOST/DB (the "
                          "coordinator and every rein eval --serve use the same one)")
    return system_url(url)


# -- the coordinator ---------------------------------------------------------------------


class DbosLanes:
    """Puts trials on the queue and waits for their answers (one client for all lanes)."""

    def __init__(self, *, url: str, key: QueueKey, stop: threading.Event | None = None
                 ) -> None:
        self.url = url
        self.key = key
        self.stop = stop or threading.Event()
        self._client: DBOSClient | None = None
        self._lock = threading.Lock()

    def client(self) -> DBOSClient:
        with self._lock:
            if self._client is None:
                try:
                    self._client = DBOSClient(system_database_url=self.url,
                                              application_name=APP_NAME,
                                              serializer=json_only())
                    self._client.list_workflows(limit=1, load_input=False,
                                                load_output=False)
                except ReinError:
                    raise
                except Exception as exc:
                    self._client = None
                    raise ReinError(f"the trial queues are not reachable: "
                                    f"{str(exc).strip()[:300]}", code="EVAL027",
                                    hint="start a worker first (it creates them): rein eval "
                                         "--serve --store URL") from exc
            return self._client

    def run(self, spec: TrialSpec, *, plan: str, approval: str | None) -> Trial:
        """The trial's record from a worker: an earlier attempt the queue still holds, or
        this attempt, enqueued now."""
        client = self.client()
        for earlier in range(1, spec.attempt):
            wid = workflow_id(spec.evaluation, spec.trial_id, earlier)
            found = client.list_workflows(workflow_ids=[wid], load_input=False,
                                          load_output=False)
            if found and found[0].status not in _FAILED:
                return self.wait(spec, wid)
        wid = workflow_id(spec.evaluation, spec.trial_id, spec.attempt)
        job = json.dumps({"evaluation": spec.evaluation, "trial": spec.trial_id,
                          "attempt": spec.attempt, "plan": plan, "approval": approval},
                         sort_keys=True)
        # An id already in use attaches to that workflow (DBOS's default reuse policy).
        client.enqueue({"queue_name": QUEUE, "workflow_name": WORKFLOW, "workflow_id": wid,
                        "app_version": APP_VERSION}, self.key.sign(WORKFLOW, wid, job))
        return self.wait(spec, wid)

    def wait(self, spec: TrialSpec, wid: str) -> Trial:
        client = self.client()
        while True:
            found = client.list_workflows(workflow_ids=[wid], load_input=False,
                                          load_output=False)
            status = found[0] if found else None
            if status is not None and status.status == "SUCCESS":
                answer: Any = client.retrieve_workflow(wid).get_result()
                text = self.key.open(answer_label(WORKFLOW), wid, answer)
                return Trial.from_json(json.loads(text))
            if status is not None and status.status in _FAILED:
                error = str(status.error or status.status)[:400]
                return blank(spec, "error", f"the trial's worker refused or failed it: {error}")
            if self.stop.wait(WAIT_SECONDS):
                raise ReinError(f"stopped while {wid} was on a worker", code="EVAL027",
                                hint="resume the evaluation: it attaches to the trial")

    def close(self) -> None:
        self.stop.set()
        if self._client is not None:
            self._client.destroy()


# -- the worker ----------------------------------------------------------------------------


class _Serving(Record):
    workspace: Path | None = None
    base: Config | None = None
    key: QueueKey | None = None
    name: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    say: Callable[[str], None] = print


SERVING = _Serving()


@DBOS.workflow(name=WORKFLOW)
def trial_workflow(payload: str) -> str:
    wid = str(DBOS.workflow_id)
    key = SERVING.key
    assert key is not None and SERVING.workspace is not None and SERVING.base is not None
    job = json.loads(key.open(WORKFLOW, wid, payload))
    if workflow_id(job["evaluation"], job["trial"], int(job["attempt"])) != wid:
        raise Refused(f"job {wid} names another trial", code="EVAL025",
                      hint="a job is run only under its own id")
    trial = run_job(job, workspace=SERVING.workspace, base=SERVING.base, lane=SERVING.name,
                    env=SERVING.env)
    SERVING.say(f"{job['trial']} (attempt {job['attempt']}): {trial.status}")
    return key.sign(answer_label(WORKFLOW), wid, json.dumps(trial.to_json()))


def run_job(job: Mapping[str, Any], *, workspace: Path, base: Config, lane: str,
            env: Mapping[str, str]) -> Trial:
    """Check a job against the evaluation as it is here, then run its trial."""
    from rein.core.loops import run as run_loop
    from rein.eval.ledger import Ledger
    from rein.eval.runner import Options, execute, plan_trials, reload, spec_for

    ledger = Ledger.open(workspace, str(job["evaluation"]))
    if plan_digest(ledger.plan) != job["plan"]:
        raise Refused(f"evaluation {ledger.id}'s plan is not the one its coordinator "
                      "planned: it changed on disk", code="EVAL025",
                      hint="start a new evaluation")
    loaded = reload(ledger.plan, ledger.id, base)
    if loaded.review.digest != job["approval"]:
        raise Refused(f"what the configurations of {ledger.id} run here is not what was "
                      f"approved ({job['approval']} approved, {loaded.review.digest} here)",
                      code="EVAL025", hint="give every worker the suite's files as approved")
    options = Options(**ledger.plan["options"])
    planned = {p.trial_id: p for p in plan_trials(loaded.scenarios, loaded.configs,
                                                  options.trials)}
    if job["trial"] not in planned:
        raise Refused(f"{job['trial']} is not a trial of {ledger.id}", code="EVAL025",
                      hint="a job names a trial of its evaluation's plan")
    spec = spec_for(ledger, loaded, planned[job["trial"]], int(job["attempt"]),
                    options=options, base=base, env=env)
    _fresh(spec.root)
    trial = run_loop(execute(spec))
    trial.lane = f"dbos:{lane}"
    return trial


def _fresh(root: Path) -> None:
    """A trial folder of its own: one a dead worker left is kept beside it."""
    if root.exists():
        k = 1
        while root.with_name(f"{root.name}.lost-{k}").exists():
            k += 1
        root.rename(root.with_name(f"{root.name}.lost-{k}"))
    root.mkdir(parents=True)


def serve(*, workspace: Path, base: Config, url: str, key: QueueKey, name: str,
          concurrency: int, env: Mapping[str, str], stop: threading.Event,
          say: Callable[[str], None]) -> None:
    """Take trials from the queue until ``stop`` is set."""
    serializer = json_only(say)
    SERVING.workspace, SERVING.base, SERVING.key = workspace, base, key
    SERVING.name, SERVING.env, SERVING.say = name, env, say
    DBOS(config={"name": APP_NAME, "system_database_url": url, "executor_id": name,
                 "application_version": APP_VERSION, "log_level": "WARNING",
                 "run_admin_server": False,
                 "serializer": serializer})  # type: ignore[typeddict-unknown-key]
    DBOS.listen_queues([QUEUE])
    DBOS.launch()
    try:
        DBOS.register_queue(QUEUE, worker_concurrency=concurrency, polling_interval_sec=0.2,
                            on_conflict="always_update")
        say(f"serving trials of {workspace} on {QUEUE} as {name}; queue key {key.id}")
        stop.wait()
    finally:
        DBOS.destroy()
        SERVING.key = None


__all__ = ["APP_VERSION", "QUEUE", "WORKFLOW", "DbosLanes", "plan_digest", "postgres_url",
           "run_job", "serve", "trial_workflow", "workflow_id"]
