"""A dotted name alone is read without AGX, with AGX's value, and AGX's error where it fails.

``rein.engine.run.expressions`` reads ``nodes.a.outputs.b`` with :mod:`rein.formats.dotted`
(a gate's ``present`` entries: a driver turn need not import the expression language).
The value must be the one AGX gives, and every failure AGX's own error, position and all.
"""

from __future__ import annotations

from typing import Any

import pytest

from rein.engine.run import expressions
from rein.engine.run.expressions import EvalScope
from rein.formats import agx

NODES = {"a": {"status": "succeeded", "outputs": {"module": "greet.py", "ok": True,
                                                 "none": None, "list": [1]}}}


def scope() -> EvalScope:
    return EvalScope(roots={"params": {"n": 2}}, nodes=lambda: NODES,
                     statuses=lambda nid: NODES.get(nid, {}).get("status"),
                     this={"id": "b", "attempt": 1, "inputs": {}, "outputs": {"x": 1}})


def with_agx(call: Any, text: str) -> Any:
    try:
        return call(agx.parse(text), scope())
    except agx.AgxEvalError as exc:
        return ("error", str(exc))


def ours(call: Any, text: str) -> Any:
    try:
        return call(text, scope())
    except agx.AgxEvalError as exc:
        return ("error", str(exc))


NAMES = ["nodes.a.outputs.module", "nodes.a.outputs.ok", "nodes.a.outputs.none.more",
         "nodes.a.outputs.missing", "nodes.a.outputs.list.x", "nodes.a.status.x", "params.n",
         "self.outputs.x", "nodes.b.outputs.x", "unknown.x", "nodes.zz", "params"]


@pytest.mark.parametrize("text", NAMES)
def test_a_name_reads_as_agx_reads_it(text: str) -> None:
    assert ours(expressions.evaluate, text) == with_agx(agx.evaluate, text)
    assert ours(expressions.evaluate_bool, text) == with_agx(agx.evaluate_bool, text)


def test_a_name_is_read_without_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def parsed(text: str) -> Any:
        raise AssertionError(f"parsed {text!r}")

    monkeypatch.setattr(expressions, "_parsed", parsed)
    assert expressions.evaluate("nodes.a.outputs.module", scope()) == "greet.py"
    assert expressions.evaluate_bool("nodes.a.outputs.ok", scope()) is True
    with pytest.raises(AssertionError, match="parsed"):  # an error is AGX's to raise
        expressions.evaluate("unknown.x", scope())
