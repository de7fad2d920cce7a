"""Tracing a maintainer's walk: the modules of rein a change passes through, counted.

A walk is a scripted run of one thing rein does (a criterion fails and the node is retried,
a person accepts in the web console, an app-server turn becomes a run). Its *checkpoints*
are the functions where the walk's data changes hands: made, stored, read, sent. While the
walk runs, :func:`trace` watches every call (``sys.setprofile``, and ``threading.setprofile``
for the threads started meanwhile); at each call of a checkpoint it takes the rein modules on
the call stack, from the walk's entry down (the whole stack when the walk names no entry).
The walk's modules are the union of those stacks, in the order first seen, without the
pure helpers every walk uses (``core/``, ``formats/``, ``errors.py``): what a maintainer
opens to follow the data from where it is made to where it is used.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import rein

T = TypeVar("T")
Where = tuple[str, str]  # (module path under rein/, function qualname)
PURE = ("core/", "formats/", "errors.py")
_SRC = str(Path(rein.__file__).resolve().parent) + "/"


def _module(frame: FrameType) -> str | None:
    name = frame.f_code.co_filename
    return name[len(_SRC):] if name.startswith(_SRC) else None


class Walk:
    """What a traced walk passed: its modules, in order, and how often each checkpoint ran."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}  # module → the first function of it on a stack
        self.hits: dict[Where, int] = {}
        self.lock = threading.Lock()

    @property
    def counted(self) -> list[str]:
        return [m for m in self.modules if not m.startswith(PURE)]


class Tracer:
    """Watches every call of this thread and of the threads started after :meth:`install`;
    records only while :meth:`recording` (so a walk's setup, run with the tracer installed
    for the threads it starts, is not counted)."""

    def __init__(self, checkpoints: Collection[Where], entries: Collection[Where] = (),
                 beside: Collection[Where] = ()) -> None:
        self.walk = Walk()
        self.wanted = frozenset(checkpoints)
        self.starts = frozenset(entries)
        self.beside = frozenset(beside)  # a checkpoint under one of these is another walk's
        self.on = False

    def _seen(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on or event != "call":
            return
        where = _module(frame)
        if where is None or (where, frame.f_code.co_qualname) not in self.wanted:
            return
        stack: list[Where] = []
        f: FrameType | None = frame
        while f is not None:
            module = _module(f)
            if module is not None:
                stack.append((module, f.f_code.co_qualname))
                if stack[-1] in self.beside:
                    return
                if stack[-1] in self.starts:
                    break
            f = f.f_back
        else:
            if self.starts:  # not under the walk's entry: another piece of work
                return
        walk = self.walk
        with walk.lock:
            hit = (where, frame.f_code.co_qualname)
            walk.hits[hit] = walk.hits.get(hit, 0) + 1
            for module, name in reversed(stack):
                walk.modules.setdefault(module, name)

    def install(self) -> None:
        threading.setprofile(self._seen)
        sys.setprofile(self._seen)

    def remove(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]

    def __enter__(self) -> Walk:
        self.on = True
        return self.walk

    def __exit__(self, *exc: object) -> None:
        self.on = False


def trace(action: Callable[[], T], checkpoints: Collection[Where],
          entries: Collection[Where] = ()) -> tuple[T, Walk]:
    """Run ``action`` (in this thread and the threads it starts) and trace it; its result
    and the walk."""
    tracer = Tracer(checkpoints, entries)
    tracer.install()
    try:
        with tracer as walk:
            result = action()
    finally:
        tracer.remove()
    return result, walk
