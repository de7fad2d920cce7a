"""A node's state and its entry of the run record (``node_run``), in both directions:
``NodeState.to_record`` writes it (redacted values left out), ``NodeState.adopt`` takes a
stored one back when a run continues in another process."""

from __future__ import annotations

from rein.core.ids import NodeKey
from rein.core.states import NodeStatus
from rein.engine.run.graph import scope_model
from rein.engine.run.runtime import NodeState

MODEL = scope_model({"entrypoints": ["a"], "nodes": {"a": {
    "type": "decision", "title": "a",
    "outputs": {"report": {"type": "string", "description": "r"},
                "token": {"type": "string", "description": "t", "redact": True}}}}})


def _ended() -> NodeState:
    state = NodeState(status=NodeStatus.SUCCEEDED, outputs={"report": "r.md", "token": "s3"},
                      decision="go", attempts=2, inputs={"x": 1}, duration=1.5,
                      degraded=True, unabsorbed=False)
    state.record.update({"started_at": "t0", "attempts": [{"attempt": 1}, {"attempt": 2}],
                         "finished_at": "t1", "x-rein-duration-seconds": 1.5})
    return state


def test_a_record_leaves_redacted_values_out_and_says_which() -> None:
    rec = _ended().to_record(MODEL, "a", NodeKey("loop[1].a"))
    assert rec == {"started_at": "t0", "attempts": [{"attempt": 1}, {"attempt": 2}],
                   "finished_at": "t1", "x-rein-duration-seconds": 1.5, "node_id": "a",
                   "type": "decision", "status": "succeeded", "scope_path": "loop[1].a",
                   "inputs": {"x": 1}, "outputs": {"report": "r.md"},
                   "x-rein-redacted": ["token"], "decision": "go", "x-rein-degraded": True}


def test_a_stored_record_gives_back_the_state_that_wrote_it() -> None:
    ended = _ended()
    ended.outputs.pop("token")  # never written: a replay does not adopt a redacted node
    rec = ended.to_record(MODEL, "a", NodeKey("a"))
    taken = NodeState(status=NodeStatus.SUCCEEDED)
    taken.adopt(rec)
    assert taken.record == rec and taken.record is not rec
    assert taken.adopted and not ended.adopted
    assert taken.replace(adopted=False, record={}) == ended.replace(record={})
