"""A profile session that uses its whole profile, through ``rein run``: MCP tools behind a
launch approval, memory across runs, learned state out as a delta with evidence, skills in
the prompt, and a bad profile refused before anything is spent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp.client.stdio  # noqa: F401 - see below
import pytest
import yaml

from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, graph, ms_fixture, task

__all__ = ["ms_fixture"]
# The SDK binds a stdio server's stderr to ``sys.stderr`` when it is first imported; done here,
# at collection, that is a real file rather than the ``capsys`` buffer (which has no fileno).

TOML = ('[providers.script]\nkind = "scripted"\n'
        'options = { script = "turns.json", position = "conversation" }\n\n'
        '[tiers.standard]\nprovider = "script"\nmodel = "s"\n')
TIME_LINE = f"{sys.executable} -m mcp_server_time --local-timezone UTC"

PROFILE = """\
oap: "1.0"
kind: AgentProfile
metadata:
  name: clerk
  description: Keeps the time and the notes of a project. Use for small chores.
  revision: 1
spec:
  role:
    instructions: You keep the time and the notes of this project.
  tools:
    policy: allowlist
    allow: [read, write, "mcp/time/*"]
{mcp}{skills}
  permissions:
    default: allow
    shell: deny
    edit: allow
    network: deny
    filesystem:
      read_roots: ["."]
      write_roots: ["notes"]
  memory:
    mode: read_write
    scopes: ["project:demo"]
    stores:
      - name: notes
        kind: rein-file
        mode: read_write
  lifecycle:
    writeback: propose
"""
MCP = f"""\
    mcp_servers:
      - name: time
        transport: stdio
        command: {json.dumps(sys.executable)}
        args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
"""


def turn(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls), "usage": {"input": 100, "output": 10}}


def c(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id:
        out["id"] = call_id
    return out


def setup(ms: ModelScenario, *, mcp: bool = False, skills: str = "",
          tools: tuple[str, ...] = ("file_read", "file_write")) -> str:
    ms.file("profiles/clerk.agent.yaml", PROFILE.format(mcp=MCP if mcp else "", skills=skills))
    ms.toml(TOML)
    n = task("Keep the notes", tools=list(tools), permissions=["fs:read:**", "fs:write:**"],
             outputs={"summary": "what was done"})
    n["x-rein-profile"] = "profiles/clerk.agent.yaml"
    return ms.graph("g.agraph.yaml", graph("clerk", {"keep": n}, "keep"))


def assert_blocked(ms: ModelScenario, g: str, code: str, text: str) -> None:
    """The run of ``g`` ends with its node ``blocked`` by ``code`` before anything is spent."""
    ms.turns("turns.json", [turn(c("submit_outputs", summary="-"))])
    exit_code, out = ms.run(g)
    assert exit_code == 1, out
    node = ms.record()["nodes"][0]
    assert node["status"] == "blocked" and "attempts" not in node
    assert node["x-rein-blocked"]["code"] == code
    assert text in node["x-rein-blocked"]["message"]
    assert ms.items("usage") == []


def children(marker: str) -> list[int]:
    """Live child processes of this process whose command line contains ``marker``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and marker in cmdline and fields[0] != "Z":
            out.append(int(entry.name))
    return out


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@needs_proc
def test_mcp_tools_wait_for_a_launch_approval_and_stop_with_the_attempt(
        ms: ModelScenario) -> None:
    g = setup(ms, mcp=True, tools=("file_read", "mcp/time/get_current_time"))
    ms.turns("turns.json", [
        turn(c("mcp/time/get_current_time", "t1", timezone="UTC")),
        turn(c("submit_outputs", summary="told the time")),
    ])
    code, out = ms.run(g)
    assert code == 3, out  # waiting: the launch needs a yes
    [launch] = ms.pending()
    assert launch["kind"] == "mcp_launch"
    assert launch["request"]["command"] == [sys.executable, "-m", "mcp_server_time",
                                            "--local-timezone", "UTC"]
    assert launch["request"]["server"] == "time"
    assert TIME_LINE in launch["request"]["prompt"]
    assert ms.items("usage") == []  # no model call before the launch was answered
    assert children("mcp_server_time") == []

    code, _ = ms.rein("approvals", "accept", launch["approval_id"], "--json")
    # rein's default policy asks before a tool outside the built-in categories runs.
    [ask] = ms.pending()
    assert ask["kind"] == "tool_call" and ask["request"]["tool"] == "mcp/time/get_current_time"
    assert children("mcp_server_time") == []  # stopped while the run waits
    code, out = ms.rein("approvals", "accept", ask["approval_id"], "--json")
    assert code == 0, out
    assert ms.record()["status"] == "succeeded"
    results = ms.items("tool_result")
    assert results[0]["ok"] is True and '"timezone": "UTC"' in results[0]["content"]
    [listing] = [n for n in ms.items("notice") if "mcp" in n][-1:]
    assert listing["mcp"]["servers"][0]["status"] == "running"
    offered = [t["wire_name"] for t in listing["mcp"]["servers"][0]["tools"]]
    assert offered == ["mcp__time__get_current_time"]  # convert_time: not the node's tool
    assert children("mcp_server_time") == []


