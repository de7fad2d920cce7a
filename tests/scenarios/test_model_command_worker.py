"""The command worker inside runs: configured in rein.toml, chosen by tier routing or by the
node (``x-rein-worker``), sandboxed, its report mapped to the declared outputs."""

from __future__ import annotations

import sys

import pytest

from rein.cli import main
from rein.config.trusting import trust_project
from rein.errors import ConfigError
from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, graph, ms_fixture, task

__all__ = ["ms_fixture"]  # the fixture this module's tests use

# A stand-in CLI agent (a test double): writes the file the prompt asks for, reports JSON.
AGENT = """\
import json, os, pathlib, sys
prompt = pathlib.Path(sys.argv[1]).read_text()
name = "CHANGELOG.md" if "changelog" in prompt.lower() else "NOTES.md"
pathlib.Path(name).write_text("# " + name + "\\n")
report = {"summary": "wrote " + name, "extra_key": 1}
if os.environ.get("REIN_OUTPUTS_FILE") and name == "NOTES.md":
    pathlib.Path(os.environ["REIN_OUTPUTS_FILE"]).write_text(json.dumps(report))
else:
    print("working...")
    print(json.dumps(report))
"""


def setup(ms: ModelScenario) -> str:
    ms.file("agent.py", AGENT)
    ms.toml(f'[workers.command.fake]\nargv = ["{sys.executable}", "{ms.root / "agent.py"}", '
            '"{prompt_file}"]\nmodel = "fake-agent"\ntimeout_seconds = 60\n\n'
            '[tiers.standard]\nprovider = "fake"\nmodel = "fake-agent-v2"\n')
    trust_project(ms.root)  # a project's command workers run once trusted
    notes = task("Write notes", tools=[], permissions=["fs:write:NOTES.md"],
                 outputs={"summary": "what"})
    changelog = task("Write the changelog", tools=[], permissions=["fs:write:CHANGELOG.md"],
                     outputs={"summary": "what"}, depends_on=["notes"])
    changelog["x-rein-worker"] = "command/fake"
    return ms.graph("g.agraph.yaml", graph("cmd", {"notes": notes, "changelog": changelog},
                                           "notes"))


def test_command_worker_through_routing_and_by_name(ms: ModelScenario) -> None:
    code, out = ms.run(setup(ms))
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"
    assert (ms.root / "NOTES.md").read_text() == "# NOTES.md\n"
    assert (ms.root / "CHANGELOG.md").read_text() == "# CHANGELOG.md\n"
    nodes = {n["node_id"]: n for n in ms.record()["nodes"]}
    assert nodes["notes"]["outputs"] == {"summary": "wrote NOTES.md"}
    assert nodes["changelog"]["outputs"] == {"summary": "wrote CHANGELOG.md"}
    routed = nodes["notes"]["attempts"][0]["routed"]
    assert routed["provider"] == "fake" and routed["model"] == "fake-agent-v2"
    agent_messages = [i for i in ms.items("message") if i.get("role") == "agent"]
    assert [m["exit_code"] for m in agent_messages] == [0, 0]
    started = [e.payload["worker"] for e in ms.events() if e.type == "attempt/started"]
    assert started == ["command", "command"]


def test_a_command_worker_nobody_routes_serves_only_nodes_that_name_it(
        ms: ModelScenario) -> None:
    ms.file("agent.py", AGENT)
    ms.toml(f'[workers.command.fake]\nargv = ["{sys.executable}", "{ms.root / "agent.py"}", '
            '"{prompt_file}"]\n\n[driver]\nenabled = false\n')
    trust_project(ms.root)  # a project's command workers run once trusted
    node = task("Write notes", tools=[], permissions=["fs:write:NOTES.md"],
                outputs={"summary": "what"})
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("cmd", {"notes": node}, "notes")))
    assert code == 3, out  # nobody serves it: the run waits for a worker
    assert not (ms.root / "NOTES.md").exists()


def test_an_agent_cannot_commit(ms: ModelScenario) -> None:
    """Under bubblewrap .git is read-only, so the commit itself fails; under the process
    backend the commit lands and the moved ref fails the attempt. Either way no commit is
    accepted as the node's work."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(ms.root)], check=True)
    committer = ("import subprocess, pathlib\npathlib.Path('NOTES.md').write_text('x')\n"
                 "subprocess.run(['git', '-c', 'user.email=a@b', '-c', 'user.name=a', 'commit',"
                 " '-q', '--allow-empty', '-m', 'sneaky'])\nprint('{\"summary\": \"done\"}')\n")
    ms.file("agent.py", committer)
    ms.toml(f'[workers.command.fake]\nargv = ["{sys.executable}", "{ms.root / "agent.py"}"]\n\n'
            '[tiers.standard]\nprovider = "fake"\nmodel = "m"\n')
    trust_project(ms.root)  # a project's command workers run once trusted
    node = task("Write notes", tools=[], permissions=["fs:write:NOTES.md"],
                outputs={"summary": "what"})
    code, out = ms.run(ms.graph("g.agraph.yaml", graph("cmd", {"notes": node}, "notes")))
    [message] = [i for i in ms.items("message") if i.get("role") == "agent"]
    [attempt] = ms.record()["nodes"][0]["attempts"]
    log = subprocess.run(["git", "-C", str(ms.root), "log", "--oneline"], capture_output=True,
                         text=True, check=False)  # no commit at all: git log fails
    if message["backend"] == "bubblewrap":
        assert "sneaky" not in log.stdout
        stderr = [i["text"] for i in ms.items("notice") if i.get("stream") == "stderr"]
        assert any("Read-only file system" in t for t in stderr)
        assert code == 0, out
    else:
        assert "sneaky" in log.stdout
        assert code == 1, out
        assert attempt["x-rein-failure-class"] == "permission_denied"
        assert "workers never commit" in attempt["error"]


@pytest.mark.parametrize(("table", "code"), [
    ('[workers.command.x]\nargv = "claude -p"\n', "WORKERCFG002"),
    ('[workers.command.x]\nargv = []\n', "WORKERCFG002"),
    ('[workers.command.x]\nargv = ["a"]\ntimeout_seconds = 0\n', "WORKERCFG002"),
    ('[workers.command.x]\nargv = ["a"]\npass_env = "KEY"\n', "WORKERCFG002"),
    ('[workers]\ncommand = 3\n', "WORKERCFG001"),
    ('[tiers.standard]\nprovider = "nowhere"\nmodel = "m"\n', "PROVCFG005"),
])
def test_malformed_worker_tables_are_configuration_errors(ms: ModelScenario, table: str,
                                                          code: str) -> None:
    from rein.config import load_config
    from rein.engine.run.workers_setup import workers_from_config

    ms.toml(table)
    with pytest.raises(ConfigError) as info:
        workers_from_config(ms.root, load_config(ms.root), env={})
    assert info.value.code == code
    ms.graph("g.agraph.yaml", graph("cmd", {"n": task("N", tools=[], permissions=[],
                                                       outputs={"s": "s"})}, "n"))
    assert main(["run", "g.agraph.yaml", "--dry-run"]) == 64  # a config error, no traceback
    assert code in ms.capsys.readouterr().err
