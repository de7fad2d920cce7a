"""The catalogue of rein's own codes: one style, complete entries, RT000 moved to RUN000."""

from __future__ import annotations

from pathlib import Path

import pytest

from rein.core.codes import ALIASES, CODES, STYLE, lookup
from rein.core.states import RunStatus
from rein.errors import RunError
from tests.scenarios.build import Run, graph, out, task


def test_rein_invents_no_spec_code() -> None:
    """RT codes are the spec's (AGS 1.0 §18.2): exactly its nineteen, none added."""
    spec = sorted(c for c, e in CODES.items() if e.source != "rein")
    assert spec == ["RT011", "RT012", "RT013", "RT014", "RT015", "RT021", "RT022", "RT025",
                    "RT026", "RT031", "RT032", "RT033", "RT041", "RT042", "RT051", "RT052",
                    "RT053", "RT061", "RT062"]
    assert all(c.startswith("RT") == (e.source != "rein") for c, e in CODES.items())
    assert not any(c.startswith("AG") for c in CODES)  # those live with the validator


@pytest.mark.parametrize("code", sorted(c for c, e in CODES.items() if e.source == "rein"))
def test_own_codes_follow_the_style_unless_marked_legacy(code: str) -> None:
    entry = CODES[code]
    # legacy_name on a code of the style would hide that it could have been left alone
    assert bool(STYLE.fullmatch(code)) != entry.legacy_name
    assert entry.meaning and entry.hint and entry.area


def test_rt000_is_an_old_name_of_run000() -> None:
    assert dict(ALIASES) == {"RT000": "RUN000"}
    entry = lookup("RT000")
    assert entry is not None and entry.code == "RUN000" and entry.source == "rein"
    assert lookup("RT999") is None


def test_a_run_error_without_a_code_reports_run000() -> None:
    assert RunError("it broke").code == "RUN000"
    assert RunError("it broke").to_json()["code"] == "RUN000"


def test_a_failed_map_item_is_reported_as_run000_not_rt000(tmp_path: Path) -> None:
    fan = {"type": "map", "title": "fan", "description": "Fan out.",
           "map": {"over": "params.items", "as": "it", "max_items": 3,
                   "on_item_failure": "fail_fast", "collect": {"got": "nodes.work.outputs.v"},
                   "body": {"entrypoints": ["work"],
                            "nodes": {"work": task("work", outputs=out("v"))}}}}
    data = graph({"fan": fan}, ["fan"], params={"items": {
        "type": "array", "description": "items", "default": ["a", "b"]}})
    run = Run(tmp_path, data, {"fan[0].work": [{"failure": "tool_error"}],
                               "fan[1].work": [{"outputs": {"v": "x"}}]})
    assert run.start().status is RunStatus.FAILED
    assert "RUN000" in run.codes() and "RT000" not in run.codes()
