"""The public front of AGS validation: names, the catalogue, the report, file discovery,
locations, and the rules whose details the case files do not pin."""

from __future__ import annotations

import json
from pathlib import Path

import ags
import pytest

import rein.formats.ags as ags_api
from rein.formats.ags import CODES, iter_graph_files, validate_document, validate_path
from rein.formats.loader import load_text

ROOT = Path(__file__).resolve().parents[3]
HEADER = """\
ags_version: "1.0"
kind: AgenticGraph
id: api/test
title: API
objective: Exercise one rule.
constraints:
  max_cost_usd: 1
"""


def check(body: str) -> list[tuple[str, str | None, str]]:
    doc = load_text(HEADER + body, source="test.agraph.yaml")
    return [(f.code, f.location.pointer, f.message) for f in validate_document(doc).findings]


def test_exported_names_are_pinned() -> None:
    assert ags_api.__all__ == sorted(ags_api.__all__)
    assert {"CODES", "CodeInfo", "Report", "iter_graph_files", "validate_document",
            "validate_path"} <= set(ags_api.__all__)


def test_the_catalogue_has_every_code_of_ags_1_0() -> None:
    assert len(CODES) == 47
    groups = {c[:3] for c in CODES}
    assert groups == {"AG0", "AG1", "AG2", "AG3", "AG9"}
    for code, info in CODES.items():
        assert info.code == code and info.rule and info.hint
        assert info.severity == ("warning" if code.startswith("AG9") else "error")


def test_report_json_shape_and_digest(tmp_path: Path) -> None:
    path = tmp_path / "g.agraph.yaml"
    path.write_text(HEADER + "entrypoints: [a]\nnodes:\n  a: {title: A, description: A.}\n"
                    "  b: {title: B, description: B.}\n", encoding="utf-8")
    report = validate_path(path)
    data = report.to_json()
    assert set(data) == {"path", "kind", "digest", "findings"}
    assert data["kind"] == "AgenticGraph"
    assert data["digest"] == ags.graph_digest(report.document.data)
    (finding,) = data["findings"]
    assert finding["code"] == "AG903" and finding["severity"] == "warning"
    assert finding["location"] == {"file": str(path), "line": 11, "column": 3,
                                   "pointer": "/nodes/b"}
    assert report.warnings and not report.errors
    json.dumps(data)


def test_findings_are_sorted_by_location() -> None:
    doc = load_text(HEADER + """\
entrypoints: [a, ghost]
nodes:
  z:
    title: Z
    description: Z.
    depends_on: [nobody]
  a:
    title: A
    description: A.
    colour: red
""", source="s.agraph.yaml")
    lines = [(f.location.line, f.location.column) for f in validate_document(doc).findings]
    assert lines == sorted(lines) and len(lines) >= 3


def test_unreadable_files_are_findings(tmp_path: Path) -> None:
    missing = validate_path(tmp_path / "nope.agraph.yaml")
    assert [f.code for f in missing.findings] == ["AG001"]
    assert missing.kind == "unknown" and missing.digest is None and missing.document is None
    broken = tmp_path / "broken.agraph.yaml"
    broken.write_text("a: [1, 2\nb: 3\n", encoding="utf-8")
    (finding,) = validate_path(broken).findings
    assert finding.code == "AG001" and finding.location.line is not None
    dup = tmp_path / "dup.agraph.yaml"
    dup.write_text("a: 1\nb: 2\na: 3\n", encoding="utf-8")
    (finding,) = validate_path(dup).findings
    assert (finding.code, finding.location.line) == ("AG005", 3)


@pytest.mark.parametrize("text", ["[1, 2]", "just text", ""])
def test_a_document_that_is_not_an_object(text: str) -> None:
    report = validate_document(load_text(text, source="x.agraph.yaml"))
    assert [f.code for f in report.findings] == ["AG001"]
    assert "must be a JSON object" in report.findings[0].message


