"""docs/mcp.md's "Try it" runs as written: each command of its console block, from the root
of a checkout, prints what the page shows (the reference time server must be installed)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from support import ROOT

from rein.cli import main

PAGE = ROOT / "docs" / "mcp.md"


def _try_it() -> list[tuple[list[str], list[str]]]:
    """(argv, the output lines shown under it) for each `$ rein` line of the block."""
    text = PAGE.read_text(encoding="utf-8").split("## Try it", 1)[1]
    block = re.search(r"```console\n(.*?)```", text, re.DOTALL)
    assert block is not None, "docs/mcp.md lost its Try it block"
    shown: list[tuple[list[str], list[str]]] = []
    for line in block.group(1).replace("\\\n", " ").splitlines():
        if line.startswith("$ "):
            shown.append((shlex.split(line[2:])[1:], []))
        else:
            shown[-1][1].append(line)
    return shown


@pytest.fixture(name="checkout")
def checkout_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The server's console script sits beside this interpreter (the test extras install it).
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent),
                                                os.environ.get("PATH", "")]))
    if shutil.which("mcp-server-time") is None:
        pytest.skip("mcp-server-time is not installed (pip install mcp-server-time)")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    monkeypatch.chdir(ROOT)


def _rein(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.usefixtures("checkout")
def test_the_listing_prints_what_the_page_shows() -> None:
    (argv, shown), _call = _try_it()
    code, text = _rein(argv)
    assert code == 0, text
    assert text.splitlines() == shown


@pytest.mark.usefixtures("checkout")
def test_the_approved_call_converts_the_time() -> None:
    _listing, (argv, _shown) = _try_it()
    code, text = _rein(argv)
    assert code == 0, text
    answer = json.loads(text[text.index("{"):])
    assert answer["target"]["timezone"] == "Asia/Tokyo"
    assert answer["target"]["datetime"].endswith("T21:00:00+09:00")
