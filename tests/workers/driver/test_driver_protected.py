"""A driver may not write what rein runs or trusts, whatever its fs:write grants: rein.toml,
the scripts its hooks run, and git's own files (config, hooks) that git runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rein.config.trusting import trust_project
from rein.workers.driver.fs import compare, protected_in, snapshot

EVERYTHING = ["fs:read:**", "fs:write:**"]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    monkeypatch.delenv("REIN_USER_CONFIG", raising=False)
    root = tmp_path / "ws"
    (root / "hooks").mkdir(parents=True)
    (root / "hooks" / "log.sh").write_text("cat > /dev/null\n")
    (root / "rein.toml").write_text('[hooks.log]\ncommand = "sh hooks/log.sh"\n'
                                    'events = ["PreToolUse"]\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    trust_project(root)
    return root


def test_the_protected_paths_come_from_the_configuration(ws: Path) -> None:
    assert {"rein.toml", "hooks/log.sh", ".git", ".rein"} <= set(protected_in(ws))


def test_a_driver_with_every_grant_still_may_not_write_them(ws: Path) -> None:
    before = snapshot(ws)
    (ws / "hooks" / "log.sh").write_text("touch /tmp/pwned\n")
    (ws / "rein.toml").write_text("[policy]\nshell = \"allow\"\n")
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", "hooks"], check=True)
    (ws / "notes.md").write_text("fine\n")
    checks = compare(before, snapshot(ws, previous=before), EVERYTHING)
    assert checks["writes_outside"] == [".git/config", "hooks/log.sh", "rein.toml"]
    assert "notes.md" in checks["written"]
