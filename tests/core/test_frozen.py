"""The hand-written value classes (:mod:`rein.core.frozen`) declare each field twice, in
``__slots__`` and as an annotation: a field added to one and not the other fails only when
the code that sets it runs. This walks every such class in the package."""

from __future__ import annotations

import importlib
import pkgutil
from typing import ClassVar, get_origin

import pytest

import rein
from rein.core.frozen import Frozen


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


def _fields(cls: type) -> set[str]:
    names = set()
    for klass in cls.__mro__:
        if klass is Frozen or klass is object:
            continue
        for name, hint in getattr(klass, "__annotations__", {}).items():
            text = hint if isinstance(hint, str) else ""
            if text.startswith("ClassVar") or get_origin(hint) is ClassVar:
                continue
            names.add(name)
    return names


_all_modules()
CLASSES = sorted({c for c in _subclasses(Frozen) if c.__module__.startswith("rein.")},
                 key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_the_package_has_hand_written_value_classes() -> None:
    assert len(CLASSES) >= 40


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_annotated_field_has_a_slot_and_every_slot_a_field(cls: type) -> None:
    slots = {name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ())}
    assert _fields(cls) == slots
