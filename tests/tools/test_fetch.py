"""http_fetch through a mock transport (a test double): origins, redirects, bounds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2 as httpx

from rein.tools.catalog import ToolCall
from rein.tools.fetch import MAX_BODY_BYTES
from rein.tools.gate import ToolPolicy, Verdict
from rein.tools.sandbox import SandboxMode, SandboxPolicy
from rein.tools.toolbox import Toolbox


def handler(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/hop":
        return httpx.Response(302, headers={"location": "https://evil.example.org/steal"})
    if request.url.path == "/big":
        return httpx.Response(200, content=b"a" * (MAX_BODY_BYTES + 10))
    if request.url.path == "/same":
        return httpx.Response(301, headers={"location": "/final"})
    return httpx.Response(
        200, text=f"hello from {request.url.path}", headers={"content-type": "text/plain"}
    )


def fetch(tmp_path: Path, url: str, *, network: bool = True):  # type: ignore[no-untyped-def]
    policy = ToolPolicy.build(
        ["net:fetch:https://api.example.com"],
        sandbox=SandboxPolicy(
            mode=SandboxMode.READ_ONLY, workspace=tmp_path, network_access=network
        ),
    )

    async def go():  # type: ignore[no-untyped-def]
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            box = Toolbox(tools=("http_fetch",), policy=policy, http_client=client)
            return await box.run(ToolCall(id="1", name="http_fetch", arguments={"url": url}))

    return asyncio.run(go())


def test_granted_origin_is_fetched(tmp_path: Path) -> None:
    decision, result = fetch(tmp_path, "https://api.example.com/v1")
    assert decision.verdict is Verdict.ALLOW and result.ok
    assert result.content == "HTTP 200 text/plain\n\nhello from /v1"


def test_other_origin_is_refused_with_the_allowed_one(tmp_path: Path) -> None:
    decision, result = fetch(tmp_path, "https://other.example.com/")
    assert decision.verdict is Verdict.DENY and result.refused
    assert "allowed for net:fetch: net:fetch:https://api.example.com" in result.content


def test_redirect_to_an_ungranted_origin_is_refused(tmp_path: Path) -> None:
    _, result = fetch(tmp_path, "https://api.example.com/hop")
    assert result.refused and "refused net:fetch:https://evil.example.org/steal" in result.content


def test_redirect_within_the_origin_is_followed(tmp_path: Path) -> None:
    _, result = fetch(tmp_path, "https://api.example.com/same")
    assert result.ok and result.content.endswith("hello from /final")


def test_body_is_bounded(tmp_path: Path) -> None:
    _, result = fetch(tmp_path, "https://api.example.com/big")
    assert result.data is not None and result.data["truncated"] is True
    assert result.content.endswith(f"[body truncated at {MAX_BODY_BYTES} bytes]")


def test_no_network_in_the_sandbox_refuses_even_a_granted_origin(tmp_path: Path) -> None:
    decision, _ = fetch(tmp_path, "https://api.example.com/v1", network=False)
    assert decision.verdict is Verdict.DENY
    assert "no network access" in (decision.message or "")
