"""Shared fixtures of the profile tests (imported by name: a conftest.py here would shadow the
root one). The environment is isolated: no real /etc/rein or ~/.config is read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

HOOKS_TOML = """
[hooks.redact-secrets]
command = ["python", "-c", "print('{}')"]

[hooks.verify-catalog-reachable]
command = "true"
"""


@pytest.fixture(name="isolated_env", autouse=True)
def isolated_env_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """HOME, XDG and managed config point into the test's tmp dir."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "REIN_MANAGED_CONFIG": str(tmp_path / "etc" / "rein.toml")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REIN_USER_CONFIG", raising=False)
    monkeypatch.delenv("REIN_MANAGED_AGENTS", raising=False)
    yield env


@pytest.fixture(name="ws")
def ws_fixture(tmp_path: Path) -> Path:
    """An empty workspace (not the cwd)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture(name="data")
def data_fixture() -> Path:
    """The small profiles shipped with the tests."""
    return DATA
