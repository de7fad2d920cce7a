"""Waits with a time limit never lose a cancel (``rein.core.loops.within``)."""

from __future__ import annotations

import asyncio

import pytest

from rein.core.loops import within


@pytest.mark.parametrize("ready", ["future", "coroutine"])
def test_a_cancel_that_comes_as_the_wait_completes_is_never_lost(ready: str) -> None:
    # The awaited thing completes and the waiting task is cancelled in the same turn of the
    # loop (an interrupt as a judge answers, a command exits, a terminal closes). The task
    # must stop: Python 3.11's asyncio.wait_for returns the result instead, and the run
    # went on as if it had not been interrupted.
    async def main() -> str:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()

        async def answer() -> str:
            return await done

        waiting = asyncio.ensure_future(within(done if ready == "future" else answer(), 30))
        await asyncio.sleep(0)  # the task waits now
        done.set_result("the answer")
        waiting.cancel()
        try:
            return await waiting
        except asyncio.CancelledError:
            return "cancelled"

    assert asyncio.run(main()) == "cancelled"


def test_within_times_out_and_returns_what_it_awaited() -> None:
    async def main() -> tuple[str, bool]:
        got = await within(asyncio.sleep(0, result="now"), 30)
        try:
            await within(asyncio.sleep(30), 0.01)
        except TimeoutError:
            return got, True
        return got, False

    assert asyncio.run(main()) == ("now", True)


def test_rein_waits_with_a_limit_only_through_within() -> None:
    # A new asyncio.wait_for would bring the lost cancel back.
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "rein"
    found = [f"{p.relative_to(src)}:{n}" for p in sorted(src.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "wait_for(" in line and "asyncio.wait_for" in line
             and not line.lstrip().startswith("#") and "``" not in line]
    assert found == []
