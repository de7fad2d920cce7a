"""``rein app-server generate-json-schema``: the committed copy is what the command writes,
and the schema describes rein's own messages (checked in the SDK tests, ``off_schema``)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from support import ROOT

from rein.cli import main

COMMITTED = ROOT / "docs" / "app-server-schema"


def test_the_committed_schema_is_current(tmp_path: Path,
                                         capsys: object) -> None:
    assert main(["app-server", "generate-json-schema", "--out", str(tmp_path)]) == 0
    fresh = {p.name: p.read_text() for p in sorted(tmp_path.glob("*.json"))}
    committed = {p.name: p.read_text() for p in sorted(COMMITTED.glob("*.json"))}
    assert sorted(fresh) == sorted(committed)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], "run: rein app-server generate-json-schema --out docs/app-server-schema"


def test_the_schema_rejects_what_rein_does_not_send() -> None:
    union = json.loads((COMMITTED / "ServerNotification.json").read_text())
    good = {"method": "turn/plan/updated", "params": {
        "threadId": "t", "turnId": "u", "plan": [{"step": "a", "status": "pending"}]}}
    jsonschema.validate(good, union)
    for bad in ({"method": "turn/plan/updated", "params": {"threadId": "t", "turnId": "u"}},
                {"method": "node/started", "params": {}},
                {"method": "turn/plan/updated", "params": {
                    **good["params"], "plan": [{"step": "a", "status": "done"}]}}):
        assert not jsonschema.Draft7Validator(union).is_valid(bad)
    methods = [v["properties"]["method"]["enum"][0] for v in union["oneOf"]]
    assert not any(m.startswith(("node/", "attempt/", "run/")) for m in methods)
