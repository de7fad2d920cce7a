"""No input makes the validator raise: random bytes, truncated documents, deep nesting and
random JSON values all come back as a Report whose findings say what is wrong."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.formats.ags import Report, validate_document, validate_path
from rein.formats.loader import LoadLimits, load_text

CASES = Path(__file__).parent / "cases"
SEEDS = sorted(CASES.glob("*.agraph.yaml"))
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def check(report: Report) -> None:
    assert isinstance(report, Report)
    json.dumps(report.to_json())  # every report serialises
    for finding in report.findings:
        assert finding.code.startswith("AG") and finding.message


def validate_bytes(raw: bytes, suffix: str = ".agraph.yaml") -> Report:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"fuzz{suffix}"
        path.write_bytes(raw)
        report = validate_path(path, limits=LoadLimits(max_bytes=1 << 20, max_depth=64))
    check(report)
    return report


@FUZZ
@given(st.binary(max_size=400), st.sampled_from([".agraph.yaml", ".agraph.json"]))
def test_random_bytes(raw: bytes, suffix: str) -> None:
    report = validate_bytes(raw, suffix)
    if not report.errors:  # only a well-formed graph may pass, and random bytes are not one
        assert report.document is not None and isinstance(report.document.data, dict)


@FUZZ
@given(st.sampled_from(SEEDS), st.floats(0, 1))
def test_truncated_documents(seed: Path, fraction: float) -> None:
    raw = seed.read_bytes()
    validate_bytes(raw[: int(len(raw) * fraction)])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["nodes", "edges", "entrypoints", "type", "loop", "map", "body",
                         "subgraph", "inline", "use", "inputs", "from", "when", "a", "b",
                         "depends_on", "outputs", "success", "criteria", "decision"]),
        inner, max_size=5),
    max_leaves=30)


@FUZZ
@given(st.dictionaries(st.sampled_from(["ags_version", "kind", "id", "title", "objective",
                                        "entrypoints", "nodes", "edges", "subgraphs",
                                        "params", "outputs", "success", "constraints"]),
                       json_values, max_size=10))
def test_random_graph_shaped_values(data: dict) -> None:
    doc = load_text(json.dumps(data), source="<fuzz>", format="json")
    check(validate_document(doc))


@FUZZ
@given(st.sampled_from(["node", "loop", "map", "subgraph"]), st.integers(1, 120))
def test_deep_nesting(kind: str, depth: int) -> None:
    if kind == "node":
        text = "[" * depth + "]" * depth
    else:
        key = {"loop": "body", "map": "body", "subgraph": "inline"}[kind]
        inner: dict = {"entrypoints": ["a"], "nodes": {"a": {"title": "A", "description": "A"}}}
        for _ in range(depth // 6 + 1):
            inner = {"entrypoints": ["n"], "nodes": {"n": {
                "type": kind, "title": "N", "description": "N", kind: {key: inner}}}}
        text = json.dumps({"ags_version": "1.0", **inner})
    validate_bytes(text.encode(), ".agraph.json")


def test_too_deep_is_one_clear_finding() -> None:
    report = validate_bytes(("[" * 200 + "]" * 200).encode(), ".agraph.json")
    assert [f.code for f in report.findings] == ["AG001"]
    assert "deeper than 64" in report.findings[0].message


@pytest.mark.parametrize("text", ['{"id": "\\ud800"}', '{"nodes": {"\\udc00": {}}}',
                                  '{"ags_version": "1.0", "title": "a\\ud83dz"}'])
def test_escaped_lone_surrogates_are_one_clear_finding(text: str) -> None:
    report = validate_bytes(text.encode(), ".agraph.json")
    assert [f.code for f in report.findings] == ["AG001"]
    assert "surrogate" in report.findings[0].message
