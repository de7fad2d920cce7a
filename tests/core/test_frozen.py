"""rein's one idiom for immutable values (:mod:`rein.core.frozen`): a class that annotates its
fields gets what a frozen, keyword-only, slotted dataclass has, built without generated code;
and every value class of the package is one."""

from __future__ import annotations

import builtins
import copy
import importlib
import json
import pickle
import pkgutil
import subprocess
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

import rein
from rein.core.frozen import Frozen, field, maker, set_field


class Edge(Frozen):
    """A value with a required field, a default and a default made per instance."""

    LIMIT: ClassVar[int] = 3  # not a field
    source: str
    target: str = "end"
    notes: Mapping[str, str] = field(default_factory=dict)


class LabelledEdge(Edge):
    label: str = ""
    target: str = "exit"  # a base's field with a new default keeps its place


class Point(Frozen, kw_only=False):
    x: int
    y: int = 0


class Clamped(Frozen):
    value: int
    top: int = 10

    def __post_init__(self) -> None:
        if self.value > self.top:
            set_field(self, "value", self.top)


def test_fields_defaults_and_a_factory_per_instance() -> None:
    edge = Edge(source="a")
    assert (edge.source, edge.target, edge.notes) == ("a", "end", {})
    assert Edge(source="a").notes is not edge.notes  # not one shared dict
    assert Edge.__fields__ == ("source", "target", "notes")
    assert "LIMIT" not in Edge.__fields__ and Edge.LIMIT == 3


def test_equality_and_hash_follow_the_fields_and_the_class() -> None:
    assert Point(1, 2) == Point(x=1, y=2) and Point(1, 2) != Point(1, 3)
    assert hash(Point(1, 2)) == hash(Point(1, 2)) == hash((1, 2))  # as a frozen dataclass
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2
    assert Edge(source="a") != LabelledEdge(source="a")  # another class is never equal
    assert Point(1, 2) != (1, 2)
    with pytest.raises(TypeError, match="unhashable"):
        hash(Edge(source="a"))  # a dict field, as a dataclass's


def test_repr_shows_the_fields_in_their_order() -> None:
    assert repr(LabelledEdge(source="a", label="l")) == (
        "LabelledEdge(source='a', target='exit', notes={}, label='l')")
    assert repr(Point(1)) == "Point(x=1, y=0)"


def test_an_instance_cannot_be_changed() -> None:
    point = Point(1, 2)
    with pytest.raises(AttributeError, match="Point is frozen"):
        point.x = 5  # type: ignore[misc]
    with pytest.raises(AttributeError, match="Point is frozen"):
        del point.x  # type: ignore[misc]
    with pytest.raises(AttributeError):
        point.other = 1  # type: ignore[attr-defined]
    assert not hasattr(point, "__dict__") and Point.__slots__ == ("x", "y")


