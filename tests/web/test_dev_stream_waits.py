"""The dev page's stream reads the flow again when the store changes, not on a timer: on an
event loop whose clock moves only when the test moves it (a test double), the stream sends
the flow the moment the console's watcher sees another process commit it, after a small
fraction of the old one-second poll, and reads the flow exactly once per change."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rein.web import pages_dev
from tests.web.conftest import Console, make_console
from tests.web.dev_env import driver, repository, step


class ManualClockLoopDouble(asyncio.SelectorEventLoop):
    """An event loop whose ``time()`` is what the test sets: timers fire only when the
    test moves the clock past them."""

    now = 0.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = repository(tmp_path / "project")
    monkeypatch.chdir(root)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    for name in ("REIN_DEV_TARGET", "REIN_DEV_VERIFY", "REIN_CONTEXT_USAGE_JSON"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def console(repo: Path) -> Iterator[Console]:
    yield from make_console(repo)


def test_a_commit_updates_the_dev_stream_without_a_poll(
        console: Console, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = pages_dev.read

    def counted(h: Any) -> Any:
        reads.append(1)
        return real(h)

    monkeypatch.setattr(pages_dev, "read", counted)
    loop = ManualClockLoopDouble()

    async def spin(until: Any, *, ticks: int, step_seconds: float) -> bool:
        """Move the clock ``ticks`` times by ``step_seconds``, letting the loop run
        between; whether ``until`` was done by then."""
        for _ in range(ticks):
            for _ in range(50):  # a bounded number of loop turns per tick, no real time
                if until.done():
                    return True
                await asyncio.sleep(0)
            loop.now += step_seconds
        return bool(until.done())

    async def scenario() -> tuple[str, str]:
        shown = console.client.app.state.console
        response: Any = pages_dev.flow_stream(shown, lambda: pages_dev.dev_section(shown))
        body = response.body_iterator
        following: Any = None
        try:
            first = str(await body.__anext__())
            assert reads == [1]
            following = asyncio.ensure_future(body.__anext__())
            # Nothing committed: half a second of the clock, in the watcher's 10 ms steps,
            # reads the flow no more (the old stream read it again every second).
            assert not await spin(following, ticks=50, step_seconds=0.01)
            assert reads == [1]
            step(driver(repo))  # `rein dev`, another store connection, starts the flow
            # The watcher sees the commit at its next look; the stream reads and sends.
            assert await spin(following, ticks=5, step_seconds=0.01)
            assert loop.now < 0.6  # well short of the one-second poll
            assert len(reads) == 2
            return first, str(following.result())
        finally:
            if following is not None and not following.done():
                following.cancel()
                await asyncio.gather(following, return_exceptions=True)
            await body.aclose()

    try:
        first, after = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert "no development flow" in first
    assert after.startswith("event: runs\ndata: ") and "data-stop='waiting'" in after
