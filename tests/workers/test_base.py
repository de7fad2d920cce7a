"""The worker boundary's own helpers."""

from __future__ import annotations

from rein.workers.base import AttemptRequest, Routed


def bare(**kw: object) -> AttemptRequest:
    return AttemptRequest(run_id="r", node_id="n", attempt=1, kind="task", title="t", brief="b",
                          inputs={}, outputs=(), permissions=(), tools=(), workspace="/w",
                          tier="advanced", **kw)  # type: ignore[arg-type]


def test_served_by_keeps_the_routers_tiers_and_downgrade() -> None:
    chosen = Routed(requested_tier="advanced", effective_tier="standard", provider="router",
                    model="m", downgraded=True, reason="no advanced model configured")
    assert bare(routed=chosen).served_by("command", "cli") == Routed(
        requested_tier="advanced", effective_tier="standard", provider="command", model="cli",
        downgraded=True, reason="no advanced model configured")


def test_served_by_without_a_router_is_the_nodes_tier() -> None:
    assert bare().served_by("scripted", "s") == Routed(
        requested_tier="advanced", effective_tier="advanced", provider="scripted", model="s")
