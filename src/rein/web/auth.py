"""Who may look and who may change: the token, the session cookie, CSRF, hosts, sizes.

The console is reached with the one URL ``rein serve`` prints (``/?token=…``). The token is
exchanged, by a redirect that drops it from the address bar, for a session: an HttpOnly,
SameSite=Strict cookie holding a random session id the server remembers. Every request needs
that session, except the static assets (the package's own files, nothing about runs).

A request that changes state (any POST) also needs: an ``Origin`` (or, without one, a
``Referer``) naming this server, and the form's ``csrf`` field equal to the session's CSRF
token (an HMAC of the session id under a server secret, so no table of them is kept). Every
request must name an allowed ``Host``: a page from another site that resolves its own name
to 127.0.0.1 (DNS rebinding) is refused before any route runs. ``read_only`` refuses every
POST. Bodies are read up to :data:`MAX_BODY` bytes, no further.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from urllib.parse import parse_qs, urlsplit

from rein.core.frozen import Record, field

COOKIE = "rein_session"
MAX_BODY = 64 * 1024  # a form of answers and a note; anything larger is not a person typing
MAX_SESSIONS = 1024  # oldest forgotten first: a script cannot grow the table without bound
MIN_TOKEN = 32  # characters of a token given from outside (a generated one has 43)
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class Denied(Exception):
    """A request refused by a rule here: HTTP status, code, message and hint."""

    def __init__(self, status: int, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.hint = status, code, message, hint


def new_token() -> str:
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


class Guard(Record):
    """The rules of one server: its token, its sessions, the hosts it answers to."""

    token: str
    hosts: frozenset[str]  # acceptable Host header values, "name:port"
    read_only: bool = False
    # Cookies ignore ports: two consoles on one host would share (and overwrite) one
    # session cookie, so each names its own.
    cookie: str = COOKIE
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    sessions: dict[str, None] = field(default_factory=dict)  # insertion-ordered set

    @classmethod
    def for_bind(cls, *, host: str, port: int, token: str, read_only: bool = False,
                 extra_hosts: Iterable[str] = ()) -> Guard:
        names = set(LOOPBACK) if is_loopback(host) else {host}
        hosts = {f"{n}:{port}" for n in names} | {f"[{n}]:{port}" for n in names if ":" in n}
        return cls(token=token, hosts=frozenset(hosts | set(extra_hosts)), read_only=read_only,
                   cookie=f"{COOKIE}_{port}")

    # -- sessions -------------------------------------------------------------------------

    def exchange(self, given: str) -> str:
        """A new session id for the right token; WEB401 for any other."""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise Denied(401, "WEB401", "the token in the address is not this server's",
                         "open the URL `rein serve` printed when it started")
        sid = secrets.token_urlsafe(24)
        self.sessions[sid] = None
        while len(self.sessions) > MAX_SESSIONS:
            del self.sessions[next(iter(self.sessions))]
        return sid

    def session(self, cookie: str | None) -> str:
        """The session id of a request; WEB401 without a known one."""
        if cookie is None or cookie not in self.sessions:
            raise Denied(401, "WEB401", "this browser has no session with the console",
                         "open the URL `rein serve` printed when it started (it carries "
                         "the token)")
        return cookie

    def csrf(self, sid: str) -> str:
        """The CSRF token of a session, put in every form the session is shown."""
        return hmac.new(self.secret, sid.encode(), hashlib.sha256).hexdigest()

    # -- requests -------------------------------------------------------------------------

    def check_host(self, host: str | None) -> None:
        if host is None or host.lower() not in self.hosts:
            raise Denied(421, "WEB421", f"the console does not answer to host {host!r}",
                         "use the address `rein serve` printed")

    def check_change(self, *, sid: str, origin: str | None, referer: str | None,
                     host: str, form: dict[str, str]) -> None:
        """Everything a state-changing request needs besides its session."""
        if self.read_only:
            raise Denied(403, "WEB403", "the console is read-only",
                         "restart `rein serve` without --read-only to answer or run")
        source = origin if origin is not None else referer
        if source is None or urlsplit(source).netloc.lower() != host.lower():
            raise Denied(403, "WEB402", "the request did not come from a page of this console",
                         "submit the form from the console's own page")
        if not hmac.compare_digest(form.get("csrf", "").encode(), self.csrf(sid).encode()):
            raise Denied(403, "WEB402", "the form's CSRF token is missing or not this "
                         "session's", "reload the page and submit the form again")


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body; the last value of a repeated name."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Denied(400, "WEB400", "the form is not UTF-8", "submit the form from the "
                     "console's page") from exc
    try:
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=200)
    except ValueError as exc:
        raise Denied(400, "WEB400", "the form has too many fields", "submit the form from "
                     "the console's page") from exc
    return {k: v[-1] for k, v in fields.items()}


__all__ = ["COOKIE", "LOOPBACK", "MAX_BODY", "MIN_TOKEN", "Denied", "Guard", "is_loopback",
           "new_token", "parse_form"]
