"""Profile state files (memory, the proposal queue) damaged or hostile: a StoreError with
its code, never a RecursionError or an AttributeError out of rein."""

from __future__ import annotations

from pathlib import Path

import pytest

from rein.errors import StoreError
from rein.profiles.memory import MemoryStore
from rein.profiles.proposals import Queue

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text, code", [(DEEP, "MEM010"), ('{"a": ' + "1" * 5000 + "}",
                                                           "MEM010")])
def test_a_hostile_memory_file_is_mem010(tmp_path: Path, text: str, code: str) -> None:
    path = tmp_path / "memory.json"
    path.write_text(text)
    store = MemoryStore(name="m", path=path, mode="read_only", scopes=("*",))
    with pytest.raises(StoreError) as info:
        store._read()
    assert info.value.code == code


@pytest.mark.parametrize("text, code", [(DEEP, "OAP260"), ("[1, 2]", "OAP261")])
def test_a_hostile_proposal_queue_is_a_store_error(tmp_path: Path, text: str, code: str) -> None:
    path = tmp_path / "proposals.json"
    path.write_text(text)
    with pytest.raises(StoreError) as info:
        Queue(path=path)._read()
    assert info.value.code == code
