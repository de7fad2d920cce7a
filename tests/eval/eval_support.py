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


def digest_to_approve(capsys: Any, *args: str) -> str:
    """What ``rein eval ARGS`` asks a person to approve: it refuses (exit 4, EVAL021) and
    names the digest; nothing was recorded."""
    code, out = run_eval(capsys, *args)
    assert (code, out["error"]["code"]) == (4, "EVAL021"), out
    return str(out["error"]["digest"])


def run_approved(capsys: Any, *args: str) -> tuple[int, dict[str, Any]]:
    """``rein eval ARGS`` after approving what its configurations run, as a person does."""
    return run_eval(capsys, *args, "--approve", digest_to_approve(capsys, *args))
