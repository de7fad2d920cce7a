"""The cyclic garbage collector, paused while a large acyclic value is built.

CPython's collector runs every so many allocations of containers, and a full collection
walks every container alive. Reading a 100,000-node graph allocates millions of dicts and
lists, all of them alive until the read ends and none of them garbage: the collector's
passes over them found nothing and took a tenth of a run's CPU (issue 32). Within
:func:`paused` no automatic collection starts; memory is still freed as soon as nothing
refers to it, and cycles that became garbage meanwhile are found by the first collection
after the pause. Pauses nest, and threads may pause at once: the collector runs again
when the last pause ends, and only if it ran when the first began.

A run then holds its graph, plan and scope model until it ends, and every full collection
during the run walked them again. Within :func:`settled` (a run started and advanced),
what is alive as it begins, and what a pause builds within it, is kept out of the
collector's passes (``gc.freeze``); when the last such block ends, all of it is handed back
(``gc.unfreeze``), so a cycle that became garbage meanwhile is collected then, not never.

A driver turn is a fresh process whose start (its imports, the run's reading) allocates
what it keeps to its end: the collector's passes over it found nothing and took 6.5 ms of
a cold ``rein submit`` (benchmarks/driver_turn.py). Within :func:`starting`, no pass runs
until the run it advances starts advancing (:func:`advancing`); what is alive then is kept
out of the passes until the block ends, and the collector runs again.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_held = 0  # pauses open now, in every thread
_resume = False  # whether the collector ran when the first open pause began
_settled = 0  # settled blocks open now, in every thread and task
_starting = False  # a command's start, paused by starting() until advancing()


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection while the block runs (see the module's description)."""
    global _held, _resume
    with _LOCK:
        if _held == 0:
            _resume = gc.isenabled()
            gc.disable()
        _held += 1
    try:
        yield
    finally:
        with _LOCK:
            _held -= 1
            if _settled:  # built for the run that holds it: out of the passes with it
                gc.freeze()
            if _held == 0 and _resume:
                gc.enable()


@contextmanager
def settled() -> Iterator[None]:
    """What is alive now, and what a pause builds within the block, out of the collector's
    passes until the last open block ends (see the module's description)."""
    global _settled
    with _LOCK:
        _settled += 1
        gc.freeze()
    try:
        yield
    finally:
        with _LOCK:
            _settled -= 1
            if _settled == 0:
                gc.unfreeze()


@contextmanager
def starting() -> Iterator[None]:
    """No pass of the collector from here until :func:`advancing` or the block's end,
    whichever comes first, and what was alive at the first of them out of the passes until
    the block's end (see the module's description). For a short command, in the main
    thread, with no pause open."""
    global _starting
    with _LOCK:
        begin = not _starting and _held == 0 and gc.isenabled()
        if begin:
            _starting = True
            gc.disable()
    try:
        yield
    finally:
        if begin:
            advancing()
            with _LOCK:
                if _settled == 0:  # what the start built, handed back to the passes
                    gc.unfreeze()


def advancing() -> None:
    """A run starts advancing: a command's start paused by :func:`starting` is over. What
    it built, alive now, stays out of the collector's passes until the command ends
    (modules, the run's graph: alive as long), and the collector runs again."""
    global _starting, _resume
    if not _starting:
        return
    with _LOCK:
        if not _starting:
            return
        _starting = False
        gc.freeze()
        if _held == 0:
            gc.enable()
        else:  # a pause began meanwhile, with the collector off: it ends it
            _resume = True


__all__ = ["advancing", "paused", "settled", "starting"]
