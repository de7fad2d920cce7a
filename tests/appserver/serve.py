"""A workspace for ``rein app-server``: the scripted provider in ``rein.toml``, its turns,
an environment that keeps this machine's configuration out, and the server's argv."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOML = ('[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "%s" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "scripted-1"\n')


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell_exec", "arguments": {"command": command}}]}


def reply(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "submit_outputs", "arguments": {"reply": text}}]}


def workspace(root: Path, turns: list[Any], *, position: str = "calls") -> Path:
    (root / "rein.toml").write_text(TOML % position)
    (root / "turns.json").write_text(json.dumps(turns))
    return root


def environment(root: Path) -> dict[str, str]:
    """No rein.toml of this machine, and no ~/.codex, takes part."""
    home = root / ".home"
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "REIN_MANAGED_CONFIG": str(root / ".etc" / "rein.toml"),
            "CODEX_HOME": str(home / ".codex"), "REIN_USER_CONFIG": ""}


def server_args(root: Path) -> tuple[str, ...]:
    return (sys.executable, "-c", "import sys; from rein.cli import run; sys.exit(run())",
            "app-server", "--workspace", str(root))
