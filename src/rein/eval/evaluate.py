"""An evaluation from start (or resume) to its results: what ``rein eval`` calls."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.errors import ConfigError, ReinError
from rein.eval import baseline as baseline_mod
from rein.eval import results as results_mod
from rein.eval.approval import Ask
from rein.eval.ledger import EVALS
from rein.eval.runner import Options, Say, resume, run, start

if TYPE_CHECKING:
    from rein.config import Config
    from rein.eval.configs import Configuration
    from rein.eval.lanes import DbosLanes
    from rein.eval.scenarios import Scenario
    from rein.eval.trial import Trial, TrialSpec


def evaluate(workspace: Path, paths: Sequence[Path], names: Sequence[str], *,
             configs_file: Path | None, options: Options, base: Config,
             env: Mapping[str, str], say: Say, resume_id: str | None = None,
             baseline: Mapping[str, Any] | None = None, approve: str | None = None,
             ask: Ask | None = None, store_url: str | None = None) -> dict[str, Any]:
    """Run (or resume) an evaluation and return its results (also written to its folder
    as ``result.json``). What the configurations run needs a person's approval first:
    recorded earlier, ``approve`` (the digest ``--approve`` names) or ``ask`` (a terminal).
    Its trials run in this process, or on DBOS lanes (``options.executor``; the queues'
    database: ``store_url`` or ``[store] url``)."""
    def comparable(scenarios: Sequence[Scenario], configs: Sequence[Configuration]) -> None:
        if baseline is not None:  # refused before any trial runs (EVAL011)
            baseline_mod.check([c.name for c in configs], [s.name for s in scenarios],
                               baseline)

    if resume_id is not None:
        ledger, loaded, options = resume(workspace, resume_id, base, approve=approve, ask=ask)
        comparable(loaded.scenarios, loaded.configs)
        lanes = _lanes(options, base, env, store_url)
    else:
        lanes = _lanes(options, base, env, store_url)  # refused before anything is written
        ledger, loaded = start(workspace, paths, names, configs_file=configs_file,
                               options=options, base=base, approve=approve, ask=ask,
                               check=comparable)
    ledger.acquire()
    try:
        say(f"evaluation {ledger.id} (resume it with `rein eval --resume {ledger.id}`)")
        remote = None
        if lanes is not None:
            from rein.eval.lanes import plan_digest

            plan = plan_digest(ledger.plan)
            approval = (ledger.plan.get("approval") or {}).get("digest")

            def remote(spec: TrialSpec) -> Trial:
                return lanes.run(spec, plan=plan, approval=approval)
        trials = run(ledger, loaded, options=options, base=base, env=env, say=say,
                     remote=remote)
        result = results_mod.build(ledger.plan, trials, loaded.scenarios, loaded.configs,
                                   alpha=options.alpha)
        result["folder"] = str(ledger.folder)
        if baseline is not None:
            result["baseline"] = baseline_mod.against_baseline(result, baseline,
                                                               alpha=options.alpha)
        ledger.finish(result)
        return result
    finally:
        if lanes is not None:
            lanes.close()
        ledger.release()


def serve_lanes(workspace: Path, *, store_url: str | None, lanes: int, name: str,
                env: Mapping[str, str], stop: threading.Event, say: Say) -> None:
    """Serve DBOS lanes for the evaluations of ``workspace`` until ``stop`` is set
    (``rein eval --serve``): the queues' database, the queue key and the extra are checked
    first (EVAL026, SCALE009, SCALE005)."""
    from rein.config import load_config

    _need_dbos()
    from rein.eval.lanes import postgres_url, serve
    from rein.executors.queue_key import load_key

    base = load_config(workspace)
    serve(workspace=workspace, base=base, url=postgres_url(store_url, base),
          key=load_key(base, env), name=name, concurrency=lanes, env=env, stop=stop, say=say)


def _need_dbos() -> None:
    from importlib.util import find_spec

    from rein.core.extras import install_hint

    if find_spec("dbos") is None:
        raise ConfigError("trials on DBOS lanes need the scale extra", code="SCALE005",
                          hint=install_hint("scale"))


def _lanes(options: Options, base: Config, env: Mapping[str, str], store_url: str | None
           ) -> DbosLanes | None:
    """The DBOS lanes of an evaluation that runs its trials there, checked before anything
    runs: the queues' database and the queue key (EVAL026, SCALE009, SCALE005)."""
    if options.executor != "dbos":
        return None
    _need_dbos()
    from rein.eval.lanes import DbosLanes, postgres_url
    from rein.executors.queue_key import load_key

    return DbosLanes(url=postgres_url(store_url, base), key=load_key(base, env))


def read_result(workspace: Path, given: str) -> dict[str, Any]:
    """A result to compare with: a ``result.json`` file, or an evaluation of this workspace
    by id (EVAL009 when it cannot be read)."""
    path = Path(given)
    if not path.is_file():
        path = workspace / EVALS / given / "result.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the baseline {given}: {exc}", code="EVAL009",
                          hint="give a result.json written by `rein eval` (or `rein eval "
                               "--json > result.json`), or the id of a finished evaluation "
                               "here") from None
    if not isinstance(data, dict) or not isinstance(data.get("configurations"), list) \
            or not isinstance(data.get("scenarios"), list):
        raise ConfigError(f"{given} is not a result of `rein eval`", code="EVAL009",
                          hint="it needs \"configurations\" and \"scenarios\"")
    return data


def finished_result(workspace: Path, evaluation: str) -> dict[str, Any]:
    """The results of a finished evaluation of ``workspace`` (``rein eval --show``): EVAL404
    when there is no such evaluation, EVAL014 while it has not finished."""
    from rein.eval.ledger import Ledger

    ledger = Ledger.open(workspace, evaluation)  # EVAL404 for an unknown id
    path = ledger.folder / "result.json"
    if not path.is_file():
        raise ReinError(f"evaluation {evaluation} has not finished: it has no results yet",
                        code="EVAL014", hint=f"continue it with `rein eval --resume "
                                             f"{evaluation}` (or wait for the process that "
                                             "runs it)")
    try:
        return read_result(workspace, str(path))
    except ConfigError as exc:
        raise ReinError(f"evaluation {evaluation}'s results cannot be read: {exc.message}",
                        code="EVAL015", hint=f"`rein eval --resume {evaluation}` writes them "
                                             "again from its journal (no trial runs again)"
                        ) from None


def failed(result: Mapping[str, Any]) -> bool:
    """Whether the evaluation should fail a CI job: the suite is invalid (the oracle
    missed a scenario, nop solved one) or the baseline gate failed."""
    if (result.get("validation") or {}).get("ok") is False:
        return True
    baseline = result.get("baseline")
    return baseline is not None and not baseline["passed"]


__all__ = ["evaluate", "failed", "finished_result", "read_result", "serve_lanes"]
