"""In real headless Chromium: Approve and run with parameters typed in the plan view (a bad
value refused in the page), then the map's items appear on the open run page as they start,
without a reload, and each opens to its record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import served, why_not
from tests.web.conftest import write_graph
from tests.web.live_graphs import MAPPED
from tests.web.test_browser import NODE, WAIT

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

ROW = '[data-node-detail="{}"]'


def test_a_map_run_started_with_params_shows_its_items_without_reload(
        browser: Any, workspace: Path) -> None:
    write_graph(workspace, "m.agraph.yaml", MAPPED)
    with served(workspace) as url:
        base = url.split("/?")[0]
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(url)
        tab.goto(f"{base}/plan?path=m.agraph.yaml")
        field = "input[name='param.pages']"
        assert tab.locator(field).get_attribute("data-type") == "array"
        tab.fill(field, "three pages")
        tab.click("text=Approve and run")
        alert = tab.locator("[role=alert]")
        assert "AG302" in alert.inner_text() and "pages" in alert.inner_text()
        assert tab.locator(field).input_value() == "three pages"  # kept for correcting
        tab.fill(field, '["a", "b", "c"]')
        tab.click("text=Approve and run")
        tab.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        run_id = tab.url.rsplit("/", 1)[-1]
        tab.wait_for_selector(NODE.format("go", "awaiting_human"), timeout=WAIT)
        assert tab.locator(ROW.format("fan[0].label")).count() == 0
        tab.evaluate("window.__loaded = true")  # gone if the page were reloaded

        queue = context.new_page()
        queue.goto(f"{base}/approvals?run={run_id}")
        queue.click("form.answer button[value=accept]")
        for i in range(3):
            tab.wait_for_selector(ROW.format(f"fan[{i}].label") + " .status[data-state=succeeded]",
                                  timeout=WAIT)
        tab.wait_for_selector(NODE.format("fan", "succeeded"), timeout=WAIT)
        tab.wait_for_selector("[data-run-status][data-state=succeeded]", timeout=WAIT)
        assert tab.evaluate("window.__loaded") is True
        assert tab.locator("[data-count-of='fan']").text_content().strip() == "· 3 ran"
        rows = tab.locator("[data-node-detail]").evaluate_all(
            "els => els.map(e => e.getAttribute('data-node-detail'))")
        assert [r for r in rows if r.startswith("fan[")] == [
            "fan[0].label", "fan[1].label", "fan[2].label"]
        # Opened, a row made live shows what a reload would: the node's record.
        tab.click(ROW.format("fan[1].label") + " summary")
        record = tab.wait_for_selector(ROW.format("fan[1].label") + " pre", timeout=WAIT)
        assert '"node_id": "label"' in record.inner_text()
        context.close()
