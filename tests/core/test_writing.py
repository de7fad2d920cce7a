"""Files rein writes for later readers are whole or absent, never half written, and a
temporary name nobody else chose: a link planted where a fixed temporary name would be is
never followed, and a failed write leaves the old file and no debris."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rein.core.writing import write_atomic
from rein.dev import flow as dev_flow
from rein.spec import flow as spec_flow


@pytest.mark.parametrize("module", [dev_flow, spec_flow], ids=["dev", "spec"])
def test_a_flow_state_write_never_follows_a_planted_link(tmp_path: Path, module: object) -> None:
    ws = tmp_path / "ws"
    target = tmp_path / "outside.txt"
    target.write_text("precious\n", encoding="utf-8")
    flow_file = ws / module.FLOW_FILE  # type: ignore[attr-defined]
    flow_file.parent.mkdir(parents=True)
    # The name a fixed temporary file would take, a link to a file outside.
    (flow_file.parent / "flow.json.tmp").symlink_to(target)
    module.save_flow(ws, {"runs": ["r1"]})  # type: ignore[attr-defined]
    assert target.read_text(encoding="utf-8") == "precious\n"
    assert module.load_flow(ws) == {"runs": ["r1"]}  # type: ignore[attr-defined]


def test_a_failed_write_keeps_the_old_bytes_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_atomic(path, "old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "half \udcff")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_permissions_are_kept_or_made_as_for_any_new_file(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.write_text("a", encoding="utf-8")
    kept.chmod(0o640)
    write_atomic(kept, "b")
    assert kept.stat().st_mode & 0o777 == 0o640
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "sub" / "fresh"
        write_atomic(fresh, "c")
    finally:
        os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o644
    assert fresh.read_text(encoding="utf-8") == "c"
    write_atomic(fresh, "d", mode=0o600)
    assert fresh.stat().st_mode & 0o777 == 0o600
