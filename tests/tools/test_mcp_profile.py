"""A profile's MCP servers end to end: resolved, narrowed by rein's policy, confirmed,
launched (the real mcp-server-time), listed and called through ``rein profile mcp``."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main

PROFILE = """\
oap: "1.0"
kind: AgentProfile
metadata:
  name: clock-keeper
  description: Answers questions about time zones. Use for scheduling across zones.
spec:
  role:
    instructions: You convert times between zones.
  tools:
    policy: allowlist
    allow: ["mcp/time/convert_time", "mcp/time/get_current_time"]
    mcp_servers:
      - name: time
        transport: stdio
        command: {python}
        args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
        tools:
          deny: [get_current_time]
  permissions:
    default: allow
"""


@pytest.fixture(name="ws")
def ws_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    ws = tmp_path / "ws"
    (ws / ".agents").mkdir(parents=True)
    (ws / ".agents" / "clock-keeper.agent.yaml").write_text(
        PROFILE.format(python=json.dumps(sys.executable)))
    return ws


def rein(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    text = out.getvalue()
    return code, json.loads(text) if text.startswith("{") else text


def test_without_yes_nothing_launches(ws: Path) -> None:
    code, data = rein("profile", "mcp", "clock-keeper", "--workspace", str(ws), "--json")
    assert code == 4
    assert data["error"]["code"] == "MCP010"
    assert sys.executable in data["error"]["message"]  # the command line is shown


def test_listing_applies_the_server_filter_and_the_profile_grant(ws: Path) -> None:
    code, data = rein("profile", "mcp", "clock-keeper", "--yes", "--workspace", str(ws),
                      "--json")
    assert code == 0
    (server,) = data["servers"]
    assert server["status"] == "running" and server["launch"]["trust"] == "project"
    assert [(t["name"], t["decision"]) for t in server["tools"]] == [
        ("mcp/time/convert_time", "ask")]
    assert server["hidden"] == [
        "mcp/time/get_current_time: excluded by the server's tools allow/deny"]


def test_calls_through_the_cli_ask_first(ws: Path) -> None:
    # rein's default policy is `default = "ask"`, and the profile cannot widen it.
    args = json.dumps({"source_timezone": "UTC", "time": "08:30", "target_timezone":
                       "Asia/Kolkata"})
    base = ("profile", "mcp", "clock-keeper", "--yes", "--call", "mcp/time/convert_time",
            "--args", args, "--workspace", str(ws), "--json")
    code, data = rein(*base)
    assert code == 4 and data["call"]["decision"] == "ask" and data["call"]["refused"]
    code, data = rein(*base, "--approve-call")
    assert code == 0 and data["call"]["ok"]
    assert data["call"]["data"]["structured"]["target"]["datetime"].endswith(
        "T14:00:00+05:30")
    code, data = rein("profile", "mcp", "clock-keeper", "--yes", "--call",
                      "mcp/time/get_current_time", "--args", '{"timezone": "UTC"}',
                      "--approve-call", "--workspace", str(ws), "--json")
    assert code == 4 and data["call"]["decision"] == "deny" and data["call"]["refused"]


def test_reins_policy_narrows_what_is_listed_and_says_which_rule(ws: Path) -> None:
    (ws / "rein.toml").write_text('[policy]\ndeny_tools = ["mcp/time/convert_time"]\n')
    code, data = rein("profile", "mcp", "clock-keeper", "--yes", "--workspace", str(ws),
                      "--json")
    assert code == 0
    (server,) = data["servers"]
    assert server["status"] == "running" and server["tools"] == []
    assert server["hidden"] == [
        "mcp/time/get_current_time: excluded by the server's tools allow/deny",
        "mcp/time/convert_time: denied by rein's policy deny_tools 'mcp/time/convert_time'"]


def test_a_server_whose_every_tool_is_denied_is_not_launched(ws: Path) -> None:
    """The launch runs a command from the profile: when no tool of it could be used, rein
    does not start it (a wrapper marks whether it ever ran)."""
    marker = ws / "launched"
    line = f"touch {marker} && exec {sys.executable} -m mcp_server_time --local-timezone UTC"
    profile = ws / ".agents" / "clock-keeper.agent.yaml"
    profile.write_text(profile.read_text().replace(
        f"command: {json.dumps(sys.executable)}\n"
        '        args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]',
        f"command: sh\n        args: [\"-c\", {json.dumps(line)}]"))
    (ws / "rein.toml").write_text('[policy]\ndeny_tools = ["mcp/time/**"]\n')
    code, data = rein("profile", "mcp", "clock-keeper", "--yes", "--workspace", str(ws),
                      "--json")
    assert code == 0
    (server,) = data["servers"]
    assert server["status"] == "skipped" and server["tools"] == []
    assert server["reason"] == ("not launched: no tool of it may be used (rein's policy "
                                "deny_tools denies 'mcp/time/**')")
    assert not marker.exists()
    # The same profile with the policy lifted does launch it: the wrapper works.
    (ws / "rein.toml").write_text("")
    code, data = rein("profile", "mcp", "clock-keeper", "--yes", "--workspace", str(ws),
                      "--json")
    assert code == 0 and data["servers"][0]["status"] == "running" and marker.exists()


@pytest.mark.parametrize(("change", "reason"), [
    ("tools:\n          allow: []", "its tools.allow is empty"),
    ("tools:\n          deny: ['*']", "its tools.deny '*' matches every tool"),
])
def test_a_server_that_filters_out_all_its_tools_is_not_launched(
        ws: Path, change: str, reason: str) -> None:
    profile = ws / ".agents" / "clock-keeper.agent.yaml"
    profile.write_text(profile.read_text().replace(
        "tools:\n          deny: [get_current_time]", change))
    code, data = rein("profile", "mcp", "clock-keeper", "--workspace", str(ws), "--json")
    assert code == 0  # nothing to confirm: nothing would launch
    assert data["servers"][0]["status"] == "skipped"
    assert data["servers"][0]["reason"] == f"not launched: no tool of it may be used ({reason})"
