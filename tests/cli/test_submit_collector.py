"""A cold ``rein submit`` runs no pass of the cyclic collector over what its start imports
and reads: the collector is paused from the turn's start until the run advances
(rein.core.collector.starting), and runs again from there on."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import EXAMPLES

from rein.cli import main
from rein.engine.run import runner

DEMO = EXAMPLES / "driver-demo.agraph.yaml"
RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
       ) -> Path:
    """The driver demo waiting for the driver's answer, written to the inbox."""
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    shutil.copyfile(DEMO, root / DEMO.name)
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    assert main(["graph", "digest", DEMO.name]) == 0
    digest = capsys.readouterr().out.strip()
    assert main(["run", DEMO.name, "--approve", digest]) == 3
    capsys.readouterr()
    assert main(["next", "--json"]) == 0
    example = json.loads(capsys.readouterr().out)["example"]
    (root / "greet.py").write_text(RIGHT)
    (root / ".rein" / "inbox.json").write_text(json.dumps(example))
    return root


@pytest.fixture
def passes() -> Iterator[list[str]]:
    """Every pass of the collector, as "start" (before the run advances) or "advanced";
    with a young generation of 20 containers, so a start that let it run would run it
    hundreds of times."""
    seen: list[str] = []
    advanced = [False]

    def noted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append("advanced" if advanced[0] else "start")

    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    gc.set_threshold(20, 10, 10)
    gc.callbacks.append(noted)
    real = runner.advancing

    def advancing() -> None:
        advanced[0] = True
        real()

    runner.advancing = advancing  # type: ignore[assignment]
    try:
        yield seen
    finally:
        runner.advancing = real  # type: ignore[assignment]
        gc.callbacks.remove(noted)
        gc.set_threshold(*threshold)
        gc.unfreeze()
        if not enabled:
            gc.disable()


def test_the_start_of_a_submit_runs_no_pass_of_the_collector(
        ws: Path, passes: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    passes.clear()  # the test runner's own, before the turn
    assert main(["submit"]) == 3  # the answer taken, the run at the person's gate
    assert "review waiting" in capsys.readouterr().err
    assert passes.count("start") == 0
    assert passes.count("advanced") > 0  # the collector ran again once the run advanced
    assert gc.isenabled()


def test_a_refused_submit_leaves_the_collector_running(
        ws: Path, passes: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (ws / ".rein" / "inbox.json").write_text("{not json")
    assert main(["submit"]) != 0
    assert gc.isenabled()
    passes.clear()
    junk = [{"i": [i]} for i in range(200)]
    assert len(junk) == 200 and passes  # it runs after the refused turn
