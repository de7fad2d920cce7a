"""file_exists and artifact_present: what was produced, and only inside the workspace."""

from __future__ import annotations

import pytest
from criteria_helpers import check


def _write(ctx, rel: str, size: int) -> None:
    path = ctx.workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_exact_path_passes_with_path_and_size(ctx_for):
    ctx = ctx_for()
    _write(ctx, "dist/report.md", 120)
    result = check({"id": "f", "kind": "file_exists", "path": "dist/report.md"}, ctx)
    assert result.passed
    assert result.evidence == {"path": "dist/report.md", "bytes": 120}
    assert result.to_record()["evidence"] == '{"path":"dist/report.md","bytes":120}'


def test_missing_file_fails(ctx_for):
    result = check({"id": "f", "kind": "file_exists", "path": "dist/report.md"}, ctx_for())
    assert not result.passed
    assert result.error is None
    assert result.evidence == {"path": "dist/report.md", "matched": 0, "min_bytes": 0}


def test_min_bytes_counts(ctx_for):
    ctx = ctx_for()
    _write(ctx, "notes.md", 10)
    criterion = {"id": "f", "kind": "file_exists", "path": "notes.md", "min_bytes": 11}
    result = check(criterion, ctx)
    assert not result.passed
    assert result.evidence["largest"] == {"path": "notes.md", "bytes": 10}
    assert check({**criterion, "min_bytes": 10}, ctx).passed


def test_empty_file_passes_with_default_min_bytes(ctx_for):
    ctx = ctx_for()
    _write(ctx, "empty.txt", 0)
    assert check({"id": "f", "kind": "file_exists", "path": "empty.txt"}, ctx).passed


def test_glob_finds_the_first_big_enough_match(ctx_for):
    ctx = ctx_for()
    _write(ctx, "site/a.html", 5)
    _write(ctx, "site/deep/b.html", 500)
    criterion = {"id": "f", "kind": "file_exists", "path": "site/**/*.html", "min_bytes": 100}
    result = check(criterion, ctx)
    assert result.passed
    assert result.evidence == {"path": "site/deep/b.html", "bytes": 500}
    assert not check({**criterion, "path": "site/*.css"}, ctx).passed


def test_a_directory_is_not_a_file(ctx_for):
    ctx = ctx_for()
    (ctx.workspace / "build").mkdir()
    assert not check({"id": "f", "kind": "file_exists", "path": "build"}, ctx).passed
    assert not check({"id": "f", "kind": "file_exists", "path": "bui*"}, ctx).passed


@pytest.mark.parametrize(
    "path", ["../secret.txt", "a/../../secret.txt", "../*.txt", "**/../../*.txt", "/etc/passwd"]
)
def test_paths_outside_the_workspace_are_refused(ctx_for, tmp_path, path):
    (tmp_path / "secret.txt").write_text("outside")
    result = check({"id": "f", "kind": "file_exists", "path": path}, ctx_for())
    assert not result.passed
    assert result.error_code == "CRIT002"
    assert "workspace" in result.error or "climbs out" in result.error


def test_symlink_pointing_outside_does_not_count(ctx_for, tmp_path):
    ctx = ctx_for()
    (tmp_path / "outside.txt").write_text("not yours")
    (ctx.workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    exact = check({"id": "f", "kind": "file_exists", "path": "link.txt"}, ctx)
    assert not exact.passed and exact.error_code == "CRIT002"
    globbed = check({"id": "f", "kind": "file_exists", "path": "*.txt"}, ctx)
    assert not globbed.passed and globbed.evidence["matched"] == 0


def test_bad_min_bytes_is_an_error(ctx_for):
    result = check({"id": "f", "kind": "file_exists", "path": "x", "min_bytes": -1}, ctx_for())
    assert result.error_code == "CRIT001"


@pytest.mark.parametrize(
    ("value", "evidence"),
    [
        ("https://example.org/pkg/1.0", "output 'url' is present (string of 27 characters)"),
        ([1, 2], "output 'url' is present (array of 2 items)"),
        ({"id": "a"}, "output 'url' is present (object with 1 keys)"),
        (0, "output 'url' is present (number)"),
        (False, "output 'url' is present (boolean)"),
    ],
)
def test_artifact_present_passes_for_non_empty_values(ctx_for, value, evidence):
    result = check({"id": "a", "kind": "artifact_present", "output": "url"}, ctx_for({"url": value}))
    assert result.passed
    assert result.evidence == evidence


@pytest.mark.parametrize(
    ("value", "evidence"),
    [
        (None, "output 'url' is empty (null)"),
        ("", "output 'url' is empty ('')"),
        ([], "output 'url' is empty ([])"),
        ({}, "output 'url' is empty ({})"),
    ],
)
def test_artifact_present_fails_for_empty_values(ctx_for, value, evidence):
    result = check({"id": "a", "kind": "artifact_present", "output": "url"}, ctx_for({"url": value}))
    assert not result.passed
    assert result.evidence == evidence


def test_artifact_present_fails_when_not_produced(ctx_for):
    result = check({"id": "a", "kind": "artifact_present", "output": "url"}, ctx_for({}))
    assert not result.passed
    assert result.evidence == "output 'url' was not produced"
