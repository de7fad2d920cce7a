"""axe-core over every console page in real Chromium: no critical and no serious violation.

axe-core is installed from npm by ``scripts/axe.sh`` (pinned, into ``.venv/axe``); without
it, or without Chromium, these tests skip and say why.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not

ROOT = Path(__file__).resolve().parents[2]
AXE = Path(os.environ.get(
    "REIN_AXE", ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"))
NODE = 'svg.dag g.node[data-node="{}"][data-status="{}"]'
WAIT = 30_000  # ms: an upper bound on waiting, not a pause


def _why_not() -> str | None:
    if (reason := why_not()) is not None:
        return reason
    if not AXE.resolve().is_file():
        return "axe-core is not installed (bash scripts/axe.sh)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))

PAGES = ("/", "/approvals", "/plans", "/plan?path=g.agraph.yaml", "/threads", "/evals",
         "/spec", "/dev",
         # the states added since: a text parameter's textarea, labelled branches, a runs
         # list paged and one refusing its filter
         "/plan?path=p.agraph.yaml", "/plan?path=release-train.agraph.yaml", "/?n=1",
         "/?since=yesterday")


def violations(page: Any) -> list[str]:
    """axe's critical and serious findings on the page as it is: rule, impact, where."""
    page.add_script_tag(path=str(AXE.resolve()))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [f"{v['impact']} {v['id']}: {v['help']} at "
            + json.dumps([n["target"] for n in v["nodes"]][:5])
            for v in found if v["impact"] in ("critical", "serious")]


def test_every_page_has_no_critical_or_serious_violation(browser: Any, workspace: Path) -> None:
    import shutil

    import rein
    from tests.web.conftest import write_graph
    from tests.web.test_plan_params import PARAMS

    write_graph(workspace, "p.agraph.yaml", PARAMS)
    shutil.copy(Path(rein.__file__).parent / "examples" / "release-train.agraph.yaml",
                workspace)
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        for _ in range(2):  # two runs: the list has a second page
            page.goto(f"{base}/plan?path=g.agraph.yaml")
            page.click("text=Approve and run")
            page.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        run_path = page.url[len(base):]
        page.wait_for_selector(NODE.format("ok", "awaiting_human"), timeout=WAIT)
        found: dict[str, list[str]] = {}
        for path in (*PAGES, run_path):
            page.goto(f"{base}{path}")
            found[path] = violations(page)
        assert found == {p: [] for p in found}, json.dumps(found, indent=1)
