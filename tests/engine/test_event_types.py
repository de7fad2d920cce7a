"""A run's events are named by :class:`rein.engine.events.EventType`, never by a string.

``RunContext.emit`` and ``RunContext.save_node`` take an ``EventType``, so the type checker
refuses a misspelt event where it is written, and no caller in the package hands one a
string literal.
"""

from __future__ import annotations

import ast
from typing import get_type_hints

from support import ROOT

from rein.engine.events import EventType
from rein.engine.run.runtime import RunContext

PACKAGE = ROOT / "src" / "rein"


def test_emit_and_save_node_take_an_event_type() -> None:
    assert get_type_hints(RunContext.emit)["event_type"] is EventType
    assert get_type_hints(RunContext.save_node)["event_type"] is EventType


def _string_events(tree: ast.AST) -> list[int]:
    """The lines of ``….emit("…", …)`` and ``….save_node(inst, nid, "…", …)`` calls."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        where = {"emit": 0, "save_node": 2}.get(node.func.attr)
        if where is None or len(node.args) <= where:
            continue
        arg = node.args[where]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.append(node.lineno)
    return found


def test_no_event_is_emitted_by_a_string() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}"
                 for path in sorted(PACKAGE.rglob("*.py"))
                 for line in _string_events(ast.parse(path.read_text(encoding="utf-8")))]
    assert offenders == []


def test_the_scan_sees_a_string_event() -> None:
    assert _string_events(ast.parse('ctx.emit("run/finished", {})\n'
                                    'ctx.save_node(inst, nid, "node/started")')) == [1, 2]
