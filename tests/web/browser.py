"""Real headless Chromium for the console's end-to-end tests, or the reason there is none.

Playwright's own browser download needs the network; Debian's ``chromium`` (installed by
``scripts/system-deps.sh``) is driven through ``executable_path`` instead.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CANDIDATES = ("/usr/bin/chromium", "/usr/lib/chromium/chromium", "/usr/bin/chromium-browser")


def chromium() -> str | None:
    for path in (os.environ.get("REIN_CHROMIUM"), *CANDIDATES, shutil.which("chromium")):
        if path and Path(path).exists():
            return path
    return None


def why_not() -> str | None:
    """None when the browser tests can run, else the reason they skip."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[test]')"
    if chromium() is None:
        return "no Chromium (scripts/system-deps.sh installs Debian's chromium)"
    return None


@contextmanager
def launched() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def served(workspace: Path, *extra: str) -> Iterator[str]:
    """``rein serve --port 0`` in ``workspace``; yields the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from rein.cli import run; run()", "serve", "--port", "0",
         *extra], cwd=workspace, stdout=subprocess.PIPE, text=True, env={**os.environ})
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "rein serve printed no URL"
        url = proc.stdout.readline().strip()
        assert re.match(r"http://127\.0\.0\.1:\d+/\?token=", url), url
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


__all__ = ["chromium", "launched", "served", "why_not"]
