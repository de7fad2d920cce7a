"""The committed Codex schema is what the pinned ``codex`` prints, wherever it is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.appserver.codex_bin import codex_binary, codex_env
from tests.appserver.codex_schema import BUNDLE, VERSION


def test_the_committed_codex_schema_is_what_codex_prints(tmp_path: Path) -> None:
    codex = codex_binary()
    out = tmp_path / "schema"
    subprocess.run([str(codex), "app-server", "generate-json-schema", "--out", str(out)],
                   env=codex_env(tmp_path / "home"), capture_output=True, check=True,
                   timeout=120)
    fresh = (out / BUNDLE.name).read_text()
    assert fresh == BUNDLE.read_text(), "run: bash scripts/codex-schema.sh"
    assert (BUNDLE.parent / "VERSION").read_text().strip() == VERSION
