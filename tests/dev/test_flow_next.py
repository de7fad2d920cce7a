"""When one run of the flow succeeds (the plan once its graph is approved, the features
after the last one), `rein next` says that `rein dev` goes on, not only that a run is done."""

from __future__ import annotations

from devflow_support import Cli, approve
from scripted import ScriptedDriver

from rein.core.flows import continued_by
from rein.dev.paths import FEATURES_ID, PLANNING_ID
from rein.spec.paths import GRAPH_ID


def test_after_the_plan_is_approved_next_says_to_run_rein_dev(driver: ScriptedDriver,
                                                               cli: Cli) -> None:
    _code, where = driver.dev()
    for _ in range(6):  # the plan is refused once, then accepted: it waits for a person
        pending = where["instruction"]
        if pending.get("for") == "approval":
            break
        _code, where = driver.submit(driver.work(pending))
        where = {"instruction": where}
    else:
        raise AssertionError(f"the plan never reached its approval: {where}")
    approve(cli)
    code, out = cli("next")
    assert code == 0
    assert out.splitlines()[0].endswith(
        "succeeded; it is one run of the development flow: run `rein dev` for what comes "
        "next (or that the flow is done)")
    code, status = cli.json("next")
    assert (status["status"], status["graph_id"], status["next"]) == \
        ("done", PLANNING_ID, "rein dev")


def test_every_flow_graph_names_its_command() -> None:
    assert continued_by(PLANNING_ID) == continued_by(FEATURES_ID) == ("development", "rein dev")
    assert continued_by(GRAPH_ID) == ("specification", "rein spec")
    assert continued_by("rein/examples/driver-demo") is None
