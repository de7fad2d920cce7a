"""``rein graph validate``'s plain forms are answered without click, byte for byte as the
click command answers them, and everything else still goes through click.

Each case runs twice in fresh processes: once through ``rein.cli.main`` (which takes the
quick path for these forms) and once through the click command itself; stdout, stderr and
the exit code must be the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import EXAMPLES

_MAIN = """
import sys
from rein.cli import main
code = main(sys.argv[1:])
print("click" in sys.modules, file=sys.stderr)
raise SystemExit(code)
"""
_CLICK = """
import sys
from rein.cli.app import cli
code = cli.main(args=sys.argv[1:], prog_name="rein", standalone_mode=False)
print(True, file=sys.stderr)
raise SystemExit(code)
"""


def _run(probe: str, args: list[str]) -> tuple[int, str, str, bool]:
    done = subprocess.run([sys.executable, "-c", probe, *args], check=False,
                          capture_output=True, text=True, encoding="utf-8")
    *err, used_click = done.stderr.splitlines() or ["False"]
    return done.returncode, done.stdout, "\n".join(err), used_click == "True"


def _graphs(tmp_path: Path) -> dict[str, Path]:
    demo = EXAMPLES / "driver-demo.agraph.yaml"
    bad = tmp_path / "bad.agraph.yaml"  # an unknown field: one error, with a hint
    bad.write_text(demo.read_text().replace("\ntitle: ", "\nbogus_field: 1\ntitle: ", 1))
    return {"demo": demo, "bad": bad, "folder": tmp_path}


@pytest.mark.parametrize("form", [
    ["{demo}"], ["--json", "{demo}"], ["--strict", "{demo}"], ["{bad}"],
    ["{bad}", "--json", "--strict"], ["{folder}"], ["{demo}", "{bad}"],
])
def test_the_quick_path_prints_what_the_click_command_prints(tmp_path: Path,
                                                              form: list[str]) -> None:
    paths = _graphs(tmp_path)
    args = ["graph", "validate", *(a.format(**paths) for a in form)]
    code, out, err, used_click = _run(_MAIN, args)
    assert not used_click  # answered without importing click
    assert (code, out, err) == _run(_CLICK, args)[:3]
    if "--json" in args:
        assert json.loads(out)["documents"]


@pytest.mark.parametrize("form", [["--help"], ["--strict"], ["{empty}"], ["-x", "{demo}"]])
def test_other_forms_go_through_click(tmp_path: Path, form: list[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["graph", "validate",
            *(a.format(demo=EXAMPLES / "driver-demo.agraph.yaml", empty=empty) for a in form)]
    code, out, err, used_click = _run(_MAIN, args)
    assert used_click
    assert code in (0, 1, 64)
    assert out or err  # help, the usage error, or the empty folder's message