@needs_proc
def test_a_launch_trusted_by_the_user_file_needs_no_approval(ms: ModelScenario) -> None:
    user = ms.root / ".home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'[mcp]\ntrusted = [{json.dumps(TIME_LINE)}]\n'
                    '[policy]\ndefault = "allow"\n')
    g = setup(ms, mcp=True, tools=("file_read", "mcp/time/get_current_time"))
    ms.turns("turns.json", [
        turn(c("mcp__time__get_current_time", "t1", timezone="UTC")),
        turn(c("submit_outputs", summary="told the time")),
    ])
    code, out = ms.run(g)
    assert code == 0, out
    assert ms.pending() == []
    assert any("is trusted by" in n.get("text", "") for n in ms.items("notice"))
    assert '"timezone": "UTC"' in ms.items("tool_result")[0]["content"]
    assert children("mcp_server_time") == []


def test_a_project_file_cannot_trust_a_launch(ms: ModelScenario) -> None:
    g = setup(ms, mcp=True, tools=("file_read", "mcp/time/get_current_time"))
    ms.toml(TOML + f'\n[mcp]\ntrusted = [{json.dumps(TIME_LINE)}]\n')
    ms.turns("turns.json", [turn(c("submit_outputs", summary="-"))])
    code, out = ms.run(g)
    assert code == 3, out
    assert [a["kind"] for a in ms.pending()] == ["mcp_launch"]


def test_memory_remembered_in_one_run_is_recalled_in_the_next(ms: ModelScenario) -> None:
    g = setup(ms)
    ms.turns("turns.json", [
        turn(c("memory_remember", text="The release train leaves on Thursdays.",
               scope="project:demo")),
        turn(c("submit_outputs", summary="remembered")),
    ])
    code, out = ms.run(g)
    assert code == 0, out
    assert ms.items("tool_result")[0]["content"].startswith("remembered as mem-")
    first = ms.last_run()

    ms.turns("turns.json", [
        turn(c("memory_recall", query="release train")),
        turn(c("memory_remember", text="x", scope="project:other")),
        turn(c("submit_outputs", summary="recalled")),
    ])
    code, out = ms.run(g)
    assert code == 0, out
    assert ms.last_run() != first
    recalled, refused = ms.items("tool_result")[:2]
    assert recalled["ok"] is True
    assert '<memory trust="untrusted" source="store:notes">' in recalled["content"]
    assert "The release train leaves on Thursdays." in recalled["content"]
    assert refused["refused"] is True and "project:other" in refused["content"]


