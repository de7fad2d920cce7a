"""Running `rein eval` in process, as a script would: the exit code and the JSON printed."""

from __future__ import annotations

import json
from typing import Any

from support import ROOT

from rein.cli import main

SUITE = ROOT / "examples" / "eval"


def run_eval(capsys: Any, *args: str) -> tuple[int, dict[str, Any]]:
    """``rein eval ARGS --json -q``: (exit code, the one JSON object on stdout)."""
    capsys.readouterr()
    code = main(["eval", *args, "--json", "-q"])
    out = capsys.readouterr().out
    return code, json.loads(out)
