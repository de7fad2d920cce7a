"""What the coordinator and the workers of the DBOS executor agree on: the application,
the workflow names and version, the queue names, and ``[executor.rate_limits]``.

No DBOS import here: the settings are checked (and refused with a code) before anything
slow is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.errors import ConfigError

APP_NAME = "rein"
# The workflows' contract: coordinators and workers of one version only see each other's.
# 2: an attempt is one workflow with no step; command criteria are workflows of their own.
# 3: jobs and answers are JSON text signed with the queue key.
APP_VERSION = "rein-attempt-3"
WORKFLOW = "rein_attempt"
CHECK_WORKFLOW = "rein_check"
# How often a worker's queue threads wake (DBOS's default is 1 s): a wake costs no
# statement unless the queue may hold work (rein.executors.polling).
POLL_SECONDS = 0.02


def answer_label(workflow: str) -> str:
    """What the answer to a job of ``workflow`` is signed as (never as a job)."""
    return f"{workflow}/answer"


def system_url(url: str) -> str:
    """The store URL as DBOS wants it (``postgresql://``)."""
    return "postgresql://" + url.split("://", 1)[1] if url.startswith("postgres://") else url


def provider_queue(queue: str, provider: str) -> str:
    """The queue of ``queue``'s attempts served by a rate-limited ``provider``."""
    return f"{queue}~{provider}"


def rate_limits(settings: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``[executor.rate_limits]``: ``{provider: {"limit": n, "period": seconds}}``.

    Each provider named there gets queues of its own, which DBOS's limiter holds to at most
    ``limit`` attempts started per ``period`` seconds across every worker; attempts of
    other providers are not slowed by it.
    """
    table = settings.get("rate_limits") or {}
    if not isinstance(table, Mapping):
        raise ConfigError("[executor.rate_limits] must be a table of providers",
                          code="SCALE006",
                          hint="[executor.rate_limits]\nopenai = { limit = 50, period = 60 }")
    out: dict[str, dict[str, float]] = {}
    for provider, limit in table.items():
        ok = (isinstance(limit, Mapping) and set(limit) == {"limit", "period"}
              and all(isinstance(limit[k], (int, float)) and not isinstance(limit[k], bool)
                      and limit[k] > 0 for k in ("limit", "period")))
        if not ok or "~" in str(provider) or "@" in str(provider):
            raise ConfigError(
                f"[executor.rate_limits] {provider!r} must be {{ limit = N, period = SECONDS }}"
                " with both positive", code="SCALE006",
                hint=f"{provider} = {{ limit = 50, period = 60 }}")
        out[str(provider)] = {"limit": int(limit["limit"]), "period": float(limit["period"])}
    return out


__all__ = ["APP_NAME", "APP_VERSION", "CHECK_WORKFLOW", "POLL_SECONDS", "WORKFLOW",
           "answer_label", "provider_queue", "rate_limits", "system_url"]
