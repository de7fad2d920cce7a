"""The read and search tools meet whatever is in the workspace: a FIFO (which an agent's
own shell command can create) must not block them, and a huge file is not read whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rein.tools.files import MAX_FILE_BYTES, read_file, search_files
from rein.tools.paths import ToolFailure, resolve_in_workspace


def test_reading_a_fifo_is_a_tool_failure_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ToolFailure) as info:
        read_file(resolve_in_workspace(tmp_path, "pipe"), {})
    assert info.value.code == "TOOL021"
    assert "not a regular file" in info.value.message


def test_reading_a_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    with (tmp_path / "huge.log").open("wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse
    with pytest.raises(ToolFailure) as info:
        read_file(resolve_in_workspace(tmp_path, "huge.log"), {})
    assert info.value.code == "TOOL028"


def test_search_skips_a_fifo_and_still_finds_text(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a-pipe")
    (tmp_path / "b.txt").write_text("one\r\ntwo needle\rthree needle\n")
    result = search_files(resolve_in_workspace(tmp_path, "."), {"pattern": "needle"},
                          workspace=tmp_path, readable=lambda rel: True)
    assert result.content == "b.txt:2: two needle\nb.txt:3: three needle"
