"""Where rein deliberately differs from the reference validator, and why (see
docs/conformance/ags-validation.md). Each test pins rein's behaviour and, where cheap, shows
that ``ags.validate_path`` (the reference) behaves differently on the same file."""

from __future__ import annotations

from pathlib import Path

import ags
import pytest

from rein.formats.ags import validate_path

CASES = Path(__file__).parent / "cases"
HEADER = """\
ags_version: "1.0"
kind: AgenticGraph
id: differences/{name}
title: A deliberate difference
objective: Show where rein and the reference validator disagree.
constraints:
  max_cost_usd: 1
"""


def write(tmp_path: Path, name: str, body: str, suffix: str = ".agraph.yaml") -> Path:
    path = tmp_path / f"{name}{suffix}"
    path.write_text(HEADER.format(name=name) + body, encoding="utf-8")
    return path


def reference_errors(path: Path) -> set[str]:
    return {f.code for f in ags.validate_path(path).findings if f.severity == "error"}


def rein_errors(path: Path) -> set[str]:
    return {f.code for f in validate_path(path).errors}


def test_yaml_null_is_null_not_the_string_null(tmp_path: Path) -> None:
    path = write(tmp_path, "null", """\
entrypoints: [a]
nodes:
  a:
    title: A
    description: null
""")
    report = validate_path(path)
    assert [(f.code, f.location.pointer) for f in report.errors] == [
        ("AG001", "/nodes/a/description")]
    assert "not null" in report.errors[0].message
    assert reference_errors(path) == set()  # it read description as the text "null"


def test_duplicate_json_keys_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.agraph.json"
    path.write_text('{"ags_version": "1.0", "kind": "AgenticGraph", "id": "x", "title": "T",'
                    ' "objective": "O", "entrypoints": ["a"], "nodes": {"a": {"title": "A",'
                    ' "description": "one", "description": "two"}}}', encoding="utf-8")
    report = validate_path(path)
    assert [f.code for f in report.findings] == ["AG005"]
    assert report.findings[0].location.line == 1
    assert report.kind == "unknown" and report.digest is None
    assert reference_errors(path) == set()  # Python's json keeps the last one silently


@pytest.mark.parametrize("code", ["AG101", "AG102", "AG104"])
def test_schema_rules_with_catalogue_codes_get_those_codes(code: str) -> None:
    (path,) = CASES.glob(f"{code.lower()}-*.agraph.yaml")
    assert rein_errors(path) == {code}
    assert reference_errors(path) == {"AG001"}


def test_signed_number_without_spaces_is_subtraction(tmp_path: Path) -> None:
    path = write(tmp_path, "minus", """\
entrypoints: [a]
nodes:
  a:
    title: A
    description: Do A.
    when: 2-1 == 1
""")
    assert rein_errors(path) == set()
    assert reference_errors(path) == {"AG204"}


def test_output_function_obeys_the_predecessor_rule() -> None:
    path = CASES / "ag201-forward-read.agraph.yaml"
    assert rein_errors(path) == {"AG201"}
    assert reference_errors(path) == set()


def test_recursion_through_a_ref_file_is_found() -> None:
    path = CASES / "ag131-external-self-ref.agraph.yaml"
    assert rein_errors(path) == {"AG131"}
    assert reference_errors(path) == set()


def test_recursion_through_two_ref_files_names_the_cycle(tmp_path: Path) -> None:
    node = """\
requires_conformance: 3
entrypoints: [call]
nodes:
  call:
    type: subgraph
    title: Call
    description: Run the other graph.
    subgraph:
      ref:
        uri: {uri}
"""
    (tmp_path / "sub").mkdir()
    first = write(tmp_path, "first", node.format(uri="./sub/second.agraph.yaml"))
    write(tmp_path / "sub", "second", node.format(uri="../first.agraph.yaml"))
    report = validate_path(first)
    assert [f.code for f in report.errors] == ["AG131"]
    assert report.errors[0].location.pointer == "/nodes/call/subgraph/ref/uri"
    assert "first.agraph.yaml -> sub/second.agraph.yaml -> first.agraph.yaml" \
        in report.errors[0].message
    assert validate_path(first, resolve_refs=False).errors == ()
    assert reference_errors(first) == set()


def test_a_ref_to_a_missing_file_is_not_a_recursion(tmp_path: Path) -> None:
    path = write(tmp_path, "missing", """\
requires_conformance: 3
entrypoints: [call]
nodes:
  call:
    type: subgraph
    title: Call
    description: Run a graph that is not there.
    subgraph:
      ref:
        uri: ./nowhere.agraph.yaml
""")
    assert rein_errors(path) == set()


@pytest.mark.parametrize("name", ["item", "loop", "nodes", "params"])
def test_reserved_map_binding_is_refused(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, "reserved", f"""\
requires_conformance: 3
entrypoints: [each]
nodes:
  each:
    type: map
    title: Each
    description: Fan out.
    map:
      over: '[1, 2]'
      as: {name}
      max_items: 2
      body:
        entrypoints: [work]
        nodes:
          work:
            title: Work
            description: Work on one.
""")
    report = validate_path(path)
    assert [(f.code, f.location.pointer) for f in report.errors] == [
        ("AG117", "/nodes/each/map/as")]
    assert reference_errors(path) == set()


def test_checking_goes_on_after_a_schema_error(tmp_path: Path) -> None:
    path = write(tmp_path, "both", """\
entrypoints: [start]
nodes:
  start:
    title: Start
    description: Begin.
    colour: red
  a:
    title: A
    description: Do A.
    depends_on: [start, b]
  b:
    title: B
    description: Do B.
    depends_on: [a]
""")
    assert rein_errors(path) == {"AG003", "AG111"}
    assert reference_errors(path) == {"AG003"}
