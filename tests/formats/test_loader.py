"""The document loader: YAML 1.2 core schema, JSON, limits, locations."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Self

import pytest
import yaml
from loader_work import LoaderWork

from rein.errors import LoadError
from rein.formats import loader as loader_module
from rein.formats.loader import LoadLimits, load_bytes, load_path, load_text


def kind_of(text: str, fmt: str = "yaml", **limits: int) -> str:
    with pytest.raises(LoadError) as info:
        load_text(text, format=fmt, limits=LoadLimits(**limits))  # type: ignore[arg-type]
    return info.value.kind


def test_yaml_1_2_core_scalars() -> None:
    text = (
        "a: yes\nb: null\nc: Null\nd: NULL\ne: ~\nf:\ng: on\nh: true\ni: FALSE\n"
        "j: 0o17\nk: 0x1F\nl: 1.5\nm: 2001-01-01\nn: '1'\n<<: merge\n"
    )
    data = load_text(text).data
    assert data == {
        "a": "yes", "b": None, "c": None, "d": None, "e": None, "f": None, "g": "on",
        "h": True, "i": False, "j": 15, "k": 31, "l": 1.5, "m": "2001-01-01", "n": "1",
        "<<": "merge",
    }


def test_json_and_yaml_give_the_same_data() -> None:
    assert load_text('{"a": [1, 2.5, null, true]}', format="json").data == load_text(
        "a: [1, 2.5, null, true]"
    ).data


@pytest.mark.parametrize("fmt,text", [("yaml", "a: 1\nb: 2\na: 3\n"), ("json", '{"a":1,"a":2}')])
def test_duplicate_keys_are_refused_with_a_location(fmt: str, text: str) -> None:
    with pytest.raises(LoadError) as info:
        load_text(text, format=fmt, source="doc")  # type: ignore[arg-type]
    assert info.value.kind == "duplicate_key"
    assert info.value.location is not None and info.value.location.line is not None
    assert "duplicate key 'a'" in info.value.message


def alias_bomb() -> str:
    """A 1 KB "billion laughs": nine levels of nine aliases, 9^9 strings if expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(8):
        prev, name = chr(97 + i), chr(98 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_after_bounded_work() -> None:
    bomb = alias_bomb()
    assert len(bomb) < 1024
    with LoaderWork() as work:
        assert kind_of(bomb, max_alias_nodes=10_000) == "alias_limit"
    # The work is bounded by the document and the limit, not by what the bomb would expand
    # to: each event is read once, and aliases copy no more than the limit allows.
    assert work.events <= len(list(yaml.parse(bomb)))
    assert work.values_copied <= 10_000


def test_aliases_within_bounds_are_resolved_as_independent_copies() -> None:
    data = load_text("a: &x {k: [1]}\nb: *x\n").data
    assert data == {"a": {"k": [1]}, "b": {"k": [1]}}
    data["a"]["k"].append(2)
    assert data["b"] == {"k": [1]}


@pytest.mark.parametrize(
    "text,kind",
    [
        ("a: &x [*x]\n", "alias_limit"),
        ("a: .inf\n", "non_finite"),
        ("a: -.Inf\n", "non_finite"),
        ("a: .nan\n", "non_finite"),
        ("!custom x\n", "bad_tag"),
        ("a: !!binary aGk=\n", "bad_tag"),
        ("true: 1\n", "non_string_key"),
        ("[1]: 1\n", "non_string_key"),
        ("a: 1\n---\nb: 2\n", "syntax"),
        ("a: [1, 2\n", "syntax"),
        ("a: *nope\n", "syntax"),
        ("a: !!int abc\n", "syntax"),
    ],
)
def test_refusals(text: str, kind: str) -> None:
    assert kind_of(text) == kind


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}'])
def test_json_non_finite(text: str) -> None:
    assert kind_of(text, "json") == "non_finite"


