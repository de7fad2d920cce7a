"""AGS permission strings: parsing, target matching, and the check a tool call goes through.

A permission is ``scope:action[:target]`` (AGS §a.11), for example ``fs:write:src/**``,
``shell:exec:python*`` or ``net:fetch:https://api.example.com``. A grant without a target
covers every target of that scope and action. Targets are matched per scope:

- ``fs``: workspace-relative POSIX paths; ``*`` matches within one path segment, ``**`` matches
  any number of segments (``src/**`` covers ``src`` itself and everything below it).
- ``shell``: the command line; ``*`` matches any text. A line made of several commands
  (``a && b``, ``a; b``, ``a | b``, one per line) must have every command granted, and a
  line that does not split with certainty (command substitution, subshells, here-documents,
  a computed program name: :mod:`rein.core.shellsplit`) needs a grant without a target. A
  pattern that names a program (``echo*``) does not cover a program path (``echo/x``).
- ``net``: origins (``https://api.example.com``, optionally ``:port``); ``*`` in the host
  matches one or more labels, and a target of ``*`` matches any URL.
- every other scope: the target is compared with ``fnmatch``-style globbing.

Nothing here widens: a request is allowed only when some grant covers it, and a deny pattern
wins over any grant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from rein.core.frozen import Frozen
from rein.core.shellsplit import ShellCommand, split_commands
from rein.errors import ConfigError

SCOPES = frozenset({"fs", "net", "shell", "git", "process", "secret", "mcp", "human", "custom"})
_PERMISSION = re.compile(
    r"^(fs|net|shell|git|process|secret|mcp|human|custom):([a-z_]+)(?::(.+))?$"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Permission(Frozen):
    """One parsed permission string."""

    scope: str
    action: str
    target: str | None = None

    @classmethod
    def parse(cls, text: str) -> Permission:
        """Parse ``scope:action[:target]``; raise :class:`ConfigError` (PERM001) when malformed."""
        match = _PERMISSION.match(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise ConfigError(
                f"not a permission string: {text!r}",
                code="PERM001",
                hint="write scope:action[:target], e.g. fs:write:src/** or "
                "net:fetch:https://x.org; "
                f"scopes are {', '.join(sorted(SCOPES))}",
            )
        return cls(scope=match[1], action=match[2], target=match[3])

    def __str__(self) -> str:
        base = f"{self.scope}:{self.action}"
        return f"{base}:{self.target}" if self.target is not None else base

    def covers(self, request: Permission) -> bool:
        """Whether this grant (or deny pattern) covers the concrete ``request``."""
        if (self.scope, self.action) != (request.scope, request.action):
            return False
        if self.target is None:
            return True
        if request.target is None:
            # A request for the whole scope:action is wider than any targeted grant.
            return False
        return target_matches(self.scope, self.target, request.target)


def target_matches(scope: str, pattern: str, target: str) -> bool:
    """Whether ``target`` matches ``pattern`` under ``scope``'s dialect (see module doc)."""
    if scope == "fs":
        return _path_regex(pattern).fullmatch(_normalise_path(target)) is not None
    if scope == "net":
        return origin_matches(pattern, target)
    if scope == "shell":
        return _text_regex(pattern).fullmatch(target.strip()) is not None
    return _text_regex(pattern).fullmatch(target) is not None


def _normalise_path(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") or "."


@lru_cache(maxsize=512)
def _path_regex(pattern: str) -> re.Pattern[str]:
    pattern = _normalise_path(pattern)
    if pattern in ("**", "."):
        return re.compile(r".*", re.DOTALL)
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append(r"(?:/.*)?")  # "src/**" covers "src" and everything below it
            i += 3
        elif pattern.startswith("**/", i):
            out.append(r"(?:.*/)?")  # "**/x" covers "x" at any depth
            i += 3
        elif pattern.startswith("**", i):
            out.append(r".*")
            i += 2
        elif pattern[i] == "*":
            out.append(r"[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append(r"[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


@lru_cache(maxsize=512)
def _text_regex(pattern: str) -> re.Pattern[str]:
    parts = [".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern]
    return re.compile("".join(parts), re.DOTALL)


def origin_matches(pattern: str, url: str) -> bool:
    """Whether ``url``'s origin is covered by the origin ``pattern`` (``*`` alone covers all)."""
    if pattern.strip() == "*":
        return True
    want = _origin(pattern)
    have = _origin(url)
    if want is None or have is None:
        return False
    (w_scheme, w_host, w_port), (h_scheme, h_host, h_port) = want, have
    if w_scheme != h_scheme or w_port != h_port:
        return False
    host_re = re.escape(w_host).replace(r"\*", r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")
    return re.fullmatch(host_re, h_host) is not None


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS[scheme]


def shell_commands(command: str) -> tuple[str, ...] | None:
    """Split a command line into the simple commands it runs, or None when it cannot tell.

    None means the line hides or defines commands, or does not split with certainty (see
    :mod:`rein.core.shellsplit`); such a line is granted only by a ``shell:exec`` grant
    without a target.
    """
    commands = split_commands(command)
    return tuple(c.text for c in commands) or None if commands is not None else None


def _covers_program(grant: Permission, command: ShellCommand) -> bool:
    """A grant that names a program (``echo*``) does not cover a path to some other program
    (``echo/../../bin/rm``, ``echo.d/x``): a program path needs a pattern that names a path,
    or one that starts with a wildcard."""
    if command.program is None or "/" not in command.program or grant.target is None:
        return True
    literal = re.split(r"[*?\s]", grant.target.strip(), maxsplit=1)[0]
    return literal == "" or "/" in literal


class PermissionSet(Frozen):
    """Effective grants plus deny patterns; ``allows`` is the only question it answers."""

    grants: tuple[Permission, ...] = ()
    denied: tuple[Permission, ...] = ()

    @classmethod
    def parse(cls, grants: Iterable[str], denied: Iterable[str] = ()) -> PermissionSet:
        """Build from permission strings (PERM001 on a malformed one)."""
        return cls(
            grants=tuple(Permission.parse(g) for g in grants),
            denied=tuple(Permission.parse(d) for d in denied),
        )

    def allows(self, request: Permission) -> bool:
        """Whether ``request`` is granted and not denied. Shell lines are checked per command."""
        if request.scope == "shell" and request.target is not None:
            return self._allows_shell(request)
        if any(d.covers(request) for d in self.denied):
            return False
        return any(g.covers(request) for g in self.grants)

    def _allows_shell(self, request: Permission) -> bool:
        whole = Permission(scope="shell", action=request.action)
        if any(d.target is None and d.covers(whole) for d in self.denied):
            return False
        untargeted = any(g.target is None and g.covers(whole) for g in self.grants)
        commands = split_commands(request.target or "")
        if not commands:
            return untargeted and not self.denied_any_shell(request)
        for command in commands:
            part = Permission(scope="shell", action=request.action, target=command.text)
            if any(d.covers(part) for d in self.denied):
                return False
            if untargeted:
                continue
            if not any(g.covers(part) and _covers_program(g, command) for g in self.grants):
                return False
        return True

    def denied_any_shell(self, request: Permission) -> bool:
        """Whether any targeted shell deny exists (a hidden command might match it)."""
        return any(d.scope == "shell" and d.action == request.action for d in self.denied)

    def granted_for(self, scope: str, action: str) -> tuple[str, ...]:
        """The grants for ``scope:action``, as strings, for messages the model can act on."""
        return tuple(str(g) for g in self.grants if (g.scope, g.action) == (scope, action))

    def __str__(self) -> str:
        return ", ".join(str(g) for g in self.grants) or "(none)"
