"""Start the console: check the bind, build the Harness, the Steering thread and the app,
print the one URL, and serve until interrupted.

Starlette and uvicorn are the ``web`` extra: :func:`require` says how to install them
instead of failing with an ImportError.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rein.core.frozen import Frozen
from rein.errors import ConfigError, Refused
from rein.web.auth import MIN_TOKEN, Guard, is_loopback, new_token


def require() -> None:
    """WEB001 when the ``web`` extra is not installed."""
    from rein.core.extras import require

    require("web", "the web console", code="WEB001")


class Bind(Frozen):
    host: str
    port: int
    token: str
    read_only: bool


def check_bind(host: str, port: int, *, token_env: str | None, read_only: bool,
               env: dict[str, str] | None = None) -> Bind:
    """Loopback needs nothing (a fresh token is made). Any other address is reachable by
    others, so it needs a token the operator chose, from ``token_env``: WEB010 without one,
    WEB011 for one too short to resist guessing."""
    values = os.environ if env is None else env
    token = None
    if token_env is not None:
        token = values.get(token_env)
        if not token:
            raise ConfigError(f"--token-env {token_env}: the variable is not set",
                              code="WEB011", hint=f"export {token_env} with a random value "
                              f"of at least {MIN_TOKEN} characters")
        if len(token) < MIN_TOKEN:
            raise ConfigError(f"--token-env {token_env}: the token has {len(token)} "
                              f"characters, fewer than {MIN_TOKEN}", code="WEB011",
                              hint="use a longer random value, e.g. "
                                   "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`")
    if not is_loopback(host) and token is None:
        raise Refused(f"--host {host} would let other machines reach the console, and no "
                      "token was chosen for them", code="WEB010",
                      hint="bind 127.0.0.1 (the default), or pass --token-env VAR naming a "
                           "variable that holds a secret of at least "
                           f"{MIN_TOKEN} characters")
    return Bind(host=host, port=port, token=token or new_token(), read_only=read_only)


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}", code="WEB012",
                          hint="pick another --port, or stop what uses this one") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(host: str, port: int, token: str) -> str:
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{port}/?token={token}"


async def serve(workspace: Path, bind: Bind, *, store_url: str | None,
                announce: Callable[[str], None], ready: Callable[[Any], None] | None = None
                ) -> None:
    """Serve until the server is stopped (Ctrl-C). The runs it started stay in the store."""
    import uvicorn

    from rein.engine.service import Harness
    from rein.web.app import create_app
    from rein.web.steer import Steering

    sock = listen(bind.host, bind.port)
    port = sock.getsockname()[1]
    harness = Harness.open(workspace, store_url=store_url, surface="web")
    harness.check_store()  # STORE404 now, before a URL is printed
    steering = None if bind.read_only else Steering(
        lambda listeners: Harness.open(workspace, store_url=store_url, listeners=listeners,
                                       surface="web"))
    guard = Guard.for_bind(host=bind.host, port=port, token=bind.token,
                           read_only=bind.read_only)
    app = create_app(harness, guard, steering)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    announce(url_of(bind.host, port, bind.token))
    if ready is not None:
        ready(server)
    try:
        await server.serve(sockets=[sock])
    finally:
        if steering is not None:
            steering.close()
        harness.close()
        sock.close()


__all__ = ["Bind", "check_bind", "listen", "require", "serve", "url_of"]
