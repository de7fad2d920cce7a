"""The MCP client against real servers: mcp-server-time over stdio, a fixture server over
stdio, and an in-process MCPServer over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

from rein.errors import ConfigError, Refused
from rein.tools.mcp import LaunchRequest, McpHub, McpServer, servers_from_profile

HERE = Path(__file__).parent
TIME = McpServer(name="time", transport="stdio", command=sys.executable,
                 args=("-m", "mcp_server_time", "--local-timezone", "UTC"))
FIXTURE = McpServer(name="fx", transport="stdio", command=sys.executable,
                    args=(str(HERE / "mcp_fixture_server.py"),), env={"TOKEN": "${FX_TOKEN}"},
                    deny=("drop_*",))


def allow_all(_: str) -> str:
    return "allow"


def hub(servers: list[McpServer], tmp_path: Path, **kw: Any) -> McpHub:
    kw.setdefault("gate", allow_all)
    kw.setdefault("assume_yes", True)
    return McpHub(servers, profile="p", trust="project", workspace=tmp_path, **kw)


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(body)


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def children_running(marker: str) -> list[int]:
    """Our child processes whose command line contains ``marker``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and marker in cmdline and fields[0] != "Z":
            out.append(int(entry.name))
    return out


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def test_time_server_lists_and_calls_over_stdio(tmp_path: Path) -> None:
    async def body() -> Any:
        async with hub([TIME], tmp_path) as h:
            names = [t.name for t in h.tools]
            decision, result = await h.call("mcp/time/convert_time", {
                "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
            return names, decision, result, h.to_json()

    names, decision, result, listing = run(body)
    assert names == ["mcp/time/get_current_time", "mcp/time/convert_time"]
    assert decision == "allow" and result.ok and not result.refused
    target = result.data["structured"]["target"]
    assert target["timezone"] == "Asia/Tokyo" and target["datetime"].endswith("T21:00:00+09:00")
    assert '"time_difference": "+9.0h"' in result.content
    assert listing["servers"][0]["status"] == "running"
    assert listing["servers"][0]["tools"][1]["wire_name"] == "mcp__time__convert_time"


def test_a_tool_error_is_a_failed_result_not_an_exception(tmp_path: Path) -> None:
    async def body() -> Any:
        async with hub([TIME], tmp_path) as h:
            return await h.call("mcp__time__convert_time", {
                "source_timezone": "UTC", "time": "99:00", "target_timezone": "Asia/Tokyo"})

    decision, result = run(body)
    assert decision == "allow" and not result.ok and not result.refused
    assert "Invalid time format" in result.content


@needs_proc
def test_servers_stop_with_the_session(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    async def body() -> None:
        async with hub([TIME, FIXTURE], tmp_path, environ={"FX_TOKEN": "t0ken-value"}) as h:
            seen["time"] = children_running("mcp_server_time")
            _, result = await h.call("mcp/fx/pid", {})
            seen["fx"] = int(result.content)
            assert alive(seen["fx"])

    run(body)
    assert len(seen["time"]) == 1  # the check below can see a running server
    assert children_running("mcp_server_time") == []
    assert not alive(seen["fx"])


def test_per_server_allow_deny_and_the_gate_apply_before_listing_and_every_call(
        tmp_path: Path) -> None:
    denied: set[str] = {"mcp/time/get_current_time"}

    def gate(name: str) -> str:
        return "deny" if name in denied else "allow"

    async def body() -> Any:
        async with hub([TIME, FIXTURE], tmp_path, gate=gate,
                       environ={"FX_TOKEN": "t0ken-value"}) as h:
            listed = [t.name for t in h.tools]
            hidden = [s["hidden"] for s in h.to_json()["servers"]]
            not_listed = await h.call("mcp/fx/drop_everything", {})
            denied.add("mcp/time/convert_time")  # the grant is read again at call time
            later = await h.call("mcp/time/convert_time", {
                "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
            return listed, hidden, not_listed, later

    listed, hidden, not_listed, later = run(body)
    assert listed == ["mcp/time/convert_time", "mcp/fx/read_env", "mcp/fx/pid"]
    assert hidden == [["mcp/time/get_current_time: not granted by the effective profile"],
                      ["mcp/fx/drop_everything: excluded by the server's tools allow/deny"]]
    assert not_listed[0] == "deny" and not_listed[1].refused
    assert later == ("deny", later[1]) and later[1].refused
    assert later[1].content == ("refused: mcp/time/convert_time is not granted by the "
                                "effective profile")


def test_ask_runs_only_when_approved(tmp_path: Path) -> None:
    async def body() -> Any:
        async with hub([TIME], tmp_path, gate=lambda _: "ask") as h:
            args = {"timezone": "UTC"}
            return (await h.call("mcp/time/get_current_time", args),
                    await h.call("mcp/time/get_current_time", args, approved=True))

    (d1, r1), (d2, r2) = run(body)
    assert (d1, r1.refused, r1.content) == (
        "ask", True, "mcp/time/get_current_time needs a person's approval before it runs")
    assert d2 == "ask" and r2.ok and '"timezone": "UTC"' in r2.content


def test_env_comes_from_the_environment_only_and_is_redacted(tmp_path: Path) -> None:
    environ = {"REIN_SECRET_FX_TOKEN": "s3cret-from-env", "UNDECLARED": "nope"}

    async def body() -> Any:
        async with hub([FIXTURE], tmp_path, environ=environ) as h:
            token = await h.call("mcp/fx/read_env", {"name": "TOKEN"})
            other = await h.call("mcp/fx/read_env", {"name": "UNDECLARED"})
            return token[1].content, other[1].content

    token, other = run(body)
    assert token == "[secret:FX_TOKEN]"  # the server got the value; the model never sees it
    assert other == "(unset)"


def test_a_literal_credential_is_refused() -> None:
    with pytest.raises(ConfigError, match="literal"):
        servers_from_profile([{"name": "x", "transport": "stdio", "command": "x",
                               "env": {"TOKEN": "sk-live-abc123"}}])


def test_launch_needs_confirmation(tmp_path: Path) -> None:
    shown: list[LaunchRequest] = []

    async def decline(request: LaunchRequest) -> str:
        shown.append(request)
        return "decline"

    async def cancel(_: LaunchRequest) -> str:
        return "cancel"

    async def unconfirmed() -> None:
        async with hub([FIXTURE], tmp_path, assume_yes=False):
            raise AssertionError("must not start")

    with pytest.raises(Refused) as refused:
        run(unconfirmed)
    assert refused.value.code == "MCP010" and "--yes" in (refused.value.hint or "")

    async def declined() -> Any:
        async with hub([FIXTURE], tmp_path, assume_yes=False, confirm=decline,
                       environ={"FX_TOKEN": "t0ken-value"}) as h:
            return h.tools, h.to_json()["servers"][0]

    tools, server = run(declined)
    assert tools == () and server["status"] == "declined"
    assert shown[0].command == (sys.executable, str(HERE / "mcp_fixture_server.py"))
    assert shown[0].variables == ("FX_TOKEN",)
    assert "t0ken-value" not in repr(shown[0].to_json())  # names, never values
    assert shown[0].digest.startswith("sha256:")

    async def cancelled() -> None:
        async with hub([FIXTURE], tmp_path, assume_yes=False, confirm=cancel):
            raise AssertionError("must not start")

    with pytest.raises(Refused, match="cancelled"):
        run(cancelled)


def test_a_server_that_cannot_start_is_recorded_and_the_others_work(tmp_path: Path) -> None:
    ghost = McpServer(name="ghost", transport="stdio", command=str(tmp_path / "no-such-binary"))
    unset = McpServer(name="unset", transport="stdio", command=sys.executable,
                      env={"TOKEN": "${NEVER_SET_IN_TESTS}"})

    async def body() -> Any:
        async with hub([ghost, unset, TIME], tmp_path, environ={}) as h:
            return h.to_json()["servers"], [t.name for t in h.tools]

    servers, tools = run(body)
    assert servers[0]["status"] == "failed" and "command not found" in servers[0]["reason"]
    assert servers[1]["status"] == "failed"
    assert servers[1]["reason"] == "environment variable(s) NEVER_SET_IN_TESTS not set"
    assert tools == ["mcp/time/get_current_time", "mcp/time/convert_time"]


def test_streamable_http_with_a_header_from_the_environment(tmp_path: Path) -> None:
    app = MCPServer("web")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool()
    def authorization(ctx: Context) -> str:
        """The Authorization header of the request."""
        request = ctx.request_context.request
        return request.headers.get("authorization", "(none)") if request else "(no request)"

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # bound and listening before the client starts: no wait needed
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="error",
                                           lifespan="on"))
    web = McpServer(name="web", transport="http", url=f"http://127.0.0.1:{port}/mcp",
                    headers={"Authorization": "Bearer ${WEB_TOKEN}"})

    async def body() -> Any:
        async with hub([web], tmp_path, environ={"WEB_TOKEN": "tok-12345"}) as h:
            return ([t.name for t in h.tools], await h.call("mcp/web/add", {"a": 2, "b": 40}),
                    await h.call("mcp/web/authorization", {}))

    # The server runs its own event loop in a thread; the socket already listens, so the
    # client's first request waits in the backlog until the server is up.
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        names, total, auth = run(body)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert names == ["mcp/web/add", "mcp/web/authorization"]
    assert total[1].ok and total[1].content == "42"
    assert auth[1].content == "Bearer [secret:WEB_TOKEN]"


def test_a_non_http_url_fails_that_server_only(tmp_path: Path) -> None:
    bad = McpServer(name="bad", transport="http", url="ftp://example.invalid/mcp")

    async def body() -> Any:
        async with hub([bad], tmp_path) as h:
            return h.to_json()["servers"][0]

    server = run(body)
    assert server["status"] == "failed" and "not an http(s) URL" in server["reason"]
