"""An escalation rein has no channel for is AGS's RT015 (a human interaction that cannot be
presented), a warning, and the node goes on down its ladder; not rein's catch-all RUN000."""

from __future__ import annotations

from pathlib import Path

import pytest

from rein.core.states import RunStatus
from tests.scenarios.build import Run, graph, task


@pytest.mark.parametrize("to", ["supervisor", "external"])
def test_an_escalation_without_a_channel_is_rt015_and_the_node_fails(
        tmp_path: Path, to: str) -> None:
    data = graph({"a": task("a", failure={"on_exhausted": "escalate",
                                          "escalation": {"to": to}})}, ["a"])
    run = Run(tmp_path, data, {"a": [{"failure": "tool_error", "message": "no"}]})
    assert run.start().status is RunStatus.FAILED
    found = [(d["code"], d["severity"], d["message"]) for d in run.record()["diagnostics"]]
    message = (f"node a: escalation to {to!r} cannot be presented: rein has no such "
               "channel; the node goes on down its failure ladder")
    assert ("RT015", "warning", message) in found
    assert "RUN000" not in [code for code, _, _ in found]