def test_iter_graph_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("b.agraph.yaml", "a.agraph.json", "sub/c.agraph.yml", "notes.yaml",
                 "package.json"):
        (tmp_path / name).write_text("{}", encoding="utf-8")
    given = tmp_path / "notes.yaml"
    assert iter_graph_files([tmp_path, given]) == [
        tmp_path / "a.agraph.json", tmp_path / "b.agraph.yaml", tmp_path / "sub/c.agraph.yml",
        given]


def test_cycle_message_names_the_path() -> None:
    found = check("""\
entrypoints: [s]
nodes:
  s: {title: S, description: S.}
  a: {title: A, description: A., depends_on: [s, c]}
  b: {title: B, description: B., depends_on: [a]}
  c: {title: C, description: C., depends_on: [b]}
""")
    assert found == [("AG111", "/nodes/a",
                      "the effective edges of this scope form a cycle: a -> b -> c -> a")]


def test_no_dataflow_verdict_in_a_cyclic_scope() -> None:
    found = check("""\
entrypoints: [s]
nodes:
  s: {title: S, description: S.}
  a:
    title: A
    description: A.
    depends_on: [s, b]
    outputs: {x: {type: text, description: X.}}
  b:
    title: B
    description: B.
    depends_on: [a]
    inputs: {x: {type: text, description: X., from: nodes.a.outputs.x}}
""")
    assert [code for code, _, _ in found] == ["AG111"]


def test_reads_two_hops_up_and_through_output_with_hyphenated_ids() -> None:
    found = check("""\
entrypoints: [first-step]
nodes:
  first-step:
    title: First
    description: First.
    outputs: {x: {type: text, description: X.}}
  middle: {title: M, description: M., depends_on: [first-step]}
  last:
    title: Last
    description: Last.
    depends_on: [middle]
    inputs: {x: {type: text, description: X., from: 'output("first-step", "x")'}}
""")
    assert found == []


def test_a_named_fragment_sees_loop_only_when_every_user_is_a_loop() -> None:
    fragment = """\
requires_conformance: 3
subgraphs:
  body:
    entrypoints: [work]
    nodes:
      work: {title: W, description: W., when: "loop.index < 2"}
entrypoints: [again]
nodes:
  again:
    type: loop
    title: Again
    description: Again.
    loop: {mode: repeat, max_iterations: 2, use: body}
"""
    assert check(fragment) == []
    also_subgraph = fragment + """\
  once:
    type: subgraph
    title: Once
    description: Once.
    depends_on: [again]
    subgraph: {use: body}
"""
    assert [(c, p) for c, p, _ in check(also_subgraph)] == [
        ("AG203", "/subgraphs/body/nodes/work/when")]


def test_fragment_success_criteria_are_checked() -> None:
    found = check("""\
requires_conformance: 3
entrypoints: [run]
nodes:
  run:
    type: subgraph
    title: Run
    description: Run.
    subgraph:
      inline:
        entrypoints: [a]
        nodes:
          a: {title: A, description: A.}
        success:
          criteria:
            - {id: ok, kind: expression, description: Ok., expr: "params.nope == 1"}
""")
    assert [(c, p) for c, p, _ in found] == [
        ("AG203", "/nodes/run/subgraph/inline/success/criteria/0/expr")]


def test_a_bare_reference_as_a_whole_template_is_ag211() -> None:
    found = check("""\
entrypoints: [a]
nodes:
  a:
    title: A
    description: A.
    instructions: params.topic
""")
    assert [(c, p) for c, p, _ in found] == [("AG211", "/nodes/a/instructions")]


def test_expression_errors_say_where() -> None:
    found = check("""\
entrypoints: [a]
nodes:
  a: {title: A, description: A., when: 'len("a", "b") == 1'}
""")
    (code, pointer, message), = found
    assert (code, pointer) == ("AG204", "/nodes/a/when")
    assert "len" in message


EXAMPLES = sorted((ROOT / "examples").glob("*.agraph.*"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_reins_own_examples_are_clean_under_strict(path: Path) -> None:
    report = validate_path(path)
    assert report.findings == (), [f.render() for f in report.findings]
