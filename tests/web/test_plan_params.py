"""Approve and run with parameters: the form is built from the graph's declared params, what
comes back is bound by the same code as ``rein run --param`` (AG301/AG302 shown in the page,
nothing started), and the run records the same binding the command line would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rein.cli import main
from tests.web.conftest import Console, write_graph

PARAMS = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-params", "title": "params",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["ok"],
    "params": {
        "count": {"type": "integer", "description": "how many"},
        "mode": {"type": "string", "description": "how", "enum": ["fast", "slow"],
                 "default": "fast"},
        "label": {"type": "string", "description": "a name", "required": False},
    },
    "nodes": {"ok": {"type": "gate", "title": "ok", "description": "Approve.",
                     "gate": {"mode": "approve", "prompt": "Go?"}}},
}


def _form(console: Console, **params: str) -> dict[str, str]:
    return {"path": "p.agraph.yaml", "digest": console.digest("p.agraph.yaml"),
            **{f"param.{k}": v for k, v in params.items()}}


def test_the_form_has_a_field_per_declared_param(console: Console, workspace: Path) -> None:
    write_graph(workspace, "p.agraph.yaml", PARAMS)
    console.login()
    html = console.client.get("/plan?path=p.agraph.yaml").text
    assert "name='param.count'" in html and "required>" in html  # no default: required
    assert "<select name='param.mode'" in html
    assert "<option value='fast' selected>fast</option>" in html
    assert "<textarea name='param.label' rows='2' data-type='string'>\n</textarea>" in html


def test_a_value_that_does_not_fit_is_refused_in_the_page_and_nothing_runs(
        console: Console, workspace: Path) -> None:
    write_graph(workspace, "p.agraph.yaml", PARAMS)
    console.login()
    r = console.post("/plan/run", _form(console, count="many", mode="slow"))
    assert r.status_code == 409
    assert "<code>AG302</code>" in r.text and "parameter &#x27;count&#x27;" in r.text
    assert "value='many'" in r.text  # what was typed is shown again
    r = console.post("/plan/run", _form(console, mode="medium"))
    assert "<code>AG301</code>" in r.text and "<code>AG302</code>" in r.text  # both at once
    assert console.harness.runs() == []


def test_the_run_binds_the_params_as_the_command_line_does(
        console: Console, workspace: Path) -> None:
    write_graph(workspace, "p.agraph.yaml", PARAMS)
    console.login()
    run_id = console.start_with(_form(console, count="5", label="x"))
    web: Any = console.harness.run(run_id).binding
    assert dict(web["params"]) == {"count": 5, "mode": "fast", "label": "x"}

    digest = console.digest("p.agraph.yaml")
    assert main(["run", "p.agraph.yaml", "--param", "count=5", "--param", "label=x",
                 "--approve", digest, "--json"]) == 3
    cli_run = next(r for r in console.harness.runs() if r.run_id != run_id)
    cli: Any = cli_run.binding
    assert {k: cli[k] for k in ("graph_digest", "params", "children")} == {
        k: web[k] for k in ("graph_digest", "params", "children")}


MULTI = "\nfirst line\r\n  second, indented\n\n<b>&amp; kept</b>\n"  # as typed, then as sent


def _textarea(html: str, name: str) -> str:
    """A textarea's value as a browser reads it (HTML drops one newline after the tag)."""
    from html import unescape

    start = html.index(f"<textarea name='param.{name}'")
    inner = html[html.index(">", start) + 1:html.index("</textarea>", start)]
    return unescape(inner.removeprefix("\n"))


def test_a_text_parameter_keeps_its_lines_both_ways(console: Console, workspace: Path) -> None:
    write_graph(workspace, "p.agraph.yaml", PARAMS)
    console.login()
    # Refused for another field: the text comes back in its field exactly.
    r = console.post("/plan/run", _form(console, count="many", label=MULTI))
    assert r.status_code == 409
    assert _textarea(r.text, "label") == MULTI.replace("\r\n", "\n")
    # Accepted: the run binds the lines the field showed (a browser sends them as CRLF).
    run_id = console.start_with(_form(console, count="1", label=MULTI.replace("\n", "\r\n")
                                      .replace("\r\r\n", "\r\n")))
    web: Any = console.harness.run(run_id).binding
    assert web["params"]["label"] == MULTI.replace("\r\n", "\n")
