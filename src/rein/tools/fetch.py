"""The HTTP fetch tool: one GET, bounded, redirects checked against the same permissions.

Redirects are followed by hand, at most five, and each new URL goes through the same
permission check as the first one: a granted origin cannot redirect the call to an origin
that is not granted. The HTTP client is injectable (tests pass one with a mock transport).

The client library (httpx2) comes with the provider and MCP extras, not the base install: it
is imported when a fetch runs, and a fetch without it is TOOL044, whose hint installs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from rein.core.extras import install_hint
from rein.tools.catalog import ToolResult
from rein.tools.paths import ToolFailure

if TYPE_CHECKING:
    import httpx2 as httpx

MAX_BODY_BYTES = 100 * 1024
MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 30.0


def check_url(url: Any) -> str:
    """Return ``url`` if it is an absolute http(s) URL, else raise ToolFailure TOOL040."""
    if not isinstance(url, str):
        raise ToolFailure("url must be a string", code="TOOL040")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolFailure(
            f"not an http(s) URL: {url!r}",
            code="TOOL040",
            hint="give an absolute http or https URL",
        )
    return url


def http_library() -> ModuleType:
    """The HTTP client library, or ToolFailure TOOL044 when it is not installed."""
    try:
        import httpx2
    except ImportError:
        raise ToolFailure("the fetch tool needs httpx2, which is not installed",
                          code="TOOL044", hint=f"{install_hint('openai')} (or any provider "
                          "extra) installs it") from None
    return httpx2


async def fetch_tool(
    args: Mapping[str, Any],
    *,
    client: httpx.AsyncClient,
    allowed: Callable[[str], str | None],
) -> ToolResult:
    """GET ``args["url"]``. ``allowed(url)`` returns None, or the refusal for a redirect target."""
    url = check_url(args.get("url"))
    http = http_library()
    for _ in range(MAX_REDIRECTS + 1):
        try:
            async with client.stream("GET", url, follow_redirects=False) as response:
                if response.is_redirect and "location" in response.headers:
                    url = check_url(urljoin(url, response.headers["location"]))
                    refusal = allowed(url)
                    if refusal is not None:
                        return ToolResult(
                            ok=False, content=refusal, refused=True, data={"url": url}
                        )
                    continue
                body, truncated = await _read_bounded(response)
                return _result(url, response, body, truncated)
        except http.TimeoutException:
            raise ToolFailure(f"timed out fetching {url}", code="TOOL041") from None
        except http.HTTPError as exc:
            raise ToolFailure(f"could not fetch {url}: {exc}", code="TOOL042") from None
    raise ToolFailure(f"more than {MAX_REDIRECTS} redirects from {args.get('url')}", code="TOOL043")


async def _read_bounded(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"".join(chunks)[:MAX_BODY_BYTES], True
    return b"".join(chunks), False


def _result(url: str, response: httpx.Response, body: bytes, truncated: bool) -> ToolResult:
    text = body.decode(response.encoding or "utf-8", errors="replace")
    content_type = response.headers.get("content-type", "")
    head = f"HTTP {response.status_code} {content_type}".rstrip()
    if truncated:
        text += f"\n[body truncated at {MAX_BODY_BYTES} bytes]"
    return ToolResult(
        ok=response.status_code < 400,
        content=f"{head}\n\n{text}",
        data={"url": url, "status": response.status_code, "truncated": truncated},
    )
