"""In real headless Chromium against a real ``rein serve``: the gates of a run answered on
its own page as they are asked, live event lines stamped with their time, a parameter's
lines kept from the textarea to the run, and the picture kept inside its box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.engine.service import Harness
from tests.web.browser import served, why_not
from tests.web.conftest import write_graph
from tests.web.test_accessibility import AXE, violations

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))

NODE = 'svg.dag g.node[data-node="{}"][data-status="{}"]'
CARD = "[data-approvals] .card[data-approval]"
WAIT = 30_000  # ms: an upper bound on waiting, not a pause


def test_the_gates_are_answered_on_the_run_page_as_they_are_asked(
        browser: Any, workspace: Path) -> None:
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/plan?path=g.agraph.yaml")
        page.click("text=Approve and run")
        page.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        run_path = page.url[len(base):]
        # The first gate's card: in the page as rendered, or brought in when it is asked.
        page.wait_for_selector(CARD + " [data-node]:text('ok')", timeout=WAIT)
        if AXE.resolve().is_file():
            assert violations(page) == []  # the card, the attempts, the times
        page.locator(CARD).locator("button.accept").click()
        page.wait_for_url(f"{base}{run_path}", timeout=WAIT)
        # The input gate is asked after the page came back: its card arrives live.
        page.wait_for_selector(CARD + " input[name='value.count']", timeout=WAIT)
        page.fill(CARD + " input[name='value.count']", "4")
        page.locator(CARD).locator("button.accept").click()
        page.wait_for_url(f"{base}{run_path}", timeout=WAIT)
        page.wait_for_selector("[data-run-status][data-state=succeeded]", timeout=WAIT)
        assert page.locator(CARD).count() == 0
        # Every line of the log, rendered or appended live, carries its time.
        lines = page.locator("ol.log li")
        assert lines.count() == page.locator("ol.log li time[datetime]").count() > 5
    harness = Harness.open(workspace)
    try:
        [run] = harness.runs()
        answered = harness.approvals(run_id=run.run_id, pending_only=False)
        assert {a.request.get("node"): a.status.value for a in answered
                if a.kind.value == "gate"} == {
            "ok": "accepted", "ask": "accepted"}
        ask = next(a for a in answered if a.request.get("node") == "ask")
        assert ask.answer is not None and ask.answer["values"] == {"count": 4}
        assert ask.answer["given"]["surface"] == "web"
    finally:
        harness.close()


def test_a_live_line_is_stamped_like_a_rendered_one(browser: Any, workspace: Path) -> None:
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/plan?path=g.agraph.yaml")
        page.click("text=Approve and run")
        page.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        page.wait_for_selector(CARD, timeout=WAIT)
        rendered = page.locator("ol.log li").count()
        page.locator(CARD).locator("button.decline").click()  # the run goes on by itself
        page.wait_for_selector(f"ol.log li:nth-child({rendered + 1}) time", timeout=WAIT)
        stamp = page.locator(f"ol.log li:nth-child({rendered + 1}) time")
        iso = str(stamp.get_attribute("datetime"))
        assert iso.endswith("Z") and stamp.inner_text() in (iso[11:19],
                                                            f"{iso[:10]} {iso[11:19]} UTC")


MULTI = "first line\n  second, indented\n\n<b>&amp; kept</b>"


def test_a_text_parameter_keeps_its_lines_from_the_field_to_the_run(
        browser: Any, workspace: Path) -> None:
    from tests.web.test_plan_params import PARAMS

    write_graph(workspace, "p.agraph.yaml", PARAMS)
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page()
        page.goto(url)
        page.goto(f"{base}/plan?path=p.agraph.yaml")
        page.fill("textarea[name='param.label']", MULTI)
        page.fill("input[name='param.count']", "2")
        page.click("text=Approve and run")
        page.wait_for_url(f"{base}/runs/run-*", timeout=WAIT)
        run_id = page.url.rsplit("/", 1)[-1]
    harness = Harness.open(workspace)
    try:
        assert dict(harness.run(run_id).binding["params"])["label"] == MULTI
    finally:
        harness.close()


def _chain(n: int) -> dict[str, Any]:
    nodes: dict[str, Any] = {}
    for i in range(n):
        nodes[f"step{i:02d}"] = {"title": f"step {i}", "description": "Do it.",
                                 **({"depends_on": [f"step{i - 1:02d}"]} if i else {})}
    return {"ags_version": "1.0", "kind": "AgenticGraph", "id": f"tests/wide-{n}",
            "title": "wide", "objective": "test", "requires_conformance": 3,
            "entrypoints": ["step00"], "nodes": nodes}


BOX = """() => {
  const wrap = document.querySelector('.dagwrap').getBoundingClientRect();
  const pic = document.querySelector('.dagwrap svg.dag').getBoundingClientRect();
  const box = document.querySelector('.dagwrap');
  return {inside: pic.left >= wrap.left - 1 && pic.right <= wrap.right + 1
                  && pic.top >= wrap.top - 1 && pic.bottom <= wrap.bottom + 1,
          scrolls: box.scrollWidth > box.clientWidth,
          scale: pic.width / Number(document.querySelector('svg.dag').getAttribute('width')),
          page: document.documentElement.scrollWidth <= window.innerWidth};
}"""


def test_the_picture_fits_its_box_then_scrolls_inside_it(browser: Any,
                                                         workspace: Path) -> None:
    write_graph(workspace, "wide.agraph.yaml", _chain(8))
    write_graph(workspace, "wider.agraph.yaml", _chain(30))
    with served(workspace) as url:
        base = url.split("/?")[0]
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.goto(f"{base}/plan?path=wide.agraph.yaml")
        wide = page.evaluate(BOX)
        assert wide["inside"] and not wide["scrolls"] and wide["page"], wide
        assert 0.6 <= wide["scale"] < 1, wide  # shrunk to fit, still legible
        page.goto(f"{base}/plan?path=wider.agraph.yaml")
        wider = page.evaluate(BOX)
        assert wider["scrolls"] and wider["page"], wider  # the box scrolls, not the page
        assert abs(wider["scale"] - 0.6) < 0.01, wider
