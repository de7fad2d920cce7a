"""The real ``codex`` binary of the pinned version, where the ``openai-codex-cli-bin`` wheel
is installed (``pip install openai-codex-cli-bin==0.163.0``); the tests that need it skip
and say why elsewhere."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.appserver.codex_schema import VERSION

__all__ = ["codex_binary", "codex_env"]


def codex_binary() -> Path:
    """The binary, or a skip naming what to install."""
    try:
        import codex_cli_bin  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        pytest.skip(f"the codex binary is not installed (pip install "
                    f"openai-codex-cli-bin=={VERSION})")
    path = Path(codex_cli_bin.bundled_codex_path())
    shown = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                           check=False).stdout
    if VERSION not in shown:
        pytest.skip(f"the installed codex is {shown.strip()!r}, not {VERSION}")
    return path


def codex_env(home: Path) -> dict[str, str]:
    """Codex writes under $CODEX_HOME even to print its schema: a fresh one, not ~/.codex."""
    home.mkdir(parents=True, exist_ok=True)
    return {"CODEX_HOME": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin"}