def test_fields_are_keyword_only_unless_the_class_says_otherwise() -> None:
    with pytest.raises(TypeError, match=r"Edge.__init__\(\) takes 1 positional argument "
                                        "but 2 were given"):
        Edge("a")  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"missing 1 required argument: 'source'"):
        Edge()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Edge(source="a", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes 3 positional arguments but 4 were given"):
        Point(1, 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]
    assert Point.__match_args__ == ("x", "y") and Edge.__match_args__ == ()
    match Point(3, 4):
        case Point(x, y):
            assert (x, y) == (3, 4)


def test_replace_and_as_dict() -> None:
    edge = LabelledEdge(source="a", notes={"k": "v"})
    changed = edge.replace(label="new")
    assert changed == LabelledEdge(source="a", notes={"k": "v"}, label="new")
    assert edge.label == "" and changed.notes is edge.notes  # a shallow copy, as dataclasses'
    assert edge.as_dict() == {"source": "a", "target": "exit", "notes": {"k": "v"},
                              "label": ""}
    assert list(edge.as_dict()) == list(LabelledEdge.__fields__)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        edge.replace(nope=1)


def test_a_subclass_adds_its_fields_after_its_bases() -> None:
    assert LabelledEdge.__fields__ == ("source", "target", "notes", "label")
    assert LabelledEdge.__slots__ == ("label",)  # the base's slots are not repeated
    assert LabelledEdge(source="a").target == "exit" and Edge(source="a").target == "end"
    assert isinstance(LabelledEdge(source="a"), Edge)


def test_post_init_runs_after_the_fields_are_set() -> None:
    assert Clamped(value=50).value == 10 and Clamped(value=5, top=4).value == 4
    assert Clamped(value=3).value == 3


def test_copy_and_pickle_keep_the_value() -> None:
    edge = LabelledEdge(source="a", notes={"k": "v"}, label="l")
    assert copy.copy(edge) == edge and copy.deepcopy(edge) == edge
    assert pickle.loads(pickle.dumps(edge)) == edge
    assert pickle.loads(pickle.dumps(Point(1, 2))) == Point(1, 2)


def test_a_class_of_its_own_init_or_slots_or_a_misplaced_default_is_refused() -> None:
    with pytest.raises(TypeError, match="no __init__ of its own"):
        class OwnInit(Frozen):
            a: int

            def __init__(self, a: int) -> None: ...
    with pytest.raises(TypeError, match="no __slots__ of its own"):
        class OwnSlots(Frozen):
            __slots__ = ("a",)
            a: int
    with pytest.raises(TypeError, match="'b' without a default follows 'a'"):
        class Misplaced(Frozen, kw_only=False):
            a: int = 0
            b: int
    with pytest.raises(TypeError, match="one of default and default_factory"):
        field(default=1, default_factory=int)  # type: ignore[call-overload]


def test_building_a_class_generates_no_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a dataclass does at import, and rein's values do not: compile source."""
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("code generated at class creation")
    monkeypatch.setattr(builtins, "exec", refused)
    monkeypatch.setattr(builtins, "eval", refused)
    monkeypatch.setattr(builtins, "compile", refused)

    class Built(Frozen):
        a: int
        b: str = "x"
        c: list[int] = field(default_factory=list)

    assert Built(a=1) == Built(a=1, b="x", c=[])


def test_the_module_imports_none_of_the_code_generating_machinery() -> None:
    probe = ("import sys, json; import rein.core.frozen; "
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                          text=True)
    loaded = set(json.loads(done.stdout))
    assert loaded.isdisjoint({"dataclasses", "inspect", "ast", "dis"}), loaded


# Every value class of the package is one: its fields are its annotations, all in slots.

def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _all_modules() -> None:
    for info in pkgutil.walk_packages(rein.__path__, "rein."):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed (dbos, the web stack)
            continue


_all_modules()
CLASSES = sorted({c for c in _subclasses(Frozen) if c.__module__.startswith("rein.")},
                 key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_the_package_has_its_value_classes_on_the_one_base() -> None:
    assert len(CLASSES) >= 80


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_value_class_stores_its_annotated_fields_in_slots(cls: type) -> None:
    annotated = [name for klass in reversed(cls.__mro__)
                 for name, hint in vars(klass).get("__annotations__", {}).items()
                 if klass not in (Frozen, object) and not str(hint).startswith("ClassVar")]
    assert list(dict.fromkeys(annotated)) == list(cls.__fields__)  # type: ignore[attr-defined]
    slots = [name for klass in cls.__mro__ for name in vars(klass).get("__slots__", ())]
    assert sorted(slots) == sorted(cls.__fields__)  # type: ignore[attr-defined]
    assert all("__dict__" not in vars(klass) for klass in cls.__mro__ if klass is not object)


def test_a_maker_builds_the_value_the_init_builds_from_every_field_in_order() -> None:
    class Point3(Frozen):
        x: int
        y: int
        label: str = "p"

    make = maker(Point3)
    assert make(1, 2, "q") == Point3(x=1, y=2, label="q")
    assert hash(make(1, 2, "q")) == hash(Point3(x=1, y=2, label="q"))
    with pytest.raises(AttributeError):
        make(1, 2, "q").x = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match="3 values expected, 2 given"):
        make(1, 2)  # no defaults: every field is given


def test_a_maker_refuses_a_class_that_normalises_in_post_init() -> None:
    class Upper(Frozen):
        name: str

        def __post_init__(self) -> None:
            set_field(self, "name", self.name.upper())

    with pytest.raises(TypeError, match="__post_init__"):
        maker(Upper)
