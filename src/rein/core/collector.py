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


__all__ = ["paused", "settled"]
