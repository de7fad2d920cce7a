"""``rein submit`` reads its envelope safely: a FIFO, a device or a huge file at the inbox is
refused at once (exit 4), without blocking and without reading more than the limit."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.workers.driver.protocol import MAX_ENVELOPE_BYTES


def inbox(workspace: Path) -> Path:
    path = workspace / ".rein" / "inbox.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def submit(capsys: Any, *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["submit", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


class ReadCounter:
    """A named test double: counts bytes read from file descriptors while active."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bytes = 0
        real = os.read

        def counting_read(fd: int, n: int) -> bytes:
            data = real(fd, n)
            self.bytes += len(data)
            return data

        monkeypatch.setattr(os, "read", counting_read)


def test_a_fifo_inbox_is_refused_without_waiting(workspace: Path, capsys: Any) -> None:
    os.mkfifo(inbox(workspace))  # no writer: a blocking open or read would wait forever
    code, body = submit(capsys)
    assert code == 4
    assert body["error"]["code"] == "DRIVER_NO_ENVELOPE"
    assert "is not a regular file" in body["error"]["message"]


def test_an_inbox_linked_to_dev_zero_is_refused_unread(workspace: Path, capsys: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    inbox(workspace).symlink_to("/dev/zero")
    reads = ReadCounter(monkeypatch)
    code, body = submit(capsys)
    assert code == 4
    assert "is not a regular file" in body["error"]["message"]
    assert reads.bytes == 0


def test_a_200_mb_inbox_is_refused_unread(workspace: Path, capsys: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with inbox(workspace).open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: no disk used
    reads = ReadCounter(monkeypatch)
    code, body = submit(capsys)
    assert code == 4
    assert body["error"]["code"] == "DRIVER_ENVELOPE_LIMIT"
    assert f"over the limit of {MAX_ENVELOPE_BYTES:,}" in body["error"]["message"]
    assert reads.bytes == 0


def test_stdin_is_read_only_to_the_limit(workspace: Path, capsys: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.BytesIO(b" " * (3 * MAX_ENVELOPE_BYTES))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(stream))
    code, body = submit(capsys, "-")
    assert code == 4
    assert body["error"]["code"] == "DRIVER_ENVELOPE_LIMIT"
    assert stream.tell() <= MAX_ENVELOPE_BYTES + 1


def test_an_inbox_that_is_not_utf8_is_refused(workspace: Path, capsys: Any) -> None:
    inbox(workspace).write_bytes(b'{"token": "\xff"}')
    code, body = submit(capsys)
    assert code == 4
    assert body["error"]["message"].endswith("is not UTF-8 (byte 0xff at offset 11)")
