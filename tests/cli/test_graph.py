"""``rein graph validate | plan | digest`` through ``rein.cli.main`` (no subprocess)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import ags
import pytest
from support import EXAMPLES

from rein.cli import main

NO_WORKER = EXAMPLES / "no-worker.agraph.yaml"

# Clean apart from one advisory: no max_cost_usd and no estimate anywhere (AG908).
WARNING_ONLY = """\
ags_version: "1.0"
kind: AgenticGraph
id: test/warn
title: Warns
objective: Has no cost preview.
entrypoints: [only]
nodes:
  only:
    title: Only
    description: The only node.
"""

# Two errors: an unknown dependency (AG114) and an undeclared param (AG203).
BROKEN = """\
ags_version: "1.0"
kind: AgenticGraph
id: test/broken
title: Broken
objective: Does not validate.
constraints: {max_cost_usd: 1}
entrypoints: [a]
nodes:
  a:
    title: A
    description: Reads a param nobody declared.
    inputs:
      x: {type: string, description: x, from: params.missing}
  b:
    title: B
    description: Depends on a ghost.
    depends_on: [ghost]
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- validate


def test_validate_clean_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "graph", "validate", "--strict", str(NO_WORKER))
    assert code == 0
    assert out == f"{NO_WORKER}: ok\n1 document: 0 errors, 0 warnings\n"


def test_validate_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "graph", "validate", "--json", str(NO_WORKER))
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["documents"]
    [doc] = data["documents"]
    assert set(doc) == {"path", "kind", "digest", "findings"}
    assert doc == {"path": str(NO_WORKER), "kind": "AgenticGraph",
                   "digest": ags.graph_digest(_load(NO_WORKER)), "findings": []}


