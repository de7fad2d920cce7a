"""``docs-site-refresh.agraph.yaml`` with its ``link-audit.agraph.yaml`` child: a map, a
subgraph by ``ref`` (a nested run record), a subgraph by ``use``, conditional routing into a
``join: any`` fan-in, and a graph-level human sign-off. Also ``link-audit`` on its own."""

from __future__ import annotations

import pytest

from rein.engine.run.record import record_problems
from tests.conftest import shared_path
from tests.scenarios.harness import Scenario, summary

PARENT = shared_path("ags-examples", "docs-site-refresh.agraph.yaml")
CHILD = shared_path("ags-examples", "link-audit.agraph.yaml")
pytestmark = pytest.mark.skipif(PARENT is None or CHILD is None,
                                reason="../shared is not present")

PAGES = [{"path": f"docs/p{i}.md", "reason": "old API", "severity": "high"} for i in range(3)]
LONG = "Stale: the install page names the old CLI flags.\n" * 12


def _link_audit_answers(broken: list) -> dict:
    return {
        "crawl_links": [{"outputs": {"links": [{"url": "/a", "source_page": "index.html",
                                                "kind": "internal"}]}}],
        "check_links": [{"outputs": {"broken_links": broken, "audit_report": "## Links\n"},
                         "files": {"docs/internal/link-audit.md": "# Link audit\n" * 20}}],
    }


def _setup(s: Scenario, *, failing_item: int | None = None) -> None:
    assert PARENT is not None and CHILD is not None
    s.copy(PARENT)
    s.copy(CHILD)
    s.stub("mkdocs")
    s.python_stub()
    s.file("scripts/check_links.py", "import sys\nsys.exit(0)\n")
    nodes: dict = {
        "inventory_pages": [{"outputs": {"pages": PAGES, "inventory": LONG},
                             "files": {"docs/internal/docs-staleness.md": LONG}}],
        # The build writes the site (fs:write:site/**); check_build only reads it.
        "build_site": [{"outputs": {"build_log": "built 3 pages"},
                        "files": {"site/index.html": "<html>" + "x" * 200 + "</html>"}}],
        "check_build": [{"outputs": {"verdict": "index present"}}],
        **_link_audit_answers([]),
    }
    for i in range(3):
        key = f"refresh_pages[{i}].refresh_page"
        if i == failing_item:
            nodes[key] = [{"failure": "tool_error", "message": "page locked"}]
        else:
            nodes[key] = [{"outputs": {"summary": f"refreshed p{i}",
                                       "updated_path": f"docs/p{i}.md"},
                           "files": {f"docs/p{i}.md": f"# Page {i}\n"}}]
    s.answers({"nodes": nodes})


def test_refresh_audit_and_publish(scenario: Scenario) -> None:
    _setup(scenario, failing_item=1)
    code, out = scenario.run("docs-site-refresh.agraph.yaml")
    assert code == 3  # the graph-level human sign-off
    [signoff] = scenario.pending()
    assert signoff["kind"] == "criterion"
    assert signoff["request"]["criterion"] == "owner_signoff"
    assert scenario.answer_all("accept") == 0
    record = scenario.record()
    assert record["status"] == "succeeded", record.get("diagnostics")
    states = scenario.statuses(record)
    assert states["refresh_pages"] == "succeeded"  # on_item_failure: continue
    assert states["refresh_pages[1].refresh_page"] == "failed"
    assert states["fix_links"] == "skipped"  # no broken links: the clean edge fires
    assert states["verify_and_publish"] == "succeeded"  # join: any
    mapped = next(n for n in record["nodes"] if n["node_id"] == "refresh_pages")
    assert mapped["items"] == 3
    assert mapped["outputs"]["summaries"] == ["refreshed p0", None, "refreshed p2"]
    assert record["outputs"]["build_verdict"] == "index present"
    link = next(n for n in record["nodes"] if n["node_id"] == "link_audit")
    child = scenario.record(link["child_run_id"])
    assert child["parent_run_id"] == record["run_id"]
    assert child["graph_id"] == "examples/link-audit"
    assert child["params"]["changed_pages"] == ["docs/p0.md", None, "docs/p2.md"]
    assert child["status"] == "succeeded"
    assert record_problems(record) == [] and record_problems(child) == []
    code, out = scenario.rein("runs", "list", "--all", "--json")
    import json

    runs = json.loads(out)["runs"]
    assert len(runs) == 3  # the parent, the ref child, the use child
    code, out = scenario.rein("runs", "list", "--json")
    assert [r["run_id"] for r in json.loads(out)["runs"]] == [record["run_id"]]


def test_link_audit_alone_needs_its_site_root(scenario: Scenario) -> None:
    assert CHILD is not None
    scenario.copy(CHILD)
    scenario.answers({"nodes": _link_audit_answers([])})
    code, out = scenario.rein("run", "link-audit.agraph.yaml", "--dry-run")
    assert code == 1
    code, out = scenario.rein("run", "link-audit.agraph.yaml", "--dry-run", "--json")
    import json

    assert [f["code"] for f in json.loads(out)["findings"]] == ["AG301"]
    code, out = scenario.run("link-audit.agraph.yaml", "--param", "site_root=site")
    assert (code, summary(out)["status"]) == (0, "succeeded")
    record = scenario.record()
    assert record["params"] == {"site_root": "site", "changed_pages": []}
    assert record_problems(record) == []
