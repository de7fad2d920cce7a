"""What a profile session proposes when it ends: a state delta, never a write to the profile.

The session's measured facts (turns, tool calls, cost, outcome, the model that served it)
and what it noted with verified evidence become a proposed state delta
(:func:`rein.profiles.generate.draft_delta`), written under ``.rein/profiles/deltas/`` for a
person to apply with ``rein profile apply``. Every secret rein knows is redacted from it: the
node's own, and those of rein's environment (provider keys), because learned state may quote
a value the node was never handed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from rein.core.failures import FailureClass
from rein.formats.redaction import known_secrets
from rein.profiles.generate import SessionInfo, draft_delta
from rein.profiles.resolve import ResolvedProfile
from rein.workers.base import AttemptRequest, AttemptResult
from rein.workers.session_tools import Learning

DELTAS_DIR = Path(".rein") / "profiles" / "deltas"

Outcome = Literal["completed", "timeout", "error"]
_OUTCOMES: Mapping[FailureClass | None, Outcome] = {
    None: "completed", FailureClass.TIMEOUT: "timeout"}


def write_delta(resolved: ResolvedProfile, request: AttemptRequest, result: AttemptResult, *,
                workspace: Path, started: datetime, ended: datetime, learning: Learning
                ) -> tuple[Path, dict[str, Any], tuple[str, ...]]:
    """Draft the session's delta and write it: ``(path, delta, what was skipped and why)``."""
    u = result.usage
    info = SessionInfo(
        id=f"{request.run_id}/{request.node_id}#{request.attempt}", started_at=started,
        ended_at=ended, model_used=(f"{result.routed.provider}/{result.routed.model}"
                                    if result.routed else None),
        turns=u.agent_steps, tool_calls=u.tool_calls, cost_usd=u.cost_usd,
        outcome=_OUTCOMES.get(result.failure, "error"))
    summary = (f"node {request.node_id} attempt {request.attempt}: "
               + (result.message or ("succeeded" if result.failure is None
                                     else result.failure.value)))
    secrets = {name or "": value for value, name in (
        known_secrets(os.environ) | known_secrets(request.env)).pairs}
    secrets.update({n: request.env[n] for n in request.secret_names if request.env.get(n)})
    draft = draft_delta(resolved, session=info, summary=summary, secrets=secrets,
                        learned=learning.learned, threads=learning.threads,
                        proposals=learning.proposals, now=ended)
    delta, skipped = draft.delta, (*learning.skipped, *draft.skipped)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node_id)
    path = workspace / DELTAS_DIR / request.run_id / f"{safe}-{request.attempt}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(delta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path, delta, skipped
