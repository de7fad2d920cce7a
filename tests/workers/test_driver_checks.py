"""The driver's instruction says what rein will check, so the agent can check it first."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

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
    assert main(["next", "--json"]) == 3
    status = json.loads(capsys.readouterr().out)
    assert status["checks"] == [
        {"id": "exists", "kind": "file_exists", "description": "hello.txt exists.",
         "severity": "required"},
        {"id": "says_hello", "kind": "command", "description": "hello.txt says hello.",
         "severity": "advisory"},
    ]
    assert main(["driver", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)["instruction"]
    jsonschema.validate({k: v for k, v in status.items() if k in schema["properties"]}
                        | {"protocol": status["protocol"]}, schema)
    assert main(["next"]) == 3
    text = capsys.readouterr().out
    assert "## Checked by rein after you submit" in text
    assert "- exists (file_exists): hello.txt exists." in text
    assert "- says_hello (command, advisory): hello.txt says hello." in text