def test_depth_limit_yaml_and_json() -> None:
    deep = "[" * 50 + "]" * 50
    assert kind_of(deep, max_depth=20) == "too_deep"
    assert kind_of(deep, "json", max_depth=20) == "too_deep"
    assert kind_of("[" * 100_000 + "]" * 100_000, "json") == "too_deep"
    assert kind_of("[" * 100_000 + "]" * 100_000) in ("too_deep", "syntax")


def test_size_limit() -> None:
    with pytest.raises(LoadError) as info:
        load_bytes(b"a: " + b"x" * 2000, source="big", format="yaml",
                   limits=LoadLimits(max_bytes=1000))
    assert info.value.kind == "too_large"
    assert "over the limit of 1,000" in info.value.message


def test_bad_utf8_and_nul() -> None:
    with pytest.raises(LoadError) as info:
        load_bytes(b"a: \xff\n", source="x", format="yaml")
    assert info.value.kind == "encoding"
    assert kind_of("a: \x00") == "encoding"


def test_locate_points_at_keys_and_items() -> None:
    doc = load_text("a:\n  b:\n    - x\n    - {c: 1}\n", source="f.yaml")
    loc = doc.locate("/a/b/1/c")
    assert (loc.file, loc.line, loc.column, loc.pointer) == ("f.yaml", 4, 8, "/a/b/1/c")
    assert doc.locate("/a/b/0").line == 3
    # A pointer to something absent falls back to its nearest ancestor's position.
    assert doc.locate("/a/missing").line == 1


def test_locate_in_json_and_with_a_line_offset() -> None:
    doc = load_text('{\n  "a": {"b": 1}\n}', format="json", line_offset=0)
    assert doc.locate("/a/b").line == 2
    shifted = load_text("a: 1\n", line_offset=3)
    assert shifted.locate("/a").line == 4


def test_empty_document_is_null() -> None:
    assert load_text("").data is None


@pytest.mark.parametrize("text", ['{"a": "\\ud800"}', '{"\\udc00": 1}', '["x\\udfff"]'])
def test_json_lone_surrogates_are_refused(text: str) -> None:
    assert kind_of(text, "json") == "encoding"


def test_json_surrogate_pairs_are_text() -> None:
    assert load_text('{"a": "\\ud83d\\ude00"}', format="json").data == {"a": "\U0001f600"}


@pytest.mark.parametrize("make, kind, hint", [
    (lambda d: d / "missing.yaml", "not_found", "check the path"),
    (lambda d: d, "unreadable", "give the path of one file"),
])
def test_files_that_cannot_be_read_say_how_to_fix_it(tmp_path: Path, make: Any, kind: str,
                                                     hint: str) -> None:
    with pytest.raises(LoadError) as caught:
        load_path(make(tmp_path))
    assert caught.value.kind == kind
    assert caught.value.hint is not None and caught.value.hint.startswith(hint)
    assert "agraph" not in caught.value.hint  # the loader reads profiles and params too


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("fmt,text", [
    ("yaml", "a: " + "1" * 5000 + "\n"),
    ("yaml", "a: -" + "9" * 101 + "\n"),
    ("yaml", "a: 0x" + "f" * 5000 + "\n"),
    ("yaml", "a: 0o" + "7" * 200 + "\n"),
    ("yaml", "a: !!int " + "1" * 5000 + "\n"),
    ("json", '{"a": ' + "1" * 5000 + "}"),
    ("json", '{"a": [-' + "1" * 101 + "]}"),
])
def test_overlong_integers_are_refused_with_a_location(fmt: str, text: str) -> None:
    with pytest.raises(LoadError) as info:
        load_text(text, format=fmt, source="doc")  # type: ignore[arg-type]
    assert info.value.kind == "bad_number"
    assert "has more than 100 digits" in info.value.message
    assert info.value.location is not None and info.value.location.line == 1
    assert info.value.hint and "string" in info.value.hint


