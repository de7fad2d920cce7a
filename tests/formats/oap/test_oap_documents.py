"""OAP documents: encodings, version and kind gates, schema, rules, digests, limits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from loader_work import LoaderWork
from oap import validate as reference
from support import SHARED, SHARED_PROBLEM, shared_path

from rein.formats.loader import LoadLimits
from rein.formats.oap import load_oap, load_oap_text, profile_digest, spec_digest, validate_file

EXAMPLES = SHARED / "oap-examples"
DATA = Path(__file__).resolve().parents[2] / "profiles" / "data"


@pytest.fixture
def data() -> Path:
    """The small profiles shipped with the tests (a fresh clone has them)."""
    return DATA
VALID = sorted(
    p.relative_to(EXAMPLES).as_posix()
    for p in (EXAMPLES.glob("*.agent.*") if SHARED_PROBLEM is None else [])
) + (["json/note-taker.agent.json"] if shared_path("oap-examples", "json") else [])
INVALID = (sorted(p.name for p in (EXAMPLES / "invalid").glob("*.*"))
           if SHARED_PROBLEM is None else [])

# The rule each negative fixture's leading comment names (or the schema rule, L1-P2).
EXPECTED_RULE = {
    "bad-name.agent.yaml": "L1-P2", "double-instructions.agent.md": "L3-G1",
    "future-major.agent.yaml": "L1-P3", "literal-secret.agent.yaml": "L1-I6",
    "missing-instructions.agent.yaml": "L1-P2", "path-traversal.agent.yaml": "L1-I5",
    "unknown-field.agent.yaml": "L1-P2", "unknown-kind.agent.yaml": "L1-P5",
    "missing-revision.delta.yaml": "L1-P2", "proposal-without-rationale.delta.yaml": "L1-P2",
    "remove-with-value.delta.yaml": "L1-P2", "writes-metadata.delta.yaml": "L2-A2",
    "writes-spec.delta.yaml": "L2-A2",
}


def minimal(**over: str) -> str:
    fields = {"oap": '"1.0"', "kind": "AgentProfile"} | over
    return (f"oap: {fields['oap']}\nkind: {fields['kind']}\nmetadata:\n  name: tiny\n"
            "  description: A tiny profile used by the tests here.\n"
            "spec:\n  role:\n    instructions: Do the thing.\n")


def report_for(text: str, tmp_path: Path, name: str = "tiny.agent.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return validate_file(path)


# ---------------------------------------------------------------------------- own fixtures


@pytest.mark.parametrize("name", ["scribe.agent.yaml", "notes.agent.md", "notes.agent.json",
                                  "base.agent.yaml", "child.agent.yaml", "notes.delta.yaml"])
def test_own_fixtures_are_valid(data: Path, name: str) -> None:
    report = validate_file(data / name)
    assert report.ok, [f.render() for f in report.findings]


def test_three_encodings_give_one_document(data: Path) -> None:
    md, js = load_oap(data / "notes.agent.md"), load_oap(data / "notes.agent.json")
    assert md.data == js.data
    assert md.encoding == "md" and js.encoding == "json"
    assert profile_digest(md.data) == profile_digest(js.data)


@pytest.mark.parametrize("name", ["scribe.agent.yaml", "notes.agent.md", "base.agent.yaml"])
def test_digests_equal_the_reference_implementation(data: Path, name: str) -> None:
    doc, _ = reference.load_document(data / name)
    ours = load_oap(data / name).data
    assert profile_digest(ours) == reference.profile_digest(doc)
    assert spec_digest(ours) == reference.spec_digest(doc)


def test_spec_digest_ignores_revision_updated_at_and_trust(data: Path) -> None:
    doc = load_oap(data / "scribe.agent.yaml").data
    changed = json.loads(json.dumps(doc))
    changed["metadata"].update(revision=99, updated_at="2030-01-01T00:00:00Z", trust="managed")
    changed["state"]["summary"] = "different"
    assert spec_digest(changed) == spec_digest(doc)
    assert profile_digest(changed) != profile_digest(doc)


# ---------------------------------------------------------------------------- gates


@pytest.mark.parametrize("version,code,rule", [
    ('"2.0"', "OAP003", "L1-P3"), ('"1.1"', "OAP004", "L1-P4"), ("1.0", "OAP003", "L1-P3"),
])
def test_versions_fail_closed(tmp_path: Path, version: str, code: str, rule: str) -> None:
    report = report_for(minimal(oap=version), tmp_path)
    assert not report.ok
    (finding,) = report.findings
    assert finding.code == code and f"[{rule}]" in finding.message
    assert finding.location.pointer == "/oap" and finding.location.line == 1
    if version == '"1.1"':
        assert "1.1" in finding.message and "newer" in finding.message


def test_unknown_kind_is_refused(tmp_path: Path) -> None:
    report = report_for(minimal(kind="AgentProfileBundle"), tmp_path)
    assert [f.code for f in report.findings] == ["OAP005"]


def test_schema_errors_carry_a_pointer_and_a_line(tmp_path: Path) -> None:
    text = minimal().replace("  name: tiny\n", "  name: tiny\n  vibes: high\n")
    report = report_for(text, tmp_path)
    (finding,) = report.findings
    assert finding.code == "OAP006" and finding.location.pointer == "/metadata"
    assert "vibes" in finding.message


@pytest.mark.parametrize(("line", "pointer", "hint"), [
    ("  vibes: high\n", "/metadata", ("remove it; harness-specific data goes in "
                                      "metadata.annotations (string values)")),
    ("  writeback: propose\n", "/metadata", "'writeback' belongs under /spec/lifecycle; "),
    ("  write_roots: [docs]\n", "/metadata",
     "'write_roots' belongs under /spec/permissions/filesystem; "),
])
def test_an_unexpected_key_says_where_it_belongs(tmp_path: Path, line: str, pointer: str,
                                                 hint: str) -> None:
    report = report_for(minimal().replace("  name: tiny\n", "  name: tiny\n" + line), tmp_path)
    (finding,) = report.findings
    assert finding.code == "OAP006" and finding.location.pointer == pointer
    assert finding.hint is not None and finding.hint.startswith(hint)


def test_date_time_format_is_enforced(tmp_path: Path) -> None:
    text = minimal().replace("  name: tiny\n", "  name: tiny\n  updated_at: yesterday\n")
    report = report_for(text, tmp_path)
    assert [f.location.pointer for f in report.findings] == ["/metadata/updated_at"]


def test_markdown_instructions_twice_is_refused_with_a_line(tmp_path: Path) -> None:
    text = ("---\noap: \"1.0\"\nkind: AgentProfile\nmetadata:\n  name: tiny\n"
            "  description: A tiny profile for the tests.\nspec:\n  role:\n"
            "    instructions: also here\n---\nbody\n")
    report = report_for(text, tmp_path, "tiny.agent.md")
    (finding,) = report.findings
    assert finding.code == "OAP002" and "[L3-G1" in finding.message
    assert finding.location.line == 9


def test_markdown_finding_lines_point_into_the_file(tmp_path: Path) -> None:
    text = ("---\noap: \"1.0\"\nkind: AgentProfile\nmetadata:\n  name: Tiny\n"
            "  description: A tiny profile for the tests.\n---\nbody\n")
    report = report_for(text, tmp_path, "Tiny.agent.md")
    (finding,) = [f for f in report.findings if f.code == "OAP006"]
    assert finding.location.line == 5


def test_literal_secrets_and_traversal_are_refused(tmp_path: Path) -> None:
    text = minimal() + ("  tools:\n    mcp_servers:\n      - name: gh\n        transport: stdio\n"
                        "        command: gh-mcp\n        env:\n          TOKEN: sk-live-abc123\n"
                        "  context:\n    files:\n      - path: ../../etc/passwd\n")
    codes = {f.code for f in report_for(text, tmp_path).findings}
    assert {"OAP007", "OAP008"} <= codes


@pytest.mark.parametrize("path", ["~/x", "file:///etc/passwd", "%2e%2e/etc", "/etc", "a/../../b"])
def test_paths_the_reference_lets_through_are_refused(tmp_path: Path, path: str) -> None:
    text = minimal() + f"  context:\n    working_directory: '{path}'\n"
    assert "OAP008" in {f.code for f in report_for(text, tmp_path).findings}


def test_undefined_variable_is_an_error_but_state_templates_only_warn(tmp_path: Path) -> None:
    text = minimal().replace("Do the thing.", "Do ${{ vars.MISSING }}.") + (
        "state:\n  summary: ${{ vars.X }}\n")
    findings = report_for(text, tmp_path).findings
    assert {(f.code, f.severity) for f in findings} == {("OAP009", "error"),
                                                        ("OAP103", "warning")}


def test_annotations_must_be_strings(tmp_path: Path) -> None:
    text = minimal().replace("  name: tiny\n", "  name: tiny\n  annotations:\n    a.b/c: {x: 1}\n")
    assert not report_for(text, tmp_path).ok


def test_integers_beyond_2_53_are_a_finding_not_a_crash(tmp_path: Path) -> None:
    text = minimal() + "  model:\n    parameters:\n      seed: 90071992547409930000\n"
    report = report_for(text, tmp_path)
    assert "OAP014" in {f.code for f in report.findings}


# ---------------------------------------------------------------------------- limits


def test_alias_bomb_is_refused_after_bounded_work(tmp_path: Path) -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{','.join(['*' + prev] * 9)}]")
    text = "\n".join(lines) + "\n"
    assert len(text.encode()) <= 1024
    path = tmp_path / "bomb.agent.yaml"
    path.write_text(text)
    with LoaderWork() as work:
        report = validate_file(path, limits=LoadLimits(max_alias_nodes=10_000))
    assert not report.ok and report.findings[0].code == "OAP001"
    assert "alias" in report.findings[0].message
    # Bounded work, not wall time: every event read at most once, copies within the limit.
    assert work.events <= len(list(yaml.parse(text)))
    assert work.values_copied <= 10_000


def test_deep_and_large_documents_are_refused(tmp_path: Path) -> None:
    deep = report_for("a: " + "[" * 300 + "]" * 300 + "\n", tmp_path)
    assert deep.findings[0].code == "OAP001" and "deeper" in deep.findings[0].message
    big = tmp_path / "big.agent.yaml"
    big.write_text(minimal() + "#" * 2048)
    report = validate_file(big, limits=LoadLimits(max_bytes=1024))
    assert "over the limit" in report.findings[0].message


def test_yaml_1_2_scalars_stay_strings() -> None:
    doc = load_oap_text(minimal().replace("Do the thing.", "yes"))
    assert doc.data["spec"]["role"]["instructions"] == "yes"


# ---------------------------------------------------------------------------- shared examples


@pytest.mark.shared
@pytest.mark.parametrize("name", VALID)
def test_shared_examples_validate_without_warnings(shared_dir: Path, name: str) -> None:
    report = validate_file(shared_dir / "oap-examples" / name)
    assert report.ok and report.findings == (), [f.render() for f in report.findings]


@pytest.mark.shared
@pytest.mark.parametrize("name", ["learned-conventions.delta.yaml", "closes-thread.delta.yaml"])
def test_shared_deltas_validate(shared_dir: Path, name: str) -> None:
    assert validate_file(shared_dir / "oap-examples" / name).ok


@pytest.mark.shared
@pytest.mark.parametrize("name", INVALID)
def test_shared_negative_fixtures_are_refused_naming_the_rule(shared_dir: Path, name: str) -> None:
    report = validate_file(shared_dir / "oap-examples" / "invalid" / name)
    assert not report.ok
    rules = " ".join(f.message for f in report.findings if f.severity == "error")
    assert f"[{EXPECTED_RULE[name]}" in rules


@pytest.mark.shared
def test_digests_equal_oap_validate_cli(shared_dir: Path) -> None:
    folder = shared_dir / "oap-examples"
    paths = [str(folder / n) for n in VALID]
    out = subprocess.run([sys.executable, "-m", "oap.validate", "--json", "--digest", *paths],
                         capture_output=True, text=True, check=False)
    oracle = {Path(r["path"]).as_posix(): r["digests"] for r in json.loads(out.stdout)}
    assert len(oracle) == len(paths)
    for p in paths:
        report = validate_file(p)
        assert oracle[Path(p).as_posix()] == {"profile": report.digest,
                                              "spec": report.spec_digest}


def test_name_wins_over_the_file_name_with_a_warning(tmp_path: Path) -> None:
    report = report_for(minimal(), tmp_path, "other.agent.yaml")
    assert report.ok and [f.code for f in report.findings] == ["OAP102"]


def test_state_entries_without_an_id_are_not_duplicates_of_each_other(tmp_path: Path) -> None:
    """Two facts missing their id get the schema's finding, never "duplicate id None"; a real
    duplicate is still OAP010."""
    facts = ("state:\n  facts:\n    - {text: one}\n    - {text: two}\n"
             "    - {id: f1, text: three}\n    - {id: f1, text: four}\n")
    findings = report_for(minimal() + facts, tmp_path).findings
    duplicates = [f.message for f in findings if f.code == "OAP010"]
    assert duplicates == ["/state/facts/3/id: duplicate id 'f1' [§A.4]"]
    assert any(f.code != "OAP010" and "/state/facts/0" in f.message for f in findings)
