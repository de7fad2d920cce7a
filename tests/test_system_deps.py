"""`make test` installs system packages only with consent: where CI asks for it (CI=true) or
after a yes on a terminal. Anywhere else, as root with apt-get, it says what is missing and
how to install it, and installs nothing. Run against a stand-in ``apt-get`` that records
its calls (and an ``id`` that says root), on a PATH holding nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support import ROOT

SCRIPT = ROOT / "scripts" / "system-deps.sh"
BASH = Path("/bin/bash")

pytestmark = pytest.mark.skipif(not BASH.exists(), reason="/bin/bash is not installed")


def _run(tmp_path: Path, **env: str) -> tuple[str, list[str]]:
    """What the script prints and the apt-get calls it made, as root on an empty machine."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "apt-get.calls"
    (bin_dir / "id").write_text("#!/bin/bash\necho 0\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/bash\necho "$*" >> {calls}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    done = subprocess.run([str(BASH), str(SCRIPT)], env={"PATH": str(bin_dir), **env},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, check=True)
    said = calls.read_text().splitlines() if calls.exists() else []
    return done.stdout + done.stderr, said


def test_without_ci_or_a_terminal_nothing_is_installed(tmp_path: Path) -> None:
    out, calls = _run(tmp_path)
    assert calls == []
    assert "system-deps: skipped installing bubblewrap graphviz" in out
    assert "`sudo apt-get install bubblewrap graphviz" in out
    assert "or run `CI=true make system-deps`" in out


def test_where_ci_asks_for_it_the_packages_are_installed(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, CI="true")
    assert calls[0] == "update -qq"
    assert calls[1].startswith("install -y -qq bubblewrap graphviz")
    assert calls[1].endswith("socat ripgrep postgresql")
    assert "system-deps: installing bubblewrap graphviz" in out
