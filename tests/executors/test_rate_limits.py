"""Rate limits per provider: ``[executor.rate_limits]`` gives a provider queues of its own,
held by DBOS's limiter across every worker; a malformed table is refused with SCALE006."""

from __future__ import annotations

from pathlib import Path

import pytest

from rein.errors import ConfigError
from tests.executors.cluster import Cluster

pytestmark = pytest.mark.timeout(900)


def test_a_malformed_rate_limit_is_refused_with_its_code() -> None:
    from rein.executors.names import rate_limits

    assert rate_limits({"rate_limits": {"openai": {"limit": 5, "period": 60}}}) == {
        "openai": {"limit": 5, "period": 60.0}}
    for bad in ({"openai": {"limit": 5}}, {"openai": {"limit": 0, "period": 60}},
                {"openai": 5}, "openai", {"a~b": {"limit": 1, "period": 1}}):
        with pytest.raises(ConfigError) as exc:
            rate_limits({"rate_limits": bad})
        assert exc.value.code == "SCALE006"


def test_a_provider_s_attempts_start_no_faster_than_its_limit(tmp_path: Path,
                                                              db_url: str) -> None:
    c = Cluster(tmp_path / "cluster", db_url, delay=0.05)
    (c.ws / "rein.toml").write_text(
        "[executor.rate_limits]\nscripted = { limit = 3, period = 3600 }\n")
    try:
        c.worker("w1")
        c.workers_ready("w1")
        path, digest = c.graph(items=6, width=6)
        c.rein("run", path, "--approve", digest, "--json", wait=False, log="coordinator.log")

        def states() -> dict[str, int]:
            rows = c.query("SELECT status, count(*) FROM dbos.workflow_status "
                           "WHERE name = 'rein_attempt' GROUP BY status")
            return {str(s): int(n) for s, n in rows}

        c.wait_for("three attempts done, three queued",
                   lambda: states() == {"SUCCESS": 3, "ENQUEUED": 3})
        (mark,) = c.query("SELECT beat_at FROM rein_executors WHERE executor_id = 'w1'")
        # Three more heartbeats of the worker: some 60 looks at its queues (every 50 ms),
        # any of which would have started an attempt were it not for the limit.
        c.wait_for("three heartbeats", lambda: bool(c.query(
            "SELECT 1 FROM rein_executors WHERE executor_id = 'w1' "
            "AND beat_at >= %s + interval '3 seconds'", mark[0])))
        assert states() == {"SUCCESS": 3, "ENQUEUED": 3}
        queues = c.query("SELECT DISTINCT queue_name FROM dbos.workflow_status "
                         "WHERE name = 'rein_attempt'")
    finally:
        c.stop()
    assert len(queues) == 1 and str(queues[0][0]).endswith("~scripted")
