"""A graph's attachments are read from the workspace only: a path that leaves it is never read,
so a cloned graph cannot ship a file of the user's (``~/.ssh/id_rsa``) to a worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rein.core.states import RunStatus
from tests.scenarios.build import Run, graph, inp, out, task


def _graph(path: str) -> dict[str, Any]:
    node = task("read", inputs={"doc": inp("attachments.doc", "text")}, outputs=out("v"))
    return graph({"read": node}, ["read"],
                 attachments=[{"name": "doc", "description": "Reference.", "path": path}],
                 outputs={"v": {"type": "string", "description": "v",
                                "from": "nodes.read.outputs.v"},
                          "doc": {"type": "text", "description": "What the node was given.",
                                  "from": "attachments.doc"}})


def _given(tmp_path: Path, path: str) -> Any:
    run = Run(tmp_path, _graph(path), {"read": [{"outputs": {"v": "x"}}]})
    assert run.start().status is RunStatus.SUCCEEDED
    return run.record()["outputs"]["doc"]


def test_an_attachment_in_the_workspace_is_read(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the notes\n")
    assert _given(tmp_path, "notes.md") == "the notes\n"


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_an_attachment_outside_the_workspace_is_never_read(tmp_path: Path, how: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY\n")
    path = {"absolute": str(secret), "dotdot": "../id_rsa", "symlink": "link"}[how]
    if how == "symlink":
        (ws / "link").symlink_to(secret)
    given = _given(ws, path)
    assert "PRIVATE KEY" not in str(given)
    assert given == path  # given as the path it is, like a file that does not exist
