"""The driver's instruction says what rein will check, so the agent can check it first."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from rein.cli import main

GRAPH = """\
ags_version: "1.0"
kind: AgenticGraph
id: checks/demo
title: Checks are listed
objective: Show the agent what will be checked.
constraints: {max_cost_usd: 1}
entrypoints: [write]
nodes:
  write:
    title: Write a file
    description: Write hello.txt containing the word hello.
    outputs:
      file: {type: file, description: the file, path_hint: hello.txt}
    requirements: {permissions: ["fs:write:hello.txt"], workspace: read_write}
    success:
      criteria:
        - {id: exists, kind: file_exists, description: hello.txt exists., path: hello.txt}
        - {id: says_hello, kind: command, description: hello.txt says hello.,
           run: "grep -q hello hello.txt", severity: advisory}
"""


def test_instruction_lists_the_checks(workspace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (workspace / "g.agraph.yaml").write_text(GRAPH)
    assert main(["graph", "digest", "g.agraph.yaml"]) == 0
    digest = capsys.readouterr().out.strip()
    assert main(["run", "g.agraph.yaml", "--approve", digest]) == 3
    capsys.readouterr()
    assert main(["next", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["checks"] == [
        {"id": "exists", "kind": "file_exists", "description": "hello.txt exists.",
         "severity": "required", "params": {"path": "hello.txt"}},
        {"id": "says_hello", "kind": "command", "description": "hello.txt says hello.",
         "severity": "advisory", "params": {"run": "grep -q hello hello.txt"}},
    ]
    assert main(["driver", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)["instruction"]
    jsonschema.validate({k: v for k, v in status.items() if k in schema["properties"]}
                        | {"protocol": status["protocol"]}, schema)
    assert main(["next"]) == 0
    text = capsys.readouterr().out
    assert "## Checked by rein after you submit" in text
    assert "- exists (file_exists): hello.txt exists." in text
    assert "- says_hello (command, advisory): hello.txt says hello.\n  run: grep -q hello " \
        "hello.txt" in text
    assert "- file [file, required] (the value is its path: hello.txt): the file" in text


def test_an_advisory_failure_is_reported_to_the_agent(
        workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "g.agraph.yaml").write_text(GRAPH)
    assert main(["graph", "digest", "g.agraph.yaml"]) == 0
    digest = capsys.readouterr().out.strip()
    assert main(["run", "g.agraph.yaml", "--approve", digest]) == 3
    capsys.readouterr()
    assert main(["next", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    (workspace / "hello.txt").write_text("bonjour\n")  # exists, but does not say hello
    (workspace / ".rein" / "inbox.json").write_text(json.dumps(status["example"]))
    assert main(["submit", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["status"] == "done"
    assert [f["id"] for f in done["advisory_failures"]] == ["says_hello"]
    assert "exit_code" in str(done["advisory_failures"][0]["evidence"])


def test_a_text_output_with_a_path_says_the_value_is_the_content(tmp_path: Path) -> None:
    from rein.workers.driver.render import carries

    text = carries({"type": "markdown", "path_hint": "docs/summary.md"})
    assert text == " (the value is the text itself, not a path; also write it to " \
        "docs/summary.md)"
    assert carries({"type": "file", "path_hint": "a.txt"}) == " (the value is its path: a.txt)"
