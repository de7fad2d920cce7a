"""A run's page: its pending questions answered in place through the approval queue's own
form and route, its events stamped with their times, its node rows with their attempts."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from rein.core.states import NodeStatus
from rein.engine.service import NodeRow
from rein.web import pages_runs
from rein.web.states import badge
from tests.web.conftest import Console


def _card(html: str, approval_id: str) -> str:
    """The card of ``approval_id`` in a page, from its opening tag to its form's end."""
    start = html.index(f"<div class='card' data-approval='{approval_id}'>")
    return html[start:html.index("</form></div>", start) + len("</form></div>")]


def test_the_run_page_shows_the_queue_card_and_answers_it_on_the_queue_route(
        console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [ok] = console.pending()
    page = console.client.get(f"/runs/{run_id}").text
    card = _card(page, ok.approval_id)
    # The very card of the queue, with one more field: the page to come back to.
    queue = console.client.get("/approvals").text
    assert card.replace(f'<input type="hidden" name="back" value="/runs/{run_id}">', "") \
        == _card(queue, ok.approval_id)
    assert f'action="/approvals/{ok.approval_id}"' in card
    assert f'name="digest" value="{ok.digest}"' in card and 'name="csrf"' in card
    assert "Ship it?" in card

    r = console.post(f"/approvals/{ok.approval_id}", {"action": "accept", "digest": ok.digest,
                                                      "back": f"/runs/{run_id}"})
    assert r.status_code == 303 and r.headers["location"] == f"/runs/{run_id}"
    assert console.steering is not None and console.steering.idle(60)
    stored = console.harness.store.get_approval(ok.approval_id)
    assert stored is not None and stored.status.value == "accepted"
    assert stored.answer is not None and stored.answer["given"]["surface"] == "web"
    page = console.client.get(f"/runs/{run_id}").text
    [ask] = console.pending()
    assert "name='value.count'" in _card(page, ask.approval_id)  # the input gate's field


def test_the_page_shows_the_run_as_of_its_events_not_as_the_request_found_it(
        console: Console) -> None:
    """The status badge was drawn from the run as read before the events: a run that
    changed in between kept its old status for good (its last event drawn in the log, so
    never streamed to the badge). Here the request read the run while it still ran."""
    import datetime as dt

    from rein.core.states import RunStatus

    console.login()
    run_id = console.start("g.agraph.yaml")
    [_ok] = console.pending()
    now = console.harness.store.get_run(run_id)
    assert now is not None and now.status is RunStatus.AWAITING_HUMAN
    stale = now.replace(status=RunStatus.RUNNING)
    page = pages_runs.run_page(console.harness, stale, scope="", csrf="", read_only=True,
                               now=dt.datetime.now(dt.UTC))
    [shown] = re.findall(r'data-state="([a-z_]+)" data-run-status', page)
    assert shown == "awaiting_human"


def test_a_stale_digest_from_the_run_page_is_refused_there_and_nothing_is_recorded(
        console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [ok] = console.pending()
    r = console.post(f"/approvals/{ok.approval_id}", {
        "action": "accept", "digest": "sha256:" + "0" * 64, "back": f"/runs/{run_id}"})
    assert r.status_code == 409
    assert "<code>APPROVAL_STALE</code>" in r.text
    assert f"<h1><code>{run_id}</code>" in r.text  # the run's page, with the error on top
    assert [p.approval_id for p in console.pending()] == [ok.approval_id]


def test_the_run_page_form_passes_the_same_guard(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [ok] = console.pending()
    r = console.post(f"/approvals/{ok.approval_id}", {
        "action": "accept", "digest": ok.digest, "back": f"/runs/{run_id}"}, csrf=False)
    assert r.status_code == 403 and "WEB402" in r.text
    assert [p.approval_id for p in console.pending()] == [ok.approval_id]


def test_back_only_returns_to_the_questions_own_run(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [ok] = console.pending()
    r = console.post(f"/approvals/{ok.approval_id}", {
        "action": "accept", "digest": ok.digest, "back": "https://elsewhere.example/"})
    assert r.status_code == 303 and r.headers["location"] == f"/runs/{run_id}"


def test_a_question_asked_while_the_page_is_open_comes_with_the_fragment(
        console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    [ok] = console.pending()
    body = console.client.get(f"/runs/{run_id}/fragment?approvals=1").json()
    assert f"data-approval='{ok.approval_id}'" in body["approvals"]
    assert f'name="back" value="/runs/{run_id}"' in body["approvals"]


class _Times(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.times: list[tuple[str, str]] = []
        self._in: str | None = None
        self._log = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "ol" and "log" in (a.get("class") or ""):
            self._log = True
        elif tag == "time" and self._log:
            self._in = a.get("datetime") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "ol":
            self._log = False

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self.times.append((self._in, data))
            self._in = None


def test_every_event_carries_its_time(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    events = console.harness.events(run_id)
    parser = _Times()
    parser.feed(console.client.get(f"/runs/{run_id}").text)
    assert len(parser.times) == len(events) > 3
    for (iso, shown), ev in zip(parser.times, events, strict=True):
        assert iso.endswith("Z") and iso[:19] == ev.at[:19]  # machine-readable, UTC
        assert shown.replace(" UTC", "").endswith(ev.at[11:19])  # the time of day, read
    assert parser.times[0][1] == f"{events[0].at[:10]} {events[0].at[11:19]} UTC"  # dated


def _row(attempts: list[dict[str, Any]]) -> NodeRow:
    return NodeRow(run_id="run-x", node_key="fix", node_id="fix", scope_path="", type="agent",
                   status=NodeStatus.SUCCEEDED, record={"attempts": attempts})


def test_a_node_row_counts_its_attempts_and_folds_each_to_its_outcome_and_reason() -> None:
    html = pages_runs.node_rows([_row([
        {"attempt": 1, "status": "criteria_failed",
         "success": {"results": [{"id": "tests_pass", "passed": False, "kind": "command",
                                  "evidence": "2 failed"}]}},
        {"attempt": 2, "status": "failed", "error": {"class": "timeout", "message": "600 s"}},
        {"attempt": 3, "status": "succeeded", "success": {"results": [
            {"id": "tests_pass", "passed": True, "kind": "command"}]}}])])
    summary = re.search(r"<summary>(.*?)</summary>", html)
    assert summary is not None and "<span class='muted' data-attempts='3'>3 attempts</span>" \
        in summary.group(1)
    folded = re.findall(r"<li data-attempt='(\d)'><details><summary>(.*?)</summary>", html)
    assert folded == [
        ("1", (f"attempt 1 {badge('criteria_failed')} <span class='reason' data-reason>"
               "criteria failed: tests_pass</span>")),
        ("2", (f"attempt 2 {badge('failed')} <span class='reason' data-reason>"
               "timeout: 600 s</span>")),
        ("3", f"attempt 3 {badge('succeeded')}")]
    assert "told to attempt 2: tests_pass failed (2 failed)" in html  # inside attempt 1