def test_integers_up_to_the_bound_are_read_exactly() -> None:
    big = "9" * 100
    assert load_text(f"a: {big}\n").data == {"a": int(big)}
    assert load_text(f'{{"a": -{big}}}', format="json").data == {"a": -int(big)}


@pytest.mark.parametrize("fmt,text", [
    ("yaml", "a: 1e999\n"), ("yaml", "a: -1e400\n"), ("yaml", "a: !!float 1e999\n"),
    ("json", '{"a": 1e999}'), ("json", "[-2e308]"),
])
def test_numbers_that_overflow_to_infinity_are_refused(fmt: str, text: str) -> None:
    assert kind_of(text, fmt) == "non_finite"


# ---------------------------------------------------------------------------- files


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "graph.agraph.yaml"
    os.mkfifo(fifo)
    with pytest.raises(LoadError) as info:
        load_path(fifo)
    assert info.value.kind == "unreadable"
    assert "not a regular file" in info.value.message


def test_a_symlink_to_an_endless_device_is_refused_before_reading(tmp_path: Path) -> None:
    link = tmp_path / "graph.agraph.yaml"
    link.symlink_to("/dev/zero")
    with ReadCounter() as reads, pytest.raises(LoadError) as info:
        load_path(link)
    assert info.value.kind == "unreadable"
    assert reads.bytes == 0


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.agraph.yaml"
    with big.open("wb") as fh:
        fh.truncate(200 * 1024 * 1024)  # sparse: 200 MB that take no disk
    with ReadCounter() as reads, pytest.raises(LoadError) as info:
        load_path(big, limits=LoadLimits(max_bytes=1000))
    assert info.value.kind == "too_large"
    assert reads.bytes == 0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_file_that_understates_its_size_is_read_only_to_the_limit() -> None:
    # /proc files are regular files that report a size of 0, whatever they hold.
    with ReadCounter() as reads, pytest.raises(LoadError) as info:
        load_path("/proc/self/status", limits=LoadLimits(max_bytes=10))
    assert info.value.kind == "too_large"
    assert reads.bytes == 11  # the limit, and one byte to know it is over


def test_a_nul_byte_in_a_path_is_a_load_error() -> None:
    with pytest.raises(LoadError) as info:
        load_path("graph\x00.agraph.yaml")
    assert info.value.kind == "unreadable"
    assert info.value.message == "the path graph\\0.agraph.yaml contains a NUL character"


class ReadCounter:
    """A named test double: counts the bytes the loader reads from file descriptors."""

    def __init__(self) -> None:
        self.bytes = 0
        self._patch = pytest.MonkeyPatch()

    def __enter__(self) -> Self:
        real = os.read

        def counting_read(fd: int, n: int) -> bytes:
            data = real(fd, n)
            self.bytes += len(data)
            return data

        self._patch.setattr(loader_module.os, "read", counting_read)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()


def test_a_yaml_document_holds_each_short_string_once() -> None:
    """A graph repeats the same keys and words on every node: read from YAML, each distinct
    short string is one object (as the JSON decoder does for keys), which took a third off
    the memory a 10,000-node graph's data holds. Long texts stay as read."""
    from rein.formats.loader import load_text

    nodes = "".join(
        f"  n{i}:\n    title: Step {i}\n    type: task\n    outputs:\n"
        f"      result: {{type: text, description: The note.}}\n"
        f"    description: {'a long description that is not shared ' * 2}{i}\n"
        for i in range(200))
    data = load_text("nodes:\n" + nodes).data
    keys = {id(k) for node in data["nodes"].values() for k in node}
    assert len(keys) == 4  # title, type, outputs, description: one object each
    words = {id(node["type"]) for node in data["nodes"].values()}
    inner = {id(v) for node in data["nodes"].values()
             for v in node["outputs"]["result"].values()}
    assert len(words) == 1 and len(inner) == 2
    assert data["nodes"]["n7"]["title"] == "Step 7"
    assert data["nodes"]["n7"]["description"].endswith("shared 7")
