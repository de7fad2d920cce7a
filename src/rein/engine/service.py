"""The Harness: every use case a surface offers, behind one async service.

:meth:`Harness.open` is the one composition root: it reads the merged ``rein.toml`` once (or
takes the settings given), and builds from it the router, the configured workers, the
default driver, the checkers and the store, which it opens on first use so that checking
a graph writes nothing. Surfaces (the command line now; the SDK, app-server, ACP and web
console later) parse, call one of the async methods here, and render what comes back;
none of them decides anything. Reads that change nothing are in :class:`Reads`.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Mapping
from pathlib import Path

from rein.core.frozen import Frozen
from rein.engine.cases.queries import Reads
from rein.engine.run.clock import Clock, IdGenerator, RandomIds, SystemClock
from rein.engine.run.material import KEPT, file_content, kept_copy, shown_files, stale_files
from rein.errors import ConfigError, Refused, ReinError, StoreError

# The rows the Harness hands out, for a surface's annotations (surfaces import no store).
from rein.store.base import ApprovalRow, Event, NodeRow, RunRow, ThreadRow, ThreadTurnRow

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:  # the engine proper is imported when a run advances: `rein next` stays light
    from typing import Any, Self

    from rein.config import Config
    from rein.config.approver import Approver
    from rein.core.states import ApprovalStatus
    from rein.engine.cases.prune import Pruned
    from rein.engine.cases.sessions import Sessions
    from rein.engine.run.answering import Via
    from rein.engine.run.outcome import RunOutcome
    from rein.engine.run.prepare import Prepared, Starter
    from rein.engine.run.routing import Router
    from rein.engine.run.runner import Engine
    from rein.engine.run.runtime import Listener
    from rein.store.base import Store

Notify = Callable[[str], None]
#: Signs with the person's key where approvals are signed: ``(key, message) -> signature``
#: (the command line's asks ssh-keygen, which may ask the terminal for a passphrase).
Signer = Callable[[str, bytes], str]


class Answered(Frozen):
    """An answer recorded in the approval queue."""

    approval: ApprovalRow  # as stored
    changed: bool  # False: the same answer was already recorded
    actor: str  # who answered: the approver rein knows, never a typed name
    outcome: RunOutcome | None  # where the run stands after it continued (None: not asked)
    # Why the run was not continued here although asked (None: it was, or was not asked).
    left: str | None = None


class Submitted(Frozen):
    """A driver envelope applied (or recognised as applied) and the run advanced."""

    note: str  # what happened, in words ("accepted for ...", "already applied ...")
    accepted: bool  # this submit applied the envelope (false: it was applied before)
    status: dict[str, Any]  # what comes next, as :meth:`Harness.next` reports it


class Harness(Reads):
    """Start, resume, cancel and answer runs; hand out and take back driver turns."""

    def __init__(self, *, workspace: Path, config: Config, store_url: str | None = None,
                 create: bool = True, listeners: Iterable[Listener] = (),
                 clock: Clock | None = None, ids: IdGenerator | None = None,
                 env: Mapping[str, str] | None = None, workers: tuple[Any, ...] | None = None,
                 checkers: Mapping[str, Any] | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None,
                 surface: str = "api", signer: Signer | None = None,
                 router: Router | None = None) -> None:
        self.workspace = workspace
        self.config = config
        self.surface = surface  # who takes answers here: cli, web, app-server, acp, api
        self.signer = signer  # signs a run's approval where approvals are signed (cli only)
        self._router: Router | None = router  # None: built from [tiers] on first use
        self.clock: Clock = clock or SystemClock()
        self.listeners = list(listeners)
        self._store_url, self._create = store_url, create
        self._ids, self._env, self._workers = ids, env, workers
        self._checkers, self._sleep = checkers, sleep
        self._store: Store | None = None
        self._engine: Engine | None = None
        self._sessions: Sessions | None = None
        self._starter: Starter | None = None

    @classmethod
    def open(cls, workspace: str | Path, settings: Config | None = None, *,
             store_url: str | None = None, create: bool = True,
             listeners: Iterable[Listener] = (), clock: Clock | None = None,
             ids: IdGenerator | None = None, env: Mapping[str, str] | None = None,
             workers: tuple[Any, ...] | None = None,
             checkers: Mapping[str, Any] | None = None, surface: str = "api",
             signer: Signer | None = None) -> Harness:
        """The Harness of ``workspace``. ``settings``: the merged ``rein.toml`` (read here
        when not given); ``store_url``: another store than ``[store] url`` or the embedded
        one; ``create``: whether a missing embedded store may be created (else STORE404 at
        first use); ``workers``: replaces the configured ones (the default driver is always
        added last); ``checkers``: external checkers by name (``None``: the ``rein.checkers``
        entry points of the installed packages); ``surface``: the surface answers given
        through this Harness are recorded as taken by (``cli``, ``web``, ``app-server``,
        ``acp``; ``api`` for a program); ``signer``: how this surface signs a run's approval
        with the person's key where approvals are signed (without one, such a surface starts
        no run there)."""
        from rein.config import load_config

        ws = Path(workspace).resolve()
        return cls(workspace=ws, config=settings if settings is not None else load_config(ws),
                   store_url=store_url, create=create, listeners=listeners, clock=clock,
                   ids=ids, env=env, workers=workers, checkers=checkers, surface=surface,
                   signer=signer)

    # -- composition ---------------------------------------------------------------------

    @staticmethod
    def check_setup(workspace: str | Path, *, store_url: str | None = None,
                    env: Mapping[str, str] | None = None) -> list[Any]:
        """``rein doctor``: what this machine and workspace have for rein, and how to fix
        each gap (:mod:`rein.engine.cases.doctor`); reads, never writes."""
        from rein.config import load_config
        from rein.engine.cases.doctor import checks

        ws = Path(workspace).resolve()
        try:
            config: Any = load_config(ws, env=env)
        except ReinError as exc:  # said as the first gap
            config = exc
        return checks(ws, config, store=store_url, env=env)

    @property
    def store(self) -> Store:
        """The run store, opened on first use (STORE404 when there is none to open)."""
        if self._store is None:
            from rein.store.open import open_store

            store = open_store(self.workspace, url=self._store_url, create=self._create,
                               config=self.config)
            if store is None:
                raise StoreError(f"no runs in {self.workspace} (no .rein/ store yet)",
                                 code="STORE404", hint="start one with `rein run GRAPH`")
            self._store = store
        return self._store

    def check_store(self) -> None:
        """Open the store now: STORE404 when there is none, before a surface says where it
        serves."""
        self.store  # noqa: B018 - opened for its check

    @property
    def router(self) -> Router:
        """Tier routing from ``[tiers]`` and ``[routing]``, built on first use (a command
        that only reads runs does not need it, and is not refused for it)."""
        if self._router is None:
            from rein.engine.run.routing import Router

            self._router = Router.from_config(self.config.get("tiers"),
                                              self.config.get("routing"))
        return self._router

    @property
    def workers(self) -> tuple[Any, ...]:
        """The configured workers (``[workers]``, ``[tiers]``), built on first use: a
        malformed table is a ConfigError here, before anything is written."""
        if self._workers is None:
            from rein.engine.run.workers_setup import workers_from_config

            self._workers = tuple(workers_from_config(self.workspace, self.config,
                                                      env=self._env))
        return self._workers

    def check_executor(self) -> None:
        """Refuse, before anything is written, the executor this command cannot use: dbos
        needs a PostgreSQL store (SCALE002), the scale extra (SCALE005) and the queue key
        (SCALE009)."""
        import importlib.util

        from rein.executors import executor_settings, load_dbos
        from rein.store.open import store_url

        env = self._env if self._env is not None else os.environ
        if executor_settings(self.config, env)["kind"] != "dbos":
            return
        url = store_url(self.workspace, self._store_url, config=self.config) or ""
        if not url.startswith(("postgresql://", "postgres://")):
            where = "the embedded SQLite store" if not url else "a SQLite file"
            raise ConfigError(f"the dbos executor needs a PostgreSQL store; this command uses "
                              f"{where}", code="SCALE002",
                              hint="add --store postgresql://user@host/db (or set [store] "
                                   "url), or run with --executor in-process")
        if importlib.util.find_spec("dbos") is None:  # SCALE005 now, not mid-run
            load_dbos()
        from rein.executors.queue_key import load_key

        load_key(self.config, env)  # SCALE009: no coordinator without the queue key

    def serve_attempts(self, *, queue: str | None, name: str, stop: Any,
                       say: Callable[[str], None], concurrency: int | None = None) -> None:
        """Take node attempts from the DBOS queues of this store until ``stop`` (a
        ``threading.Event``) is set: ``rein worker``. Blocks; imports DBOS."""
        from rein.executors import executor_settings, load_dbos
        from rein.executors.approved import ApprovedRuns
        from rein.executors.queue_key import load_key
        from rein.formats.redaction import known_secrets
        from rein.store.open import key_variables_of, open_store, store_url

        url = store_url(self.workspace, self._store_url, config=self.config)
        if not url or not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError("rein worker needs a PostgreSQL store", code="SCALE002",
                              hint="rein worker --store postgresql://user@host/db")
        env = self._env if self._env is not None else os.environ
        settings = executor_settings(self.config, env)
        if concurrency is not None:
            settings["worker_concurrency"] = concurrency
        key = load_key(self.config, env)  # SCALE009: no worker without the queue key
        from rein.engine.run.criteria.remote import check_command
        from rein.engine.run.signed import approval_check, signers_of

        runs = ApprovedRuns(lambda: open_store(self.workspace, url=url, config=self.config),
                            approval_problem=approval_check(
                                signers_of(self.config.data, self.workspace), self.workspace))
        load_dbos("serving").serve(
            url=url, queue=queue or str(settings.get("queue") or "rein"), executor_id=name,
            workspace=self.workspace, workers=self.workers, settings=settings, stop=stop,
            say=say, key=key, runs=runs, check_command=check_command,
            secrets=known_secrets(env, key_variables_of(self.config)))

    def new_queue_key(self) -> tuple[str, str, bool]:
        """Write this machine's queue key file when there is none (``rein worker
        --new-key``): ``(path, key id, whether it was written now)``. SCALE009 when the file
        there is not usable."""
        from rein.executors.queue_key import key_path, load_key, new_key_file

        env = self._env if self._env is not None else os.environ
        written = new_key_file(key_path(self.config, env))
        key = load_key(self.config, env)
        return key.path, key.id, written

    @property
    def engine(self) -> Engine:
        """The engine, built on first use with the workers and the default driver."""
        if self._engine is None:
            from rein.engine.run.runner import Engine
            from rein.workers.driver.worker import default_driver

            store = self.store
            workers = (*self.workers, *default_driver(self.workspace, store, self.config))
            extra: dict[str, Any] = {} if self._sleep is None else {"sleep": self._sleep}
            self._engine = Engine(
                workspace=self.workspace, store=store, config=self.config, workers=workers,
                router=self.router, clock=self.clock, ids=self.ids,
                env=dict(os.environ if self._env is None else self._env),
                listeners=self.listeners, checkers=self._checkers, **extra)
        return self._engine

    @property
    def ids(self) -> IdGenerator:
        """The id generator runs and approvals are named by (one, without opening the
        store)."""
        if self._ids is None:
            self._ids = RandomIds()
        return self._ids

    def via(self, *, session: str | None = None, standing: str | None = None) -> Via:
        """How an answer or a start taken here is recorded: this Harness's surface, the web
        console's ``session`` it was given in (kept as a digest of its id, never the id),
        and the person's standing instruction rein answered by, if any."""
        from rein.engine.run.answering import Via, session_tag

        return Via(surface=self.surface, standing=standing,
                   session=None if session is None else session_tag(session))

    @property
    def approver(self) -> Approver:
        """Who answers here: the approver the managed or user ``rein.toml`` names."""
        return self.config.approver

    def store_in_workspace(self) -> bool:
        """Whether the run store is a file inside the workspace (the embedded default, or
        a SQLite path there), where node work and an agent's sandbox can write."""
        from rein.store.open import PG_SCHEMES, store_url

        url = store_url(self.workspace, self._store_url, config=self.config)
        if url is None:
            return True
        if url.startswith(PG_SCHEMES):
            return False
        real = (self.workspace / url.removeprefix("sqlite://")).resolve()  # as _open reads it
        return self.workspace in real.parents

    def run_approval_problem(self, run_id: str) -> str | None:
        """Where approvals are signed, why the approval of ``run_id``'s top run does not
        verify as its binding holds it (None: it does, or approvals are not signed). A
        read: what every continuation checks (APPROVAL005), without continuing."""
        from rein.engine.run.signed import run_problem, signers_of
        from rein.store.lineage import top_run

        signers = signers_of(self.config.data, self.workspace)
        if signers is None:
            return None
        run = self.run(run_id)
        top = top_run(self.store, run.run_id) or run
        return run_problem(self.store, top, signers, workspace=self.workspace,
                           now=self.clock.now())

    def record_usage(self, report: Mapping[str, Any]) -> int:
        """Record on each run what a usage report attributed from the agent's own records
        (``usage/attributed`` events): its budgets and totals count it from then on, over
        what the agent reported of itself. How many turns changed."""
        from rein.core.time import iso
        from rein.engine.cases.usage_report import record_attribution

        return record_attribution(self.store, report, iso(self.clock.now()))

    def trust_notice(self) -> str | None:
        """Why the project file's commands or URLs are withheld, when they are."""
        if self.config.project_trust is None:  # no project file: nothing is withheld
            return None
        from rein.config.trust import notice

        return notice(self.config.project_trust)

    def key_variables(self) -> tuple[str, ...]:
        """The provider key variables ``rein.toml`` names (redacted, flagged in plans)."""
        from rein.store.open import key_variables_of

        return key_variables_of(self.config)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store, self._engine, self._sessions = None, None, None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- runs ----------------------------------------------------------------------------

    @property
    def starter(self) -> Starter:
        """How runs are prepared and started here (:class:`rein.engine.run.prepare.Starter`):
        :meth:`prepare` and :meth:`start` are its, and the session runtime is handed it."""
        if self._starter is None:
            from rein.engine.run.prepare import Starter

            self._starter = Starter(
                workspace=self.workspace, surface=self.surface,
                env=os.environ if self._env is None else self._env,
                router=lambda: self.router, workers=lambda: self.workers,
                key_variables=self.key_variables, limits=lambda: self.config.limits,
                engine=lambda: self.engine,
                approver=lambda: self.approver, ids=lambda: self.ids, sign=self._sign)
        return self._starter

    async def prepare(self, path: str | Path, *, given: Mapping[str, Any],
                      raw: frozenset[str] = frozenset()) -> Prepared:
        """Every check that costs nothing (PrepareFailed); writes nothing. The configured
        workers are built too, so that a malformed table is refused here (ConfigError)."""
        return self.starter.prepare(path, given=given, raw=raw)

    async def start(self, prepared: Prepared, *, approved: str,
                    via: Via | None = None, under: ApprovalRow | None = None) -> RunOutcome:
        """Run an approved graph to its end or first wait, recorded as approved by the
        approver rein knows, with how (``via``: the surface, the Harness's own when not
        given). APPROVAL_STALE before the store is touched.

        Where approvals are signed, the person's key signs the run's approval (its id,
        graph, parameters and children) before anything is written: APPROVAL004 when this
        surface cannot sign. ``under``: instead, the signed approval that showed the graph
        file (the development flow's plan approval), checked as the run starts and every
        time it continues (APPROVAL005)."""
        return await self.starter.start(prepared, approved=approved, via=via, under=under)

    def _sign(self, message: bytes, *, what: str, hint: str) -> str:
        """``message`` signed by the approver's key through this surface's signer;
        APPROVAL004 when there is none, or no key."""
        if self.signer is None:
            raise Refused(f"{what} was not signed: approvals here are signed with the "
                          f"approver's SSH key, and the {self.surface} surface cannot sign; "
                          "nothing was recorded", code="APPROVAL004", hint=hint)
        key = self.approver.signing_key
        if key is None:
            raise Refused(f"{what} was not signed: approvals here are signed, and no signing "
                          "key is set for this account; nothing was recorded",
                          code="APPROVAL004", hint="the approver does it from their own "
                          "account, where their signing key is set")
        return self.signer(key, message)

    async def resume(self, run_id: str, *, force: bool = False) -> RunOutcome:
        """Continue a waiting or interrupted run (RT053 unless ``force``; recorded). Where
        approvals are signed, APPROVAL005 unless the run's approval verifies; ``force``
        approves the files as they are now, signed by the person's key (APPROVAL004 when
        this surface cannot sign). ``force`` is refused in a confined process (APPROVAL003,
        before anything is read or recorded), and the ``run/forced`` event records how it
        was given, as an answer's record does."""
        run = self.run(run_id)
        forced_by = None
        if force:
            # A forced resume approves the files as they are now: a person's to give, as
            # an answer is (APPROVAL003 in an agent's sandbox), and recorded as one.
            from rein.core.confinement import confinement
            from rein.engine.run.answering import given

            approver = self.check_answerer(f"the approval of run {run.run_id}'s files as "
                                           "they are now (a forced resume)")
            forced_by = given(approver=approver, via=self.via(), state=confinement())

        def sign(message: bytes) -> str:
            return self._sign(message, what=f"the approval of run {run.run_id}", hint=(
                f"a person runs `rein resume {run.run_id} --force` in their own terminal, "
                "where their key signs it"))

        return await self.engine.resume(run.run_id, force=force, sign=sign if force else None,
                                        forced_by=forced_by)

    async def cancel(self, run_id: str, *, actor: str | None = None,
                     note: str | None = None) -> RunOutcome:
        """Stop a run; compensation runs and it ends ``cancelled``."""
        who = self.check_actor(actor)  # recorded as who cancelled, never a typed name
        return await self.engine.cancel(run_id, actor=who.id, note=note)

    # -- approvals -----------------------------------------------------------------------

    def check_actor(self, actor: str | None) -> Approver:
        """The approver rein knows here; APPROVAL_ACTOR when ``actor`` names someone else."""
        approver = self.approver
        if actor is not None and actor != approver.id:
            raise Refused(f"--actor {actor} is not who answers here: rein knows you as "
                          f"{approver.id}; nothing was recorded", code="APPROVAL_ACTOR",
                          hint=f"--actor only checks who answers: {actor} answers it "
                               "themselves")
        return approver

    def check_answerer(self, what: str, actor: str | None = None) -> Approver:
        """The approver rein knows here, when this process may answer ``what`` ("approval
        apv-…", "the profile delta") at all: APPROVAL003 when it is confined (an agent's
        sandbox), APPROVAL_ACTOR for another ``actor``."""
        from rein.engine.run.answering import check_unconfined

        approver = self.check_actor(actor)
        check_unconfined(approver, what)
        return approver

    def signing_message(self, approval_id: str, status: ApprovalStatus, *,
                        note: str | None = None,
                        values: Mapping[str, Any] | None = None) -> bytes | None:
        """What the approver signs to give this answer, or None when answers here are not
        signed (or this one needs no signature). APPROVAL404 for an unknown approval."""
        from rein.engine.run.answering import Via, message, needs_signature

        if not needs_signature(self.approver, status, Via(surface=self.surface)):
            return None
        row = self.store.get_approval(approval_id)
        if row is None:
            raise ReinError(f"no approval {approval_id!r}", code="APPROVAL404",
                            hint=self._approval_hint(approval_id))
        return message(row, status, note=note, values=values)

    def verify_answer(self, approval_id: str, *,
                      allowed_signers: str | None = None) -> dict[str, Any]:
        """Check the signature of an answer already recorded, over the answer as stored,
        against ``allowed_signers`` (the account's ``[approver] allowed_signers`` when not
        given): who signed, with which key. APPROVAL004 when it does not verify."""
        from rein.engine.run.answering import verify_recorded

        row = self.approval(approval_id)
        signers = allowed_signers or self.approver.allowed_signers
        if signers is None:
            raise Refused("no allowed-signers file to check the signature against",
                          code="APPROVAL004", hint="name one with --allowed-signers FILE")
        return verify_recorded(row, signers)

    def not_continued_here(self, run_id: str) -> str | None:
        """Why an answer given in this process does not continue top-level run ``run_id``
        (None: it does). A run whose graph a confined process approved (an agent that
        started what it wrote, where approvals are not signed) is not advanced outside a
        sandbox: that would run its next nodes outside it, under the answerer's account. It
        continues where it was approved."""
        from rein.store.lineage import approved_in_a_sandbox

        if not approved_in_a_sandbox(self.store, run_id):
            return None
        from rein.core.confinement import confinement

        if confinement().confined:
            return None
        return (f"run {run_id} was approved from a sandbox, so it is not continued outside "
                f"one: the agent's `rein resume {run_id}` (or its flow's command) takes the "
                "answer up there")

    async def answer(self, approval_id: str, status: ApprovalStatus | str, *,
                     actor: str | None = None, note: str | None = None,
                     values: Mapping[str, Any] | None = None, digest: str | None = None,
                     go_on: bool = True, recorded: Notify | None = None,
                     via: Via | None = None, signature: str | None = None) -> Answered:
        """Answer an approval, then (``go_on``) continue its top-level run. ``status``: a
        decision word of the one vocabulary (``accept``, ``decline``, ``cancel``:
        :data:`rein.core.states.ANSWERS`), or the queue's answer itself.

        Refused before anything is recorded: APPROVAL006 (no such decision), APPROVAL003 (this process is confined),
        APPROVAL_ACTOR, APPROVAL404, APPROVAL_STALE (``digest`` is not what was shown, or a
        shown file changed), APPROVAL_ROLE, APPROVAL004 (answers here are signed and
        ``signature`` is missing or wrong), and RT053 when the run would continue under
        files that changed since its approval. ``via``: the surface and what it knows of
        the person (the Harness's own ``surface`` when not given). ``recorded`` hears of
        the answer before the run advances.
        """
        from rein.engine.run import approvals
        from rein.engine.run.answering import Via
        from rein.store.lineage import top_run

        status = answer_status(status)
        approver = self.check_answerer(f"approval {approval_id}", actor)
        engine = self.engine
        row = self.store.get_approval(approval_id)
        if row is None:
            raise ReinError(f"no approval {approval_id!r}", code="APPROVAL404",
                            hint=self._approval_hint(approval_id))
        if digest is not None and digest != row.digest:
            raise Refused(f"approval {approval_id} shows material with digest {row.digest}, "
                          f"not {digest}", code="APPROVAL_STALE",
                          hint="look at the approval again with `rein approvals list --json`")
        if approvals.superseded(row):
            # Closed by rein, not answered: the same question waits about the content as it
            # is now, and an answer meant for this one is that one's to give.
            by = (row.answer or {}).get("superseded_by")
            raise Refused(f"approval {approval_id} was closed by rein, not answered: "
                          f"{(row.answer or {}).get('note') or f'superseded by {by}'}; "
                          "nothing was recorded", code="APPROVAL_ANSWERED",
                          hint=f"answer {by}, which asks the same about the content as it is "
                               f"now: `rein approvals show {by}`, then accept, decline or "
                               "cancel it")
        top = top_run(self.store, row.run_id)
        left = None
        if go_on and top is not None:
            left = self.not_continued_here(top.run_id)
            if left is not None:
                go_on = False
        if go_on and top is not None:
            self._held_to_binding(top, approval_id)
            self._held_to_workspace(top, approval_id)
        # The answer is one transaction of its own; advancing takes the run lock. When
        # another process holds it, that process picks the answer up before it pauses.
        updated, changed = approvals.answer(
            self.store, self.workspace, row, status, approver=approver, now=engine.now(),
            note=note, values=values or {}, via=via or Via(surface=self.surface),
            signature=signature)
        if recorded is not None:
            word = "recorded" if changed else "already recorded"
            # Every surface says it, the console's included: the run does not move here.
            recorded(f"approval {approval_id}: {updated.status.value} ({word}, as "
                     f"{approver.id})" + (f"; not continued here: {left}" if left else ""))
        outcome = None
        if go_on and top is not None:
            try:
                outcome = await engine.proceed(top.run_id)
            except Refused as exc:
                if exc.code != "RUN_LOCKED":
                    raise
                raise Refused(f"approval {approval_id} is recorded; {exc.message}",
                              code=exc.code, hint="the process advancing the run takes the "
                              "answer into account; nothing more to do") from exc
        return Answered(approval=updated, changed=changed, actor=approver.id, outcome=outcome,
                        left=left)

    def _approval_hint(self, given: str) -> str:
        """For APPROVAL404: the approval of the node ``given`` names (a node id typed where
        an approval id belongs), else the nearest pending id, else how to list them."""
        from rein.core.states import ApprovalStatus
        from rein.core.suggest import with_suggestion

        waiting = self.store.approvals(status=ApprovalStatus.PENDING)
        listed = "list the queue with `rein approvals list`"
        for_node = [a.approval_id for a in waiting if a.request.get("node") == given]
        if for_node:
            return f"{given!r} is a node; the approval waiting for it is {for_node[0]}: use that id"
        return with_suggestion(listed, given, (a.approval_id for a in waiting)) or listed

    def _held_to_binding(self, run: Any, approval_id: str) -> None:
        """RT053 before the answer is recorded: an answer that continues a run must not
        continue one whose graph, params or children changed since it was approved."""
        try:
            self.engine.check_binding(run, force=False)
        except Refused as exc:
            hint = exc.hint if exc.code != "RT053" else (
                f"restore the approved files or start a new run; or record the answer with "
                f"--no-continue, then `rein resume {run.run_id} --force` (the override is "
                "recorded)")
            raise Refused(f"{exc.message}; the answer to {approval_id} was not recorded",
                          code=exc.code, location=exc.location, hint=hint) from exc

    def _held_to_workspace(self, run: Any, approval_id: str) -> None:
        """RUN010 before the answer is recorded: an answer that continues a run continues
        it here, and another workspace's run must not run its checks here."""
        from rein.store.workspace_id import refuse_elsewhere

        try:
            refuse_elsewhere(run, self.workspace, doing="continue it")
        except Refused as exc:
            raise Refused(f"{exc.message}; the answer to {approval_id} was not recorded",
                          code=exc.code, hint=f"{exc.hint}; or record the answer here with "
                                              "--no-continue and resume the run there") from exc

    async def expire_due(self, now: dt.datetime | None = None) -> list[ApprovalRow]:
        """Apply every approval timeout due at ``now`` (the Harness clock's time when not
        given): there is no background timer, a surface calls this when it looks at the
        queue. The entries that changed; their runs continue on :meth:`resume`."""
        from rein.engine.run import approvals

        return approvals.expire_due(self.store, now or self.clock.now())

    # -- the driver ----------------------------------------------------------------------

    async def next(self, run_id: str | None = None) -> dict[str, Any]:
        """The one thing a run waits for: an instruction for the driver, or why it waits.
        A read: asking again gives the same instruction, and nothing is started."""
        return self.driver_status(run_id)

    async def submit(self, envelope: dict[str, Any], run_id: str | None = None, *,
                     consumed: Notify | None = None) -> Submitted:
        """Answer the pending instruction with ``envelope`` and advance the run to its next
        wait. EnvelopeRefused, with nothing changed, for an envelope that does not answer
        the current instruction; the same envelope twice is applied once. ``consumed``
        hears what was applied before the run advances."""
        from rein.engine.cases.driver_turns import advisory_failures, consume, driver_settings
        from rein.store.workspace_id import refuse_elsewhere
        from rein.workers.driver.protocol import EnvelopeRefused
        from rein.workers.driver.status import answer_untaken, pick_run, status_of
        from rein.workers.driver.store import get_turn

        engine, store = self.engine, self.store
        token = envelope.get("token")
        turn = get_turn(store, token) if isinstance(token, str) else None
        root = turn.root_run_id if turn is not None else \
            pick_run(store, run_id, self.workspace).run_id
        if (found := store.get_run(root)) is not None:  # before anything is consumed
            refuse_elsewhere(found, self.workspace, doing="take an answer for it",
                             refusal=EnvelopeRefused)
        if run_id is not None and pick_run(store, run_id, self.workspace).run_id != root:
            raise EnvelopeRefused(f"the envelope answers an instruction of run {root}, not "
                                  f"of run {run_id}", code="DRIVER_WRONG_RUN",
                                  hint="send it without --run, or answer the run's own "
                                       "instruction")
        with store.lock_run(root):
            done = consume(self.workspace, engine, envelope, root, now=self.clock.now(),
                           max_write_refusals=driver_settings(engine.workers)
                           .max_write_refusals)
            if consumed is not None:  # before the progress of the advance it causes
                consumed(done.note)
            run = store.get_run(root)
            # Advance after a new answer, or to continue what a dead submit left: a run
            # left running, or a paused run holding an answer it has not taken up.
            if run is not None and not run.status.terminal and (
                    done.accepted or run.status.value == "running"
                    or answer_untaken(store, root)):
                await engine.proceed(root)
        status = status_of(store, self.workspace, root)
        if turn is not None and done.accepted:
            advisory = advisory_failures(store, turn)
            if advisory:
                status["advisory_failures"] = advisory
        return Submitted(note=done.note, accepted=done.accepted, status=status)

    # -- threads (the session runtime) ---------------------------------------------------

    @property
    def sessions(self) -> Sessions:
        """Threads and turns (:mod:`rein.engine.cases.sessions`): the use cases the app-server,
        ACP, the web console and the SDK reach through the Harness. The runtime is handed
        the store, the clock and the run use cases it calls (the engine's prepare and start:
        :attr:`starter`), never the Harness."""
        if self._sessions is None:
            from rein.engine.cases.sessions import RunCalls, Sessions
            from rein.engine.run.signed import signers_of

            starter = self.starter
            calls = RunCalls(
                prepare=starter.prepare, start=starter.start, resume=self.resume,
                cancel=self.cancel, answer=self.answer, check_executor=self.check_executor,
                via=lambda standing: self.via(standing=standing),
                signers=lambda: signers_of(self.config.data, self.workspace))
            self._sessions = Sessions(self.store, workspace=self.workspace,
                                      tiers=self.config.get("tiers") or {}, clock=self.clock,
                                      calls=calls, listen=self.listeners.append)
        return self._sessions

    # -- housekeeping --------------------------------------------------------------------

    async def prune(self, *, older_than: dt.timedelta | None = None,
                    statuses: Collection[str] = (), dry_run: bool = False,
                    now: dt.datetime | None = None) -> list[Pruned]:
        """Remove the ended top-level runs older than ``older_than`` (with one of
        ``statuses``, when given), each with its child runs; what a run that has not ended
        needs stays (:mod:`rein.engine.cases.prune`). Every selected run, the kept ones with why."""
        from rein.engine.cases.prune import prune

        return prune(self.store, now=now or self.clock.now(), older_than=older_than,
                     statuses=statuses, dry_run=dry_run, workspace=self.workspace)

    # -- events --------------------------------------------------------------------------

    def follow(self, log_id: str, after: int = 0, *, until_ended: bool = False
               ) -> AsyncIterator[Event]:
        """The events of a log (a run's, or a thread's or turn's own) after ``after``, then
        new ones as they commit (:func:`rein.engine.events.subscribe`, the one way every
        surface follows the log: one read per change for all its readers); with
        ``until_ended``, until the run ends."""
        from rein.engine import events

        return events.subscribe(self.store, log_id, after, until_ended=until_ended)

    @property
    def changes_seen(self) -> int:
        """How many changes to the store the follower of its event log has seen (any
        process's commits): what :meth:`next_change` waits past."""
        from rein.engine.events import EventLog

        return EventLog.of(self.store).follower.version

    async def next_change(self, seen: int, timeout: float) -> int:
        """:attr:`changes_seen` once it is past ``seen`` (something was committed, here or
        in another process), or after ``timeout`` seconds: a page that shows many runs
        waits on this instead of reading the store on a timer."""
        from rein.engine.events import EventLog

        return await EventLog.of(self.store).follower.next_change(seen, timeout)

    def wake(self, *_: object) -> None:
        """Another connection of this process committed (a web console's lanes): the
        follower of the event log looks now rather than at its next look."""
        from rein.engine.events import EventLog

        EventLog.of(self.store).follower.wake()

    async def subscribe(self, run_id: str, after: int = 0, *, follow: bool = False,
                        interval: float = 0.2, timeout: float | None = None
                        ) -> AsyncIterator[Event]:
        """The run's events after ``after``, in order; with ``follow``, new ones as they
        commit (:func:`rein.engine.events.subscribe`: at once for this store's commits, at
        the store's change number for others'; a store without one is read every
        ``interval`` seconds), until the run ends or ``timeout`` seconds pass."""
        import asyncio

        from rein.engine import events

        run = self.run(run_id)
        if not follow:
            for event in self.store.events(run.run_id, after=after):
                yield event
            return
        stream = events.subscribe(self.store, run.run_id, after, until_ended=True,
                                  poll_seconds=interval)
        try:
            async with asyncio.timeout(timeout):
                async for event in stream:
                    yield event
        except TimeoutError:
            return
        finally:
            await stream.aclose()


def answer_status(decision: ApprovalStatus | str) -> ApprovalStatus:
    """The queue's answer a decision word gives (:data:`rein.core.states.ANSWERS`); one
    already an answer is itself. APPROVAL006 for any other word (``accepted`` included:
    that is the state an answer leaves, not the word that gives it)."""
    from rein.core.states import ANSWERS, ApprovalStatus

    if isinstance(decision, ApprovalStatus):
        return decision
    status = ANSWERS.get(decision)
    if status is None:
        raise ConfigError(f"no decision {decision!r}: an answer is one of "
                          f"{', '.join(ANSWERS)}", code="APPROVAL006",
                          hint="answer accept, decline or cancel")
    return status


__all__ = ["KEPT", "Answered", "ApprovalRow", "Event", "Harness", "NodeRow", "RunRow", "Submitted",
           "ThreadRow", "ThreadTurnRow", "answer_status", "file_content", "kept_copy",
           "shown_files", "stale_files"]
