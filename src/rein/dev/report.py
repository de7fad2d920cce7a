"""`rein dev report`: what the development flow cost, per command, feature, turn and model.

The flow's two runs (planning, features) are one report of :mod:`rein.engine.cases.usage_report`:
steps are the invocations of the driver-facing commands rein recorded (every one counted),
protocol errors every refusal among them (the agent's apart from rein's own), times split
into the agent's, a person's, rein's verification and the rest, and tokens and cost read
from the agent's own records, attributed by turn token (else what the agent reported of
itself, labelled so; else unknown, never zero). Each feature's row adds rein's attempts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rein.dev.stops import features_of
from rein.engine.service import Harness


def stages(flow: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The flow's runs, in order: ``(stage, run id)``."""
    out = [("planning", str(flow["planning_run"]))]
    if flow.get("features_run"):
        out.append(("features", str(flow["features_run"])))
    return out


def build(harness: Harness, flow: Mapping[str, Any], places: Iterable[Path] = ()
          ) -> dict[str, Any]:
    from rein.engine.cases.usage_report import build as report
    from rein.engine.cases.usage_report import configured

    more, prices = configured(harness.config)
    data = report(harness.store, harness.workspace, stages(flow),
                  features=features_of(harness, flow), places=[*places, *more], prices=prices)
    return {"plan_id": flow["plan_id"], **data}


__all__ = ["build", "stages"]
