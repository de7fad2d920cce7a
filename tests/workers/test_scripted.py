"""The scripted test double writes its ``files:`` as a real worker would: inside the
workspace, under the node's ``fs:write`` grants, rein's policy and the sandbox, or not at all."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.core.failures import FailureClass
from rein.profiles.policy import Policy
from rein.workers.base import AttemptRequest, AttemptResult, Item, ItemKind
from rein.workers.scripted import ScriptedWorker


def request(ws: Path, *, permissions: tuple[str, ...] = ("fs:write:**",),
            access: str = "read_write") -> AttemptRequest:
    return AttemptRequest(run_id="run_1", node_id="draft", attempt=1, kind="task",
                          title="Draft", brief="Draft it.", inputs={}, outputs=(),
                          permissions=permissions, tools=(), workspace=str(ws),
                          workspace_access=access)  # type: ignore[arg-type]


def run(worker: ScriptedWorker, req: AttemptRequest) -> tuple[list[Item], AttemptResult]:
    async def collect() -> list[Any]:
        return [step async for step in worker.run(req)]

    steps = asyncio.run(collect())
    result = steps[-1]
    assert isinstance(result, AttemptResult)
    return [s for s in steps[:-1] if isinstance(s, Item)], result


def answering(files: dict[str, str], **extra: Any) -> ScriptedWorker:
    return ScriptedWorker({"nodes": {"draft": [{"outputs": {"doc": "a.md"}, "files": files}]}},
                          **extra)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    return root


def refused(ws: Path, worker: ScriptedWorker, req: AttemptRequest) -> str:
    items, result = run(worker, req)
    assert result.failure is FailureClass.PERMISSION_DENIED
    assert result.outputs == {}
    [item] = [i for i in items if i.kind is ItemKind.TOOL_RESULT]
    assert item.data["refused"] is True and item.data["content"] == result.message
    return str(result.message)


def test_an_allowed_file_is_written_below_new_folders(ws: Path) -> None:
    _, result = run(answering({"docs/a.md": "# A\n"}), request(ws))
    assert result.failure is None and result.outputs == {"doc": "a.md"}
    assert (ws / "docs" / "a.md").read_text() == "# A\n"


def test_an_absolute_path_outside_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    message = refused(ws, answering({str(target): "x"}), request(ws))
    assert "outside the workspace" in message
    assert not target.exists()


def test_dot_dot_is_refused(ws: Path, tmp_path: Path) -> None:
    message = refused(ws, answering({"../escape.txt": "x"}), request(ws))
    assert "outside the workspace" in message
    assert not (tmp_path / "escape.txt").exists()


def test_a_symlink_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    refused(ws, answering({"link/x.txt": "x"}), request(ws))
    assert not (outside / "x.txt").exists()


def test_git_hooks_are_never_written_even_with_a_grant_for_everything(ws: Path) -> None:
    message = refused(ws, answering({".git/hooks/pre-commit": "#!/bin/sh\ncurl evil\n"}),
                      request(ws))
    assert "protected" in message
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


def test_a_read_only_node_writes_nothing(ws: Path) -> None:
    message = refused(ws, answering({"a.md": "x"}), request(ws, access="read_only"))
    assert "read-only" in message
    assert not (ws / "a.md").exists()


def test_a_path_outside_the_fs_write_grants_is_refused(ws: Path) -> None:
    req = request(ws, permissions=("fs:read:**", "fs:write:docs/**"))
    message = refused(ws, answering({"src/app.py": "x"}), req)
    assert "fs:write:src/app.py" in message and "docs/**" in message
    assert not (ws / "src").exists()


def test_one_refused_file_writes_none_of_them(ws: Path) -> None:
    req = request(ws, permissions=("fs:write:docs/**",))
    refused(ws, answering({"docs/ok.md": "fine", "setup.py": "evil"}), req)
    assert not (ws / "docs").exists() and not (ws / "setup.py").exists()


def test_an_oversized_file_is_refused_before_any_file_is_written(ws: Path) -> None:
    from rein.tools.files import MAX_WRITE_BYTES

    big = "x" * (MAX_WRITE_BYTES + 1)
    assert "larger than" in refused(ws, answering({"a.md": "fine", "b.md": big}), request(ws))
    assert not (ws / "a.md").exists() and not (ws / "b.md").exists()


def test_reins_policy_narrows_the_grants_as_for_a_model(ws: Path) -> None:
    policy = Policy.from_mapping({"edit": "deny"})
    refused(ws, answering({"a.md": "x"}, policy=policy), request(ws))
    asking = Policy.from_mapping({"edit": "ask"})  # a test double has nobody to ask
    refused(ws, answering({"a.md": "x"}, policy=asking), request(ws))
    assert not (ws / "a.md").exists()


def test_files_that_are_not_a_mapping_are_refused(ws: Path) -> None:
    worker = ScriptedWorker({"nodes": {"draft": [{"files": ["a.md"]}]}})
    assert "must map paths to text" in refused(ws, worker, request(ws))


_segments = st.sampled_from(["..", ".", ".git", "hooks", ".rein", "link", "a", "b.txt", "",
                             "docs", "x.md"])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_segments, min_size=1, max_size=5), absolute=st.booleans(),
       read_only=st.booleans())
def test_no_answer_path_writes_outside_what_the_node_may_write(
        tmp_path: Path, parts: list[str], absolute: bool, read_only: bool) -> None:
    """Whatever path an answer names, nothing lands outside the workspace, in .git or
    .rein, or anywhere at all on a read-only node."""
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        base = Path(tmp)
        root, outside = base / "ws", base / "outside"
        for d in (root / ".git" / "hooks", root / ".rein", outside):
            d.mkdir(parents=True)
        (root / "link").symlink_to(outside)
        name = ("/" if absolute else "") + "/".join(parts)
        if absolute and parts[0] not in ("..", "."):
            name = str(root) + name  # an absolute path into the workspace is fine
        before = sorted(str(p) for p in base.rglob("*"))
        _, result = run(answering({name: "x"}),
                        request(root, access="read_only" if read_only else "read_write"))
        after = sorted(str(p) for p in base.rglob("*"))
        new = [Path(p) for p in set(after) - set(before)]
        if result.failure is not None:
            assert new == []
            return
        assert not read_only and new
        for path in new:
            rel = path.resolve().relative_to(root.resolve())
            assert rel.parts[0] not in (".git", ".rein")
        assert not any(outside.iterdir())
