"""Where a node attempt runs: in this process (the default) or on a queue other machines take.

The engine stays the authority over the graph: readiness, criteria, the failure ladder,
budgets and the record are decided here whatever the executor. What an executor decides is
only where a worker call happens. :func:`executor_for` reads ``[executor]`` of the merged
``rein.toml`` (or ``REIN_EXECUTOR``); the in-process executor hands the run's workers back
unchanged, and the DBOS one (:mod:`rein.executors.dbos`, imported only when chosen)
wraps each so its attempts cross a durable queue as JSON, signed with the queue key
(:mod:`rein.executors.queue_key`) that coordinators and workers hold outside the
database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from rein.errors import ConfigError
from rein.workers.base import Worker

KINDS = ("in_process", "dbos")


class AttemptExecutor(Protocol):
    """Binds the run's workers to where their attempts run."""

    def place(self, workers: tuple[Worker, ...]) -> tuple[Worker, ...]:
        """The workers a run uses: the same, or stand-ins that run them elsewhere."""
        ...


class InProcess:
    """Today's behaviour: each attempt runs in the process that runs the graph."""

    def place(self, workers: tuple[Worker, ...]) -> tuple[Worker, ...]:
        return workers


IN_PROCESS = InProcess()


def executor_settings(config: Any, env: Mapping[str, str]) -> dict[str, Any]:
    """``[executor]`` as a dict, ``REIN_EXECUTOR`` overriding its ``kind``."""
    section = config.get("executor") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("[executor] must be a table", code="SCALE001",
                          hint='write kind = "dbos" under [executor]')
    settings = dict(section)
    if env.get("REIN_EXECUTOR"):
        settings["kind"] = env["REIN_EXECUTOR"]
    kind = str(settings.get("kind", "in_process")).replace("-", "_")
    if kind not in KINDS:
        raise ConfigError(f"[executor] kind {kind!r} is not one of {', '.join(KINDS)}",
                          code="SCALE001", hint='kind = "dbos" or kind = "in_process"')
    settings["kind"] = kind
    return settings


def executor_for(config: Any, env: Mapping[str, str], store: Any
                 ) -> AttemptExecutor:
    """The executor ``[executor]`` names; DBOS needs the PostgreSQL store its queues live in."""
    settings = executor_settings(config, env)
    if settings["kind"] == "in_process":
        return IN_PROCESS
    url = settings.get("url") or getattr(store, "url", None)
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError("the dbos executor needs a PostgreSQL store",
                          code="SCALE002",
                          hint="run with --store postgresql://... or set [store] url")
    from rein.executors.queue_key import load_key

    key = load_key(config, env)  # SCALE009 before DBOS is imported
    executor: AttemptExecutor = load_dbos().DbosExecutor(url=url, settings=settings, key=key,
                                                         store=store)
    return executor


def load_dbos(part: str = "dbos") -> Any:
    """The DBOS executor's coordinator module (``part="serving"``: its worker side), or
    SCALE005 saying how to install it."""
    import importlib

    from rein.core.extras import install_hint

    try:
        return importlib.import_module(f"rein.executors.{part}")
    except ImportError as exc:
        raise ConfigError(f"the dbos executor needs the scale extra ({exc})", code="SCALE005",
                          hint=install_hint("scale")) from exc


__all__ = ["IN_PROCESS", "AttemptExecutor", "InProcess", "executor_for", "executor_settings",
           "load_dbos"]
