"""rein installs as a tool from a built wheel (what `pipx install` / `uv tool install` do):
the wheel carries every module and data file, and the installed `rein` runs on its own.

The wheel is built by pip exactly as a user builds it. The fresh environment gets rein from
the wheel only; its third-party dependencies are borrowed from this environment through a
path file (never its editable rein), so the test needs no download beyond the build
backend and still runs in CI.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from support import EXAMPLES, ROOT

from rein.core.version import VERSION

SOURCE = ROOT / "src" / "rein"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "-w", str(out), str(ROOT)], capture_output=True, text=True,
                           timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("rein_ags-*.whl")
    return found


@pytest.fixture(scope="module")
def tool(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with rein installed from the wheel; its bin folder."""
    env = tmp_path_factory.mktemp("tool") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True,
                   timeout=120)
    python = env / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--no-deps", "--quiet", str(wheel)], check=True, timeout=300)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(python), "-c", where], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "borrowed-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env / "bin"


def test_the_wheel_carries_every_module_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.relative_to(SOURCE.parent).as_posix() for p in SOURCE.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped - names == set()
    assert "rein/py.typed" in names  # type information for library users
    assert wheel.name == f"rein_ags-{VERSION}-py3-none-any.whl"  # the name on the index
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "rein = rein.cli:run" in zipfile.ZipFile(wheel).read(entry_points).decode()


def _run(tool: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool / "rein"), *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=120, check=False)


def test_the_installed_tool_runs_from_the_wheel_alone(tool: Path, tmp_path: Path) -> None:
    where = subprocess.run([str(tool / "python"), "-c", "import rein; print(rein.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(tool.parent)  # not this checkout's editable copy
    version = _run(tool, "--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"rein {VERSION}\n")
    shutil.copyfile(EXAMPLES / "no-worker.agraph.yaml", tmp_path / "g.agraph.yaml")
    checked = _run(tool, "graph", "validate", "g.agraph.yaml", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (
        0, "g.agraph.yaml: ok\n1 document: 0 errors, 0 warnings\n"), checked.stderr
    planned = _run(tool, "graph", "plan", "--format", "mermaid", "g.agraph.yaml", cwd=tmp_path)
    assert planned.returncode == 0 and planned.stdout.startswith("flowchart TD\n")


def test_the_examples_ship_in_the_wheel_as_the_checkout_has_them(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    for name in ("no-worker.agraph.yaml", "driver-demo.agraph.yaml", "log-digest.agraph.yaml",
                 "incident-review.agraph.yaml", "release-train.agraph.yaml",
                 "clock-keeper.agent.yaml"):
        assert archive.read(f"rein/examples/{name}") == (EXAMPLES / name).read_bytes(), name
    assert "rein/examples/starters/first.agraph.yaml" in archive.namelist()


def test_the_help_example_works_outside_the_checkout(tool: Path, tmp_path: Path) -> None:
    """`rein --help`'s example, command by command, from the wheel in an empty folder."""
    helped = _run(tool, "--help", cwd=tmp_path)
    steps = [line.strip().split("  #")[0].split() for line in helped.stdout.splitlines()
             if line.strip().startswith("rein ") and "--help" not in line]
    assert steps and steps[0][:2] == ["rein", "init"], helped.stdout
    for argv in steps:
        done = _run(tool, *argv[1:], cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    assert (tmp_path / "no-worker.agraph.yaml").read_bytes() == (
        EXAMPLES / "no-worker.agraph.yaml").read_bytes()
    started = _run(tool, "init", "--graph", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    checked = _run(tool, "graph", "validate", "--strict", "first.agraph.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
