"""The console's lanes: the jobs of one lane run one at a time, in the order given, and a
job that fails does not hold up the next. The jobs here are plain coroutines on a stand-in
for the lane's Harness (named so: the lanes only hand it to the job)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the web extra (Starlette) is not installed")

from rein.web.steer import Steering


class _StandIn:
    """What a lane opens instead of a Harness: the jobs below use nothing of it."""

    def close(self) -> None:
        pass


def _steering() -> Steering:
    return Steering(lambda listeners: _StandIn(), lanes=2)  # type: ignore[arg-type,return-value]


def test_the_jobs_of_one_run_run_one_after_another_in_order() -> None:
    steering = _steering()
    seen: list[str] = []

    async def long(h: Any) -> str:
        seen.append("first starts")
        for _ in range(5):  # turns of the lane's loop where a second job could cut in
            await asyncio.sleep(0)
        seen.append("first ends")
        return "first"

    async def short(h: Any) -> str:
        seen.append("second")
        return "second"

    try:
        one = steering._submit(long, run_id="run-1")
        two = steering._submit(short, run_id="run-1")
        assert (one.result(60), two.result(60)) == ("first", "second")
        assert seen == ["first starts", "first ends", "second"]
    finally:
        steering.close()


def test_a_job_that_fails_hands_back_its_error_and_the_next_one_runs() -> None:
    steering = _steering()

    async def fails(h: Any) -> None:
        raise RuntimeError("refused")

    def fails_at_once(h: Any) -> Any:  # before there is a coroutine to run
        raise ValueError("no such call")

    async def after(h: Any) -> str:
        return "ran"

    try:
        first = steering._submit(fails, run_id="run-1")
        at_once = steering._submit(fails_at_once, run_id="run-1")
        last = steering._submit(after, run_id="run-1")
        with pytest.raises(RuntimeError, match="refused"):
            first.result(60)
        with pytest.raises(ValueError, match="no such call"):
            at_once.result(60)
        assert last.result(60) == "ran"
        assert steering.idle(60)
    finally:
        steering.close()
