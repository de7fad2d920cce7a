"""The document loader: YAML 1.2 core schema, JSON, limits, locations."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from rein.errors import LoadError
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


def test_alias_bomb_is_refused_fast() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(8):
        prev, name = chr(97 + i), chr(98 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    bomb = "\n".join(lines) + "\n"
    assert len(bomb) < 1024
    start = time.perf_counter()
    assert kind_of(bomb) == "alias_limit"
    # Generous bound: this is a safety property (no expansion), not a benchmark.
    assert time.perf_counter() - start < 1.0


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
