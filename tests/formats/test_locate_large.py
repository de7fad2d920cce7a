"""Finding locations in large documents: the targeted lookup gives exactly the positions of
the full index, and reads the text only as far as the pointers it was asked about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import EXAMPLES

from rein.formats import locations
from rein.formats.ags import validate_path
from rein.formats.loader import load_text
from rein.formats.locations import locate_pointers, location_index


def _graph(nodes: int, *, extra_field_at: int | None = None, cost: bool = True) -> str:
    """A valid chain of ``nodes`` tasks; optionally one unknown field (AG003) on one node and
    no cost preview (AG908)."""
    lines = ['ags_version: "1.0"', "kind: AgenticGraph", "id: t/large", "title: Large",
             "objective: Many nodes.", "constraints: {max_node_executions: 100000"
             + (", max_cost_usd: 5}" if cost else "}"), "entrypoints: [n0]", "nodes:"]
    for i in range(nodes):
        lines += [f"  n{i}:", f"    title: Step {i}", "    description: One step.",
                  "    outputs:",
                  "      result: {type: text, description: The note.}"]
        if i:
            lines += [f"    depends_on: [n{i - 1}]", "    inputs:",
                      (f"      prev: {{type: text, description: Before., "
                      f"from: nodes.n{i - 1}.outputs.result}}")]
        if i == extra_field_at:
            lines.append("    colour: blue")
    lines += ["outputs:", "  final:", "    type: text", "    description: The end.",
              f"    from: nodes.n{nodes - 1}.outputs.result"]
    return "\n".join(lines) + "\n"


def _all_pointers(index: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(index)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.agraph.yaml")))
def test_every_pointer_of_an_example_is_where_the_full_index_puts_it(name: str) -> None:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    full = location_index(text)
    assert full
    for ptr in _all_pointers(full):
        assert locate_pointers(text, [ptr])[ptr] == full[ptr], ptr
    assert locate_pointers(text, full) == full  # all at once: the same index


def test_json_form_and_absent_pointers_fall_back_like_the_full_index() -> None:
    data = load_text(_graph(40)).data
    text = json.dumps(data, indent=1)
    full = location_index(text)
    doc = load_text(text, format="json")
    for ptr in ("/nodes/n39/inputs/prev/from", "/nodes/n7/missing/deeper", "/nodes/n3/title/x",
                "/outputs/final/type/0", "/nope", ""):
        got = doc.locate(ptr)
        probe = ptr
        while probe not in full:
            probe = probe.rsplit("/", 1)[0]
        line, column = full[probe]
        assert (got.line, got.column, got.pointer) == (line + 1, column + 1, ptr)


def test_findings_deep_in_a_large_graph_have_their_exact_line_and_column(
        tmp_path: Path) -> None:
    text = _graph(3000, extra_field_at=2987, cost=False)
    path = tmp_path / "large.agraph.yaml"
    path.write_text(text, encoding="utf-8")
    report = validate_path(path)
    found = {f.code: f.location for f in report.findings}
    assert set(found) == {"AG003", "AG908"}
    lines = text.splitlines()
    node = lines.index("  n2987:")
    constraints = next(i for i, line in enumerate(lines) if line.startswith("constraints:"))
    assert lines[node + 1:].index("    colour: blue") < 12  # the field is on that node
    assert found["AG003"].pointer == "/nodes/n2987"
    assert (found["AG003"].line, found["AG003"].column) == (node + 1, 3)
    assert (found["AG908"].line, found["AG908"].column) == (constraints + 1, 1)


class _CountingParser:
    """The real libyaml event parser, counting the events it hands out."""

    read = 0
    real = locations.EventParser

    def __init__(self, text: str) -> None:
        self._parser = self.real(text)

    def get_event(self) -> object:
        _CountingParser.read += 1
        return self._parser.get_event()


def test_a_finding_near_the_top_does_not_read_the_rest_of_a_large_document(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = _graph(3000)
    monkeypatch.setattr(locations, "EventParser", _CountingParser)
    _CountingParser.read = 0
    line = text.splitlines()[5]
    assert locate_pointers(text, ["/constraints/max_cost_usd"]) == {
        "": (0, 0), "/constraints": (5, 0),
        "/constraints/max_cost_usd": (5, line.index("max_cost_usd"))}
    assert _CountingParser.read < 30  # the document has over 60,000 events
    _CountingParser.read = 0
    located = locate_pointers(text, ["/nodes/n2999/title"])
    assert located["/nodes/n2999/title"] == location_index(text)["/nodes/n2999/title"]
    assert _CountingParser.read > 60_000


def test_a_finding_near_the_end_reads_only_the_lines_of_its_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _graph(3000, extra_field_at=2999)
    path = tmp_path / "large.agraph.yaml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(locations, "EventParser", _CountingParser)
    _CountingParser.read = 0
    report = validate_path(path)
    assert [f.code for f in report.findings] == ["AG003"]
    location = report.findings[0].location
    node = text.splitlines().index("  n2999:")
    assert (location.pointer, location.line, location.column) == ("/nodes/n2999", node + 1, 3)
    assert _CountingParser.read < 100  # the whole document has over 60,000 events


_SHAPES = {
    "flow nodes": ('ags_version: "1.0"\nnodes: {a: {title: A,\n  x: 1}, b: {title: B}}\n'
                   "outputs:\n  o: {from: nodes.a.outputs.r}\n"),
    "complex keys": "nodes:\n  ? a\n  : title: A\n  b:\n    title: B\n  ? c\n  : {x: 1}\n",
    "comments and blank lines": ("# head\nnodes:\n  # a comment\n  a:\n    title: A  # here\n\n"
                                 "  # between\n  b:\n    list:\n      - 1\n      - {y: 2}\n"
                                 "# tail\nnext: 1\n"),
    "block scalars": ("nodes:\n  a:\n    brief: |\n      line one\n\n      b: not a key\n"
                      "    title: A\n  b:\n    brief: >-\n      folded\n    title: B\n"),
    "anchors across nodes": "nodes:\n  a: &shared\n    title: A\n  b: *shared\n  c:\n"
                            "    <<: *shared\n    more: [1, 2]\n",
    "crlf": "nodes:\r\n  a:\r\n    title: A\r\n  b:\r\n    x: [1,\r\n      2]\r\n",
    "non-ascii": "nodes:\n  é:\n    title: Ünïcode ✓\n  \"a/b~c\":\n    x: 1\n  z: 2\n",
    "directive": "%YAML 1.2\n---\nnodes:\n  a:\n    x: !!str 1\n  b: [!!int 2]\n",
    "deeper indent": "nodes:\n      a:\n          title: A\n      b: {x: 1}\nlast: [1]\n",
    "sequence at the top": "- nodes:\n    a:\n      x: 1\n",
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
def test_a_pointer_within_an_entry_is_where_the_full_index_puts_it(shape: str) -> None:
    text = _SHAPES[shape]
    full = location_index(text)
    assert full
    for ptr in _all_pointers(full):
        got = load_text(text).locate(ptr)  # a document per pointer: each looked up alone
        line, column = full[ptr]
        assert (got.line, got.column) == (line + 1, column + 1), ptr


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.agraph.yaml")))
def test_every_pointer_of_an_example_located_through_its_document(name: str) -> None:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    full = location_index(text)
    doc = load_text(text)
    doc.prepare(full)
    for ptr in _all_pointers(full):
        got = doc.locate(ptr)
        line, column = full[ptr]
        assert (got.line, got.column) == (line + 1, column + 1), ptr


def test_lines_that_do_not_parse_alone_are_none_when_strict() -> None:
    bad = "nodes:\n  a: ]\n  b: 1\n"
    assert locate_pointers(bad, ["/nodes/b"], strict=True) is None
    assert locate_pointers(bad, ["/nodes/b"]) == {"": (0, 0), "/nodes": (0, 0)}