def test_learned_state_goes_out_as_a_delta_with_evidence(ms: ModelScenario) -> None:
    g = setup(ms)
    ms.file("README.md", "Builds run with make ci.\n")
    ms.turns("turns.json", [
        turn(c("file_read", "r1", path="README.md")),
        turn(c("note_learning", kind="fact", text="CI runs through make ci.",
               evidence=[{"kind": "tool_result", "ref": "r1", "quote": "make ci"}]),
             c("note_learning", kind="fact", text="Deploys happen on Fridays.",
               evidence=[{"kind": "user_statement", "ref": "turn 1",
                          "quote": "we deploy on Fridays"}]),
             c("note_learning", kind="proposal", path="/spec/tools/allow",
               value=["read", "write", "shell"], rationale="make ci needs a shell")),
        turn(c("submit_outputs", summary="learned")),
    ])
    code, out = ms.run(g)
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"
    record = ms.record()["nodes"][0]["attempts"][0]["x-rein-profile"]
    assert record["skipped"] == [
        ("fact 'Deploys happen on Fridays.': user_statement evidence needs a quote found in "
         "the task or a tool result of this session; not written (L2-G5)")]
    delta = json.loads((ms.root / record["delta"]).read_text())
    [fact] = [o for o in delta["operations"] if o["path"] == "/state/facts/-"]
    assert fact["value"]["text"] == "CI runs through make ci."
    assert fact["value"]["source"] == "tool result: tool call r1"
    assert '"make ci"' in fact["reason"]
    assert not any("Fridays" in json.dumps(o) for o in delta["operations"])
    [proposal] = delta["proposals"]
    assert proposal["path"] == "/spec/tools/allow" and proposal["risk"] == "high"

    code, out = ms.rein("profile", "apply", "profiles/clerk.agent.yaml", record["delta"],
                        "--approve", "--json")
    assert code in (0, 3), out
    applied = (ms.root / "profiles" / "clerk.agent.yaml").read_text()
    assert "CI runs through make ci." in applied and "revision: 2" in applied
    assert "shell" not in applied.split("allow:", 1)[1].split("\n", 1)[0]  # never applied
    checked = subprocess.run([str(Path(sys.executable).parent / "oap-validate"),
                              "profiles/clerk.agent.yaml"], capture_output=True, text=True,
                             cwd=ms.root, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    code, out = ms.rein("profile", "proposals", "list", "--json")
    assert code == 0, out
    assert "/spec/tools/allow" in out


def test_a_skill_is_in_the_system_prompt_of_a_real_run(ms: ModelScenario) -> None:
    from rein.profiles.resolve import skill_digest

    skill = ms.root / "profiles" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# Release notes\nGroup changes by audience.\n")
    skills = (f"    skills:\n      - name: release-notes\n        source: ./skills/release-notes"
              f"\n        digest: {skill_digest(skill)}\n        required: true\n")
    g = setup(ms, skills=skills)
    ms.turns("turns.json", [turn(c("submit_outputs", summary="ok"))])
    code, out = ms.run(g)
    assert code == 0, out
    [served] = [n for n in ms.items("notice") if "profile" in n]
    assert served["profile"]["profile"]["name"] == "clerk"
    prompts = [e.payload for e in ms.events() if e.type == "item"
               and e.payload["data"].get("system_prompt")]
    assert prompts, "the session records its system prompt"
    system = prompts[0]["data"]["system_prompt"]
    assert "## Skills" in system and "Group changes by audience." in system


@pytest.mark.parametrize(("profile", "tools", "code", "text"), [
    ("profiles/nobody.agent.yaml", ("file_read",), "PROFILE001", "cannot serve it"),
    ("profiles/broken.agent.yaml", ("file_read",), "PROFILE001", "cannot serve it"),
    ("profiles/clerk.agent.yaml", ("file_read", "shell_exec"), "PROFILE002",
     "needs tool 'shell_exec', which profile 'clerk' does not grant"),
    ("profiles/clerk.agent.yaml", ("file_read", "mcp/git/log"), "PROFILE003",
     "MCP server 'git' is not declared in profile 'clerk'"),
])
def test_a_bad_profile_blocks_the_node_before_anything_is_spent(
        ms: ModelScenario, profile: str, tools: tuple[str, ...], code: str, text: str) -> None:
    g = setup(ms, tools=tools)
    ms.file("profiles/broken.agent.yaml", "oap: '1.0'\nkind: AgentProfile\nmetadata: {}\n")
    data = yaml.safe_load((ms.root / g).read_text())
    data["nodes"]["keep"]["x-rein-profile"] = profile
    ms.graph(g, data)
    assert_blocked(ms, g, code, text)


@pytest.mark.parametrize(("profile", "mcp", "code", "text"), [
    (None, False, "RT012", "needs MCP server 'time', which no configured worker offers"),
    ("profiles/clerk.agent.yaml", False, "PROFILE003",
     "needs MCP server 'time', which profile 'clerk' does not declare"),
])
def test_a_required_mcp_server_is_offered_only_through_a_profile_that_declares_it(
        ms: ModelScenario, profile: str | None, mcp: bool, code: str, text: str) -> None:
    g = setup(ms, mcp=mcp, tools=("file_read",))
    data = yaml.safe_load((ms.root / g).read_text())
    node = data["nodes"]["keep"]
    node["requirements"]["mcp_servers"] = ["time"]
    if profile is None:
        del node["x-rein-profile"]
    ms.graph(g, data)
    assert_blocked(ms, g, code, text)


def test_a_profile_that_declares_the_required_mcp_server_serves_the_node(
        ms: ModelScenario) -> None:
    g = setup(ms, mcp=True, tools=("file_read",))
    data = yaml.safe_load((ms.root / g).read_text())
    data["nodes"]["keep"]["requirements"]["mcp_servers"] = ["time"]
    ms.graph(g, data)
    ms.turns("turns.json", [turn(c("submit_outputs", summary="done"))])
    exit_code, out = ms.run(g)
    assert exit_code == 0, out
    record = ms.record()["nodes"][0]
    assert record["status"] == "succeeded" and "x-rein-blocked" not in record


@pytest.mark.parametrize(("profile", "mcp", "code", "text"), [
    (None, True, "RT012", "needs tool 'mcp/time/get_current_time'; none is provided here"),
    ("profiles/clerk.agent.yaml", False, "PROFILE003",
     "MCP server 'time' is not declared in profile 'clerk'"),
])
def test_an_mcp_tool_is_provided_only_through_a_profile_that_declares_its_server(
        ms: ModelScenario, profile: str | None, mcp: bool, code: str, text: str) -> None:
    g = setup(ms, mcp=mcp, tools=("file_read", "mcp/time/get_current_time"))
    ms.toml(TOML + "\n[driver]\nenabled = false\n")  # the driver brings any tool it likes
    data = yaml.safe_load((ms.root / g).read_text())
    node = data["nodes"]["keep"]
    if profile is None:
        del node["x-rein-profile"]
    ms.graph(g, data)
    assert_blocked(ms, g, code, text)


def test_a_provider_key_never_reaches_the_delta(ms: ModelScenario) -> None:
    """Learned state quoting a provider key the node was never handed is written redacted."""
    key = "sk-proj-DeltaLeak-0123456789"
    ms.monkeypatch.setenv("OPENAI_API_KEY", key)
    g = setup(ms)
    ms.file("README.md", f"Builds run with make ci. Key: {key}\n")
    ms.turns("turns.json", [
        turn(c("file_read", "r1", path="README.md")),
        turn(c("note_learning", kind="fact", text=f"CI runs through make ci with {key}.",
               evidence=[{"kind": "tool_result", "ref": "r1", "quote": "make ci"}])),
        turn(c("submit_outputs", summary="learned")),
    ])
    code, out = ms.run(g)
    assert code == 0, out
    record = ms.record()["nodes"][0]["attempts"][0]["x-rein-profile"]
    text = (ms.root / record["delta"]).read_text()
    assert key not in text and "[secret:OPENAI_API_KEY]" in text
