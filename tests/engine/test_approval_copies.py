"""An approval keeps a copy of each text file it shows, from the bytes its digest is computed
over, within a bound; the copy is checked against that digest before it is shown."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rein.core.ids import ApprovalId, RunId
from rein.core.states import ApprovalKind, ApprovalStatus
from rein.engine.run.material import (
    KEPT,
    kept_copy,
    material_digest,
    shown_files,
    shown_material,
)
from rein.store.base import ApprovalRow


def _row(request: dict[str, Any], kind: ApprovalKind = ApprovalKind.GATE,
         digest: str = "sha256:0") -> ApprovalRow:
    return ApprovalRow(approval_id=ApprovalId("apv-1"), run_id=RunId("run-1"), key="gate:x",
                       kind=kind, status=ApprovalStatus.PENDING, digest=digest,
                       request=request, created_at="2026-01-01T00:00:00Z")


def test_a_text_file_is_kept_with_the_digest_of_the_same_bytes(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text("the plan\n")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    (tmp_path / "nul.txt").write_bytes(b"text\x00with a NUL")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("a")
    names = ["plan.md", "blob.bin", "nul.txt", "dir"]
    files, kept = shown_material(tmp_path, names)
    assert files == shown_files(tmp_path, names)
    assert files["plan.md"] == "sha256:" + hashlib.sha256(b"the plan\n").hexdigest()
    assert kept == {"plan.md": "the plan\n"}  # not binary, not a directory


def test_copies_stop_at_the_bound_and_the_digests_do_not(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x" * 60)
    (tmp_path / "b.txt").write_text("y" * 60)
    (tmp_path / "c.txt").write_text("z" * 30)
    files, kept = shown_material(tmp_path, ["a.txt", "b.txt", "c.txt"], room=100)
    assert set(files) == {"a.txt", "b.txt", "c.txt"}
    assert kept == {"a.txt": "x" * 60, "c.txt": "z" * 30}  # b does not fit; c does


def test_the_copies_are_not_in_the_material_digest(tmp_path: Path) -> None:
    request = {"prompt": "ok?", "files": {"plan.md": "sha256:ab"}}
    assert material_digest({**request, KEPT: {"plan.md": "anything"}}) == \
        material_digest(request)


def test_a_copy_is_shown_only_when_it_is_the_content_bound() -> None:
    text = "the plan\n"
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert kept_copy(_row({"files": {"p": digest}, KEPT: {"p": text}}), "p") == \
        ("intact", text)
    assert kept_copy(_row({"files": {"p": digest}, KEPT: {"p": "other\n"}}), "p") == \
        ("altered", None)
    assert kept_copy(_row({"files": {"p": digest}}), "p") == ("none", None)
    assert kept_copy(_row({KEPT: {"p": text}}), "p") == ("none", None)
