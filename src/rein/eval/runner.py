"""An evaluation, run: the plan, the lanes, each trial once.

:func:`start` checks everything that costs nothing (the scenarios, the configurations, the
overlays against the person's ``rein.toml``) before the evaluation's folder exists, then
writes the plan. :func:`resume` reopens an evaluation and refuses one whose scenarios or
configurations changed since it began. :func:`run` runs the trials the journal does not
hold yet in ``lanes`` threads, each trial on its own event loop and in its own workspace and
store, and records each one's start and end in the journal (:mod:`rein.eval.ledger`).

Trials are ordered round by round (trial 1 of every scenario under every configuration, then
trial 2...), so an evaluation stopped early still compares every configuration on the same
scenarios.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.core.frozen import Frozen
from rein.core.loops import run as run_loop
from rein.core.loops import within
from rein.errors import ConfigError, ReinError
from rein.eval.approval import Ask, Review, check_unchanged, require, review
from rein.eval.configs import (
    CONFIGS_FILE,
    Configuration,
    builtin,
    load_configurations,
    select,
)
from rein.eval.ledger import MAX_ATTEMPTS, Entry, Ledger, new_id
from rein.eval.scenarios import Scenario, find_scenarios
from rein.eval.trial import Trial, TrialSpec, blank

if TYPE_CHECKING:
    from rein.config import Config

Say = Callable[[str], None]


class Options(Frozen):
    trials: int = 1
    lanes: int = 1
    host: bool = False
    timeout: float = 900.0  # seconds per trial
    alpha: float = 0.05
    executor: str = "inprocess"  # where trials run: "inprocess" or "dbos" (rein.eval.lanes)


class Planned(Frozen):
    trial_id: str
    index: int
    scenario: Scenario
    configuration: Configuration


def configurations_for(paths: Sequence[Path], configs_file: Path | None
                       ) -> dict[str, Configuration]:
    """The configurations declared beside the suites (``eval.toml`` in a PATH folder or in
    a scenario's parent folder), or in ``configs_file``."""
    files = [configs_file] if configs_file is not None else []
    if configs_file is None:
        for path in paths:
            for candidate in (path / CONFIGS_FILE, path.parent / CONFIGS_FILE):
                if candidate.is_file() and candidate.resolve() not in files:
                    files.append(candidate.resolve())
                    break
    out: dict[str, Configuration] = {}
    for file in files:
        for name, config in load_configurations(file).items():
            if name in out and out[name].digest != config.digest:
                raise ConfigError(f"configuration {name!r} is declared differently in "
                                  f"{out[name].source} and {file}", code="EVAL005",
                                  hint="name them apart, or pass one file with --configs")
            out[name] = config
    return out


def check_configuration(config: Configuration, base: Config, scenario: Path) -> None:
    """Refuse, before anything runs, a configuration whose overlay rein would refuse in a
    run (a bad table) or that routes no tier (its trials would all wait for a driver).
    ``scenario``: a scenario folder to fill ``{scenario}`` with."""
    if config.builtin:
        return
    if config.worker == "command" and ({"system", "tools"} & set(config.definition)):
        raise ConfigError(f"configuration {config.name!r} overlays the system prompt or tool "
                          "descriptions, which its command worker's agent never reads",
                          code="EVAL005", hint="an agent CLI has its own prompts: change them "
                          "through its argv or its files, or route the tiers to a provider")
    from rein.config import with_layer
    from rein.engine.run.workers_setup import workers_from_config
    from rein.errors import LoadError

    layered = with_layer(base, config.for_scenario(scenario),
                         path=f"{config.source}#configurations.{config.name}")
    if not (config.overlay.get("tiers") or base.get("tiers")):
        raise ConfigError(f"configuration {config.name!r} routes no tier to a worker: its "
                          "trials would wait for a driver", code="EVAL006",
                          hint="give it [configurations.NAME.rein.tiers.standard] with a "
                               "provider and a model")
    try:
        workers_from_config(scenario, layered, env={})
    except LoadError:
        if "{scenario}" in str(config.overlay):
            return  # a file named per scenario is read when each trial starts (or fails it)
        raise


def plan_trials(scenarios: Sequence[Scenario], configs: Sequence[Configuration], n: int
                ) -> list[Planned]:
    return [Planned(trial_id=f"{s.name}__{c.name}__{i}", index=i, scenario=s, configuration=c)
            for i in range(1, n + 1) for s in scenarios for c in configs]


def check_trial_names(scenarios: Sequence[Scenario], configs: Sequence[Configuration]) -> None:
    """Refuse names whose trials would share a name (EVAL007): scenario ``s1`` under
    configuration ``x__a`` and scenario ``s1__x`` under ``a`` are both trial ``s1__x__a__N``,
    one journal entry and one folder for two trials."""
    seen: dict[str, Planned] = {}
    for p in plan_trials(scenarios, configs, 1):
        other = seen.setdefault(p.trial_id, p)
        if other is not p:
            raise ConfigError(
                f"scenario {p.scenario.name!r} under configuration {p.configuration.name!r} "
                f"and scenario {other.scenario.name!r} under {other.configuration.name!r} "
                f"are both trial {p.trial_id.rsplit('__', 1)[0]}__N", code="EVAL007",
                hint="rename one so that no name holds a double underscore (trials are "
                     "named SCENARIO__CONFIGURATION__N)")


class Loaded(Frozen):
    """What an evaluation runs: its scenarios and configurations, and the review of the code
    those configurations run (approved before any trial runs it)."""

    scenarios: list[Scenario]
    configs: list[Configuration]
    review: Review


Check = Callable[[Sequence[Scenario], Sequence[Configuration]], None]


def start(workspace: Path, paths: Sequence[Path], names: Sequence[str], *,
          configs_file: Path | None, options: Options, base: Config,
          approve: str | None = None, ask: Ask | None = None,
          check: Check | None = None) -> tuple[Ledger, Loaded]:
    """Check everything (with ``check`` too: what the caller needs of the scenarios and
    configurations), have what the configurations run approved, then write the plan."""
    scenarios = find_scenarios(paths)
    configs = select(names, configurations_for(paths, configs_file))
    for config in configs:
        check_configuration(config, base, scenarios[0].path)
    check_trial_names(scenarios, configs)
    if check is not None:
        check(scenarios, configs)
    found = review(configs, scenarios, base)
    approved = require(found, base, given=approve, ask=ask)
    evaluation = new_id()
    plan = {"evaluation": evaluation,
            "created_at": dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z"),
            "paths": [str(p.resolve()) for p in paths],
            "configs_file": str(configs_file.resolve()) if configs_file else None,
            "scenarios": [s.summary() for s in scenarios],
            "configurations": [{**c.summary(), "definition": c.definition} for c in configs],
            "approval": approved,
            "options": {"trials": options.trials, "lanes": options.lanes, "host": options.host,
                        "timeout": options.timeout, "alpha": options.alpha,
                        "executor": options.executor}}
    return Ledger.create(workspace, plan), Loaded(scenarios=scenarios, configs=configs,
                                                  review=found)


def reload(plan: Mapping[str, Any], evaluation: str, base: Config) -> Loaded:
    """The scenarios and configurations of a plan as they are now, refused (EVAL010) when
    any of them, or what they run, changed since the evaluation began."""
    paths = [Path(p) for p in plan["paths"]]
    configs_file = Path(plan["configs_file"]) if plan.get("configs_file") else None
    scenarios = find_scenarios(paths)
    recorded = {s["name"]: s["digest"] for s in plan["scenarios"]}
    now = {s.name: s for s in scenarios}
    for name, digest in recorded.items():
        if name not in now or now[name].digest != digest:
            raise ConfigError(f"scenario {name!r} changed since evaluation {evaluation} began",
                              code="EVAL010", hint="restore it, or start a new evaluation")
    declared = configurations_for(paths, configs_file)
    configs = []
    for entry in plan["configurations"]:
        config = builtin(entry["name"]) if entry["source"] == "built in" \
            else declared.get(entry["name"])
        if config is None or config.digest != entry["digest"]:
            raise ConfigError(f"configuration {entry['name']!r} changed since evaluation "
                              f"{evaluation} began", code="EVAL010",
                              hint="restore it, or start a new evaluation")
        configs.append(config)
    kept = [now[n] for n in recorded]
    found = review(configs, kept, base)
    check_unchanged(found, plan.get("approval"), evaluation)
    return Loaded(scenarios=kept, configs=configs, review=found)


def resume(workspace: Path, evaluation: str, base: Config, *, approve: str | None = None,
           ask: Ask | None = None) -> tuple[Ledger, Loaded, Options]:
    """Reopen an evaluation; what its configurations run must still be approved."""
    ledger = Ledger.open(workspace, evaluation)
    loaded = reload(ledger.plan, evaluation, base)
    require(loaded.review, base, given=approve, ask=ask)
    return ledger, loaded, Options(**ledger.plan["options"])


# Runs one trial elsewhere (rein.eval.lanes.DbosLanes.run): its record.
Remote = Callable[[TrialSpec], Trial]


def spec_for(ledger: Ledger, loaded: Loaded, p: Planned, attempt: int, *, options: Options,
             base: Config, env: Mapping[str, str]) -> TrialSpec:
    """What one attempt of a planned trial runs with, wherever it runs."""
    return TrialSpec(evaluation=ledger.id, trial_id=p.trial_id, index=p.index,
                     attempt=attempt, scenario=p.scenario, configuration=p.configuration,
                     root=ledger.trials_root / p.trial_id / f"a{attempt}",
                     trials_root=ledger.trials_root, base_config=base, host=options.host,
                     timeout=options.timeout, env=env,
                     pins=loaded.review.pins_for(p.configuration.name, p.scenario.name))


def run(ledger: Ledger, loaded: Loaded, *, options: Options, base: Config,
        env: Mapping[str, str], say: Say, remote: Remote | None = None) -> list[Trial]:
    """Every planned trial's result: adopted from the journal, or run now (in this
    process, or by ``remote``: on a DBOS lane)."""
    entries = ledger.entries()
    planned = plan_trials(loaded.scenarios, loaded.configs, options.trials)
    results: dict[str, Trial] = {}
    todo: list[tuple[Planned, int]] = []
    for p in planned:
        entry = entries.get(p.trial_id, Entry())
        if entry.result is not None:
            results[p.trial_id] = entry.result
        elif entry.killed >= MAX_ATTEMPTS:
            lost = _interrupted(p, entry)
            ledger.finished(lost)
            results[p.trial_id] = lost
            say(f"{p.trial_id}: interrupted twice; reported, not run again")
        else:
            todo.append((p, entry.started + 1))
    if todo:
        say(f"evaluation {ledger.id}: {len(todo)} trial(s) to run"
            + (f", {len(results)} already recorded" if results else "")
            + f" in {min(options.lanes, len(todo))} lane(s)")
    lock = threading.Lock()
    running = RunningTrials()

    def one(item: tuple[Planned, int]) -> Trial | None:
        p, attempt = item
        spec = spec_for(ledger, loaded, p, attempt, options=options, base=base, env=env)
        ledger.started(p.trial_id, attempt, spec.root)
        if remote is not None:
            trial = remote(spec)  # the worker makes the trial's folder
        else:
            spec.root.mkdir(parents=True)
            try:
                trial = run_loop(running.guard(execute(spec)))
            except asyncio.CancelledError:  # Ctrl-C: no result; it runs again on resume
                ledger.stopped(p.trial_id, attempt)
                return None
        ledger.finished(trial)
        with lock:
            say(_line(trial))
        return trial

    pool = ThreadPoolExecutor(max_workers=max(1, options.lanes),
                              thread_name_prefix="rein-eval-lane")
    try:
        for trial in pool.map(one, todo):
            if trial is not None:
                results[trial.trial] = trial
    except KeyboardInterrupt:
        # Ctrl-C: stop the trials running here now rather than wait for them (up to
        # --timeout each); the trials not begun are not begun.
        stopped = running.stop()
        if stopped:
            say(f"stopping: {stopped} running trial(s) stopped before their end, not "
                f"recorded; `rein eval --resume {ledger.id}` runs them again")
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [results[p.trial_id] for p in planned]


class RunningTrials:
    """The trials running in this process's lanes, each its task on its own event loop, so
    that Ctrl-C in the main thread can stop them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = set()
        self._stopping = False

    async def guard(self, call: Coroutine[Any, Any, Trial]) -> Trial:
        """``call``, stopped (CancelledError) when :meth:`stop` is called, before or after
        it begins."""
        task = asyncio.current_task()
        assert task is not None
        me = (asyncio.get_running_loop(), task)
        with self._lock:
            if self._stopping:
                call.close()
                raise asyncio.CancelledError
            self._tasks.add(me)
        try:
            trial = await call
        finally:
            with self._lock:
                self._tasks.discard(me)
        if task.cancelling():  # stopped, though what it ran made a result of the cancel
            raise asyncio.CancelledError
        return trial

    def stop(self) -> int:
        """Stop every running trial and any that begins from now on: how many were
        running."""
        with self._lock:
            self._stopping = True
            for loop, task in self._tasks:
                loop.call_soon_threadsafe(task.cancel)
            return len(self._tasks)


async def execute(spec: TrialSpec) -> Trial:
    """One trial to its record; whatever happens inside stays inside: a crash or a timeout
    is this trial's result, never the end of the evaluation."""
    from rein.eval.atif import script_trajectory

    began = time.monotonic()
    if spec.configuration.worker == "oracle" and spec.scenario.solution is None:
        return blank(spec, "no_solution", "the scenario declares no reference solution")
    try:
        trial = await within(_dispatch(spec), spec.timeout)
    except TimeoutError:
        trial = blank(spec, "failed", f"the trial ran past its {spec.timeout:g} s (--timeout)")
        trial.failures = [{"node": None, "criterion": "time", "kind": "budget",
                           "description": "the trial ends within --timeout",
                           "evidence": trial.reason}]
    except ReinError as exc:
        trial = blank(spec, "error", f"{exc.code}: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - one broken trial must not end the evaluation
        (spec.root / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        trial = blank(spec, "error", f"rein failed in this trial: {type(exc).__name__}: {exc} "
                                     f"(traceback in {spec.root / 'error.txt'})")
    # Rounded as the journal keeps it, so a result rebuilt from the journal is the same.
    trial.wall_seconds = round(time.monotonic() - began, 3)
    trajectory = spec.root / "agent" / "trajectory.json"
    if not trajectory.exists() and trial.graded:
        import json

        text = spec.scenario.task.instruction if spec.scenario.task else \
            spec.scenario.description or spec.scenario.name
        oracle = spec.root / "logs" / "agent" / "oracle.txt"
        output = oracle.read_text(errors="replace")[-4000:] if oracle.is_file() else ""
        trajectory.parent.mkdir(parents=True, exist_ok=True)
        trajectory.write_text(json.dumps(script_trajectory(
            trial=spec.trial_id, configuration=spec.configuration.name, instruction=text,
            output=output), indent=2), encoding="utf-8")
    return trial


async def _dispatch(spec: TrialSpec) -> Trial:
    match spec.scenario.kind:
        case "graph":
            from rein.eval.trial_runs import graph_trial

            return await graph_trial(spec)
        case "brief":
            from rein.eval.trial_runs import brief_trial

            return await brief_trial(spec)
        case "harbor":
            from rein.eval.trial_harbor import harbor_trial

            return await harbor_trial(spec)


def _interrupted(p: Planned, entry: Entry) -> Trial:
    return Trial(trial=p.trial_id, scenario=p.scenario.name,
                 configuration=p.configuration.name, index=p.index, attempt=entry.started,
                 status="interrupted", reason=f"interrupted in {entry.killed} of its "
                 f"{entry.started} attempts (the evaluation was killed while it ran); not "
                 "run again",
                 folder=entry.folders[-1] if entry.folders else None)


def _line(trial: Trial) -> str:
    mark = {"solved": "solved", "failed": "FAILED", "error": "ERROR"}.get(trial.status,
                                                                         trial.status)
    rerun = " (rerun)" if trial.attempt > 1 else ""
    why = f": {trial.reason.splitlines()[0][:120]}" if trial.reason and not trial.solved else ""
    return f"{trial.trial}{rerun}: {mark} in {trial.wall_seconds:.1f}s{why}"


__all__ = ["Check", "Loaded", "Options", "Planned", "Remote", "RunningTrials",
           "check_configuration", "check_trial_names", "configurations_for", "execute",
           "plan_trials", "reload", "resume", "run", "spec_for", "start"]