def test_validate_errors_exit_1_with_locations_and_json(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    path = write(workspace, "broken.agraph.yaml", BROKEN)
    code, out, _ = run(capsys, "graph", "validate", str(path))
    assert code == 1
    # file:line:column: severity CODE: message, then the hint on its own line
    assert re.search(rf"^{re.escape(str(path))}:17:\d+: error AG114: .*\n    hint: ", out, re.MULTILINE)
    assert re.search(rf"^{re.escape(str(path))}:13:\d+: error AG203: ", out, re.MULTILINE)
    assert out.rstrip().endswith("1 document: 2 errors, 1 warning")
    code, out, _ = run(capsys, "graph", "validate", "--json", str(path))
    assert code == 1
    findings = json.loads(out)["documents"][0]["findings"]
    assert sorted(f["code"] for f in findings) == ["AG114", "AG203", "AG903"]
    for f in findings:
        if f["code"] == "AG903":
            continue
        assert set(f) >= {"code", "severity", "message", "location"}
        assert f["severity"] == "error"
        assert f["location"]["file"] == str(path) and f["location"]["line"]


def test_warnings_fail_only_under_strict(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    path = write(workspace, "warn.agraph.yaml", WARNING_ONLY)
    code, out, _ = run(capsys, "graph", "validate", str(path))
    assert code == 0 and "warning AG908" in out
    code, _, _ = run(capsys, "graph", "validate", "--strict", str(path))
    assert code == 2
    code, out, _ = run(capsys, "graph", "validate", "--strict", "--json", str(path))
    assert code == 2
    assert [f["code"] for f in json.loads(out)["documents"][0]["findings"]] == ["AG908"]


def test_unreadable_files_are_findings_not_crashes(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    binary = write(workspace, "binary.agraph.yaml", b"\x00\xff\xfe not a graph")
    code, out, err = run(capsys, "graph", "validate", "--json", "missing.agraph.yaml",
                         str(binary), str(NO_WORKER))
    assert code == 1
    assert "Traceback" not in out + err
    docs = json.loads(out)["documents"]
    assert [d["path"] for d in docs] == ["missing.agraph.yaml", str(binary), str(NO_WORKER)]
    assert docs[0]["findings"][0]["code"] == "AG001"
    assert "no such file" in docs[0]["findings"][0]["message"]
    assert docs[1]["findings"][0]["severity"] == "error"
    assert docs[0]["digest"] is None
    assert docs[2]["findings"] == []


def test_validate_folders_recursively(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    nested = workspace / "graphs" / "deep"
    nested.mkdir(parents=True)
    shutil.copy(NO_WORKER, nested / "a.agraph.yaml")
    write(workspace / "graphs", "b.agraph.yaml", WARNING_ONLY)
    write(workspace / "graphs", "notes.yaml", "not: a graph")  # ignored: not *.agraph.*
    code, out, _ = run(capsys, "graph", "validate", "--json", "graphs")
    assert code == 0
    paths = [Path(d["path"]).name for d in json.loads(out)["documents"]]
    assert paths == ["b.agraph.yaml", "a.agraph.yaml"]


def test_a_folder_without_graphs_fails(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    (workspace / "empty").mkdir()
    code, out, err = run(capsys, "graph", "validate", "empty")
    assert code == 1 and out == "" and "no *.agraph.yaml" in err
    code, out, _ = run(capsys, "graph", "validate", "--json", "empty")
    assert code == 1 and json.loads(out) == {"documents": []}


def test_validate_needs_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "graph", "validate")
    assert code == 64 and "Missing argument" in err


# ---------------------------------------------------------------------------- plan


def test_plan_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "graph", "plan", str(NO_WORKER))
    assert code == 0
    assert out.startswith("Plan: Sort a release checklist without calling a model\n")
    assert "worst case 30 node executions (ceiling 100)" in out


def test_plan_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "graph", "plan", "--json", str(NO_WORKER))
    assert code == 0
    data = json.loads(out)
    assert data["worst_case_executions"] == 30 and type(data["worst_case_executions"]) is int
    for key in ("order", "groups", "notices", "tiers", "gates", "budgets",
                "projected_cost_usd", "digest", "scopes", "findings"):
        assert key in data, key
    assert data["order"] == ["size_up", "announce_start", "classify_items", "count_down",
                             "verdict"]
    assert data["groups"] == [["size_up"], ["announce_start", "classify_items", "count_down"],
                              ["verdict"]]
    assert data["digest"] == ags.graph_digest(_load(NO_WORKER))


@pytest.mark.parametrize(("fmt", "first"), [("mermaid", "flowchart TD"),
                                             ("dot", 'digraph "rein/examples/no-worker" {')])
def test_plan_pictures(capsys: pytest.CaptureFixture[str], fmt: str, first: str) -> None:
    code, out, _ = run(capsys, "graph", "plan", "--format", fmt, str(NO_WORKER))
    assert code == 0
    assert out.splitlines()[0] == first


def test_plan_refuses_a_document_with_errors(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    path = write(workspace, "broken.agraph.yaml", BROKEN)
    code, out, err = run(capsys, "graph", "plan", str(path))
    assert code == 1
    assert "error AG114" in out and "cannot be planned" in err
    assert "Plan:" not in out
    code, out, _ = run(capsys, "graph", "plan", "--json", str(path))
    assert code == 1
    assert "worst_case_executions" not in json.loads(out)
    code, _, _ = run(capsys, "graph", "plan", "missing.agraph.yaml")
    assert code == 1


def test_plan_with_warnings_still_plans(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    path = write(workspace, "warn.agraph.yaml", WARNING_ONLY)
    code, out, err = run(capsys, "graph", "plan", str(path))
    assert code == 0 and "Plan: Warns" in out and "AG908" in err


def test_plan_json_and_format_together_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, _ = run(capsys, "graph", "plan", "--json", "--format", "dot", str(NO_WORKER))
    assert code == 64


# ---------------------------------------------------------------------------- digest


def test_digest_is_the_ags_digest(capsys: pytest.CaptureFixture[str]) -> None:
    expected = ags.graph_digest(_load(NO_WORKER))
    code, out, _ = run(capsys, "graph", "digest", str(NO_WORKER))
    assert (code, out) == (0, expected + "\n")
    code, out, _ = run(capsys, "graph", "digest", "--json", str(NO_WORKER))
    assert json.loads(out) == {"path": str(NO_WORKER), "digest": expected}


def test_digest_of_an_unparsable_file(
    capsys: pytest.CaptureFixture[str], workspace: Path,
) -> None:
    path = write(workspace, "bad.agraph.yaml", "a: [unclosed\n")
    code, out, err = run(capsys, "graph", "digest", str(path))
    assert code == 1 and out == "" and "Traceback" not in err
    assert "invalid YAML" in err
    code, out, _ = run(capsys, "graph", "digest", "--json", str(path))
    assert code == 1 and json.loads(out)["error"]["code"]


@pytest.mark.parametrize("text, what", [("", "an empty document"), ("[1, 2]\n", "an array"),
                                        ("just words\n", "a string")])
def test_digest_refuses_a_document_that_is_not_an_object(
    capsys: pytest.CaptureFixture[str], workspace: Path, text: str, what: str,
) -> None:
    path = write(workspace, "odd.agraph.yaml", text)
    code, out, err = run(capsys, "graph", "digest", str(path))
    assert (code, out) == (1, "")
    assert f"AG001: the document must be a JSON object (a mapping), not {what}" in err


# ---------------------------------------------------------------------------- help


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("rein ")


@pytest.mark.parametrize("command", ["validate", "plan", "digest"])
def test_every_command_has_an_example_and_its_exit_codes(
    capsys: pytest.CaptureFixture[str], command: str,
) -> None:
    code, out, _ = run(capsys, "graph", command, "--help")
    assert code == 0
    assert "Example:" in out and f"rein graph {command}" in out
    flat = " ".join(out.split())
    assert "Exit codes: 0" in flat and "64 usage error" in flat


def test_graph_group_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "graph", "--help")
    assert code == 0
    assert all(name in out for name in ("validate", "plan", "digest", "Example:"))


def _load(path: Path):
    from rein.formats.loader import load_path

    return load_path(path).data
