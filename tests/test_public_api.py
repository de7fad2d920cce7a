"""The public front of the package is small on purpose; this pins it."""

import rein


def test_exported_members() -> None:
    assert rein.__all__ == sorted(rein.__all__)
    assert rein.__all__ == ["ExitCode", "Finding", "Harness", "Location", "ReinError",
                            "__version__"]
    for name in rein.__all__:
        assert hasattr(rein, name)


def test_the_harness_holds_threads() -> None:
    """The SDK's front: threads from the one service, not a second one."""
    from rein.protocol.sdk import Thread, Turn, TurnResult

    assert {"start_thread", "thread", "sessions"} <= set(dir(rein.Harness))
    assert [m for m in ("run", "run_sync", "pending_turn", "turns", "fork")
            if hasattr(Thread, m)] == ["run", "run_sync", "pending_turn", "turns", "fork"]
    assert [m for m in ("stream", "answer", "interrupt", "wait", "result")
            if hasattr(Turn, m)] == ["stream", "answer", "interrupt", "wait", "result"]
    assert list(TurnResult.__fields__) == ["turn_id", "status", "final_response", "items",
                                           "error", "usage"]
