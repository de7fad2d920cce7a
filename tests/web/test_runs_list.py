"""The runs list: a start-time window and keyset pages whose links keep the filter, and a
next page that runs started meanwhile do not shift."""

from __future__ import annotations

import re
from html import unescape

from tests.web.conftest import Console

RUN_LINK = re.compile(r'<a href="/runs/(run-[^"]+)"><code>')


def _ids(html: str) -> list[str]:
    body = html[html.index('<tbody id="runs">'):html.index("</tbody>")]
    return RUN_LINK.findall(body)


def _older(html: str) -> str:
    found = re.search(r'<a href="([^"]+)" data-page="older">', html)
    assert found is not None, "no link to older runs"
    return unescape(found.group(1))


def test_pages_are_keyset_and_stay_put_when_runs_start_meanwhile(console: Console) -> None:
    console.login()
    first = [console.start("g.agraph.yaml") for _ in range(3)]  # oldest first
    page1 = console.client.get("/?n=2&q=gated&state=awaiting_human").text
    assert _ids(page1) == [first[2], first[1]]
    older = _older(page1)
    assert "n=2" in older and "q=gated" in older and "state=awaiting_human" in older
    newer = console.start("g.agraph.yaml")  # sorts before the page's start: no shift
    page2 = console.client.get(older).text
    assert _ids(page2) == [first[0]]
    assert 'data-page="older"' not in page2  # the last page
    assert 'data-page="newest"' in page2
    assert _ids(console.client.get("/?n=2").text) == [newer, first[2]]
    # The live list of a page follows the same window.
    stream = re.search(r'data-runs-stream="([^"]+)"', page2)
    assert stream is not None and "older=" in unescape(stream.group(1))


def test_the_time_window_selects_by_start(console: Console) -> None:
    console.login()
    run_id = console.start("g.agraph.yaml")
    started = console.harness.run(run_id).started_at
    day = started[:10]
    assert _ids(console.client.get(f"/?since={day}&until={day}").text) == [run_id]
    assert _ids(console.client.get("/?since=2000-01-01&until=2000-01-02").text) == []
    assert _ids(console.client.get(f"/?since={started[:19]}").text) == [run_id]  # inclusive
    assert _ids(console.client.get("/?since=2999-01-01").text) == []
    html = console.client.get(f"/?since={day}").text
    assert f'name="since" placeholder="2026-03-01" value="{day}"' in html  # kept in the form


def test_a_time_that_cannot_be_read_is_a_coded_error_with_the_form_kept(
        console: Console) -> None:
    console.login()
    r = console.client.get("/?since=yesterday&q=abc")
    assert r.status_code == 400
    assert "<code>WEB400</code>" in r.text and "since=&#x27;yesterday&#x27; is not a time" \
        in r.text and "type a date (2026-03-01)" in r.text
    assert 'value="yesterday"' in r.text and 'value="abc"' in r.text
    r = console.client.get("/?older=nonsense")
    assert r.status_code == 400 and "is not a page start" in r.text
