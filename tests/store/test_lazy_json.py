"""A stored snapshot read lazily is the same object, and a driver's status read leaves the
snapshot's entries unparsed (bounded work, not a timing)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ROOT

from rein.store.lazy_json import LazyObject
from rein.store.sql import SQLStore, dump_ordered

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                  max_size=3),
    max_leaves=8)
OBJECTS = st.dictionaries(st.text(max_size=5), JSON, max_size=6)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(value=OBJECTS, probe=st.text(max_size=5), spaced=st.booleans())
def test_a_lazy_object_is_the_parsed_object(value: dict[str, Any], probe: str,
                                            spaced: bool) -> None:
    text = json.dumps(value, indent=1 if spaced else None) if spaced else dump_ordered(value)
    for key in [*value, probe]:
        lazy = LazyObject(text)
        assert lazy.get(key) == value.get(key)  # one lookup first, the rest after it
        assert (key in lazy) == (key in value)
        assert lazy == value and value == lazy and dict(lazy) == value
        assert list(lazy) == list(value) and len(lazy) == len(value)
        assert repr(lazy) == repr(value)
        assert bool(LazyObject(text)) == bool(value)


def test_a_lookup_parses_only_the_members_before_it() -> None:
    snapshot = {"version": 2, "root": "/ws", "taken_ns": 5,
                "entries": {f"f{i}": ["file", "x", [1], False] for i in range(1000)},
                "refs": {}, "partial": False}
    lazy = LazyObject(dump_ordered(snapshot))
    assert lazy.get("root") == "/ws"
    assert lazy.parsed() == {"version", "root"}
    assert lazy["taken_ns"] == 5 and "entries" not in lazy.parsed()
    assert lazy["entries"]["f999"] == ["file", "x", [1], False]
    assert lazy == snapshot


@pytest.mark.parametrize("text", ["[1, 2]", '{"a": 1', '{"a" 1}', '{"a": 1 "b": 2}', "{1: 2}"])
def test_what_is_not_a_stored_object_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        dict(LazyObject(text))


def test_the_driver_status_read_parses_no_snapshot_entries(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    demo = ROOT / "examples" / "driver-demo.agraph.yaml"
    shutil.copy(demo, tmp_path / demo.name)
    for i in range(50):
        (tmp_path / f"m{i}.txt").write_text(str(i))
    rein = str(Path(sys.executable).parent / "rein")
    digest = subprocess.run([rein, "graph", "digest", demo.name], cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout.strip()
    subprocess.run([rein, "run", demo.name, "--approve", digest], cwd=tmp_path,
                   check=False, capture_output=True)
    read: list[Any] = []
    real = SQLStore._turn
    monkeypatch.setattr(SQLStore, "_turn", staticmethod(lambda r: read.append(real(r))
                                                        or read[-1]))
    from rein import Harness

    with Harness.open(tmp_path, create=False) as harness:
        status = harness.driver_status()
    assert status["status"] == "instruction"
    assert read and all(isinstance(t.baseline, LazyObject) for t in read)
    assert all("entries" not in t.baseline.parsed() for t in read)
    assert len(read[0].baseline["entries"]) >= 50  # the snapshot is all there when read
